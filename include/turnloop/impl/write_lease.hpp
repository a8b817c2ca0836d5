//
// turnloop/impl/write_lease.hpp
//

#ifndef TURNLOOP_IMPL_WRITE_LEASE_HPP
#define TURNLOOP_IMPL_WRITE_LEASE_HPP

#include <turnloop/buffer_pool.hpp>
#include <turnloop/detail/foreign_delivery.hpp>
#include <turnloop/detail/pool/buffer_pool_of.hpp>
#include <turnloop/detail/pool/pooled_recv_op.hpp>
#include <turnloop/detail/uring/uring_send_op.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(associated_allocator.hpp)
#include TURNLOOP_ASIO_HEADER(associated_cancellation_slot.hpp)
#include TURNLOOP_ASIO_HEADER(associated_executor.hpp)
#include TURNLOOP_ASIO_HEADER(consign.hpp)
#include TURNLOOP_ASIO_HEADER(post.hpp)
#include TURNLOOP_ASIO_HEADER(write.hpp)
#include TURNLOOP_ASIO_HEADER(detail/bind_handler.hpp)

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace turnloop {
namespace detail {

/// The user's handler, as the io_uring write calls it: directly when its
/// executor is the loop's own, else through a delivery reserved at the
/// start (foreign_delivery.hpp).
template <typename Handler, typename Executor>
class write_lease_delivery
{
public:
  using allocator_type =
    asio::associated_allocator_t<Handler, std::allocator<void>>;
  using cancellation_slot_type =
    asio::associated_cancellation_slot_t<Handler>;
  using reservation = reserved_delivery<Handler, Executor,
        error_code, std::size_t>;

  write_lease_delivery(Handler&& handler,
      std::optional<reservation>&& reserved)
    : handler_(std::move(handler)),
      reserved_(std::move(reserved))
  {
  }

  write_lease_delivery(write_lease_delivery&&) = default;

  allocator_type get_allocator() const noexcept
  {
    return asio::get_associated_allocator(handler_,
        std::allocator<void>());
  }

  cancellation_slot_type get_cancellation_slot() const noexcept
  {
    return asio::get_associated_cancellation_slot(handler_);
  }

  void operator()(const error_code& ec, std::size_t n)
  {
    if (!reserved_)
      return std::move(handler_)(ec, n);
    reserved_->deliver(std::move(handler_), ec, n);
  }

private:
  Handler handler_;
  std::optional<reservation> reserved_;
};

template <typename Stream>
class initiate_write_lease
{
public:
  using executor_type = typename Stream::executor_type;

  explicit initiate_write_lease(Stream& stream) noexcept
    : stream_(stream)
  {
  }

  executor_type get_executor() const noexcept
  {
    return stream_.get_executor();
  }

  template <typename Handler>
  void operator()(Handler&& handler, buffer_lease lease) const
  {
    using handler_type = std::decay_t<Handler>;
    const executor_type io_ex = stream_.get_executor();
    if constexpr (reactor_socket<Stream>)
    {
      buffer_pool* pool = buffer_pool_of_executor(io_ex);
      if (pool && lease && pool->core_.runs_here())
      {
        error_code setup;
        pool_ring* ring = pool->ring_for_sockets(setup);
        if (setup)
        {
          // io_uring required and not to be had: the write fails with the
          // reason, after this call as any completion; the lease goes back
          // as this call returns.
          asio::post(io_ex, asio::detail::move_binder2<
              handler_type, error_code, std::size_t>(0,
                handler_type(std::forward<Handler>(handler)), setup, 0));
          return;
        }
        // (Without an io_uring path in the build there is never a ring.)
        if constexpr (has_io_uring_path)
          if (ring)
          {
            using handler_executor =
              asio::associated_executor_t<handler_type, executor_type>;
            using delivery = write_lease_delivery<handler_type,
                  handler_executor>;
            const handler_executor ex =
              asio::get_associated_executor(handler, io_ex);
            std::optional<typename delivery::reservation> reserved;
            if (!invokes_directly(ex, pool->loop_))
              reserved.emplace(pool->core_, handler, ex);
            delivery d(handler_type(std::forward<Handler>(handler)),
                std::move(reserved));
            auto& impl = socket_implementation_of<Stream>::get(stream_);
            uring_send_op<delivery, buffer_lease>::start(d, lease, *ring,
                impl.socket_, impl.reactor_data_);
            return;
          }
      }
    }
    // The lease's bytes do not move with the lease.
    const asio::const_buffer bytes = lease.data();
    asio::async_write(stream_, bytes,
        asio::consign(std::forward<Handler>(handler),
          std::move(lease)));
  }

private:
  Stream& stream_;
};

} // namespace detail

template <typename Stream, typename CompletionToken>
  requires detail::pollable_stream<Stream>
auto async_write_lease(Stream& stream, buffer_lease lease,
    CompletionToken&& token)
{
  return asio::async_initiate<CompletionToken,
    void(error_code, std::size_t)>(
        detail::initiate_write_lease<Stream>(stream), token,
        std::move(lease));
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_WRITE_LEASE_HPP
