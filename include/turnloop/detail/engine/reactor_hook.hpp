//
// turnloop/detail/engine/reactor_hook.hpp
//
// A second source of I/O completions beside the epoll reactor, run in the
// reactor's step of the turn: the pool's io_uring (detail/uring/). Before
// the reactor waits, the hook submits what the turn queued and hands over
// what has completed; after the wait, what completed during it. Each
// operation handed over carries one unit of the scheduler's work, as the
// reactor's own do. The reactor runs on one thread at a time, so the hook's
// two calls never overlap.
//

#ifndef TURNLOOP_DETAIL_ENGINE_REACTOR_HOOK_HPP
#define TURNLOOP_DETAIL_ENGINE_REACTOR_HOOK_HPP

#include <turnloop/detail/config.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(detail/op_queue.hpp)
#include TURNLOOP_ASIO_HEADER(detail/scheduler_operation.hpp)

namespace turnloop {
namespace detail {

class reactor_hook
{
public:
  using op_queue = asio::detail::op_queue<
    asio::detail::scheduler_operation>;

  /// Before the reactor's wait: submits, and moves what has completed into
  /// @p ops. True if it moved any (the wait must then not block). If not,
  /// and @p blocking, the hook makes sure a completion posted during the
  /// wait ends it.
  virtual bool before_wait(op_queue& ops, bool blocking) noexcept = 0;

  /// After the reactor's wait: moves what completed during it into @p ops.
  virtual void after_wait(op_queue& ops) noexcept = 0;

  /// Asked after before_wait(): true if the hook does this step's wait
  /// itself, watching the reactor's own descriptor, so that a step costs
  /// one blocking system call, not two. The reactor is then polled only
  /// when reactor_ready() says so, and after_wait() is not called.
  virtual bool waits_itself() const noexcept = 0;

  /// Blocks until a completion is posted, the reactor's descriptor is
  /// ready, or @p usec microseconds pass (< 0: no limit); moves what
  /// completed into @p ops. Returns at once if the reactor is known ready.
  virtual void wait(long usec, op_queue& ops) noexcept = 0;

  /// True, once, if the reactor's descriptor was found ready since the
  /// last call (the reactor must be polled); its watch is renewed.
  virtual bool reactor_ready() noexcept = 0;

protected:
  reactor_hook() noexcept = default;
  reactor_hook(const reactor_hook&) = delete;
  reactor_hook& operator=(const reactor_hook&) = delete;
  ~reactor_hook() = default;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ENGINE_REACTOR_HOOK_HPP
