//
// turnloop/sharded_acceptor.hpp
//
// turnloop::sharded_acceptor: one listening acceptor per loop of a
// loop_group, all on the same port with SO_REUSEPORT, so that the kernel
// spreads incoming connections over the loops and each connection lives on
// the loop that accepted it. doc/loop_group.md has the details.
//

#ifndef TURNLOOP_SHARDED_ACCEPTOR_HPP
#define TURNLOOP_SHARDED_ACCEPTOR_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/loop_group.hpp>
#include <turnloop/detail/group/open_listener.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(error.hpp)
#include TURNLOOP_ASIO_HEADER(ip/tcp.hpp)
#include TURNLOOP_ASIO_HEADER(socket_base.hpp)

#include <cstddef>
#include <string>
#include <vector>

namespace turnloop {

/// A listening acceptor on every loop of a group, all bound to one address
/// and port with SO_REUSEPORT. Linux hashes each incoming connection to one
/// of them (by its addresses and ports), so a server that runs an accept
/// loop on every loop, on that loop's acceptor, has its connections spread
/// over the loops, each served by one thread from then on.
///
/// With turnloop::async_accept, config::max_handles caps each loop's live
/// connections: the cap is per loop, so the group holds up to
/// size() * max_handles. A loop at its cap stops calling accept, and the
/// connections the kernel gives it wait in its acceptor's backlog (not
/// reset) until one of its connections closes, even if another loop has
/// room: the kernel picks the loop when the connection arrives.
///
/// Thread safety: acceptor(i) is an ordinary acceptor on loop i: use it on
/// that loop's thread, or while the group is not running. Build and destroy
/// the sharded_acceptor while the group is not running.
template <typename Protocol = asio::ip::tcp>
class sharded_acceptor
{
public:
  using protocol_type = Protocol;
  using endpoint_type = typename Protocol::endpoint;
  using acceptor_type = typename Protocol::acceptor;

  /// Opens, binds and listens on one acceptor per loop of @p group. If the
  /// port of @p endpoint is 0, the first acceptor's port (chosen by the
  /// system) is used for the others.
  /// @throws system_error naming the step that failed (an
  /// address in use without SO_REUSEPORT, for example), or
  /// operation_not_supported where the platform's SO_REUSEPORT does not
  /// spread connections (detail/platform.hpp: anywhere but Linux and
  /// FreeBSD), naming turnloop::group_acceptor.
  sharded_acceptor(loop_group& group, const endpoint_type& endpoint,
      int backlog = asio::socket_base::max_listen_connections)
  {
    if constexpr (!detail::has_balanced_reuseport)
    {
      // Elsewhere (macOS, say) sockets may share a port, but the kernel
      // does not spread connections over them: one loop could get them all.
      throw system_error(make_error_code(asio::error::operation_not_supported),
          "turnloop::sharded_acceptor: this platform's SO_REUSEPORT does not "
          "spread connections over the sockets bound to a port (Linux and "
          "FreeBSD's SO_REUSEPORT_LB do); use turnloop::group_acceptor, which "
          "deals each accepted connection to the next loop");
    }
    endpoint_type where = endpoint;
    acceptors_.reserve(group.size());
    for (std::size_t i = 0; i < group.size(); ++i)
    {
      acceptor_type& a = acceptors_.emplace_back(group.loop(i));
      detail::open_listener(a, where, backlog, true,
          "turnloop::sharded_acceptor", " for loop " + std::to_string(i));
      if (i == 0)
        where = a.local_endpoint();
    }
  }

  /// The number of acceptors: the group's size().
  std::size_t size() const noexcept
  {
    return acceptors_.size();
  }

  /// The acceptor on loop @p index.
  /// @throws system_error (invalid_argument) if
  /// @p index >= size().
  acceptor_type& acceptor(std::size_t index)
  {
    if (index >= acceptors_.size())
      throw system_error(
          make_error_code(asio::error::invalid_argument),
          "turnloop::sharded_acceptor::acceptor: index "
            + std::to_string(index) + " is out of range (size "
            + std::to_string(acceptors_.size()) + ")");
    return acceptors_[index];
  }

  /// The address and port every acceptor listens on.
  endpoint_type local_endpoint() const
  {
    return acceptors_.front().local_endpoint();
  }

private:
  std::vector<acceptor_type> acceptors_;
};

} // namespace turnloop

#endif // TURNLOOP_SHARDED_ACCEPTOR_HPP
