//
// test/worker_wake.cpp
//
// The semaphore a sleeping blocking worker waits on (worker_wake: the futex
// one on Linux, the WaitOnAddress one on Windows, the atomic-wait one
// elsewhere), and each implementation this platform uses: it lets one
// release through and loses none; the futex one blocks in the kernel
// without yielding first. A lost release leaves a thread asleep for good:
// each case that joins one has a timeout, so the module fails rather than
// hangs. Seeing a thread asleep in the kernel takes Linux's
// /proc/self/task/<tid>/syscall; on Windows a thread that uses no CPU
// stands for it (test::parked_in_reactor), and yields are not counted.
//

#include <turnloop/detail/blocking/worker_wake.hpp>
#include <turnloop/detail/blocking/atomic_semaphore.hpp>
#if defined(TURNLOOP_HAS_WAIT_ON_ADDRESS)
# include <turnloop/detail/blocking/address_semaphore.hpp>
#endif // defined(TURNLOOP_HAS_WAIT_ON_ADDRESS)

#define BOOST_TEST_MODULE worker_wake
#include <boost/test/unit_test.hpp>
#include <boost/mpl/list.hpp>

#include <atomic>
#include <type_traits>
#include <fstream>
#include <string>
#include <thread>

#if defined(__linux__)
# include <sched.h>
# include <sys/syscall.h>
# include <unistd.h>
#endif // defined(__linux__)

#include "support.hpp"

// Counts the yields each thread makes: this definition is the one every
// library in the process calls (Linux; Windows' cannot be replaced).
namespace {
thread_local int yields = 0;
}

#if defined(__linux__)
extern "C" int sched_yield() noexcept
{
  ++yields;
  return static_cast<int>(::syscall(SYS_sched_yield));
}
#endif // defined(__linux__)

using turnloop::detail::atomic_semaphore;

// Windows' standard library (MinGW-w64, GCC 12) loses releases in its
// atomic wait (address_semaphore.hpp): the atomic one is not used there,
// and not tested.
#if defined(TURNLOOP_HAS_FUTEX)
using turnloop::detail::futex_semaphore;
using semaphores = boost::mpl::list<futex_semaphore, atomic_semaphore>;
#elif defined(TURNLOOP_HAS_WAIT_ON_ADDRESS)
using turnloop::detail::address_semaphore;
using semaphores = boost::mpl::list<address_semaphore>;
#else // defined(TURNLOOP_HAS_FUTEX)
using semaphores = boost::mpl::list<atomic_semaphore>;
#endif // defined(TURNLOOP_HAS_FUTEX)

namespace {

// True while thread @p tid of this process is blocked in futex() (where a
// C++20 atomic wait blocks on Linux too); on Windows, while it uses no CPU.
bool blocked_in_futex(pid_t tid)
{
#if defined(__linux__)
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/syscall");
  std::string number;
  f >> number;
  return number == std::to_string(SYS_futex);
#else // defined(__linux__)
  return test::parked_in_reactor(tid);
#endif // defined(__linux__)
}

} // namespace

BOOST_AUTO_TEST_CASE(the_worker_wake_is_the_futex_one_on_linux_and_the_atomic_one_elsewhere)
{
#if defined(__linux__)
  BOOST_TEST((std::is_same_v<turnloop::detail::worker_wake, futex_semaphore>));
#elif defined(TURNLOOP_HAS_WAIT_ON_ADDRESS)
  BOOST_TEST((std::is_same_v<turnloop::detail::worker_wake, address_semaphore>));
#else // defined(__linux__)
  BOOST_TEST((std::is_same_v<turnloop::detail::worker_wake, atomic_semaphore>));
#endif // defined(__linux__)
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_release_before_the_acquire_lets_it_through_at_once,
    Semaphore, semaphores)
{
  Semaphore s;
  s.release();
  s.acquire();
  BOOST_TEST(yields == 0);
}

BOOST_TEST_DECORATOR(* test::threads_label() * boost::unit_test::timeout(120))
BOOST_AUTO_TEST_CASE_TEMPLATE(releases_do_not_add_up, Semaphore, semaphores)
{
  Semaphore s;
  s.release();
  s.release();
  s.acquire();
  std::atomic<bool> through{false};
  std::atomic<pid_t> waiter{0};
  std::thread t([&] {
    waiter = test::this_thread_id();
    s.acquire();
    through = true;
  });
  BOOST_TEST(test::wait_for([&] {
    return waiter != 0 && blocked_in_futex(waiter);
  }));
  BOOST_TEST(!through);
  s.release();
  t.join();
  BOOST_TEST(through);
}

#if defined(TURNLOOP_HAS_FUTEX)
BOOST_AUTO_TEST_CASE(a_futex_waiter_blocks_in_the_kernel_without_yielding_first,
    * test::threads_label() * boost::unit_test::timeout(120))
{
  futex_semaphore s;
  std::atomic<pid_t> waiter{0};
  std::atomic<int> waiter_yields{-1};
  std::thread t([&] {
    waiter = test::this_thread_id();
    s.acquire();
    waiter_yields = yields;
  });
  BOOST_TEST(test::wait_for([&] {
    return waiter != 0 && blocked_in_futex(waiter);
  }));
  s.release();
  t.join();
  BOOST_TEST(waiter_yields == 0);
}
#endif // defined(TURNLOOP_HAS_FUTEX)

BOOST_TEST_DECORATOR(* test::threads_label() * boost::unit_test::timeout(120))
BOOST_AUTO_TEST_CASE_TEMPLATE(hand_offs_between_two_threads_lose_no_release,
    Semaphore, semaphores)
{
  constexpr int rounds = 20'000;
  Semaphore ping;
  Semaphore pong;
  std::atomic<int> answered{0};
  std::thread t([&] {
    for (int i = 0; i != rounds; ++i)
    {
      ping.acquire();
      answered.fetch_add(1, std::memory_order_relaxed);
      pong.release();
    }
  });
  for (int i = 0; i != rounds; ++i)
  {
    ping.release();
    pong.acquire();
  }
  t.join();
  BOOST_TEST(answered == rounds);
}
