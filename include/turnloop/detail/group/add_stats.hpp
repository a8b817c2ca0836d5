//
// turnloop/detail/group/add_stats.hpp
//
// Adds one loop's counters into a group's total (loop_group::stats()).
//

#ifndef TURNLOOP_DETAIL_GROUP_ADD_STATS_HPP
#define TURNLOOP_DETAIL_GROUP_ADD_STATS_HPP

#include <turnloop/loop_stats.hpp>

namespace turnloop {
namespace detail {

inline void add_ceiling(ceiling_use& t, const ceiling_use& s) noexcept
{
  t.limit += s.limit;
  t.in_use += s.in_use;
  t.high_water += s.high_water;
  t.refusals += s.refusals;
}

/// Adds every field of @p s to @p t, except pool.buffer_size, a size per
/// buffer and the same on every loop of a group, which is copied, and the
/// pool's path, io_uring_error and io_uring_waits, which say how one loop
/// reads (each loop's own stats() tells).
inline void add_stats(loop_stats& t, const loop_stats& s) noexcept
{
  t.handlers_run += s.handlers_run;
  t.io_completions += s.io_completions;
  t.turns += s.turns;
  t.reactor_runs += s.reactor_runs;
  t.epoll_waits += s.epoll_waits;
  t.os_waits += s.os_waits;
  t.wakes += s.wakes;
  t.local_queued += s.local_queued;
  t.local_queued_high_water += s.local_queued_high_water;
  t.posts_queued += s.posts_queued;
  t.posts_queued_high_water += s.posts_queued_high_water;
  t.posts_refused += s.posts_refused;
  add_ceiling(t.handles, s.handles);
  add_ceiling(t.operations, s.operations);
  add_ceiling(t.posts, s.posts);
  add_ceiling(t.pooled_buffers, s.pooled_buffers);
  add_ceiling(t.blocking_queue, s.blocking_queue);
  add_ceiling(t.blocking_long_threads, s.blocking_long_threads);
  add_ceiling(t.blocking_undelivered, s.blocking_undelivered);

  t.pool.buffer_size = s.pool.buffer_size;
  t.pool.capacity += s.pool.capacity;
  t.pool.minted += s.pool.minted;
  t.pool.leased += s.pool.leased;
  t.pool.leased_high_water += s.pool.leased_high_water;
  t.pool.waiting += s.pool.waiting;
  t.pool.waits += s.pool.waits;
  t.pool.refusals += s.pool.refusals;
  t.pool.in_ring += s.pool.in_ring;
  t.pool.io_uring_enters += s.pool.io_uring_enters;

  t.blocking.threads += s.blocking.threads;
  t.blocking.busy += s.blocking.busy;
  t.blocking.queued += s.blocking.queued;
  t.blocking.queued_high_water += s.blocking.queued_high_water;
  t.blocking.long_threads += s.blocking.long_threads;
  t.blocking.long_threads_high_water += s.blocking.long_threads_high_water;
  t.blocking.undelivered += s.blocking.undelivered;
  t.blocking.undelivered_high_water += s.blocking.undelivered_high_water;
  t.blocking.admitted += s.blocking.admitted;
  t.blocking.delivered += s.blocking.delivered;
  t.blocking.aborted += s.blocking.aborted;
  t.blocking.refused += s.blocking.refused;
  t.blocking.refused_undelivered += s.blocking.refused_undelivered;
  t.blocking.refused_queue += s.blocking.refused_queue;
  t.blocking.refused_threads += s.blocking.refused_threads;
  t.blocking.refused_operations += s.blocking.refused_operations;

  t.accepts.limit += s.accepts.limit;
  t.accepts.in_use += s.accepts.in_use;
  t.accepts.high_water += s.accepts.high_water;
  t.accepts.accepts_pending += s.accepts.accepts_pending;
  t.accepts.accepts_waiting += s.accepts.accepts_waiting;
  t.accepts.accept_waits += s.accepts.accept_waits;
  t.accepts.accepts_refused += s.accepts.accepts_refused;
  t.accepts.accept_backoffs += s.accepts.accept_backoffs;
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_GROUP_ADD_STATS_HPP
