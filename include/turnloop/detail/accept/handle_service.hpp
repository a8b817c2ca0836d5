//
// turnloop/detail/accept/handle_service.hpp
//
// The loop's gate on config::max_handles, and the bookkeeping of
// turnloop::async_accept. An accept takes a handle before it calls accept;
// with none free it gets in line (FIFO) and accept is not called, so the
// connection stays in the kernel's backlog. A released handle goes straight
// to the first accept in line (it never returns to the ceiling while one
// waits, so a newcomer cannot overtake).
//
// A parked accept is resumed by a handler posted to the loop's scheduler,
// behind whatever completions Asio has already queued there. That order is
// what makes an acceptor's cancel() or close() reliable: Asio reports them
// only through completions it queues (here, of the operation's watch), so a
// cancel() that came before the release is seen before the accept resumes.
//
// The resume handler is posted in memory the operation reserved when it was
// parked (a block from the service's spares, at most one per parked
// operation), so that a handle released while memory is exhausted still
// resumes the accept in line: releasing cannot fail.
//
// Every accept holds one unit of config::max_operations and one record in
// the service's slot table from submission until its completion is
// delivered; with no unit left it is refused with resource_limit.
//
// Threads: a handle may be released on any thread (handle_unit). Everything
// else runs on the loop's thread, or, for a submission, on a thread that may
// use the acceptor while the loop is not running it. The anchor's mutex
// guards all of the service's state, because of the releases.
//

