//
// turnloop/detail/remote_refusal.hpp
//
// How a service refuses a submission made off the loop's thread: the
// refusal is still delivered through the operation's completion token, in a
// turn of the loop, but without queueing unbounded work to do it. The
// delivery is a refusable cross-thread post (loop::try_post), one of
// config::post_capacity; when that many are queued the submitting thread is
// told at the call, with a system_error carrying resource_limit, and the
// handler is destroyed without being invoked, as when any initiating
// function throws.
//

#ifndef TURNLOOP_DETAIL_REMOTE_REFUSAL_HPP
#define TURNLOOP_DETAIL_REMOTE_REFUSAL_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/engine/loop_core.hpp>

#include <turnloop/detail/asio.hpp>

#include <utility>

namespace turnloop {
namespace detail {

/// Runs @p deliver (which posts the refusal to the handler) on the loop, as
/// one of config::post_capacity cross-thread posts. For a caller that is not
/// the loop's thread.
/// @throws system_error (resource_limit, or shut_down while
/// the loop is destroyed) naming @p what, if the post is refused.
template <typename Function>
void post_remote_refusal(loop_core& core, Function&& deliver, const char* what)
{
  if (const error_code ec =
        core.try_post(std::forward<Function>(deliver)))
    throw system_error(ec, what);
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_REMOTE_REFUSAL_HPP
