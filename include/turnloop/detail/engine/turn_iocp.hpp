//
// turnloop/detail/engine/turn_iocp.hpp
//
// The IOCP engine's service (Windows, TURNLOOP_HAS_IOCP_ENGINE): the loop
// installs it right after io_context's implementation, before any other
// service, and it does two things there.
// - It marks the context as a loop: only a loop holds one (is_loop).
// - Services shut down newest first, so its shutdown() is the last before
//   the IOCP context's. That one waits, reading the completion port, until
//   no unit of work is outstanding; a handler in the loop's queues that
//   holds tracked work, or the unit the loop holds for its queues, would
//   keep it waiting for ever. So here the loop destroys what its queues
//   hold and gives its units back first (loop_core::give_back_work).
//

#ifndef TURNLOOP_DETAIL_ENGINE_TURN_IOCP_HPP
#define TURNLOOP_DETAIL_ENGINE_TURN_IOCP_HPP

#include <turnloop/detail/config.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(execution_context.hpp)

namespace turnloop {
namespace detail {

class loop_core;

class turn_iocp final
  : public asio::detail::execution_context_service_base<turn_iocp>
{
public:
  turn_iocp(asio::execution_context& ctx, loop_core& core) noexcept
    : asio::detail::execution_context_service_base<turn_iocp>(ctx),
      core_(core)
  {
  }

  TURNLOOP_DECL void shutdown() override;

private:
  loop_core& core_;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ENGINE_TURN_IOCP_HPP