#ifndef TURNLOOP_DETAIL_ACCEPT_HANDLE_SERVICE_HPP
#define TURNLOOP_DETAIL_ACCEPT_HANDLE_SERVICE_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/handle_stats.hpp>
#include <turnloop/loop.hpp>
#include <turnloop/detail/accept/accept_record.hpp>
#include <turnloop/detail/ceiling.hpp>
#include <turnloop/detail/accept/handle_unit.hpp>
#include <turnloop/detail/slot_table.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(basic_waitable_timer.hpp)
#include TURNLOOP_ASIO_HEADER(cancellation_signal.hpp)
#include TURNLOOP_ASIO_HEADER(cancellation_type.hpp)
#include TURNLOOP_ASIO_HEADER(execution_context.hpp)

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace turnloop {
namespace detail {

class handle_service final
  : public asio::detail::execution_context_service_base<handle_service>
{
public:
  /// The first and the longest wait before accept is tried again after it
  /// failed for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS,
  /// ENOMEM). The wait doubles on each failure in a row and starts again from
  /// the first after an accept succeeds.
  static constexpr std::chrono::milliseconds first_backoff{5};
  static constexpr std::chrono::milliseconds longest_backoff{1000};

  /// @p ctx must be a turnloop::loop (see of()).
  TURNLOOP_DECL explicit handle_service(asio::execution_context& ctx);
  TURNLOOP_DECL ~handle_service();

  /// The service of @p ctx, created on first use, or nullptr if @p ctx is
  /// not a turnloop::loop.
  TURNLOOP_DECL static handle_service* of(asio::execution_context& ctx);

  /// The loop this service belongs to.
  loop& owner() const noexcept
  {
    return loop_;
  }

  /// A submission's admission: refused (resource_limit at max_operations),
  /// or a record, with a handle if one was free and no accept is in line.
  struct admission
  {
    error_code refused;
    slot_id id;
    handle_unit handle;
  };

  TURNLOOP_DECL admission admit();

  /// What the operation must do after parking: watch the acceptor (through
  /// watch_slot) and put the service's canceller in its handler's slot.
  struct parking
  {
    bool start_watch = false;
    bool install_canceller = false;
    asio::cancellation_slot watch_slot;
  };

  /// Reserves the memory operation @p id's resume handler will be posted
  /// in, before it parks. Throws std::bad_alloc, leaving the service as it
  /// was, if there is none.
  TURNLOOP_DECL void reserve_resume(slot_id id);

  /// Parks @p op, admitted without a handle, in line for one. A handle
  /// released since admit() is taken at once.
  TURNLOOP_DECL parking wait(slot_id id, parked_accept* op,
      bool slot_connected);

  /// Parks @p op, which holds a handle and whose accept failed for want of
  /// descriptors, until the backoff timer lets it try again.
  TURNLOOP_DECL parking back_off(slot_id id, parked_accept* op,
      bool slot_connected);

  /// Routes the handler's cancellation through the record, for a handler
  /// whose slot is not an asio::cancellation_slot; returns the slot to give
  /// the kernel accept.
  TURNLOOP_DECL asio::cancellation_slot proxy(slot_id id);

  /// The operation is about to deliver its completion: ends its watch,
  /// frees its record and its operation unit. Returns whether the handler's
  /// slot holds the service's canceller (the caller clears it).
  TURNLOOP_DECL bool complete(slot_id id, bool accepted);

  /// The handler's slot was emitted.
  TURNLOOP_DECL void cancel(slot_id id,
      asio::cancellation_type_t type);

  /// True while the operation @p id is outstanding and its watch pending.
  TURNLOOP_DECL bool watching(slot_id id);

  /// The operation's watch on its acceptor ended with @p reason:
  /// operation_aborted if the acceptor was cancelled or closed, otherwise
  /// the error the acceptor reports.
  TURNLOOP_DECL void watch_ended(slot_id id,
      const error_code& reason);

  /// Adds the service's counters to @p s. Any thread.
  TURNLOOP_DECL void fill_stats(handle_stats& s);

private:
  friend void release_handle(handle_anchor* anchor) noexcept;
  class resume_handler;
  template <typename T> class resume_allocator;

  // A list of records, linked through their prev and next.
  struct list
  {
    slot_id head;
    slot_id tail;
    std::size_t size = 0;
  };

  TURNLOOP_DECL void shutdown() override;

  // Takes a ready operation out of the service and resumes it.
  TURNLOOP_DECL void resume(slot_id id);

  TURNLOOP_DECL void backoff_expired();

  // The rest expect the anchor's mutex to be held.
  TURNLOOP_DECL void release_locked();
  TURNLOOP_DECL handle_unit issue_locked() noexcept;
  TURNLOOP_DECL bool take_handle_locked() noexcept;
  TURNLOOP_DECL parking park_locked(accept_record& r, bool slot_connected);
  TURNLOOP_DECL void make_ready_locked(slot_id id, accept_record& r,
      const error_code& result);
  TURNLOOP_DECL void leave_backoff_locked(slot_id id);
  TURNLOOP_DECL void push_back(list& l, slot_id id) noexcept;

  // The spare blocks resume handlers are posted in: taken by
  // reserve_resume, given back when Asio frees the handler's memory (on
  // the thread that ran it, or as the scheduler shuts down). Their own mutex,
  // since Asio may free one while the anchor's is held.
  TURNLOOP_DECL void* take_resume_memory();
  TURNLOOP_DECL void give_back_resume_memory(void* block) noexcept;
  TURNLOOP_DECL void unlink(list& l, slot_id id) noexcept;

  using timer_type = asio::basic_waitable_timer<
    std::chrono::steady_clock,
    asio::wait_traits<std::chrono::steady_clock>,
    loop::executor_type>;

  loop& loop_;
  loop_core& core_;
  ceiling& handles_;
  ceiling& operations_;
  slot_table<accept_record> records_;
  list waiting_;
  list backoff_;
  list ready_; // each has a resume_handler posted
  bool shut_down_ = false;

  timer_type backoff_timer_;
  bool backoff_armed_ = false;
  std::chrono::milliseconds backoff_delay_ = first_backoff;

  std::uint64_t waits_ = 0;
  std::uint64_t refused_ = 0;
  std::uint64_t backoffs_ = 0;

  handle_anchor* anchor_;

  std::mutex spares_mutex_;
  void* spares_ = nullptr; // each block's first word links the next
};

} // namespace detail
} // namespace turnloop

#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/detail/accept/impl/handle_service.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_DETAIL_ACCEPT_HANDLE_SERVICE_HPP
