//
// turnloop/detail/blocking/worker_wake.hpp
//
// What a sleeping blocking worker waits on: futex_semaphore where the
// platform has a futex (Linux), address_semaphore where it has
// WaitOnAddress (Windows), atomic_semaphore elsewhere (detail/platform.hpp,
// TURNLOOP_HAS_FUTEX, TURNLOOP_HAS_WAIT_ON_ADDRESS). All three: one waiter,
// releases do not add up, release() makes a system call only when the
// waiter sleeps.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_WORKER_WAKE_HPP
#define TURNLOOP_DETAIL_BLOCKING_WORKER_WAKE_HPP

#include <turnloop/detail/config.hpp>

#if defined(TURNLOOP_HAS_FUTEX)
# include <turnloop/detail/blocking/futex_semaphore.hpp>
#elif defined(TURNLOOP_HAS_WAIT_ON_ADDRESS)
# include <turnloop/detail/blocking/address_semaphore.hpp>
#else // defined(TURNLOOP_HAS_FUTEX)
# include <turnloop/detail/blocking/atomic_semaphore.hpp>
#endif // defined(TURNLOOP_HAS_FUTEX)

namespace turnloop {
namespace detail {

#if defined(TURNLOOP_HAS_FUTEX)
using worker_wake = futex_semaphore;
#elif defined(TURNLOOP_HAS_WAIT_ON_ADDRESS)
using worker_wake = address_semaphore;
#else // defined(TURNLOOP_HAS_FUTEX)
using worker_wake = atomic_semaphore;
#endif // defined(TURNLOOP_HAS_FUTEX)

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_WORKER_WAKE_HPP
