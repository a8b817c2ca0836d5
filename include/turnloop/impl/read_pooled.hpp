//
// turnloop/impl/read_pooled.hpp
//
// The operation behind async_read_pooled, read_pooled_op, and its
// initiation. The operation is a handler in its own right:
// it is moved into the stream's async_wait while it waits for data, and
// into the pool's waiting list while it waits for a buffer, so a pending
// pooled read is one Asio operation and no buffer.
//
// It exposes the user's handler's allocator (its memory comes from where
// the handler's would) and cancellation slot (the stream's own wait honours
// per-operation cancellation). Its executor is the loop's own, not the
// handler's: its steps need the loop's thread, where the pool lives, and
// the loop's executor runs them there without type erasure. The user's
// handler gets the result through its own executor, by way of a delivery
// reserved at the start (detail/foreign_delivery.hpp), or is called
// directly when that executor is the loop's, which is what a dispatch to it
// would do on the loop's thread.
//

#ifndef TURNLOOP_IMPL_READ_POOLED_HPP
#define TURNLOOP_IMPL_READ_POOLED_HPP

#include <turnloop/buffer_lease.hpp>
#include <turnloop/buffer_pool.hpp>
#include <turnloop/loop.hpp>
#include <turnloop/detail/pool/buffer_pool_of.hpp>
#include <turnloop/detail/pool/descriptor_read.hpp>
#include <turnloop/detail/foreign_delivery.hpp>
#include <turnloop/detail/pool/pollable_stream.hpp>
#include <turnloop/detail/pool/pooled_recv_op.hpp>
#include <turnloop/detail/uring/pool_ring.hpp>
#include <turnloop/detail/uring/uring_recv_op.hpp>
#include <turnloop/detail/engine/loop_core.hpp>
#include <turnloop/detail/remote_refusal.hpp>
#include <turnloop/detail/operation_unit.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(associated_allocator.hpp)
#include TURNLOOP_ASIO_HEADER(associated_cancellation_slot.hpp)
#include TURNLOOP_ASIO_HEADER(associated_executor.hpp)
#include TURNLOOP_ASIO_HEADER(error.hpp)
#include TURNLOOP_ASIO_HEADER(post.hpp)
#include TURNLOOP_ASIO_HEADER(detail/bind_handler.hpp)

#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

namespace turnloop {
namespace detail {

template <typename Stream, typename Handler>
class read_pooled_op
{
public:
  using io_executor_type = typename Stream::executor_type;

  using handler_executor_type =
    asio::associated_executor_t<Handler, io_executor_type>;

  using executor_type = loop::executor_type;

  using allocator_type =
    asio::associated_allocator_t<Handler, std::allocator<void>>;

  using cancellation_slot_type =
    asio::associated_cancellation_slot_t<Handler>;

  /// Starts a pooled read of @p stream for @p handler.
  static void start(Stream& stream, Handler&& handler)
  {
    const io_executor_type io_ex = stream.get_executor();
    buffer_pool* pool = buffer_pool_of_executor(io_ex);
    operation_unit unit;
    error_code ec = asio::error::operation_not_supported;
    if (!pool)
    {
      // Not a loop's stream: there is no loop to deliver through.
      return asio::post(io_ex, asio::detail::move_binder2<
          Handler, error_code, buffer_lease>(
            0, std::move(handler), ec, buffer_lease()));
    }
    if (!pool->admit(unit, ec) || ring_refused(*pool, ec))
    {
      // Refused: delivered like any completion, never inside this call;
      // from another thread, within config::post_capacity (see
      // remote_refusal.hpp).
      auto refusal = make_later_completion(pool->loop_, io_ex,
          std::move(handler), ec,
          buffer_lease());
      if (pool->core_.running_in_this_thread())
        pool->core_.post(std::move(refusal), std::allocator<void>());
      else
      {
        post_remote_refusal(pool->core_, std::move(refusal),
            "turnloop::async_read_pooled: refused off the loop's thread "
            "while config::post_capacity refusals wait for the loop");
      }
      return;
    }
    // A handler with an executor of its own gets its completion through
    // memory reserved now (see foreign_delivery.hpp): a lack of memory is
    // told here, at the call, and cannot lose the read later.
    std::optional<reservation> reserved;
    const handler_executor_type ex =
      asio::get_associated_executor(handler, io_ex);
    if (!invokes_directly(ex, pool->loop_))
      reserved.emplace(pool->core_, handler, ex);
    read_pooled_op(stream, io_ex, *pool, std::move(unit), std::move(reserved),
        std::move(handler)).wait_readable();
  }

  read_pooled_op(read_pooled_op&&) = default;

  executor_type get_executor() const noexcept
  {
    return pool_->get_executor();
  }

  allocator_type get_allocator() const noexcept
  {
    return asio::get_associated_allocator(handler_,
        std::allocator<void>());
  }

  cancellation_slot_type get_cancellation_slot() const noexcept
  {
    return asio::get_associated_cancellation_slot(handler_);
  }

