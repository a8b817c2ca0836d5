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
#include <turnloop/detail/pool/buffer_store.hpp>
#include <turnloop/detail/pool/descriptor_read.hpp>
#include <turnloop/detail/operation_unit.hpp>
#include <turnloop/detail/slot_table.hpp>

#include <turnloop/detail/asio.hpp>
#include <turnloop/detail/platform.hpp>
#include TURNLOOP_ASIO_HEADER(cancellation_signal.hpp)
#if defined(TURNLOOP_HAS_IOCP_ENGINE)
# include <turnloop/detail/pool/iocp_watch_signal.hpp>
#endif // defined(TURNLOOP_HAS_IOCP_ENGINE)

#include <utility>

namespace turnloop {

// Declared only: a waiting operation passes its lease on by reference, and
// the handler that needs it whole, buffer_wait_handler, is with the pool's
// template members (impl/buffer_pool.hpp).
class buffer_lease;

namespace detail {

/// The signal that ends a pooled read's watch: Asio's, or on the IOCP
/// engine one that cancels the watch where Asio queued it
/// (iocp_watch_signal.hpp).
#if defined(TURNLOOP_HAS_IOCP_ENGINE)
using watch_signal = iocp_watch_signal;
#else // defined(TURNLOOP_HAS_IOCP_ENGINE)
using watch_signal = asio::cancellation_signal;
#endif // defined(TURNLOOP_HAS_IOCP_ENGINE)

/// A waiting operation with its handler's type erased, allocated with the
/// handler's associated allocator as Asio allocates its own operations (so a
/// warm loop recycles the memory). Its handler is buffer_wait_handler
/// (impl/buffer_pool.hpp).
class buffer_wait_op
{
public:
  /// Frees the operation, then delivers (@p ec, @p lease) to the handler
  /// through its associated executor.
  void complete(const error_code& ec, buffer_lease&& lease)
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
      const error_code*, buffer_lease*);

  explicit buffer_wait_op(func_type func) noexcept
    : func_(func)
  {
  }

  ~buffer_wait_op() = default;

private:
  func_type func_;
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
  error_code result;
  pooled_buffer* buffer = nullptr;

  /// The handler's cancellation slot, if connected: holds the pool's
  /// canceller while the operation waits, and is cleared when it is done.
  asio::cancellation_slot slot;

  /// A pooled read's watch on its stream while it waits for a buffer (an
  /// async_wait(wait_error), which the stream's cancel() and close() end);
  /// emitting this signal ends the watch once the wait is over. The signal
  /// belongs to the watch's handler, which frees it when the watch
  /// completes, not to this record: a reactor may finish a cancelled
  /// operation only later (Asio's io_uring backend cancels in the kernel),
  /// and it knows the operation by its slot's address, which must not be a
  /// later waiter's meanwhile. Null once the watch has completed, or while
  /// there is none.
  watch_signal* watch = nullptr;
  bool watched = false;
  // The read's stream, for a probe when the watch fires.
  native_descriptor descriptor = asio::detail::invalid_socket;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_POOL_BUFFER_WAITER_HPP
