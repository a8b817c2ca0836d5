//
// turnloop/impl/buffer_pool.hpp
//
// Template members of buffer_pool.
//

#ifndef TURNLOOP_IMPL_BUFFER_POOL_HPP
#define TURNLOOP_IMPL_BUFFER_POOL_HPP

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(associated_allocator.hpp)
#include TURNLOOP_ASIO_HEADER(associated_cancellation_slot.hpp)
#include TURNLOOP_ASIO_HEADER(associated_executor.hpp)
#include TURNLOOP_ASIO_HEADER(bind_cancellation_slot.hpp)
#include TURNLOOP_ASIO_HEADER(error.hpp)
#include TURNLOOP_ASIO_HEADER(detail/bind_handler.hpp)
#include TURNLOOP_ASIO_HEADER(detail/handler_alloc_helpers.hpp)
#include TURNLOOP_ASIO_HEADER(detail/handler_work.hpp)
#include TURNLOOP_ASIO_HEADER(detail/memory.hpp)

#include <turnloop/detail/foreign_delivery.hpp>
#include <turnloop/detail/loop_operation_work.hpp>
#if defined(TURNLOOP_HAS_IOCP_ENGINE)
# include <turnloop/detail/pool/pooled_recv_op.hpp>
#endif // defined(TURNLOOP_HAS_IOCP_ENGINE)
#include <turnloop/detail/remote_refusal.hpp>

#include <cassert>
#include <new>
#include <optional>
#include <type_traits>
#include <memory>
#include <utility>

namespace turnloop {
namespace detail {

template <typename Handler, typename IoExecutor>
class buffer_wait_handler final : public buffer_wait_op
{
public:
  TURNLOOP_ASIO_DEFINE_HANDLER_PTR(buffer_wait_handler);

  /// For a handler whose executor is not the loop's: the delivery of its
  /// completion, reserved before the wait starts (see foreign_delivery.hpp).
  using reservation = reserved_delivery<Handler,
        asio::associated_executor_t<Handler, IoExecutor>,
        error_code, buffer_lease>;

  buffer_wait_handler(Handler& handler, const IoExecutor& io_ex,
      std::optional<reservation>&& reserved)
    : buffer_wait_op(&buffer_wait_handler::do_complete),
      handler_(std::move(handler)),
      work_(handler_, io_ex),
      loop_work_(io_ex),
      reserved_(std::move(reserved))
  {
  }

private:
  static void do_complete(buffer_wait_op* base,
      const error_code* ec, buffer_lease* lease)
  {
    buffer_wait_handler* o = static_cast<buffer_wait_handler*>(base);
    ptr p = { asio::detail::addressof(o->handler_), o, o };
    asio::detail::handler_work<Handler, IoExecutor> w(
        std::move(o->work_));
    loop_operation_work<IoExecutor> loop_work(std::move(o->loop_work_));
    std::optional<reservation> reserved(std::move(o->reserved_));

    // Move the handler and its arguments out so that the operation's memory
    // is free before the upcall, which may start the next operation.
    asio::detail::move_binder2<Handler, error_code,
      buffer_lease> handler(0, std::move(o->handler_),
          ec ? *ec : error_code(),
          lease ? std::move(*lease) : buffer_lease());
    p.h = asio::detail::addressof(handler.handler_);
    p.reset();

    if (!ec)
      return;
    if (reserved)
    {
      reserved->deliver(std::move(handler.handler_), handler.arg1_,
          std::move(handler.arg2_));
    }
    else
      w.complete(handler, handler.handler_);
  }

  Handler handler_;
  asio::detail::handler_work<Handler, IoExecutor> work_;
  // A wait for a buffer is no scheduler operation: the loop's work, held
  // until the handler has run (detail/loop_handler_work.hpp).
  loop_operation_work<IoExecutor> loop_work_;
  std::optional<reservation> reserved_;
};

} // namespace detail

class buffer_pool::initiate_lease
{
public:
  using executor_type = buffer_pool::executor_type;

  explicit initiate_lease(buffer_pool& pool) noexcept
    : pool_(pool)
  {
  }

  executor_type get_executor() const noexcept
  {
    return pool_.get_executor();
  }

  template <typename Handler>
  void operator()(Handler&& handler) const
  {
    std::decay_t<Handler> h(std::forward<Handler>(handler));
    pool_.start_lease(std::move(h));
  }

private:
  buffer_pool& pool_;
};

// Installed in a waiting handler's cancellation slot. Any cancellation type
// is honoured: a wait that ends has had no effect.
struct buffer_pool::canceller
{
  buffer_pool* pool;
  detail::slot_id id;

  void operator()(asio::cancellation_type_t type) const noexcept
  {
    if (type != asio::cancellation_type::none)
      pool->end_wait(id, asio::error::operation_aborted);
  }
};

// Completes a pooled read's watch, and owns the signal its slot belongs to
// (buffer_waiter::watch says why). It holds only an id, so a watch that
// completes after the wait is over (ended by the pool's own emit, or racing
// with a grant) finds the id stale or the record no longer waiting.
struct buffer_pool::watch_handler
{
  buffer_pool* pool;
  detail::slot_id id;
  std::unique_ptr<detail::watch_signal> signal;

  using cancellation_slot_type =
    decltype(std::declval<detail::watch_signal&>().slot());

  cancellation_slot_type get_cancellation_slot() const noexcept
  {
    return signal->slot();
  }

