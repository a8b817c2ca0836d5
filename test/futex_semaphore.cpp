//
// test/futex_semaphore.cpp
//
// The semaphore a sleeping blocking worker waits on: it lets one release
// through, loses none, and blocks in the kernel without yielding first. A
// lost release leaves a thread asleep for good: each case that joins one
// has a timeout, so the module fails rather than hangs.
//

#include <turnloop/detail/blocking/futex_semaphore.hpp>

#define BOOST_TEST_MODULE futex_semaphore
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "support.hpp"

// Counts the yields each thread makes: this definition is the one every
// library in the process calls.
namespace {
thread_local int yields = 0;
}

extern "C" int sched_yield() noexcept
{
  ++yields;
  return static_cast<int>(::syscall(SYS_sched_yield));
}

using turnloop::detail::futex_semaphore;

namespace {

// True while thread @p tid of this process is blocked in futex().
bool blocked_in_futex(pid_t tid)
{
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/syscall");
  std::string number;
  f >> number;
  return number == std::to_string(SYS_futex);
}

} // namespace

BOOST_AUTO_TEST_CASE(a_release_before_the_acquire_lets_it_through_at_once)
{
  futex_semaphore s;
  s.release();
  s.acquire();
  BOOST_TEST(yields == 0);
}

BOOST_AUTO_TEST_CASE(releases_do_not_add_up,
    * test::threads_label() * boost::unit_test::timeout(120))
{
  futex_semaphore s;
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

BOOST_AUTO_TEST_CASE(a_waiter_blocks_in_the_kernel_without_yielding_first,
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

BOOST_AUTO_TEST_CASE(hand_offs_between_two_threads_lose_no_release,
    * test::threads_label() * boost::unit_test::timeout(120))
{
  constexpr int rounds = 20'000;
  futex_semaphore ping;
  futex_semaphore pong;
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
