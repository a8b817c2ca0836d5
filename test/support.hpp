//
// test/support.hpp
//
// Helpers shared by the test modules: waiting on a condition with a deadline
// (never sleeping as a way to synchronise), reading the process's thread
// count, running a case in a child process, and running the process out of
// descriptors. Each works on Linux and Windows, or says where it does not
// (has_fork, has_descriptor_limit: a case that needs one is marked
// only_where with them).
//

#ifndef TURNLOOP_TEST_SUPPORT_HPP
#define TURNLOOP_TEST_SUPPORT_HPP

#include <turnloop/detail/config.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>

#if defined(_WIN32)
# include <windows.h>
# include <psapi.h>
# include <tlhelp32.h>
# include <sys/types.h>
#else // defined(_WIN32)
# include <fcntl.h>
# include <sys/resource.h>
# include <sys/syscall.h>
# include <sys/types.h>
# include <sys/wait.h>
# include <unistd.h>
#endif // defined(_WIN32)

namespace test {

/// Whether Asio has POSIX stream descriptors (not on Windows).
#if defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
inline constexpr bool has_posix_descriptors = true;
#else // defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
inline constexpr bool has_posix_descriptors = false;
#endif // defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)

#if defined(_WIN32)
/// Whether a case can run in a child process of its own (fork), and a
/// process can run out of descriptors (RLIMIT_NOFILE): not on Windows.
inline constexpr bool has_fork = false;
inline constexpr bool has_descriptor_limit = false;
#else // defined(_WIN32)
inline constexpr bool has_fork = true;
inline constexpr bool has_descriptor_limit = true;
#endif // defined(_WIN32)

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

/// Runs @p context (a turnloop::loop or an io_context) a handler at a time
/// until @p condition holds or the deadline passes.
template <typename Context, typename Condition>
bool run_until(Context& context, Condition condition,
    std::chrono::steady_clock::duration limit = deadline)
{
  const auto end = std::chrono::steady_clock::now() + limit;
  context.restart();
  while (!condition())
  {
    if (std::chrono::steady_clock::now() > end)
      return false;
    context.run_one_for(std::chrono::milliseconds(10));
    context.restart();
  }
  return true;
}

/// Threads in this process, from /proc/self/task (Linux) or a snapshot of
/// the system's threads (Windows).
inline std::size_t thread_count()
{
  std::size_t n = 0;
#if defined(_WIN32)
  const HANDLE snapshot = ::CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
  if (snapshot == INVALID_HANDLE_VALUE)
    return 0;
  THREADENTRY32 entry;
  entry.dwSize = sizeof entry;
  for (BOOL more = ::Thread32First(snapshot, &entry); more;
      more = ::Thread32Next(snapshot, &entry))
  {
    if (entry.th32OwnerProcessID == ::GetCurrentProcessId())
      ++n;
  }
  ::CloseHandle(snapshot);
#else // defined(_WIN32)
  for (auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
  {
    (void)entry;
    ++n;
  }
#endif // defined(_WIN32)
  return n;
}

/// The calling thread's kernel id.
inline pid_t this_thread_id()
{
#if defined(_WIN32)
  return static_cast<pid_t>(::GetCurrentThreadId());
#else // defined(_WIN32)
  return static_cast<pid_t>(::syscall(SYS_gettid));
#endif // defined(_WIN32)
}

/// True while thread @p tid of this process is blocked in the reactor's
/// wait with nothing to do: a parked loop. On epoll that is epoll_wait with
/// no timeout; Asio's select reactor always passes one (at most the next
/// timer, or five minutes), so there it is select; on Asio's io_uring
/// backend, io_uring_enter. Windows (and Wine) tells no thread's state, so
/// there it is a thread that has used no CPU for 100 ms of this call being
/// asked (the completion port's wait, as near as can be seen): a false
/// "parked" makes a case weaker, never wrong, since a post to an idle loop
/// on the IOCP engine posts its turn whether or not it has blocked yet.
inline bool parked_in_reactor(pid_t tid)
{
#if defined(_WIN32)
  struct sample
  {
    pid_t tid = 0;
    std::uint64_t cpu = 0;
    std::chrono::steady_clock::time_point since;
  };
  static sample last;
  const HANDLE thread = ::OpenThread(THREAD_QUERY_LIMITED_INFORMATION, FALSE,
      static_cast<DWORD>(tid));
  if (!thread)
    return false;
  FILETIME created, exited, kernel, user;
  const BOOL got = ::GetThreadTimes(thread, &created, &exited, &kernel, &user);
  ::CloseHandle(thread);
  if (!got)
    return false;
  const auto ticks = [](const FILETIME& t) {
    return (static_cast<std::uint64_t>(t.dwHighDateTime) << 32)
      | t.dwLowDateTime;
  };
  const std::uint64_t cpu = ticks(kernel) + ticks(user);
  const auto now = std::chrono::steady_clock::now();
  if (last.tid != tid || last.cpu != cpu)
  {
    last = {tid, cpu, now};
    return false;
  }
  return now - last.since >= std::chrono::milliseconds(100);
#else // defined(_WIN32)
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/syscall");
  std::string number;
  std::string arg1, arg2, arg3, arg4;
  f >> number >> arg1 >> arg2 >> arg3 >> arg4;
  const std::string reactor = TURNLOOP_REACTOR_NAME;
  if (reactor == "epoll")
    return number == std::to_string(SYS_epoll_wait) && arg4 == "0xffffffff";
  if (reactor == "select")
    return number == std::to_string(SYS_select)
      || number == std::to_string(SYS_pselect6);
  if (reactor == "io_uring")
    return number == std::to_string(SYS_io_uring_enter);
  return false;
#endif // defined(_WIN32)
}

/// A decorator for a case that tests what only some platforms or reactors
/// do: where @p applies is false the case is skipped, its reason @p why
/// printed, and test/run.sh counts it as not applicable.
inline boost::unit_test::precondition only_where(bool applies, const char* why)
{
  return boost::unit_test::precondition(
      [applies, why](boost::unit_test::test_unit_id) {
        boost::test_tools::assertion_result r(applies);
        if (!applies)
          r.message() << "not applicable here ("
                      << (turnloop::detail::has_iocp_engine ? "Windows, IOCP"
                          : TURNLOOP_REACTOR_NAME " reactor")
                      << "): " << why;
        return r;
      });
}

/// True on Asio's io_uring backend (its scheduler task is io_uring_service).
inline constexpr bool on_asio_io_uring =
  std::string_view(TURNLOOP_REACTOR_NAME) == "io_uring";

/// Asio's io_uring backend counts operations of its own (the submissions
/// that arm its timeout and its wake) in what run(), run_one() and poll()
/// return, on io_context as on a loop: there a count of handlers is a floor.
inline constexpr bool counts_handlers_only = !on_asio_io_uring;
inline constexpr const char* backend_counts_its_own =
  "Asio's io_uring backend counts operations of its own in run()'s and "
  "run_one()'s results (io_context's too), so run_one() may run one of "
  "them instead of a handler";

/// True if @p count, what run() or a relative returned, is what running
/// @p handlers handlers returns here (see counts_handlers_only).
inline bool ran(std::size_t count, std::size_t handlers)
{
  if (count != handlers)
    BOOST_TEST_MESSAGE("ran " << count << " for " << handlers << " handlers");
  return counts_handlers_only ? count == handlers : count >= handlers;
}

/// A field of /proc/self/status in KiB (VmRSS, VmHWM, ...), or -1. On
/// Windows VmRSS is the working set and VmHWM its peak.
inline long status_kib(const std::string& field)
{
#if defined(_WIN32)
  PROCESS_MEMORY_COUNTERS counters;
  if (!::GetProcessMemoryInfo(::GetCurrentProcess(), &counters,
        sizeof counters))
    return -1;
  if (field == "VmRSS")
    return static_cast<long>(counters.WorkingSetSize / 1024);
  if (field == "VmHWM")
    return static_cast<long>(counters.PeakWorkingSetSize / 1024);
  return -1;
#else // defined(_WIN32)
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.compare(0, field.size() + 1, field + ":") == 0)
      return std::stol(line.substr(field.size() + 1));
  return -1;
#endif // defined(_WIN32)
}

/// The process's descriptor limit, as run_out_of_descriptors found it.
#if defined(_WIN32)
struct descriptor_limit
{
};

// No fork and no descriptor limit on Windows (has_fork,
// has_descriptor_limit): a case that needs them is skipped there by its
// only_where precondition, so these are never reached; they fail the case
// if one is.

template <typename Body>
int exit_status_in_child(Body)
{
  BOOST_FAIL("no child processes on Windows (test::has_fork)");
  return -1;
}

template <typename Work>
auto result_in_child(Work) -> std::optional<std::invoke_result_t<Work&>>
{
  BOOST_FAIL("no child processes on Windows (test::has_fork)");
  return std::nullopt;
}

inline std::optional<descriptor_limit> run_out_of_descriptors()
{
  BOOST_FAIL("no descriptor limit on Windows (test::has_descriptor_limit)");
  return std::nullopt;
}

inline void restore_descriptor_limit(const descriptor_limit&)
{
}

template <typename Work>
long peak_rss_growth_in_child_kib(Work)
{
  BOOST_FAIL("no child processes on Windows (test::has_fork)");
  return -1;
}

#else // defined(_WIN32)
using descriptor_limit = rlimit;

/// Runs @p body in a child process, for a case that changes what belongs to
/// the whole process (its descriptor limit, its allocator), and returns the
/// child's exit status: @p body's result, or -1 if the child did not exit
/// normally.
template <typename Body>
int exit_status_in_child(Body body)
{
  const pid_t child = ::fork();
  if (child < 0)
    return -1;
  if (child == 0)
    ::_exit(body());
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status))
    return -1;
  return WEXITSTATUS(status);
}

