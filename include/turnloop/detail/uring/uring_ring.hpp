//
// turnloop/detail/uring/uring_ring.hpp
//
// The io_uring instance behind a loop's pooled reads: its submission and
// completion queues, and the provided-buffer ring through which the pool's
// buffers are lent to the kernel. It is used through the raw system calls
// of <linux/io_uring.h>, not liburing, so that neither a consumer's link
// line nor a header-only build changes.
//
// Threads: everything here is for the thread that runs the loop's reactor
// step or starts its pooled operations; those run one at a time (the loop
// has one owner), except that a loop driven through io_context::run() on
// several threads may start an operation on one while another runs the
// reactor, so the submission queue is guarded by a mutex. The mutex is
// taken only where the caller says the loop may be shared so (@p alone
// false): a loop run by loop::run() has every submission on its own thread,
// which then pays no lock.
//
// Memory: nothing exists before the first pooled read. Then the rings'
// memory is mapped, not allocated: the kernel's queues, and a buffer ring
// and buffer-id table sized for config::pooled_buffers but resident only as
// far as buffers are lent (16 + 8 bytes a buffer).
//

#ifndef TURNLOOP_DETAIL_URING_URING_RING_HPP
#define TURNLOOP_DETAIL_URING_URING_RING_HPP

#include <turnloop/detail/config.hpp>

// turnloop's io_uring path: Linux with Asio's epoll reactor
// (detail/platform.hpp).
#if defined(TURNLOOP_HAS_IO_URING_PATH)

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(detail/mutex.hpp)

#include <linux/io_uring.h>

#include <cstddef>
#include <cstdint>

namespace turnloop {
namespace detail {

/// What a completion queue entry says, handed to the operation it names.
struct uring_result
{
  int res = 0;
  unsigned flags = 0;
};

/// The ring. Its memory and descriptors are owned here; which buffers sit
/// in the buffer ring, and the operations in flight, are the pool_ring's.
class uring_ring
{
public:
  /// Sets up a ring with @p buffer_slots provided-buffer entries (a power of
  /// two, at most 32768). On failure returns nullptr and sets @p error to
  /// the system's error number (ENOSYS, EPERM, EINVAL for an old kernel,
  /// ENOMEM...). The simulated refusal of the tests goes through here too.
  TURNLOOP_DECL static uring_ring* create(std::size_t buffer_slots,
      int& error) noexcept;

  TURNLOOP_DECL ~uring_ring();

  uring_ring(const uring_ring&) = delete;
  uring_ring& operator=(const uring_ring&) = delete;

  /// The eventfd the kernel signals when a completion is posted: watched by
  /// the loop's reactor, so a blocked loop wakes for the ring.
  int event_descriptor() const noexcept
  {
    return event_fd_;
  }

  /// Queues a receive on @p fd into a buffer the kernel picks from the
  /// buffer ring when data arrives (@p poll_first: wait for readiness
  /// before the first try). @p user_data names the operation.
  TURNLOOP_DECL void prepare_recv(int fd, unsigned max_size, bool poll_first,
      std::uint64_t user_data, bool alone) noexcept;

  /// Queues a send of @p size bytes at @p data on @p fd.
  TURNLOOP_DECL void prepare_send(int fd, const void* data, unsigned size,
      std::uint64_t user_data, bool alone) noexcept;

  /// Queues the cancellation of the operation @p target, or of every
  /// operation if @p target is 0. Its own completion has user_data 0.
  TURNLOOP_DECL void prepare_cancel(std::uint64_t target, bool alone)
    noexcept;

  /// Asked, just before the kernel is handed the queued entries, of each
  /// one's user_data (other than 0): true turns the entry into a no-op
  /// that completes at once with result 0 and the same user_data.
  using withdraw_function = bool (*)(std::uint64_t user_data) noexcept;

  void set_withdraw(withdraw_function f) noexcept
  {
    withdraw_ = f;
  }

  /// Queues a one-shot poll of @p fd for readability: it completes (with
  /// the events, or an error) once @p fd is readable, at once if it is
  /// when submitted.
  TURNLOOP_DECL void prepare_poll(int fd, std::uint64_t user_data, bool alone)
    noexcept;

  /// True if the kernel takes a timeout for a wait (IORING_FEAT_EXT_ARG)
  /// and polls descriptors: wait() can be a loop's one blocking call.
  bool can_wait() const noexcept
  {
    return can_wait_;
  }

  /// io_uring_enter calls made so far.
  std::uint64_t enters() const noexcept
  {
    return enters_;
  }

  /// Submits what is queued and blocks until a completion is posted, or
  /// @p usec microseconds have passed (@p usec < 0: no limit), or a signal
  /// interrupts it. Needs can_wait(). Returns false with @p error set if
  /// the system call failed.
  TURNLOOP_DECL bool wait(long usec, int& error, bool alone) noexcept;

  /// Submits what is queued, and lets the kernel post what has completed.
  /// @p wait_for: block until that many completions are posted.
  /// Returns false with @p error set if the system call failed.
  TURNLOOP_DECL bool submit(unsigned wait_for, int& error, bool alone)
    noexcept;

  /// True if entries are queued but not submitted, or the kernel has
  /// completions to post only once this thread enters it.
  TURNLOOP_DECL bool needs_enter() const noexcept;

