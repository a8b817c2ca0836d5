//
// turnloop/detail/pool/buffer_waiter.hpp
//
// An operation waiting for a pooled buffer, as the buffer pool keeps it in
// its slot table: the type-erased operation that owns the handler, its
// place in the pool's lists, and its result once it has one.
//

#ifndef TURNLOOP_DETAIL_POOL_BUFFER_WAITER_HPP
#define TURNLOOP_DETAIL_POOL_BUFFER_WAITER_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/buffer_lease.hpp>
#include <turnloop/detail/pool/buffer_store.hpp>
#include <turnloop/detail/foreign_delivery.hpp>
#include <turnloop/detail/operation_unit.hpp>
#include <turnloop/detail/slot_table.hpp>

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/memory.hpp>
#include <boost/system/error_code.hpp>

#include <optional>
#include <utility>

namespace turnloop {
namespace detail {

/// A waiting operation with its handler's type erased, allocated with the
/// handler's associated allocator as Asio allocates its own operations (so a
/// warm loop recycles the memory).
class buffer_wait_op
{
public:
  /// Frees the operation, then delivers (@p ec, @p lease) to the handler
  /// through its associated executor.
  void complete(const boost::system::error_code& ec, buffer_lease&& lease)
  {
    func_(this, &ec, &lease);
  }

  /// Frees the operation and its handler without running it.
  void destroy() noexcept
  {
    func_(this, nullptr, nullptr);
  }

protected:
  using func_type = void (*)(buffer_wait_op*,
      const boost::system::error_code*, buffer_lease*);

  explicit buffer_wait_op(func_type func) noexcept
    : func_(func)
  {
  }

  ~buffer_wait_op() = default;

private:
  func_type func_;
};

template <typename Handler, typename IoExecutor>
class buffer_wait_handler final : public buffer_wait_op
{
public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(buffer_wait_handler);

  /// For a handler whose executor is not the loop's: the delivery of its
  /// completion, reserved before the wait starts (see foreign_delivery.hpp).
  using reservation = reserved_delivery<Handler,
        boost::asio::associated_executor_t<Handler, IoExecutor>,
        boost::system::error_code, buffer_lease>;

  buffer_wait_handler(Handler& handler, const IoExecutor& io_ex,
      std::optional<reservation>&& reserved)
    : buffer_wait_op(&buffer_wait_handler::do_complete),
      handler_(std::move(handler)),
      work_(handler_, io_ex),
      reserved_(std::move(reserved))
  {
  }

private:
  static void do_complete(buffer_wait_op* base,
      const boost::system::error_code* ec, buffer_lease* lease)
  {
    buffer_wait_handler* o = static_cast<buffer_wait_handler*>(base);
    ptr p = { boost::asio::detail::addressof(o->handler_), o, o };
    boost::asio::detail::handler_work<Handler, IoExecutor> w(
        std::move(o->work_));
    std::optional<reservation> reserved(std::move(o->reserved_));

    // Move the handler and its arguments out so that the operation's memory
    // is free before the upcall, which may start the next operation.
    boost::asio::detail::move_binder2<Handler, boost::system::error_code,
      buffer_lease> handler(0, std::move(o->handler_),
          ec ? *ec : boost::system::error_code(),
          lease ? std::move(*lease) : buffer_lease());
    p.h = boost::asio::detail::addressof(handler.handler_);
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
  boost::asio::detail::handler_work<Handler, IoExecutor> work_;
  std::optional<reservation> reserved_;
};

/// The pool's record of one waiting operation, in its slot table. It is in
/// exactly one of the pool's two lists: waiting for a buffer (FIFO, linked
/// both ways), or ready, with its result, to be completed in a turn.
struct buffer_waiter
{
  buffer_waiter(buffer_wait_op* o, operation_unit&& u) noexcept
    : op(o),
      unit(std::move(u))
  {
  }

  buffer_wait_op* op;
  operation_unit unit; // an async_lease's; empty for a pooled read, which
                       // holds its own
  slot_id prev;
  slot_id next;
  bool waiting = false; // in the waiting list, else in the ready list

  /// The result, once ready: a granted buffer, or an error.
  boost::system::error_code result;
  pooled_buffer* buffer = nullptr;

  /// The handler's cancellation slot, if connected: holds the pool's
  /// canceller while the operation waits, and is cleared when it is done.
  boost::asio::cancellation_slot slot;

  /// A pooled read's watch on its stream while it waits for a buffer (an
  /// async_wait(wait_error), which the stream's cancel() and close() end);
  /// emitting this signal ends the watch once the wait is over.
  boost::asio::cancellation_signal watch;
  bool watched = false;
  int descriptor = -1; // the read's stream, for a probe when the watch fires
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_POOL_BUFFER_WAITER_HPP
