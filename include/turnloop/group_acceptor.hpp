//
// turnloop/group_acceptor.hpp
//
// turnloop::group_acceptor: one listening acceptor on one loop of a
// loop_group that hands each accepted connection to the next loop, round
// robin: the socket is built on that loop and lives there from then on.
// The other way to spread connections, sharded_acceptor (SO_REUSEPORT),
// leaves the choice to the kernel. doc/loop_group.md compares the two.
//

#ifndef TURNLOOP_GROUP_ACCEPTOR_HPP
#define TURNLOOP_GROUP_ACCEPTOR_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/accept.hpp>
#include <turnloop/loop_group.hpp>
#include <turnloop/detail/group/open_listener.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/basic_socket_acceptor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <string>
#include <utility>

namespace turnloop {

/// One listening acceptor, on one loop of a group (the accepting loop),
/// whose async_accept builds each accepted socket on the next loop of the
/// group in turn, so that connections are dealt round robin over every
/// loop, the accepting loop included, each served by one thread from then
/// on.
///
/// Against sharded_acceptor: the spread is exact (C connections put C / N
/// on each loop, where the kernel's hash only averages out) and one loop
/// does all the accepting; a connection's loop is chosen when its accept is
/// started.
///
/// config::max_handles is group-wide here: every connection takes a handle
/// from the accepting loop's ceiling (a detail::ceiling under that loop's
/// handle lock, given back from whichever loop destroys the socket), so the
/// group holds at most max_handles connections accepted through this
/// acceptor, however they are spread. At the cap the acceptor does not call
/// accept, and the clients over it wait in its backlog, none reset, until a
/// connection closes on any loop. The accepting loop's stats().handles
/// count them; the other loops' handle ceilings are not used.
///
/// Executor: the executor type of the acceptor and of the sockets, by
/// default Asio's any_io_executor (so that sockets are `tcp::socket`s, as
/// sessions written for io_context take them). With
/// turnloop::loop::executor_type the sockets' completions reach the loop
/// without any_io_executor's type erasure: bench/group_http counted 16 %
/// fewer instructions per HTTP request (doc/loop_group.md).
///
/// Thread safety: acceptor(), next_executor() and async_accept() are for
/// the accepting loop's thread, or while the group is not running. Build and
/// destroy the group_acceptor while the group is not running: as with
/// turnloop::async_accept, a pending accept goes back to its acceptor, so
/// the acceptor must not be destroyed while a loop could still run one.
template <typename Protocol = boost::asio::ip::tcp,
    typename Executor = boost::asio::any_io_executor>
class group_acceptor
{
public:
  using protocol_type = Protocol;
  using endpoint_type = typename Protocol::endpoint;
  using executor_type = Executor;
  using acceptor_type = boost::asio::basic_socket_acceptor<Protocol, Executor>;
  using socket_type = accepted_socket<Protocol, Executor>;

  /// Opens, binds and listens on an acceptor on
  /// `group.loop(accepting_loop)`.
  /// @throws boost::system::system_error (invalid_argument) if
  /// @p accepting_loop >= group.size(); naming the step that failed if the
  /// acceptor cannot be opened, bound or made to listen.
  group_acceptor(loop_group& group, const endpoint_type& endpoint,
      std::size_t accepting_loop = 0,
      int backlog = boost::asio::socket_base::max_listen_connections)
    : group_(&group),
      accepting_loop_(accepting_loop),
      acceptor_(executor_type(group.loop(accepting_loop).get_executor()))
  {
    detail::open_listener(acceptor_, endpoint, backlog, false,
        "turnloop::group_acceptor",
        " on loop " + std::to_string(accepting_loop));
  }

  /// The listening acceptor, on loop accepting_loop().
  acceptor_type& acceptor() noexcept
  {
    return acceptor_;
  }

  /// The index of the loop the acceptor is on.
  std::size_t accepting_loop() const noexcept
  {
    return accepting_loop_;
  }

  /// The address and port the acceptor listens on.
  endpoint_type local_endpoint() const
  {
    return acceptor_.local_endpoint();
  }

  /// The executor of the loop the next accept's socket will live on, and a
  /// step of the round robin.
  executor_type next_executor()
  {
    const std::size_t i = next_;
    next_ = (next_ + 1) % group_->size();
    return executor_type(group_->loop(i).get_executor());
  }

  /// Accepts a connection, as turnloop::async_accept, on a socket built on
  /// next_executor()'s loop.
  ///
  /// @param token The completion token, for the signature
  /// `void(boost::system::error_code, socket_type)`. The handler runs
  /// through its own executor (by default the accepting loop's); start the
  /// session on `socket.get_executor()`, the socket's own loop, for example
  /// with `co_spawn(socket.get_executor(), session(std::move(socket)),
  /// detached)`.
  template <boost::asio::completion_token_for<void(boost::system::error_code,
      socket_type)> AcceptToken
        = boost::asio::default_completion_token_t<executor_type>>
  auto async_accept(AcceptToken&& token
      = boost::asio::default_completion_token_t<executor_type>())
  {
    return turnloop::async_accept(acceptor_, next_executor(),
        std::forward<AcceptToken>(token));
  }

private:
  loop_group* group_;
  std::size_t accepting_loop_;
  std::size_t next_ = 0;
  acceptor_type acceptor_;
};

} // namespace turnloop

#endif // TURNLOOP_GROUP_ACCEPTOR_HPP
