//
// turnloop/detail/pool/pooled_recv_op.hpp
//
// How a pooled read of a socket waits for data: as one of the reactor's
// own read operations, like Asio's async_receive, except that the
// buffer is taken from the pool when the reactor performs the read, not when
// the read starts. An async_wait(wait_read) would do as well for holding no
// buffer, but Asio re-arms the descriptor (epoll_ctl) at every such wait, a
// system call per message that a reactor read operation does not make: it
// is queued on the descriptor's edge-triggered registration and performed
// when the next edge arrives.
//
// (On select, which ignores allow_speculative, the read waits for the next
// select; it is no re-arm there either.)
//
// The reactor and the socket's registration are Asio internals: they are
// reached only when the socket's implementation is the reactor's (see
// reactor_socket), else a pooled read uses async_wait. With Asio's io_uring
// backend, and on Windows (IOCP), no reactor serves sockets
// (TURNLOOP_HAS_SOCKET_REACTOR undefined, detail/platform.hpp): every
// pooled read uses async_wait, which on Windows is a zero-byte WSARecv.
//

#ifndef TURNLOOP_DETAIL_POOL_POOLED_RECV_OP_HPP
#define TURNLOOP_DETAIL_POOL_POOLED_RECV_OP_HPP

#include <turnloop/detail/config.hpp>

#if defined(TURNLOOP_HAS_SOCKET_REACTOR)
# include <turnloop/detail/engine/loop_core.hpp>
# include <turnloop/detail/engine/turn_reactor.hpp>
#endif // defined(TURNLOOP_HAS_SOCKET_REACTOR)

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(cancellation_type.hpp)
#if defined(TURNLOOP_HAS_SOCKET_REACTOR)
# include TURNLOOP_ASIO_HEADER(detail/reactor.hpp)
#endif // defined(TURNLOOP_HAS_SOCKET_REACTOR)
#include TURNLOOP_ASIO_HEADER(detail/handler_alloc_helpers.hpp)
#include TURNLOOP_ASIO_HEADER(detail/memory.hpp)
#include TURNLOOP_ASIO_HEADER(detail/reactor_op.hpp)

#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace turnloop {
namespace detail {

/// The pooled read's reactor operation (below, where there is a reactor).
template <typename Handler, typename Lease>
class pooled_recv_op;

/// Reaches a socket's implementation, a protected member of Asio's
/// basic_socket, as a class derived from the socket may.
template <typename Stream>
struct socket_implementation_of : Stream
{
  static auto& get(Stream& s) noexcept
  {
    return (s.*(&socket_implementation_of::impl_)).get_implementation();
  }
};

#if !defined(TURNLOOP_HAS_SOCKET_REACTOR)

/// No socket is a reactor's: Asio's io_uring service, or its IOCP context,
/// serves them all.
template <typename Stream>
concept reactor_socket = false;

#else // !defined(TURNLOOP_HAS_SOCKET_REACTOR)

/// The reactor that serves sockets: epoll, kqueue, /dev/poll or select.
using socket_reactor = asio::detail::reactor;

/// A socket served by the reactor: its implementation holds the
/// descriptor and the reactor's registration of it.
template <typename Stream>
concept reactor_socket = !std::is_final_v<Stream>
  && requires(Stream& s)
  {
    { socket_implementation_of<Stream>::get(s).socket_ }
      -> std::convertible_to<int>;
    { socket_implementation_of<Stream>::get(s).reactor_data_ }
      -> std::same_as<socket_reactor::per_descriptor_data&>;
  };

/// Installed in the read's cancellation slot while the reactor holds it, as
/// Asio's own reactor operations do. Any cancellation type is honoured.
class pooled_recv_cancellation
{
public:
  pooled_recv_cancellation(socket_reactor& reactor,
      socket_reactor::per_descriptor_data& data, int descriptor) noexcept
    : reactor_(&reactor),
      data_(&data),
      descriptor_(descriptor)
  {
  }

  void operator()(asio::cancellation_type_t type) const
  {
    if (type != asio::cancellation_type::none)
      reactor_->cancel_ops_by_key(descriptor_, *data_,
          socket_reactor::read_op, const_cast<pooled_recv_cancellation*>(this));
  }

private:
  socket_reactor* reactor_;
  socket_reactor::per_descriptor_data* data_;
  int descriptor_;
};

/// The reactor operation. @p Handler is the pooled read (read_pooled_op),
/// which provides
///   reactor_op::status perform_recv(error_code&, Lease&, bool&)
///     the read itself, run by the reactor on the loop's thread;
///   void on_recv(const error_code&, Lease, bool needs_buffer)
///     its continuation, run as the operation's completion.
/// @p Lease is turnloop::buffer_lease, a parameter so that this header
/// needs no public one.
/// The operation's memory comes from the read's allocator, which is its
/// user handler's.
template <typename Handler, typename Lease>
class pooled_recv_op final : public asio::detail::reactor_op
{
public:
  TURNLOOP_ASIO_DEFINE_HANDLER_PTR(pooled_recv_op);

  explicit pooled_recv_op(Handler&& handler)
    : reactor_op(error_code(), &pooled_recv_op::do_perform,
        &pooled_recv_op::do_complete),
      handler_(std::move(handler))
  {
  }

  /// Queues @p handler's read on the registration @p data of @p core's
  /// reactor. Only on the loop's thread may the reactor try the read at
  /// once (@p speculative): the pool belongs to that thread.
  static void start(Handler&& handler, loop_core& core, int descriptor,
      socket_reactor::per_descriptor_data& data, bool speculative)
  {
    socket_reactor& reactor = core.reactor();
    // Memory and the slot's canceller first, the handler last: an
    // allocation that fails leaves the handler with the caller.
    auto slot = handler.get_cancellation_slot();
    ptr p = { asio::detail::addressof(handler),
      ptr::allocate(handler), 0 };
    void* key = nullptr;
    if (slot.is_connected())
      key = &slot.template emplace<pooled_recv_cancellation>(reactor, data,
          descriptor);
    p.p = new (p.v) pooled_recv_op(std::move(handler));
    p.p->cancellation_key_ = key;
    reactor.start_op(socket_reactor::read_op, descriptor, data, p.p, false,
        speculative);
    p.v = p.p = 0;
  }

private:
  static status do_perform(reactor_op* base)
  {
    pooled_recv_op* o = static_cast<pooled_recv_op*>(base);
    return o->handler_.perform_recv(o->ec_, o->lease_, o->needs_buffer_);
  }

  static void do_complete(void* owner, asio::detail::operation* base,
      const error_code&, std::size_t)
  {
    pooled_recv_op* o = static_cast<pooled_recv_op*>(base);
    ptr p = { asio::detail::addressof(o->handler_), o, o };

    // Moved out so that the operation's memory is free before the read
    // goes on, which may start the next operation.
    Handler handler(std::move(o->handler_));
    const error_code ec = o->ec_;
    Lease lease(std::move(o->lease_));
    const bool needs_buffer = o->needs_buffer_;
    p.h = asio::detail::addressof(handler);
    p.reset();

    // Without an owner the loop is being destroyed: the read, and any
    // buffer it read into, go without running.
    if (owner)
      handler.on_recv(ec, std::move(lease), needs_buffer);
  }

  Handler handler_;
  Lease lease_;
  bool needs_buffer_ = false;
};

#endif // !defined(TURNLOOP_HAS_SOCKET_REACTOR)

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_POOL_POOLED_RECV_OP_HPP
