//
// turnloop/detail/blocking/address_semaphore.hpp
//
// The binary semaphore a sleeping worker waits on where Windows offers
// WaitOnAddress (Windows 8 and later, detail/platform.hpp,
// TURNLOOP_HAS_WAIT_ON_ADDRESS): futex_semaphore's one-waiter state machine
// over the word-sized wait Windows has in place of a futex. Not C++20's
// atomic wait (atomic_semaphore): the standard library MinGW-w64 ships with
// GCC 12 implements it with a table of condition variables, and a release
// was lost there (test/blocking_destruction under Wine: workers asleep in
// the wait while the pool joined them). release() makes a call only when
// the waiter sleeps. Programs link synchronization.lib (MinGW-w64:
// -lsynchronization), which this header asks MSVC for.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_ADDRESS_SEMAPHORE_HPP
#define TURNLOOP_DETAIL_BLOCKING_ADDRESS_SEMAPHORE_HPP

#include <turnloop/detail/config.hpp>

#include <turnloop/detail/asio.hpp>
// Winsock's headers before windows.h, as Asio includes them: windows.h
// first would bring in the old winsock.h.
#include TURNLOOP_ASIO_HEADER(detail/socket_types.hpp)

#include <atomic>

#if defined(_MSC_VER)
# pragma comment(lib, "synchronization.lib")
#endif // defined(_MSC_VER)

namespace turnloop {
namespace detail {

class address_semaphore
{
public:
  address_semaphore() noexcept = default;
  address_semaphore(const address_semaphore&) = delete;
  address_semaphore& operator=(const address_semaphore&) = delete;

  /// Waits until released, then takes the release. The one waiter's thread.
  void acquire() noexcept
  {
    for (;;)
    {
      long seen = released;
      if (state_.compare_exchange_strong(seen, empty,
            std::memory_order_acquire, std::memory_order_relaxed))
        return;
      // Announce the sleep; a release in between changes the state, and
      // WaitOnAddress then returns at once on the stale value.
      if (seen == empty && !state_.compare_exchange_strong(seen, sleeping,
            std::memory_order_relaxed, std::memory_order_relaxed))
        continue;
      long undesired = sleeping;
      ::WaitOnAddress(&state_, &undesired, sizeof undesired, INFINITE);
    }
  }

  /// Releases the waiter. Any thread; the semaphore must outlive the call,
  /// which may touch it after the waiter has gone on.
  void release() noexcept
  {
    if (state_.exchange(released, std::memory_order_release) == sleeping)
      ::WakeByAddressSingle(&state_);
  }

private:
  enum : long { empty, released, sleeping };

  // WaitOnAddress compares the word's bytes: the atomic must be just them.
  static_assert(sizeof(std::atomic<long>) == sizeof(long)
    && std::atomic<long>::is_always_lock_free);

  std::atomic<long> state_{empty};
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_ADDRESS_SEMAPHORE_HPP
