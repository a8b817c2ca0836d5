//
// turnloop/switch_to.hpp
//
// turnloop::switch_to: resume a coroutine on another loop's thread.
//

#ifndef TURNLOOP_SWITCH_TO_HPP
#define TURNLOOP_SWITCH_TO_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/loop.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(any_io_executor.hpp)
#include TURNLOOP_ASIO_HEADER(bind_executor.hpp)
#include TURNLOOP_ASIO_HEADER(post.hpp)
#include TURNLOOP_ASIO_HEADER(use_awaitable.hpp)

namespace turnloop {

/// `co_await turnloop::switch_to(target)` suspends the calling coroutine and
/// resumes it in a handler posted to @p target, so that the code after it
/// runs on @p target's thread: the same as
/// `co_await asio::post(asio::bind_executor(target, use_awaitable))`.
///
/// The coroutine's own executor (this_coro::executor) does not change: an
/// asynchronous operation it awaits later completes on that executor, so it
/// is back on its first loop after its next such co_await. To move work to
/// another loop for good, spawn it there:
/// `co_await asio::co_spawn(target, f(), use_awaitable)` runs f() on
/// @p target (its I/O objects built from its own executor) and resumes the
/// caller on its own loop with the result.
///
/// @tparam Executor the awaiting coroutine's executor type.
/// @returns an awaitable; co_await it from a coroutine started by co_spawn.
/// Thread safety: any thread (it posts, which is safe from any thread).
template <typename Executor = asio::any_io_executor>
auto switch_to(loop& target)
{
  return asio::post(asio::bind_executor(target.get_executor(),
      asio::use_awaitable_t<Executor>()));
}

} // namespace turnloop

#endif // TURNLOOP_SWITCH_TO_HPP