  /// The stream is readable, or the wait for it ended with @p ec.
  void operator()(const error_code& ec)
  {
    if (ec)
    {
      // A stream closed while the read waited: operation_aborted, as the
      // reactors and Windows report it, whatever the system says (under
      // Wine the zero-byte receive ends with system error 676).
      if constexpr (requires { stream_->is_open(); })
        if (!stream_->is_open())
          return complete(asio::error::operation_aborted, buffer_lease());
      return complete(ec, buffer_lease());
    }
    // A buffer is minted only for data: without a free one, a socket can
    // tell its end of stream or error first, as the reactor's read does.
    // (A descriptor that is not a socket reads as data.)
    const bool peeked = !pool_->store_->has_free();
    if (peeked)
      if (!go_on_with_data())
        return;
    // Minting a buffer can fail: the read then ends with no_memory, and a
    // later read mints again.
    pooled_buffer* b;
    try
    {
      b = pool_->take();
    }
    catch (const std::bad_alloc&)
    {
      return complete(asio::error::no_memory, buffer_lease());
    }
    if (b)
      return read(b);

    // Every buffer is leased: wait for one, first come first served, if
    // there is data.
    if (!peeked && !go_on_with_data())
      return;
    buffer_pool& pool = *pool_;
    Stream& stream = *stream_;
    // A wait that cannot be recorded leaves this operation untouched.
    if (!pool.wait_for_read(std::move(*this), stream))
      complete(asio::error::no_memory, buffer_lease());
  }

  /// Peeks at the socket: true if data waits; else the read ends (end of
  /// stream, an error) or waits for readiness again (nothing), and false.
  bool go_on_with_data()
  {
    error_code end;
    switch (probe_unread(stream_->native_handle(), end))
    {
    case unread::data:
      return true;
    case unread::nothing:
      wait_readable();
      return false;
    case unread::end:
      complete(end, buffer_lease());
      return false;
    }
    return true;
  }

  /// The wait for a buffer ended: @p lease, or an error (would_block: the
  /// data went away while it waited).
  void operator()(const error_code& ec, buffer_lease lease)
  {
    if (ec == asio::error::would_block)
      return wait_readable();
    if (ec)
      return complete(ec, buffer_lease());
    read(buffer_pool::buffer_of(lease));
  }

  /// A socket's read, performed by the reactor on the loop's thread when
  /// the socket is readable (or tried at once, when it may be): reads into a
  /// buffer taken now, or finds the end of the stream or an error without
  /// one. not_done leaves the read waiting for the next edge, holding none.
  asio::detail::reactor_op::status perform_recv(
      error_code& ec, buffer_lease& lease,
      bool& needs_buffer) noexcept
  {
    using status = asio::detail::reactor_op::status;
    const native_descriptor fd = stream_->native_handle();
    // A buffer is minted only for data: without a free one, a peek tells
    // first (the reactor tries a read at once, before any edge).
    if (!pool_->store_->has_free())
    {
      switch (probe_unread(fd, ec))
      {
      case unread::data:
        break;
      case unread::nothing:
        return status::not_done;
      case unread::end:
        return status::done;
      }
    }
    pooled_buffer* b;
    try
    {
      b = pool_->take();
    }
    catch (const std::bad_alloc&)
    {
      ec = asio::error::no_memory;
      return status::done;
    }
    if (!b)
    {
      needs_buffer = true;
      return status::done;
    }
    const std::size_t size = pool_->buffer_size();
    const std::size_t n = read_nonblocking(fd, true, b->bytes(), size, ec);
    if (n != 0)
    {
      lease = buffer_pool::lease_of(b, n);
      // A short read drained the socket: the reactor then waits for the
      // next edge rather than trying the next read at once.
      return n < size ? status::done_and_exhausted : status::done;
    }
    pool_->give_back(b);
    return ec ? status::done : status::not_done;
  }

  /// The reactor's read is over: @p lease, an error, or data waiting that
  /// found every buffer leased (@p needs_buffer).
  void on_recv(const error_code& ec, buffer_lease lease,
      bool needs_buffer)
  {
    if (needs_buffer)
    {
      buffer_pool& pool = *pool_;
      Stream& stream = *stream_;
      // A wait that cannot be recorded leaves this operation untouched.
      if (!pool.wait_for_read(std::move(*this), stream))
        complete(asio::error::no_memory, buffer_lease());
      return;
    }
    complete(ec, std::move(lease));
  }

  /// The ring had no buffer for arrived data: lends it one from the pool
  /// (0), or finds the pool at its ceiling (1) or out of memory (2). A ring
  /// already at its bound (refilled by completions reaped with this one) is
  /// tried again as it is.
  int refill_ring(pool_ring& ring) noexcept
  {
    if (ring.full())
      return 0;
    pooled_buffer* b;
    try
    {
      b = pool_->take();
    }
    catch (const std::bad_alloc&)
    {
      return 2;
    }
    if (!b)
      return 1;
    ring.lend(b);
    return 0;
  }

