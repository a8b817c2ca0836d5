//
// turnloop/loop_group.hpp
//
// turnloop::loop_group: N turnloop::loops, each run by its own thread, for
// servers that outgrow one thread. The shape of "one io_context per core":
// each connection, timer and coroutine lives on one loop, and work moves
// between loops only by posting. doc/loop_group.md has the migration from
// io_context run on N threads.
//

#ifndef TURNLOOP_LOOP_GROUP_HPP
#define TURNLOOP_LOOP_GROUP_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/config.hpp>
#include <turnloop/group_stats.hpp>
#include <turnloop/loop.hpp>
#include <turnloop/impl/group_threads.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace turnloop {

/// A fixed set of loops, each run by a thread of its own while the group
/// runs.
///
/// Every loop is built from the same turnloop::config, and every ceiling in
/// it is per loop: a group of N loops holds up to N * max_handles
/// connections, N * post_capacity queued posts, starts up to
/// N * blocking.threads blocking workers, and so on. Nothing is shared
/// between the loops but the group's own bookkeeping. (A group_acceptor
/// takes the handle of every connection it accepts from its accepting
/// loop, so for the connections it deals out max_handles is group-wide.)
///
/// Running: run() starts one thread per loop and returns when the group is
/// out of work (every loop out of work at once, so that none can post to
/// another any more) or stop() was called. While any loop has work, a loop
/// that has none keeps its thread and serves posts from the others at once.
/// As with io_context, work posted from outside the group while it is
/// winding down may be left queued; hold a work guard on a loop to keep the
/// group running.
///
/// Exceptions: if a handler throws on one loop, the whole group stops (as
/// if by stop()) and run() rethrows the exception once every thread has
/// returned. Nothing is discarded: handlers queued on every loop, including
/// the one that threw, stay queued, and restart() then run() carry on. If
/// several loops threw before they stopped, each later run() (or join())
/// rethrows the next one without running anything.
///
/// Thread safety: stop(), stopped(), size(), loop(), get_executor(),
/// next_executor() and stats() may be called from any thread (stats() not
/// from one of the group's loops). run(), start(), join() and restart() are
/// for one thread at a time, not one of the group's loops.
class loop_group
{
public:
  using executor_type = turnloop::loop::executor_type;
  using count_type = std::size_t;

  /// The number of loops a default-constructed group has:
  /// std::thread::hardware_concurrency(), or 1 if that is unknown.
  TURNLOOP_DECL static std::size_t default_size() noexcept;

  /// Builds @p size loops from @p cfg. No thread starts before run().
  /// @throws system_error with turnloop::error::invalid_config
  /// if @p size is 0 or above max_size, or a field of @p cfg is out of range.
  TURNLOOP_DECL explicit loop_group(std::size_t size = default_size(),
      const config& cfg = config());

  /// Builds default_size() loops from @p cfg.
  TURNLOOP_DECL explicit loop_group(const config& cfg);

  /// Stops the group, waits for its threads, then destroys the loops'
  /// queued handlers, pending operations and suspended coroutines without
  /// running them, on every loop before it destroys any loop, so that work
  /// on one loop may own I/O objects and executors of another. Do not call
  /// from one of the group's loops.
  TURNLOOP_DECL ~loop_group();

  loop_group(const loop_group&) = delete;
  loop_group& operator=(const loop_group&) = delete;

  /// Largest number of loops a group accepts.
  static constexpr std::size_t max_size = 4096;

  /// The number of loops.
  std::size_t size() const noexcept
  {
    return loops_.size();
  }

  /// Loop @p index, for placing work on it (co_spawn(group.loop(i), ...),
  /// a socket or timer built on it).
  /// @throws system_error (invalid_argument) if
  /// @p index >= size().
  TURNLOOP_DECL turnloop::loop& loop(std::size_t index);

  /// The next loop's executor, round-robin over the loops: each call picks
  /// the loop after the previous call's. Any thread.
  TURNLOOP_DECL executor_type next_executor() noexcept;

  /// As next_executor(), so that code that asks a context for "an
  /// executor" spreads its work over the group.
  executor_type get_executor() noexcept
  {
    return next_executor();
  }

  /// Runs every loop, each on a thread of its own, until the group is out
  /// of work or stopped; the calling thread waits. Returns at once if the
  /// group is stopped (until restart()).
  /// @returns the number of handlers run, over all loops.
  /// @throws the first exception a handler threw (see the class notes);
  /// system_error(already_running) if the group is running.
  TURNLOOP_DECL count_type run();

  /// Starts the threads of run() and returns at once; join() waits for
  /// them. @throws system_error(already_running) if the group is running.
  TURNLOOP_DECL void start();

  /// Waits for the threads start() started; returns and throws what run()
  /// does. Returns 0 at once if the group was not started.
  TURNLOOP_DECL count_type join();

  /// Stops every loop: each returns as soon as its running handler returns,
  /// and run() returns once all have. A later run() returns at once until
  /// restart(). Any thread, including the group's own.
  TURNLOOP_DECL void stop();

  /// True after stop(), or once the group ran out of work, until restart().
  TURNLOOP_DECL bool stopped() const;

  /// Clears stopped() on the group and every loop so that run() can run
  /// again. @throws system_error(already_running) if the group is running.
  TURNLOOP_DECL void restart();

  /// Every loop's loop_stats, and their sum. While the group runs, each
  /// loop's snapshot is taken on its own thread by a posted handler, and the
  /// call waits for them.
  /// @throws system_error (resource_deadlock_would_occur) if called from
  /// one of the group's loops, where waiting for the others could deadlock.
  TURNLOOP_DECL group_stats stats();

private:
  std::vector<std::unique_ptr<turnloop::loop>> loops_;
  detail::group_threads threads_{loops_};
  std::atomic<std::size_t> next_{0};
};

} // namespace turnloop

#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/impl/loop_group.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_LOOP_GROUP_HPP
