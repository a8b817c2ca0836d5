//
// turnloop/detail/blocking/futex_semaphore.hpp
//
// The binary semaphore a sleeping worker waits on: one waiter, and
// acquire() blocks in the kernel at once. std::binary_semaphore (libstdc++)
// first yields the core a few times; on a busy machine each yield hands the
// core to a neighbour for a time slice, and the kernel's EEVDF scheduler
// moves a yielder's deadline back a slice each time, so a worker woken for a
// job queued behind every other runnable thread. release() makes a system
// call only when the waiter sleeps.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_FUTEX_SEMAPHORE_HPP
#define TURNLOOP_DETAIL_BLOCKING_FUTEX_SEMAPHORE_HPP

#include <turnloop/detail/config.hpp>

#include <atomic>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace turnloop {
namespace detail {

class futex_semaphore
{
public:
  futex_semaphore() noexcept = default;
  futex_semaphore(const futex_semaphore&) = delete;
  futex_semaphore& operator=(const futex_semaphore&) = delete;

  /// Waits until released, then takes the release. The one waiter's thread.
  void acquire() noexcept
  {
    for (;;)
    {
      int seen = released;
      if (state_.compare_exchange_strong(seen, empty,
            std::memory_order_acquire, std::memory_order_relaxed))
        return;
      // Announce the sleep; a release in between changes the state, and
      // the kernel then refuses to wait on the stale value.
      if (seen == empty && !state_.compare_exchange_strong(seen, sleeping,
            std::memory_order_relaxed, std::memory_order_relaxed))
        continue;
      futex(FUTEX_WAIT_PRIVATE, sleeping);
    }
  }

  /// Releases the waiter. Any thread; the semaphore must outlive the call,
  /// which may touch it after the waiter has gone on.
  void release() noexcept
  {
    if (state_.exchange(released, std::memory_order_release) == sleeping)
      futex(FUTEX_WAKE_PRIVATE, 1);
  }

private:
  enum : int { empty, released, sleeping };

  void futex(int op, int value) noexcept
  {
    // std::atomic<int> is an int in memory (checked below), as a futex
    // needs; EINTR and EAGAIN only send acquire() round again.
    ::syscall(SYS_futex, reinterpret_cast<int*>(&state_), op, value,
        nullptr, nullptr, 0);
  }

  static_assert(sizeof(std::atomic<int>) == sizeof(int)
    && std::atomic<int>::is_always_lock_free);

  std::atomic<int> state_{empty};
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_FUTEX_SEMAPHORE_HPP