  /// The ring's receive is over: @p n bytes in @p b, or an error (with a
  /// buffer to give back, maybe), or data waiting that found every buffer
  /// leased (@p needs_buffer).
  void on_ring_recv(const error_code& ec, pooled_buffer* b,
      std::size_t n, bool needs_buffer)
  {
    if (b && n == 0)
      pool_->give_back(std::exchange(b, nullptr));
    if (b)
      return complete(ec, buffer_pool::lease_of(b, n));
    on_recv(ec, buffer_lease(), needs_buffer);
  }

private:
  using reservation = reserved_delivery<Handler, handler_executor_type,
        error_code, buffer_lease>;

  // A reserved delivery holds work on the handler's executor until the
  // handler runs.
  read_pooled_op(Stream& stream, const io_executor_type&,
      buffer_pool& pool, operation_unit&& unit,
      std::optional<reservation>&& reserved, Handler&& handler)
    : stream_(&stream),
      pool_(&pool),
      unit_(std::move(unit)),
      reserved_(std::move(reserved)),
      handler_(std::move(handler))
  {
  }

  // A socket's read on the loop's thread goes through the pool's io_uring,
  // set up at the first one: true, with @p ec the system's error, if it is
  // required and cannot be set up now (told as a refusal is, after the
  // call; a read that gets this far later fails in wait_readable).
  static bool ring_refused(buffer_pool& pool,
      error_code& ec) noexcept
  {
    if constexpr (reactor_socket<Stream>)
      if (pool.core_.runs_here())
      {
        pool.ring_for_sockets(ec);
        return !!ec;
      }
    return false;
  }

  void wait_readable()
  {
    Stream& stream = *stream_;
    if constexpr (reactor_socket<Stream>)
    {
      // The reactor reads without blocking only a non-blocking socket; a
      // socket that cannot be made one is left to async_wait and read().
      error_code ec;
      if (!stream.native_non_blocking())
        stream.native_non_blocking(true, ec);
      if (!ec)
      {
        auto& impl = socket_implementation_of<Stream>::get(stream);
        loop_core& core = pool_->core_;
        // On the thread that runs the loop, through the pool's io_uring if
        // it has one (doc/io_uring.md); a read started elsewhere (or while
        // io_context::run() drives the loop) takes the reactor, which any
        // thread may use, and its successors the ring.
        if (core.runs_here())
        {
          // (Without an io_uring path in the build there is never a ring.)
          pool_ring* ring = pool_->ring_for_sockets(ec);
          if constexpr (has_io_uring_path)
            if (ring)
              return uring_recv_op<read_pooled_op>::start(std::move(*this),
                  *ring, impl.socket_, impl.reactor_data_, true);
          if (ec)
            return complete(ec, buffer_lease()); // io_uring required
        }
        pooled_recv_op<read_pooled_op, buffer_lease>::start(std::move(*this),
            core, impl.socket_, impl.reactor_data_,
            core.running_in_this_thread());
        return;
      }
    }
    stream.async_wait(Stream::wait_read, std::move(*this));
  }

  // Reads into @p b, leased for this read; the lease is made only for a
  // read that delivers bytes.
  void read(pooled_buffer* b)
  {
    error_code ec;
    std::size_t n = 0;
    if (!stream_->native_non_blocking())
      stream_->native_non_blocking(true, ec);
    if (!ec)
      n = read_nonblocking(stream_->native_handle(), is_socket, b->bytes(),
          pool_->buffer_size(), ec);
    if (n != 0)
      return complete(ec, buffer_pool::lease_of(b, n));
    pool_->give_back(b);
    if (!ec)
      return wait_readable(); // readiness was spurious: wait, holding none
    complete(ec, buffer_lease());
  }

  void complete(const error_code& ec, buffer_lease&& lease)
  {
    unit_.reset();
    if (!reserved_)
      return std::move(handler_)(ec, std::move(lease));
    reserved_->deliver(std::move(handler_), ec, std::move(lease));
  }

  // A socket is read with recv(), which costs less than read().
  static constexpr bool is_socket = requires {
    typename Stream::protocol_type;
  };

  Stream* stream_;
  buffer_pool* pool_;
  operation_unit unit_;
  std::optional<reservation> reserved_;
  Handler handler_;
};

template <typename Stream>
class initiate_read_pooled
{
public:
  using executor_type = typename Stream::executor_type;

  explicit initiate_read_pooled(Stream& stream) noexcept
    : stream_(stream)
  {
  }

  executor_type get_executor() const noexcept
  {
    return stream_.get_executor();
  }

  template <typename Handler>
  void operator()(Handler&& handler) const
  {
    using handler_type = std::decay_t<Handler>;
    read_pooled_op<Stream, handler_type>::start(stream_,
        handler_type(std::forward<Handler>(handler)));
  }

private:
  Stream& stream_;
};

} // namespace detail

template <typename Stream, typename CompletionToken>
  requires detail::pollable_stream<Stream>
auto async_read_pooled(Stream& stream, CompletionToken&& token)
{
  return asio::async_initiate<CompletionToken,
    void(error_code, buffer_lease)>(
        detail::initiate_read_pooled<Stream>(stream), token);
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_READ_POOLED_HPP
