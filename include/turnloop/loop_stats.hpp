//
// turnloop/loop_stats.hpp
//
// A snapshot of a loop's counters, from loop::stats().
//

#ifndef TURNLOOP_LOOP_STATS_HPP
#define TURNLOOP_LOOP_STATS_HPP

#include <turnloop/blocking_stats.hpp>
#include <turnloop/buffer_pool_stats.hpp>
#include <turnloop/handle_stats.hpp>

#include <cstddef>
#include <cstdint>

namespace turnloop {

/// One configured ceiling: its limit, how much of it is in use now, the most
/// ever in use, and the requests refused because it was reached.
struct ceiling_use
{
  std::size_t limit = 0;
  std::size_t in_use = 0;
  std::size_t high_water = 0;
  std::uint64_t refusals = 0;
};

/// Counters of a loop. Totals count since construction.
struct loop_stats
{
  /// Handlers run from the loop's own queues and services.
  std::uint64_t handlers_run = 0;

  /// I/O and timer completions run in the loop's reactor step. (Completions
  /// that arrive by other routes, such as a read that completed at once,
  /// are run by Asio's scheduler and not counted here.)
  std::uint64_t io_completions = 0;

  /// Turns: one pass over the loop's queue and its cross-thread posts.
  std::uint64_t turns = 0;

  /// Reactor steps, polling or blocking: each one epoll_wait call, except
  /// where the pool's io_uring waits for the loop (doc/io_uring.md), whose
  /// steps call epoll_wait only when epoll has events (epoll_waits).
  std::uint64_t reactor_runs = 0;

  /// epoll_wait calls the reactor made.
  std::uint64_t epoll_waits = 0;

  /// Of those, the ones allowed to block: the loop had nothing ready.
  std::uint64_t os_waits = 0;

  /// Cross-thread posts that had to wake a parked loop (one syscall each).
  std::uint64_t wakes = 0;

  /// Handlers queued on the loop thread now (its own posts, and the
  /// cross-thread posts a turn has taken in), and the most ever queued.
  std::size_t local_queued = 0;
  std::size_t local_queued_high_water = 0;

  /// Cross-thread posts queued and not yet run, the most ever, and the
  /// try_post calls refused at post_capacity.
  std::size_t posts_queued = 0;
  std::size_t posts_queued_high_water = 0;
  std::uint64_t posts_refused = 0;

  /// Every ceiling of turnloop::config, with its use and high-water mark.
  /// config::max_handles: live handles (connections accepted through
  /// turnloop::async_accept).
  ceiling_use handles;
  /// config::max_operations: outstanding operations the loop tracks itself
  /// (blocking jobs until delivered, pooled reads, lease and accept waits).
  ceiling_use operations;
  /// config::post_capacity: cross-thread posts queued and not yet taken.
  ceiling_use posts;
  /// config::pooled_buffers (in use: buffers leased; high water: the most
  /// leased at once). pool has the buffer pool's own counters.
  ceiling_use pooled_buffers;
  /// config::blocking.queue_capacity, long_threads_max, max_undelivered.
  ceiling_use blocking_queue;
  ceiling_use blocking_long_threads;
  ceiling_use blocking_undelivered;

  /// The services' own statistics (the buffer pool, the blocking service,
  /// turnloop::async_accept and its handles); all zero until a service is
  /// first used (reading them creates nothing).
  buffer_pool_stats pool;
  blocking_stats blocking;
  handle_stats accepts;
};

} // namespace turnloop

#endif // TURNLOOP_LOOP_STATS_HPP