  /// True if entries are queued but not submitted.
  bool has_unsubmitted() const noexcept
  {
    return to_submit_ != 0;
  }

  /// Whether the kernel signals the eventfd when it posts a completion.
  /// Off while the loop is awake, which reaps without being told; on only
  /// for the reactor's blocking waits.
  void signal_completions(bool on) noexcept
  {
    const unsigned flags = __atomic_load_n(cq_flags_, __ATOMIC_RELAXED);
    __atomic_store_n(cq_flags_, on ? flags & ~IORING_CQ_EVENTFD_DISABLED
        : flags | IORING_CQ_EVENTFD_DISABLED, __ATOMIC_SEQ_CST);
  }

  /// True if completions are posted and not reaped.
  bool has_completions() const noexcept
  {
    return __atomic_load_n(cq_tail_, __ATOMIC_ACQUIRE) != *cq_head_;
  }

  /// Calls @p f(user_data, result) for each posted completion; returns how
  /// many.
  template <typename F>
  std::size_t reap(F&& f) noexcept;

  /// Lends @p size bytes at @p data to the kernel as buffer @p id.
  TURNLOOP_DECL void provide(void* data, unsigned size, unsigned id) noexcept;

  /// Takes back the buffer lent last and returns its id. Only while no
  /// receive that selects a buffer is in the kernel, every completion
  /// reaped: the kernel then takes nothing from the ring, and the buffers
  /// it has not taken are the ones lent last.
  TURNLOOP_DECL unsigned withdraw() noexcept;

  /// The buffer-id table: the pool's own record of which buffer has which
  /// id, in the same mapped region as the buffer ring.
  void*& buffer_by_id(unsigned id) noexcept
  {
    return ids_[id];
  }

  /// Entries of the buffer ring (a power of two).
  std::size_t buffer_slots() const noexcept
  {
    return buffer_slots_;
  }

  /// The buffer group every receive selects from.
  static constexpr unsigned buffer_group = 0;

private:
  // Holds sq_mutex_ unless the caller runs alone.
  class sq_guard
  {
  public:
    sq_guard(asio::detail::mutex& m, bool alone) noexcept
      : mutex_(alone ? nullptr : &m)
    {
      if (mutex_)
        mutex_->lock();
    }

    ~sq_guard()
    {
      if (mutex_)
        mutex_->unlock();
    }

    sq_guard(const sq_guard&) = delete;
    sq_guard& operator=(const sq_guard&) = delete;

  private:
    asio::detail::mutex* mutex_;
  };

  uring_ring() = default;
  // Both under an sq_guard.
  TURNLOOP_DECL io_uring_sqe* next_sqe() noexcept;
  TURNLOOP_DECL bool enter(unsigned wait_for, int& error,
      long usec = -1) noexcept;

  int ring_fd_ = -1;
  int event_fd_ = -1;

  // The kernel's queues, mapped as one (IORING_FEAT_SINGLE_MMAP).
  void* sq_map_ = nullptr;
  std::size_t sq_map_size_ = 0;
  io_uring_sqe* sqes_ = nullptr;
  std::size_t sqes_size_ = 0;
  unsigned* sq_head_ = nullptr;
  unsigned* sq_tail_ = nullptr;
  unsigned* sq_flags_ = nullptr;
  unsigned* sq_array_ = nullptr;
  unsigned sq_mask_ = 0;
  unsigned sq_entries_ = 0;
  unsigned* cq_head_ = nullptr;
  unsigned* cq_tail_ = nullptr;
  unsigned* cq_flags_ = nullptr;
  io_uring_cqe* cqes_ = nullptr;
  unsigned cq_mask_ = 0;
  unsigned to_submit_ = 0;
  std::uint64_t enters_ = 0;
  bool can_wait_ = false;
  withdraw_function withdraw_ = nullptr;
  asio::detail::mutex sq_mutex_;

  // The buffer ring and the id table, one mapping.
  void* buffers_map_ = nullptr;
  std::size_t buffers_map_size_ = 0;
  std::size_t buffer_slots_ = 0;
  unsigned short buffer_tail_ = 0;
  bool buffers_registered_ = false;
  void** ids_ = nullptr;
};

template <typename F>
std::size_t uring_ring::reap(F&& f) noexcept
{
  unsigned head = *cq_head_;
  const unsigned tail = __atomic_load_n(cq_tail_, __ATOMIC_ACQUIRE);
  std::size_t n = 0;
  for (; head != tail; ++head, ++n)
  {
    const io_uring_cqe& cqe = cqes_[head & cq_mask_];
    const std::uint64_t user_data = cqe.user_data;
    const uring_result r{cqe.res, cqe.flags};
    // The entry is the kernel's again once the head passes it.
    __atomic_store_n(cq_head_, head + 1, __ATOMIC_RELEASE);
    f(user_data, r);
  }
  return n;
}

/// A test's way to refuse io_uring as seccomp or an old kernel would: if
/// set, uring_ring::create fails with the error number it returns (0: go
/// on). Not for programs.
inline int (*uring_setup_refusal)() noexcept = nullptr;

} // namespace detail
} // namespace turnloop

#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/detail/uring/impl/uring_ring.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // defined(TURNLOOP_HAS_IO_URING_PATH)

#endif // TURNLOOP_DETAIL_URING_URING_RING_HPP
