//
// turnloop/detail/read_pooled_op.hpp
//
// The operation behind async_read_pooled. It is a handler in its own right:
// it is moved into the stream's async_wait while it waits for data, and
// into the pool's waiting list while it waits for a buffer, so a pending
// pooled read is one Asio operation and no buffer.
//
// It exposes the user's handler's allocator (its memory comes from where
// the handler's would) and cancellation slot (the stream's own wait honours
// per-operation cancellation), but not the handler's executor: its steps
// run on the stream's executor, the loop's thread, where the pool lives.
// Only the final completion goes through the handler's executor.
//

#ifndef TURNLOOP_DETAIL_READ_POOLED_OP_HPP
#define TURNLOOP_DETAIL_READ_POOLED_OP_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/buffer_lease.hpp>
#include <turnloop/buffer_pool.hpp>
#include <turnloop/loop.hpp>
#include <turnloop/detail/descriptor_read.hpp>
#include <turnloop/detail/loop_of.hpp>
#include <turnloop/detail/operation_unit.hpp>

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/handler_work.hpp>

#include <concepts>
#include <utility>

namespace turnloop {
namespace detail {

/// A stream a pooled read can wait on and read from without blocking:
/// Asio's stream sockets and POSIX stream descriptors.
template <typename Stream>
concept pollable_stream = requires(Stream& s, boost::system::error_code& ec)
{
  typename Stream::executor_type;
  { s.native_handle() } -> std::convertible_to<int>;
  { s.native_non_blocking() } -> std::convertible_to<bool>;
  s.native_non_blocking(true, ec);
  s.read_some(boost::asio::mutable_buffer(), ec);
  s.async_wait(Stream::wait_read,
      [](const boost::system::error_code&) {});
};

template <typename Stream, typename Handler>
class read_pooled_op
{
public:
  using io_executor_type = typename Stream::executor_type;

  using allocator_type =
    boost::asio::associated_allocator_t<Handler, std::allocator<void>>;

  using cancellation_slot_type =
    boost::asio::associated_cancellation_slot_t<Handler>;

  /// Starts a pooled read of @p stream for @p handler.
  static void start(Stream& stream, Handler&& handler)
  {
    loop* l = loop_of_executor(stream.get_executor());
    buffer_pool* pool = l ? &boost::asio::use_service<buffer_pool>(*l) : nullptr;
    operation_unit unit;
    boost::system::error_code ec = boost::asio::error::operation_not_supported;
    if (!pool || !pool->admit(unit, ec))
    {
      // Refused: delivered like any completion, never inside this call.
      boost::asio::post(stream.get_executor(),
          boost::asio::detail::move_binder2<Handler,
            boost::system::error_code, buffer_lease>(
              0, std::move(handler), ec, buffer_lease()));
      return;
    }
    read_pooled_op(stream, *pool, std::move(unit), std::move(handler))
      .wait_readable();
  }

  read_pooled_op(read_pooled_op&&) = default;

  allocator_type get_allocator() const noexcept
  {
    return boost::asio::get_associated_allocator(handler_,
        std::allocator<void>());
  }

  cancellation_slot_type get_cancellation_slot() const noexcept
  {
    return boost::asio::get_associated_cancellation_slot(handler_);
  }

  /// The stream is readable, or the wait for it ended with @p ec.
  void operator()(const boost::system::error_code& ec)
  {
    if (ec)
      return complete(ec, buffer_lease());
    if (pooled_buffer* b = pool_->take())
      return read(buffer_pool::lease_of(b));

    // Every buffer is leased. A socket can tell its end of stream or error
    // without one; otherwise wait for a buffer, first come first served.
    boost::system::error_code end;
    switch (probe_unread(stream_->native_handle(), end))
    {
    case unread::data:
      break;
    case unread::nothing:
      return wait_readable();
    case unread::end:
      return complete(end, buffer_lease());
    }
    buffer_pool& pool = *pool_;
    Stream& stream = *stream_;
    pool.wait_for_read(std::move(*this), stream);
  }

  /// The wait for a buffer ended: @p lease, or an error (would_block: the
  /// data went away while it waited).
  void operator()(const boost::system::error_code& ec, buffer_lease lease)
  {
    if (ec == boost::asio::error::would_block)
      return wait_readable();
    if (ec)
      return complete(ec, buffer_lease());
    read(std::move(lease));
  }

private:
  read_pooled_op(Stream& stream, buffer_pool& pool, operation_unit&& unit,
      Handler&& handler)
    : stream_(&stream),
      pool_(&pool),
      unit_(std::move(unit)),
      handler_(std::move(handler)),
      work_(handler_, stream.get_executor())
  {
  }

  void wait_readable()
  {
    Stream& stream = *stream_;
    stream.async_wait(Stream::wait_read, std::move(*this));
  }

  void read(buffer_lease lease)
  {
    boost::system::error_code ec;
    if (!stream_->native_non_blocking())
      stream_->native_non_blocking(true, ec);
    std::size_t n = 0;
    if (!ec)
    {
      const boost::asio::mutable_buffer storage = lease.storage();
      n = read_nonblocking(stream_->native_handle(), storage.data(),
          storage.size(), ec);
    }
    if (ec == boost::asio::error::would_block)
    {
      // Readiness was spurious: wait again, holding no buffer.
      lease.reset();
      return wait_readable();
    }
    if (ec)
      return complete(ec, buffer_lease());
    lease.resize(n);
    complete(ec, std::move(lease));
  }

  void complete(const boost::system::error_code& ec, buffer_lease&& lease)
  {
    unit_.reset();
    boost::asio::detail::handler_work<Handler, io_executor_type> w(
        std::move(work_));
    boost::asio::detail::move_binder2<Handler, boost::system::error_code,
      buffer_lease> handler(0, std::move(handler_), ec, std::move(lease));
    w.complete(handler, handler.handler_);
  }

  Stream* stream_;
  buffer_pool* pool_;
  operation_unit unit_;
  Handler handler_;
  boost::asio::detail::handler_work<Handler, io_executor_type> work_;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_READ_POOLED_OP_HPP