/// Runs @p work in a child process and returns what it returned, sent back
/// through a pipe (so a trivially copyable value), or nothing if the child
/// could not be started, did not send it whole or did not exit with 0.
template <typename Work>
auto result_in_child(Work work) -> std::optional<std::invoke_result_t<Work&>>
{
  using result = std::invoke_result_t<Work&>;
  static_assert(std::is_trivially_copyable_v<result>);
  int fds[2];
  if (::pipe(fds) != 0)
    return std::nullopt;
  const pid_t child = ::fork();
  if (child == 0)
  {
    ::close(fds[0]);
    const result r = work();
    const bool written = ::write(fds[1], &r, sizeof r)
      == static_cast<ssize_t>(sizeof r);
    ::_exit(written ? 0 : 1);
  }
  ::close(fds[1]);
  result r{};
  const bool read = child > 0
    && ::read(fds[0], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
  ::close(fds[0]);
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child
      || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !read)
    return std::nullopt;
  return r;
}

/// Lowers RLIMIT_NOFILE to the lowest free descriptor, so that no
/// descriptor can be opened until it is raised again. For a child process
/// (see exit_status_in_child). Returns the limit to restore, or nothing if
/// it could not be lowered.
inline std::optional<descriptor_limit> run_out_of_descriptors()
{
  const int lowest = ::open("/dev/null", O_RDONLY);
  if (lowest < 0)
    return std::nullopt;
  ::close(lowest);
  rlimit saved{};
  if (::getrlimit(RLIMIT_NOFILE, &saved) != 0)
    return std::nullopt;
  rlimit lowered = saved;
  lowered.rlim_cur = static_cast<rlim_t>(lowest);
  if (::setrlimit(RLIMIT_NOFILE, &lowered) != 0)
    return std::nullopt;
  return saved;
}

/// Raises the descriptor limit back to @p saved.
inline void restore_descriptor_limit(const descriptor_limit& saved)
{
  ::setrlimit(RLIMIT_NOFILE, &saved);
}

/// Runs @p work in a child process and returns how far its resident set
/// grew at its peak, in KiB (VmHWM at the end against VmRSS at the start),
/// or -1 if the child failed. A forked child starts a high-water mark of its
/// own, and freeing memory does not lower it, so each measurement needs a
/// process of its own and sees the most @p work ever held.
template <typename Work>
long peak_rss_growth_in_child_kib(Work work)
{
  return result_in_child([&] {
    const long before = status_kib("VmRSS");
    work();
    return std::max(status_kib("VmHWM"), status_kib("VmRSS")) - before;
  }).value_or(-1);
}
#endif // defined(_WIN32)

/// Label for cases that exercise several threads; test/run.sh runs these
/// again under ThreadSanitizer.
inline auto threads_label()
{
  return boost::unit_test::label("threads");
}

} // namespace test

#endif // TURNLOOP_TEST_SUPPORT_HPP
