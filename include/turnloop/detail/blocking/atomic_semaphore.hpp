//
// turnloop/detail/blocking/atomic_semaphore.hpp
//
// The binary semaphore a sleeping worker waits on where there is no futex
// (detail/platform.hpp, TURNLOOP_HAS_FUTEX): futex_semaphore's one-waiter
// state machine over a C++20 atomic wait, which the standard library maps
// to the platform's own (ulock on macOS, WaitOnAddress on Windows, a futex
// or a table of condition variables elsewhere). The library may spin or
// yield a little before it blocks, which futex_semaphore avoids on Linux.
// release() notifies only when the waiter sleeps.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_ATOMIC_SEMAPHORE_HPP
#define TURNLOOP_DETAIL_BLOCKING_ATOMIC_SEMAPHORE_HPP

#include <turnloop/detail/config.hpp>

#include <atomic>

namespace turnloop {
namespace detail {

class atomic_semaphore
{
public:
  atomic_semaphore() noexcept = default;
  atomic_semaphore(const atomic_semaphore&) = delete;
  atomic_semaphore& operator=(const atomic_semaphore&) = delete;

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
      // the wait then returns at once.
      if (seen == empty && !state_.compare_exchange_strong(seen, sleeping,
            std::memory_order_relaxed, std::memory_order_relaxed))
        continue;
      state_.wait(sleeping, std::memory_order_relaxed);
    }
  }

  /// Releases the waiter. Any thread; the semaphore must outlive the call,
  /// which may touch it after the waiter has gone on.
  void release() noexcept
  {
    if (state_.exchange(released, std::memory_order_release) == sleeping)
      state_.notify_one();
  }

private:
  enum : int { empty, released, sleeping };

  std::atomic<int> state_{empty};
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_ATOMIC_SEMAPHORE_HPP
