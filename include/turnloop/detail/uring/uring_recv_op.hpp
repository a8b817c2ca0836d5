//
// turnloop/detail/uring/uring_recv_op.hpp
//
// A pooled read of a socket as an io_uring receive: the kernel waits for
// data and picks a buffer from the ring when it arrives, so the read holds
// none while it waits, and the turn's receives are submitted with one
// system call. If data finds the ring empty (-ENOBUFS), the read takes a
// buffer from the pool (minting one if the ceiling allows), lends it to the
// ring and tries again; at the ceiling it hands over to the pool's wait for
// a buffer, as the epoll path does.
//
// @p Handler is the pooled read (read_pooled_op), which provides
//   int refill_ring(pool_ring&)
//     on -ENOBUFS: lends the ring a buffer (0), finds the pool at its
//     ceiling (1), or fails to mint one for lack of memory (2);
//   void on_ring_recv(const error_code&, pooled_buffer*, std::size_t,
//       bool needs_buffer)
//     its continuation, with the buffer read into (or one to give back).
//

#ifndef TURNLOOP_DETAIL_URING_URING_RECV_OP_HPP
#define TURNLOOP_DETAIL_URING_URING_RECV_OP_HPP

#include <turnloop/detail/config.hpp>

// turnloop's io_uring path: Linux with Asio's epoll reactor
// (detail/platform.hpp).
#if defined(TURNLOOP_HAS_IO_URING_PATH)
#include <turnloop/detail/pool/buffer_store.hpp>
#include <turnloop/detail/uring/pool_ring.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(error.hpp)
#include TURNLOOP_ASIO_HEADER(detail/handler_alloc_helpers.hpp)
#include TURNLOOP_ASIO_HEADER(detail/memory.hpp)

#include <cerrno>
#include <utility>

namespace turnloop {
namespace detail {

/// The error an io_uring completion's result stands for.
inline error_code uring_error(int res, bool aborted) noexcept
{
  if (res == -ECANCELED || aborted)
    return asio::error::operation_aborted;
  return error_code(-res,
      asio::error::get_system_category());
}

template <typename Handler>
class uring_recv_op final : public uring_op
{
public:
  TURNLOOP_ASIO_DEFINE_HANDLER_PTR(uring_recv_op);

  using epoll_reactor = asio::detail::epoll_reactor;

  /// Submits @p handler's read of @p fd, registered with the reactor as
  /// @p data (where its watcher is queued if it has none yet).
  /// @throws std::bad_alloc, leaving @p handler with the caller.
  static void start(Handler&& handler, pool_ring& ring, int fd,
      epoll_reactor::per_descriptor_data& data, bool poll_first)
  {
    ptr p = { asio::detail::addressof(handler),
      ptr::allocate(handler), 0 };
    p.p = ring.begin<uring_recv_op>(handler.get_cancellation_slot(), p.v, fd,
        data, [&](void* memory) noexcept {
          return new (memory) uring_recv_op(std::move(handler), ring, fd);
        });
    ring.top_up();
    ring.submit_recv(*p.p, fd, poll_first);
    p.v = p.p = 0;
  }

private:
  uring_recv_op(Handler&& handler, pool_ring& ring, int fd) noexcept
    : uring_op(&uring_recv_op::do_complete),
      handler_(std::move(handler)),
      ring_(ring),
      fd_(fd)
  {
  }

  static void do_complete(void* owner, asio::detail::operation* base,
      const error_code&, std::size_t)
  {
    uring_recv_op* o = static_cast<uring_recv_op*>(base);
    ptr p = { asio::detail::addressof(o->handler_), o, o };

    if (!owner)
    {
      // Destroyed unrun, with the loop: a buffer it received goes back.
      if (o->buffer_)
        buffer_store::release(std::exchange(o->buffer_, nullptr));
      pool_ring::unwatch(*o);
      return;
    }

    const uring_result r = o->result_;
    if (std::exchange(o->reclaimed_, false) && r.res == -ECANCELED
        && !o->aborted_)
    {
      // Cancelled by the ring to take its buffers back, not by its owner:
      // submitted again (or held until they are back).
      o->ring_.top_up();
      o->ring_.submit_recv(*o, o->fd_, true);
      p.v = p.p = 0;
      return;
    }
    bool needs_buffer = false;
    error_code ec;
    if (r.res == -ENOBUFS && !o->aborted_)
    {
      // Data arrived to an empty ring.
      switch (o->handler_.refill_ring(o->ring_))
      {
      case 0:
        o->ring_.submit_recv(*o, o->fd_, false);
        p.v = p.p = 0;
        return;
      case 1:
        needs_buffer = true;
        break;
      default:
        ec = asio::error::no_memory;
        break;
      }
    }
    pool_ring::unwatch(*o);
    o->handler_.get_cancellation_slot().clear();

    std::size_t n = 0;
    if (needs_buffer || ec)
      ;
    else if (r.res > 0)
      n = static_cast<std::size_t>(r.res); // delivered, even if aborted since
    else if (r.res == 0)
      ec = o->aborted_ ? error_code(
          asio::error::operation_aborted)
        : error_code(asio::error::eof);
    else
      ec = uring_error(r.res, o->aborted_);

    // Moved out so that the operation's memory is free before the read
    // goes on, which may start the next operation.
    Handler handler(std::move(o->handler_));
    pooled_buffer* b = std::exchange(o->buffer_, nullptr);
    p.h = asio::detail::addressof(handler);
    p.reset();
    handler.on_ring_recv(ec, b, n, needs_buffer);
  }

  Handler handler_;
  pool_ring& ring_;
  int fd_;
};

} // namespace detail
} // namespace turnloop

#else // defined(TURNLOOP_HAS_IO_URING_PATH)

namespace turnloop {
namespace detail {

/// Named only: read_pooled_op's ring branch is discarded here.
template <typename Handler>
class uring_recv_op;

} // namespace detail
} // namespace turnloop

#endif // defined(TURNLOOP_HAS_IO_URING_PATH)

#endif // TURNLOOP_DETAIL_URING_URING_RECV_OP_HPP
