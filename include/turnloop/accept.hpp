//
// turnloop/accept.hpp
//
// turnloop::async_accept: accepting connections within the loop's
// config::max_handles, so that the ceiling caps live connections. An accept
// reserves a handle before it calls accept; at the ceiling it does not call
// accept, and further connections wait in the kernel's listen backlog (not
// accepted, not reset) until a connection is closed. doc/accept.md has more.
//

#ifndef TURNLOOP_ACCEPT_HPP
#define TURNLOOP_ACCEPT_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/handle_stats.hpp>
#include <turnloop/loop.hpp>
#include <turnloop/detail/accept/accept_op.hpp>
#include <turnloop/detail/accept/handle_unit.hpp>
#include <turnloop/detail/ceiling_unit.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(any_io_executor.hpp)
#include TURNLOOP_ASIO_HEADER(async_result.hpp)
#include TURNLOOP_ASIO_HEADER(basic_socket_acceptor.hpp)
#include TURNLOOP_ASIO_HEADER(basic_stream_socket.hpp)

#include <type_traits>
#include <utility>

namespace turnloop {

namespace detail {

// Holds an accepted socket's handle, and its unit of the live count of a
// group_acceptor's loop if it was dealt by one. A base class placed before
// the socket, so that the socket (and its descriptor) is destroyed first: a
// handle is never free, nor a connection counted out, while the descriptor
// it stood for is still open.
struct handle_holder
{
  handle_unit handle_;
  ceiling_unit placed_;
};

} // namespace detail

/// A connection accepted by turnloop::async_accept: an ordinary
/// `basic_stream_socket` (read, write, co_await, shutdown and close work as
/// usual) that also owns one of its loop's config::max_handles handles.
///
/// Destroying it gives the handle back, after closing the socket; the next
/// accept waiting for a handle then proceeds. Moving it moves the handle; a
/// move assignment gives back the target's own handle after closing its
/// socket. close() does not give the handle back: the handle belongs to the
/// object, not to the descriptor. Moving it into a plain
/// `basic_stream_socket` moves the connection but not the handle, which
/// stays with this object until it is destroyed.
///
/// Thread safety: as basic_stream_socket. It may be destroyed on any thread
/// (no operation pending on it, as for any socket); its handle is then
/// given back from that thread.
template <typename Protocol, typename Executor = asio::any_io_executor>
class accepted_socket
  : private detail::handle_holder,
    public asio::basic_stream_socket<Protocol, Executor>
{
public:
  using socket_type = asio::basic_stream_socket<Protocol, Executor>;
  using executor_type = Executor;

  /// An empty socket: not open, holding no handle (what async_accept passes
  /// with an error).
  explicit accepted_socket(const executor_type& ex)
    : socket_type(ex)
  {
  }

  accepted_socket(accepted_socket&& other) = default;

  accepted_socket& operator=(accepted_socket&& other)
  {
    socket_type::operator=(std::move(other));
    handle_ = std::move(other.handle_);
    placed_ = std::move(other.placed_);
    return *this;
  }

  ~accepted_socket() = default;

private:
  template <typename, typename, typename>
  friend class detail::accept_op;

  accepted_socket(socket_type&& socket, detail::handle_unit&& handle,
      detail::ceiling_unit&& placed)
    : detail::handle_holder{std::move(handle), std::move(placed)},
      socket_type(std::move(socket))
  {
  }
};

/// Accepts a connection on @p acceptor, holding one of the loop's
/// config::max_handles handles for it.
///
/// The handle is reserved before accept is called. With every handle in
/// use the operation does not call accept: it waits, first come first
/// served with the other accepts waiting, until an accepted_socket is
/// destroyed, and connections meanwhile wait in the kernel's listen backlog.
/// When accept fails for want of descriptors or memory (EMFILE, ENFILE,
/// ENOBUFS, ENOMEM), the operation keeps its handle and tries again after a
/// backoff (5 ms, doubling to 1 s), rather than completing with an error a
/// server would retry at once (a busy loop) or give up on.
///
/// @param acceptor A listening acceptor on a turnloop::loop. It must stay
/// valid (not destroyed or moved) until the handler is called; closing or
/// cancelling it completes the operation with operation_aborted, whether it
/// is in accept or waiting for a handle.
/// @param token The completion token, for the signature
/// `void(error_code, accepted_socket<Protocol, Executor>)`.
/// The socket is empty when the error is set. Errors: those of accept;
/// operation_aborted (the acceptor was cancelled or closed, or the
/// handler's cancellation slot was emitted: terminal, partial and total
/// cancellation are supported, in either state); turnloop::error::
/// resource_limit if config::max_operations operations are outstanding
/// (each accept is one, from submission until its handler is called);
/// no_memory if, after submission, the accept could not be parked or
/// re-issued for lack of memory (its handle goes to the next in line);
/// operation_not_supported if the acceptor is not on a turnloop::loop.
/// Every outcome is delivered through the handler's executor, never
/// inside this call.
///
/// Thread safety: as the acceptor's own async_accept: call it on the loop's
/// thread, or while no thread runs the loop.
template <typename Protocol, typename Executor,
    asio::completion_token_for<void(error_code,
      accepted_socket<Protocol, Executor>)> AcceptToken
        = asio::default_completion_token_t<Executor>>
  requires detail::accepts_streams<Protocol, Executor>
auto async_accept(asio::basic_socket_acceptor<Protocol, Executor>& acceptor,
    AcceptToken&& token = asio::default_completion_token_t<Executor>())
  -> decltype(asio::async_initiate<AcceptToken,
      void(error_code, accepted_socket<Protocol, Executor>)>(
        std::declval<detail::initiate_accept<Protocol, Executor>>(), token));

/// As async_accept(acceptor, token), but the accepted socket is built on
/// @p peer_executor, so that it lives on another loop from the start (its
/// descriptor registered with that loop's reactor, as Asio's
/// `acceptor.async_accept(executor, token)` does). The handle still comes
/// from the acceptor's loop: its config::max_handles caps the connections
/// accepted through the acceptor wherever they live, and a socket's handle
/// goes back to it when the socket is destroyed, on whichever thread.
/// turnloop::group_acceptor uses this to hand connections to the loops of
/// a group.
///
/// The handler is called through its own executor (by default the
/// acceptor's, on the acceptor's loop), not the peer's: post the socket's
/// session to `socket.get_executor()` to run it on its own loop.
template <typename Protocol, typename Executor,
    asio::completion_token_for<void(error_code,
      accepted_socket<Protocol, Executor>)> AcceptToken
        = asio::default_completion_token_t<Executor>>
  requires detail::accepts_streams<Protocol, Executor>
auto async_accept(asio::basic_socket_acceptor<Protocol, Executor>& acceptor,
    const std::type_identity_t<Executor>& peer_executor,
    AcceptToken&& token = asio::default_completion_token_t<Executor>())
  -> decltype(asio::async_initiate<AcceptToken,
      void(error_code, accepted_socket<Protocol, Executor>)>(
        std::declval<detail::initiate_accept<Protocol, Executor>>(), token));

/// A snapshot of @p l's handles and of the accepts waiting for them. Any
/// thread.
TURNLOOP_DECL handle_stats handle_statistics(loop& l);

} // namespace turnloop

#include <turnloop/impl/accept.hpp>
#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/impl/accept.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_ACCEPT_HPP