  void operator()(const error_code& ec) noexcept
  {
    pool->on_watch(id, ec);
  }
};

template <typename CompletionToken>
auto buffer_pool::async_lease(CompletionToken&& token)
{
  return asio::async_initiate<CompletionToken,
    void(error_code, buffer_lease)>(
        initiate_lease(*this), token);
}

template <typename Handler>
void buffer_pool::start_lease(Handler&& handler)
{
  using handler_type = std::decay_t<Handler>;

  // Asked for during the loop's destruction: dropped, the handler destroyed
  // unrun with the caller's copy, as a post then is.
  if (core_.being_destroyed())
    return;

  // Admitted or refused here, on whichever thread calls: the operation unit
  // is an atomic ceiling, so what waits for the loop is bounded by
  // max_operations however long the loop does not turn.
  detail::operation_unit unit;
  error_code ec;
  const bool admitted = admit(unit, ec);
  const bool on_loop = core_.running_in_this_thread();
  handler_type h(std::forward<Handler>(handler));
  if (!admitted)
  {
    auto refusal = detail::make_later_completion(loop_, get_executor(),
        std::move(h), ec,
        buffer_lease());
    if (on_loop)
      core_.post(std::move(refusal), std::allocator<void>());
    else
    {
      detail::post_remote_refusal(core_, std::move(refusal),
          "turnloop::buffer_pool::async_lease: refused off the loop's "
          "thread while config::post_capacity refusals wait for the loop");
    }
    return;
  }

  if (!on_loop)
  {
    // The pool's lists belong to the loop's thread. The request was
    // accepted here, so a lack of memory there ends it with no_memory,
    // delivered without allocating in that turn, rather than dropping it.
    core_.post([this, lacking = detail::make_later_completion(loop_,
            get_executor(), std::move(h),
            error_code(asio::error::no_memory),
            buffer_lease()),
          unit = std::move(unit)]() mutable {
          try
          {
            lease_admitted(lacking.handler(), std::move(unit));
          }
          catch (const std::bad_alloc&)
          {
            unit.reset();
            lacking();
          }
        }, std::allocator<void>());
    return;
  }
  lease_admitted(h, std::move(unit));
}

template <typename Handler>
void buffer_pool::lease_admitted(Handler& h, detail::operation_unit&& unit)
{
  detail::pooled_buffer* b = take();
  detail::slot_id id;
  try
  {
    id = add_waiter(h, std::move(unit));
  }
  catch (...)
  {
    if (b)
      give_back(b);
    throw;
  }
  detail::buffer_waiter& w = *waiters_.find(id);
  if (b)
    make_ready(id, w, error_code(), b);
  else
  {
    link_waiting(id, w);
    ++waits_;
  }
}

template <typename Handler>
detail::slot_id buffer_pool::add_waiter(Handler& handler,
    detail::operation_unit&& unit)
{
  using op = detail::buffer_wait_handler<Handler, executor_type>;

  // The slot outlives the move of the handler into the operation.
  asio::cancellation_slot slot =
    asio::get_associated_cancellation_slot(handler);

  // Memory first, the handler last: an allocation that fails leaves the
  // handler (and the unit) with the caller.
  typename op::ptr p = { asio::detail::addressof(handler),
    op::ptr::allocate(handler), 0 };
  std::optional<typename op::reservation> reserved;
  const auto ex = asio::get_associated_executor(handler,
      get_executor());
  if (!detail::invokes_directly(ex, loop_))
    reserved.emplace(core_, handler, ex);
  error_code ec;
  const detail::slot_id id = waiters_.emplace(ec, nullptr,
      detail::operation_unit());
  // Every waiter holds one of the loop's operation units (its own, or its
  // pooled read's), and the table's ceiling is max_operations.
  assert(!ec);
  detail::buffer_waiter& w = *waiters_.find(id);
  try
  {
    p.p = ::new (p.v) op(handler, get_executor(), std::move(reserved));
  }
  catch (...)
  {
    waiters_.erase(id);
    throw;
  }
  w.op = p.p;
  w.unit = std::move(unit);
  p.v = p.p = nullptr;

  if (slot.is_connected())
  {
    waiters_.find(id)->slot = slot;
    slot.template emplace<canceller>(this, id);
  }
  return id;
}

template <typename Handler, typename Stream>
bool buffer_pool::wait_for_read(Handler&& handler, Stream& stream)
{
  detail::slot_id id;
  try
  {
    id = add_waiter(handler, detail::operation_unit());
  }
  catch (const std::bad_alloc&)
  {
    return false;
  }
  detail::buffer_waiter& w = *waiters_.find(id);
  link_waiting(id, w);
  ++waits_;
  w.descriptor = stream.native_handle();
  try
  {
    auto signal = std::make_unique<detail::watch_signal>();
    detail::watch_signal* watch = signal.get();
#if defined(TURNLOOP_HAS_IOCP_ENGINE)
    // Where Asio queues the wait: its IOCP socket service's select reactor,
    // the loop's one.
    auto& impl = detail::socket_implementation_of<Stream>::get(stream);
    watch->watch(asio::use_service<asio::detail::select_reactor>(context()),
        impl.socket_, impl.reactor_data_);
#endif // defined(TURNLOOP_HAS_IOCP_ENGINE)
    stream.async_wait(Stream::wait_error,
        watch_handler{this, id, std::move(signal)});
    w.watch = watch;
    w.watched = true;
  }
  catch (const std::bad_alloc&)
  {
    // Still waiting for a buffer, only unwatched: the stream's cancel()
    // and close() reach it once a buffer does and it reads.
  }
  return true;
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_BUFFER_POOL_HPP
