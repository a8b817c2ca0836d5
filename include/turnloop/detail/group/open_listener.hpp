//
// turnloop/detail/group/open_listener.hpp
//
// Opens, binds and listens on an acceptor for the group's acceptors
// (sharded_acceptor, group_acceptor), naming the step that failed.
//

#ifndef TURNLOOP_DETAIL_GROUP_OPEN_LISTENER_HPP
#define TURNLOOP_DETAIL_GROUP_OPEN_LISTENER_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/platform.hpp>
#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(detail/socket_option.hpp)
#include TURNLOOP_ASIO_HEADER(detail/socket_types.hpp)
#include TURNLOOP_ASIO_HEADER(socket_base.hpp)

#include <string>

namespace turnloop {
namespace detail {

#if defined(TURNLOOP_HAS_BALANCED_REUSEPORT)
/// The option that makes the kernel spread a port's connections over the
/// sockets bound to it (detail/platform.hpp): FreeBSD's SO_REUSEPORT_LB
/// (written for it, not run here), Linux's SO_REUSEPORT.
# if defined(SO_REUSEPORT_LB)
using balanced_reuse_port = asio::detail::socket_option::boolean<
    SOL_SOCKET, SO_REUSEPORT_LB>;
# else // defined(SO_REUSEPORT_LB)
using balanced_reuse_port = asio::detail::socket_option::boolean<
    SOL_SOCKET, SO_REUSEPORT>;
# endif // defined(SO_REUSEPORT_LB)
#endif // defined(TURNLOOP_HAS_BALANCED_REUSEPORT)

/// Opens @p acceptor for @p endpoint's protocol with SO_REUSEADDR (and the
/// balancing SO_REUSEPORT if @p reuse_port, where the platform has it: the
/// caller refuses otherwise), binds and listens. On Windows without
/// SO_REUSEADDR: there it lets a socket bind a port another socket is
/// listening on (when both set it), so a port in use would not be refused;
/// and a listener binds a port with connections in TIME_WAIT without it.
/// @throws system_error whose message is @p who, the step
/// that failed and @p where.
template <typename Acceptor>
void open_listener(Acceptor& acceptor,
    const typename Acceptor::endpoint_type& endpoint, int backlog,
    bool reuse_port, const char* who, const std::string& where)
{
  error_code ec;
  const char* step = "open";
  acceptor.open(endpoint.protocol(), ec);
#if !defined(TURNLOOP_HAS_WINSOCK)
  if (!ec)
  {
    step = "setsockopt(SO_REUSEADDR)";
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  }
#endif // !defined(TURNLOOP_HAS_WINSOCK)
#if defined(TURNLOOP_HAS_BALANCED_REUSEPORT)
  if (!ec && reuse_port)
  {
    step = "setsockopt(SO_REUSEPORT)";
    acceptor.set_option(balanced_reuse_port(true), ec);
  }
#endif // defined(TURNLOOP_HAS_BALANCED_REUSEPORT)
  if (!ec)
  {
    step = "bind";
    acceptor.bind(endpoint, ec);
  }
  if (!ec)
  {
    step = "listen";
    acceptor.listen(backlog, ec);
  }
  if (ec)
    throw system_error(ec,
        std::string(who) + ": " + step + where);
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_GROUP_OPEN_LISTENER_HPP
