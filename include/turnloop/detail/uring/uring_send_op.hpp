//
// turnloop/detail/uring/uring_send_op.hpp
//
// turnloop::async_write_lease on the io_uring path: the lease's bytes are
// sent with io_uring sends, submitted in the turn's batch (a short send is
// sent on from where it stopped), and the lease is released when the last
// byte is written, before the handler runs. close(), cancel() and the
// handler's cancellation slot end it as they end a receive (pool_ring.hpp).
//

#ifndef TURNLOOP_DETAIL_URING_URING_SEND_OP_HPP
#define TURNLOOP_DETAIL_URING_URING_SEND_OP_HPP

#include <turnloop/detail/config.hpp>

// turnloop's io_uring path: Linux with Asio's epoll reactor
// (detail/platform.hpp).
#if defined(TURNLOOP_HAS_IO_URING_PATH)
#include <turnloop/detail/uring/pool_ring.hpp>
#include <turnloop/detail/uring/uring_recv_op.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(associated_cancellation_slot.hpp)
#include TURNLOOP_ASIO_HEADER(error.hpp)
#include TURNLOOP_ASIO_HEADER(detail/handler_alloc_helpers.hpp)
#include TURNLOOP_ASIO_HEADER(detail/memory.hpp)

#include <cstddef>
#include <optional>
#include <utility>

namespace turnloop {
namespace detail {

/// @p Handler (a write_lease_delivery) calls the user's handler: it is moved
/// in whole with its handler and called as delivery(ec, bytes) on the loop's
/// thread. @p Lease is turnloop::buffer_lease, a parameter so that this
/// header needs no public one.
template <typename Handler, typename Lease>
class uring_send_op final : public uring_op
{
public:
  TURNLOOP_ASIO_DEFINE_HANDLER_PTR(uring_send_op);

  using epoll_reactor = asio::detail::epoll_reactor;

  /// Sends @p lease's bytes on @p fd, registered as @p data.
  /// @throws std::bad_alloc, leaving @p delivery and @p lease with the
  /// caller.
  static void start(Handler& delivery, Lease& lease, pool_ring& ring,
      int fd, epoll_reactor::per_descriptor_data& data)
  {
    ptr p = { asio::detail::addressof(delivery),
      ptr::allocate(delivery), 0 };
    p.p = ring.begin<uring_send_op>(
        asio::get_associated_cancellation_slot(delivery), p.v, fd,
        data, [&](void* memory) noexcept {
          return new (memory) uring_send_op(std::move(delivery),
              std::move(lease), ring, fd);
        });
    p.p->send();
    p.v = p.p = 0;
  }

private:
  uring_send_op(Handler&& delivery, Lease&& lease, pool_ring& ring,
      int fd) noexcept
    : uring_op(&uring_send_op::do_complete),
      delivery_(std::move(delivery)),
      lease_(std::move(lease)),
      ring_(ring),
      fd_(fd)
  {
  }

  void send() noexcept
  {
    const auto bytes = lease_.data();
    ring_.submit_send(*this, fd_,
        static_cast<const char*>(bytes.data()) + written_,
        bytes.size() - written_);
  }

  static void do_complete(void* owner, asio::detail::operation* base,
      const error_code&, std::size_t)
  {
    uring_send_op* o = static_cast<uring_send_op*>(base);
    ptr p = { asio::detail::addressof(o->delivery_), o, o };
    if (!owner)
    {
      pool_ring::unwatch(*o);
      return;
    }

    const int res = o->result_.res;
    error_code ec;
    if (res >= 0)
    {
      o->written_ += static_cast<std::size_t>(res);
      if (o->written_ < o->lease_.size() && !o->aborted_ && res > 0)
      {
        o->send();
        p.v = p.p = 0;
        return;
      }
      if (o->written_ < o->lease_.size())
        ec = res == 0 && !o->aborted_
          ? error_code(asio::error::eof)
          : error_code(asio::error::operation_aborted);
    }
    else
      ec = uring_error(res, false);
    pool_ring::unwatch(*o);
    asio::get_associated_cancellation_slot(o->delivery_).clear();

    // The buffer goes back first, then the operation's memory, then the
    // handler runs.
    const std::size_t written = o->written_;
    o->lease_ = Lease();
    Handler delivery(std::move(o->delivery_));
    p.h = asio::detail::addressof(delivery);
    p.reset();
    delivery(ec, written);
  }

  Handler delivery_;
  Lease lease_;
  pool_ring& ring_;
  int fd_;
  std::size_t written_ = 0;
};

} // namespace detail
} // namespace turnloop

#else // defined(TURNLOOP_HAS_IO_URING_PATH)

namespace turnloop {
namespace detail {

/// Named only: async_write_lease's ring branch is discarded here.
template <typename Handler, typename Lease>
class uring_send_op;

} // namespace detail
} // namespace turnloop

#endif // defined(TURNLOOP_HAS_IO_URING_PATH)

#endif // TURNLOOP_DETAIL_URING_URING_SEND_OP_HPP
