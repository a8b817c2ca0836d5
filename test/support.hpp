//
// test/support.hpp
//
// Helpers shared by the test modules: waiting on a condition with a deadline
// (never sleeping as a way to synchronise), and reading the process's thread
// count.
//

#ifndef TURNLOOP_TEST_SUPPORT_HPP
#define TURNLOOP_TEST_SUPPORT_HPP

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

namespace test {

/// Generous: the machine is shared and the sanitizers are slow.
inline constexpr std::chrono::seconds deadline{30};

/// Spins (yielding) until @p condition holds or the deadline passes.
template <typename Condition>
bool wait_for(Condition condition,
    std::chrono::steady_clock::duration limit = deadline)
{
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!condition())
  {
    if (std::chrono::steady_clock::now() > end)
      return false;
    std::this_thread::yield();
  }
  return true;
}

/// Threads in this process, from /proc/self/task.
inline std::size_t thread_count()
{
  std::size_t n = 0;
  for (auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
  {
    (void)entry;
    ++n;
  }
  return n;
}

/// The calling thread's kernel id.
inline pid_t this_thread_id()
{
  return static_cast<pid_t>(::syscall(SYS_gettid));
}

/// True while thread @p tid of this process is blocked in epoll_wait with no
/// timeout: a loop parked because it has nothing to do.
inline bool parked_in_epoll(pid_t tid)
{
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/syscall");
  std::string number;
  std::string fd;
  std::string events;
  std::string max_events;
  std::string timeout;
  f >> number >> fd >> events >> max_events >> timeout;
  return number == std::to_string(SYS_epoll_wait) && timeout == "0xffffffff";
}

/// Label for cases that exercise several threads; test/run.sh runs these
/// again under ThreadSanitizer.
inline auto threads_label()
{
  return boost::unit_test::label("threads");
}

} // namespace test

#endif // TURNLOOP_TEST_SUPPORT_HPP
