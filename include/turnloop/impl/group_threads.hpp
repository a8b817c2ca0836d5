//
// turnloop/impl/group_threads.hpp
//
// The threads of a turnloop::loop_group, one per loop, and how they agree
// that the group as a whole has run out of work. In impl/, not detail/:
// they run the loops and hold the loops' own tracked executors
// (loop::executor_type, a member of the loop that only its definition
// declares).
//
// A loop's run() returns when *that* loop has no work, but another loop of
// the group may still post to it. So a thread whose loop ran out does not
// leave: it runs its loop again holding a work guard, and so keeps serving
// posts from the others at once. The group is out of work when, in one
// round, every loop's run() returned having run no handler: then no loop
// can post to another any more. A round in which some handler ran ends by
// releasing the guards and starting another round. A busy server never
// ends a round, so the rounds cost nothing while it runs.
//

#ifndef TURNLOOP_IMPL_GROUP_THREADS_HPP
#define TURNLOOP_IMPL_GROUP_THREADS_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/loop.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(execution/outstanding_work.hpp)
#include TURNLOOP_ASIO_HEADER(require.hpp)

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace turnloop {
namespace detail {

class group_threads
{
public:
  using work_guard = decltype(asio::require(
      std::declval<loop::executor_type>(),
      asio::execution::outstanding_work.tracked));

  explicit group_threads(std::vector<std::unique_ptr<loop>>& loops) noexcept
    : loops_(loops)
  {
  }

  group_threads(const group_threads&) = delete;
  group_threads& operator=(const group_threads&) = delete;

  /// Starts one thread per loop, unless the group is stopped or an
  /// exception from an earlier run is still to be reported.
  /// @throws system_error(already_running) if the threads are running.
  TURNLOOP_DECL void start();

  /// Waits for the threads started by start(); returns the handlers run.
  /// Rethrows the first exception a handler threw (the others, if several
  /// loops threw, are rethrown by the next calls, one each).
  TURNLOOP_DECL std::size_t join();

  /// Waits for the threads and discards any exception (for destruction).
  TURNLOOP_DECL void join_quietly() noexcept;

  /// Stops every loop; a later start() runs nothing until restart().
  TURNLOOP_DECL void stop();

  TURNLOOP_DECL bool stopped() const;

  /// @throws system_error(already_running) if the threads are running.
  TURNLOOP_DECL void restart();

  /// Runs @p take(i) for every loop i on that loop's thread if the threads
  /// are running, else on the calling thread, and returns when every call
  /// has been made. @p take must not throw.
  TURNLOOP_DECL void on_each_loop(const std::function<void(std::size_t)>& take);

private:
  struct visit;

  TURNLOOP_DECL void thread_main(std::size_t index) noexcept;
  TURNLOOP_DECL void request_stop_locked();
  TURNLOOP_DECL void release_guards_locked() noexcept;

  std::vector<std::unique_ptr<loop>>& loops_;
  mutable std::mutex mutex_;
  std::condition_variable changed_cv_;  // a thread exited, a visit was made
  std::vector<std::thread> threads_;
  std::vector<std::optional<work_guard>> guards_;
  std::deque<std::exception_ptr> exceptions_;
  std::size_t handlers_ = 0;
  std::size_t live_ = 0;       // threads that have not exited
  std::size_t active_ = 0;     // threads yet to report in this round
  bool progress_ = false;      // a handler ran (or work came in) this round
  bool done_ = false;          // the group ran out of work
  bool stop_requested_ = false;
  bool stopped_ = false;
  bool started_ = false;       // start() called, join() not yet
};

} // namespace detail
} // namespace turnloop

#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/impl/group_threads.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_IMPL_GROUP_THREADS_HPP
