//
// turnloop/detail/accept/accept_record.hpp
//
// What the loop's handle service keeps, in its slot table, for each
// turnloop::async_accept from submission to completion: where the operation
// is (in the kernel, in line for a handle, backing off, ready to resume),
// the operation itself while it is out of the kernel, and the two
// cancellation signals through which the service reaches into the
// acceptor: one ends the operation's watch on the acceptor, the other
// cancels its kernel accept.
//

#ifndef TURNLOOP_DETAIL_ACCEPT_ACCEPT_RECORD_HPP
#define TURNLOOP_DETAIL_ACCEPT_ACCEPT_RECORD_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/accept/handle_unit.hpp>
#include <turnloop/detail/slot_table.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(cancellation_signal.hpp)

#include <utility>

namespace turnloop {
namespace detail {

/// An accept while it is out of the kernel (waiting for a handle, or for a
/// backoff to pass), with its handler's type erased. Allocated with the
/// handler's associated allocator, as Asio allocates its own operations.
class parked_accept
{
public:
  /// Takes the operation back and frees this. With @p ec set the operation
  /// completes with it; otherwise it calls accept, holding @p granted if the
  /// line gave it a handle (one back from a backoff holds its own), and
  /// with @p slot as its kernel accept's cancellation slot.
  void resume(const error_code& ec, handle_unit&& granted,
      const asio::cancellation_slot& slot)
  {
    resume_(this, ec, std::move(granted), slot);
  }

  /// Frees the operation and its handler without running it.
  void destroy() noexcept
  {
    destroy_(this);
  }

protected:
  using resume_function = void (*)(parked_accept*,
      const error_code&, handle_unit&&,
      const asio::cancellation_slot&);
  using destroy_function = void (*)(parked_accept*) noexcept;

  parked_accept(resume_function resume, destroy_function destroy) noexcept
    : resume_(resume),
      destroy_(destroy)
  {
  }

  ~parked_accept() = default;

private:
  resume_function resume_;
  destroy_function destroy_;
};

struct accept_record
{
  enum class state : unsigned char
  {
    running, // accept has been called (or is about to be); in no list
    waiting, // in line for a handle; accept not called
    backoff, // holds a handle; accept failed for want of descriptors
    ready    // a resume is posted: complete with result, or call accept
  };

  state where = state::running;

  /// A release gave this waiting operation a handle it has not taken up.
  bool granted = false;

  /// Its watch on the acceptor (an async_wait for an error condition, which
  /// the acceptor's cancel() and close() end) is pending.
  bool watched = false;

  /// The handler's cancellation slot holds the service's canceller, which
  /// the service then forwards to the kernel accept through `accept`.
  bool proxied = false;

  /// Links in the list the operation is in (waiting, backoff or ready).
  slot_id prev;
  slot_id next;

  /// The operation, while it is waiting, backing off or ready.
  parked_accept* parked = nullptr;

  /// Ready: the error to complete with, or none to call accept.
  error_code result;

  /// Parked: the memory its resume handler will be posted in, reserved
  /// when it was parked (handle_service::reserve_resume), so that making it
  /// ready (a handle released on any thread, in a noexcept function)
  /// allocates nothing.
  void* resume_memory = nullptr;

  asio::cancellation_signal watch;
  asio::cancellation_signal accept;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ACCEPT_ACCEPT_RECORD_HPP
