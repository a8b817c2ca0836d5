//
// turnloop/detail/group/open_listener.hpp
//
// Opens, binds and listens on an acceptor for the group's acceptors
// (sharded_acceptor, group_acceptor), naming the step that failed.
//

#ifndef TURNLOOP_DETAIL_GROUP_OPEN_LISTENER_HPP
#define TURNLOOP_DETAIL_GROUP_OPEN_LISTENER_HPP

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(detail/socket_option.hpp)
#include TURNLOOP_ASIO_HEADER(socket_base.hpp)

#include <string>

#include <sys/socket.h>

namespace turnloop {
namespace detail {

/// Opens @p acceptor for @p endpoint's protocol with SO_REUSEADDR (and
/// SO_REUSEPORT if @p reuse_port), binds and listens.
/// @throws system_error whose message is @p who, the step
/// that failed and @p where.
template <typename Acceptor>
void open_listener(Acceptor& acceptor,
    const typename Acceptor::endpoint_type& endpoint, int backlog,
    bool reuse_port, const char* who, const std::string& where)
{
  using reuse_port_option = asio::detail::socket_option::boolean<
      SOL_SOCKET, SO_REUSEPORT>;
  error_code ec;
  const char* step = "open";
  acceptor.open(endpoint.protocol(), ec);
  if (!ec)
  {
    step = "setsockopt(SO_REUSEADDR)";
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  }
  if (!ec && reuse_port)
  {
    step = "setsockopt(SO_REUSEPORT)";
    acceptor.set_option(reuse_port_option(true), ec);
  }
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
