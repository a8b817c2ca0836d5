//
// turnloop/detail/engine/turn_reactor.hpp
//
// Asio's reactor with run() overridden: whichever task Asio's scheduler runs
// on this platform (reactor_task below: epoll, kqueue, /dev/poll, select, or
// Asio's io_uring service when that is the default backend), since each
// derives from scheduler_task and overrides the same run(usec, ops) and
// interrupt(). The scheduler calls run() with
// a timeout of zero to poll and a non-zero timeout to block; the override
// lets the loop mark itself parked before it blocks (so a cross-thread post
// knows it must wake it) and pick up cross-thread work after any poll, and
// interrupt() to learn that something was queued while it waited. It is
// installed as the context's reactor service before any I/O object exists, so
// sockets, timers and signal sets use it without knowing.
//

#ifndef TURNLOOP_DETAIL_ENGINE_TURN_REACTOR_HPP
#define TURNLOOP_DETAIL_ENGINE_TURN_REACTOR_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/engine/reactor_hook.hpp>

#include <turnloop/detail/asio.hpp>
#if defined(TURNLOOP_ASIO_HAS_IO_URING_AS_DEFAULT)
# include TURNLOOP_ASIO_HEADER(detail/io_uring_service.hpp)
#else // defined(TURNLOOP_ASIO_HAS_IO_URING_AS_DEFAULT)
# include TURNLOOP_ASIO_HEADER(detail/reactor.hpp)
#endif // defined(TURNLOOP_ASIO_HAS_IO_URING_AS_DEFAULT)
#include TURNLOOP_ASIO_HEADER(detail/op_queue.hpp)
#include TURNLOOP_ASIO_HEADER(detail/scheduler_operation.hpp)

#include <atomic>

namespace turnloop {
namespace detail {

class loop_core;

/// The scheduler's task on this platform and configuration
/// (TURNLOOP_REACTOR_NAME, detail/platform.hpp): Asio's reactor, or its
/// io_uring service, which then serves every socket, timer and file.
#if defined(TURNLOOP_ASIO_HAS_IO_URING_AS_DEFAULT)
using reactor_task = asio::detail::io_uring_service;
#else // defined(TURNLOOP_ASIO_HAS_IO_URING_AS_DEFAULT)
using reactor_task = asio::detail::reactor;
#endif // defined(TURNLOOP_ASIO_HAS_IO_URING_AS_DEFAULT)

class turn_reactor final : public reactor_task
{
public:
  turn_reactor(asio::execution_context& ctx, loop_core& core)
    : reactor_task(ctx),
      core_(core)
  {
  }

  TURNLOOP_DECL void run(long usec,
      asio::detail::op_queue<
        asio::detail::scheduler_operation>& ops) override;

  /// Wakes a blocked run(). The scheduler calls it when another thread
  /// queues an operation while the reactor runs, the loop when a
  /// cross-thread post arrives; either way, something now waits ahead of
  /// what this run returns.
  TURNLOOP_DECL void interrupt() override;

  /// Installs (or, with nullptr, removes) the second source of completions
  /// run in each reactor step. Loop thread, or while no thread runs it.
  void set_hook(reactor_hook* hook) noexcept
  {
    hook_ = hook;
  }

private:
  // A step the scheduler would let block: the park handshake, and the ready
  // operations completed here when nothing else is queued. Out of run(), so
  // that a poll, the usual step of a busy loop, needs no frame for it.
# if defined(TURNLOOP_HEADER_ONLY)
  TURNLOOP_DECL void run_blocking(long usec, // inline: noinline would clash
      asio::detail::op_queue<asio::detail::scheduler_operation>& ops);
# else // defined(TURNLOOP_HEADER_ONLY)
  TURNLOOP_NOINLINE void run_blocking(long usec,
      asio::detail::op_queue<asio::detail::scheduler_operation>& ops);
# endif // defined(TURNLOOP_HEADER_ONLY)

  // A poll that finds arrivals to take first: out of run(), so that the
  // usual poll needs no frame.
# if defined(TURNLOOP_HEADER_ONLY)
  TURNLOOP_DECL void poll_after_arrivals( // inline: noinline would clash
      asio::detail::op_queue<asio::detail::scheduler_operation>& ops);
# else // defined(TURNLOOP_HEADER_ONLY)
  TURNLOOP_NOINLINE void poll_after_arrivals(
      asio::detail::op_queue<asio::detail::scheduler_operation>& ops);
# endif // defined(TURNLOOP_HEADER_ONLY)

  // The reactor's wait, with the hook's submissions before it and its
  // completions after it. Without a hook (every loop that does not use
  // io_uring) it is the reactor's run alone, called from run() without a frame of
  // its own.
  void wait(long usec, reactor_hook::op_queue& ops)
  {
    if (!hook_) [[likely]]
      reactor_task::run(usec, ops);
    else
      wait_with_hook(usec, ops);
  }

  TURNLOOP_DECL void wait_with_hook(long usec, reactor_hook::op_queue& ops);

  // Puts @p ready, what a reactor step left uncompleted, in front of what
  // the handlers it completed queued in @p ops.
  TURNLOOP_DECL static void hand_over(reactor_hook::op_queue& ready,
      reactor_hook::op_queue& ops) noexcept;

  loop_core& core_;
  reactor_hook* hook_ = nullptr;
  bool polled_last_ = false; // the last step with a hook polled epoll
  std::atomic<bool> interrupted_{false};
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ENGINE_TURN_REACTOR_HPP
