//
// turnloop/group_acceptor.hpp
//
// turnloop::group_acceptor: one listening acceptor on one loop of a
// loop_group that hands each accepted connection to a loop of the group,
// round robin or the one with the fewest live connections: the socket is
// built on that loop and lives there from then on.
// The other way to spread connections, sharded_acceptor (SO_REUSEPORT),
// leaves the choice to the kernel. doc/loop_group.md compares the two.
//

#ifndef TURNLOOP_GROUP_ACCEPTOR_HPP
#define TURNLOOP_GROUP_ACCEPTOR_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/accept.hpp>
#include <turnloop/loop_group.hpp>
#include <turnloop/detail/group/connection_counts.hpp>
#include <turnloop/detail/group/open_listener.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(any_io_executor.hpp)
#include TURNLOOP_ASIO_HEADER(async_result.hpp)
#include TURNLOOP_ASIO_HEADER(basic_socket_acceptor.hpp)
#include TURNLOOP_ASIO_HEADER(ip/tcp.hpp)
#include TURNLOOP_ASIO_HEADER(socket_base.hpp)

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

namespace turnloop {

/// How a group_acceptor chooses the loop of each connection it accepts.
enum class placement
{
  /// The next loop in turn: C connections put C / N on each loop, whatever
  /// became of them since.
  round_robin,

  /// The loop that holds the fewest of the acceptor's live connections
  /// (ties go round robin), so that loops whose connections closed early
  /// get the next ones: the least-loaded placement, load being counted in
  /// connections.
  least_connections
};

/// One listening acceptor, on one loop of a group (the accepting loop),
/// whose async_accept builds each accepted socket on a loop of the group
/// (the accepting loop included) chosen by its placement, each served by
/// one thread from then on.
///
/// Placement: the acceptor counts, per loop, the connections it dealt there
/// that are still open (a socket counts itself out when it is destroyed,
/// on whichever thread), and its pending accept. placement::
/// least_connections (the default) deals each connection to the loop with
/// the lowest count, ties round robin; placement::round_robin deals to the
/// loops in turn regardless. With connections of equal lifetimes the two
/// deal alike; when the connections of one loop close early, the first
/// refills that loop, the second keeps dealing the others their share.
/// connections(i) reads the counts. A connection's loop is chosen when its
/// accept is started.
///
/// Against sharded_acceptor: the spread follows the counts (C connections
/// put C / N on each loop, where the kernel's hash only averages out) and
/// one loop does all the accepting.
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
/// the accepting loop's thread, or while the group is not running;
/// connections() for any thread. Build and destroy the group_acceptor while the group is not running: as with
/// turnloop::async_accept, a pending accept goes back to its acceptor, so
/// the acceptor must not be destroyed while a loop could still run one.
template <typename Protocol = asio::ip::tcp,
    typename Executor = asio::any_io_executor>
class group_acceptor
{
public:
  using protocol_type = Protocol;
  using endpoint_type = typename Protocol::endpoint;
  using executor_type = Executor;
  using acceptor_type = asio::basic_socket_acceptor<Protocol, Executor>;
  using socket_type = accepted_socket<Protocol, Executor>;

  /// Opens, binds and listens on an acceptor on
  /// `group.loop(accepting_loop)`, placing connections by @p how.
  /// @throws system_error (invalid_argument) if
  /// @p accepting_loop >= group.size(); naming the step that failed if the
  /// acceptor cannot be opened, bound or made to listen.
  group_acceptor(loop_group& group, const endpoint_type& endpoint,
      turnloop::placement how, std::size_t accepting_loop = 0,
      int backlog = asio::socket_base::max_listen_connections)
    : group_(&group),
      accepting_loop_(accepting_loop),
      placement_(how),
      counts_(detail::connection_counts::make(group.size())),
      acceptor_(executor_type(group.loop(accepting_loop).get_executor()))
  {
    detail::open_listener(acceptor_, endpoint, backlog, false,
        "turnloop::group_acceptor",
        " on loop " + std::to_string(accepting_loop));
  }

  /// As above, with placement::least_connections.
  group_acceptor(loop_group& group, const endpoint_type& endpoint,
      std::size_t accepting_loop = 0,
      int backlog = asio::socket_base::max_listen_connections)
    : group_acceptor(group, endpoint, turnloop::placement::least_connections,
        accepting_loop, backlog)
  {
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

  /// How connections are placed.
  turnloop::placement placement() const noexcept
  {
    return placement_;
  }

  /// The number of connections this acceptor dealt to loop @p index that
  /// are still open (their sockets not destroyed), plus the pending accept
  /// if its socket is to live there. Any thread; a snapshot.
  /// @throws system_error (invalid_argument) if
  /// @p index >= the group's size().
  std::size_t connections(std::size_t index) const
  {
    group_->loop(index); // checks the index
    return counts_->live(index);
  }

  /// The executor of the loop the placement chooses now, and a step of it
  /// (of the round robin, or of the turn that breaks ties). It counts
  /// nothing: async_accept() chooses the same way and counts its socket.
  executor_type next_executor()
  {
    return executor_type(group_->loop(choose()).get_executor());
  }

  /// Accepts a connection, as turnloop::async_accept, on a socket built on
  /// the loop the placement chooses (as next_executor() does), counted on
  /// that loop from now until the socket is destroyed (or the accept
  /// fails).
  ///
  /// @param token The completion token, for the signature
  /// `void(error_code, socket_type)`. The handler runs
  /// through its own executor (by default the accepting loop's); start the
  /// session on `socket.get_executor()`, the socket's own loop, for example
  /// with `co_spawn(socket.get_executor(), session(std::move(socket)),
  /// detached)`.
  template <asio::completion_token_for<void(error_code,
      socket_type)> AcceptToken
        = asio::default_completion_token_t<executor_type>>
  auto async_accept(AcceptToken&& token
      = asio::default_completion_token_t<executor_type>())
  {
    const std::size_t i = choose();
    return asio::async_initiate<AcceptToken,
      void(error_code, socket_type)>(
        detail::initiate_accept<Protocol, Executor>(acceptor_,
          executor_type(group_->loop(i).get_executor())),
        token, detail::connection_counts::take(counts_, i));
  }

private:
  // The loop for the next connection; the turn moves past it.
  std::size_t choose() noexcept
  {
    const std::size_t n = counts_->size();
    std::size_t chosen = next_;
    if (placement_ == turnloop::placement::least_connections)
    {
      std::size_t fewest = counts_->live(chosen);
      for (std::size_t k = 1; k < n && fewest != 0; ++k)
      {
        const std::size_t i = (next_ + k) % n;
        const std::size_t live = counts_->live(i);
        if (live < fewest)
        {
          fewest = live;
          chosen = i;
        }
      }
    }
    next_ = (chosen + 1) % n;
    return chosen;
  }

  loop_group* group_;
  std::size_t accepting_loop_;
  turnloop::placement placement_;
  std::shared_ptr<detail::connection_counts> counts_;
  std::size_t next_ = 0;
  acceptor_type acceptor_;
};

} // namespace turnloop

#endif // TURNLOOP_GROUP_ACCEPTOR_HPP
