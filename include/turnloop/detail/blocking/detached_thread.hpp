//
// turnloop/detail/blocking/detached_thread.hpp
//
// Starts a thread that nobody joins (a long blocking job's). std::thread,
// detached, where the platform has POSIX threads; on Windows
// (TURNLOOP_HAS_WIN32_THREADS, detail/platform.hpp) _beginthreadex, its
// handle closed at once. Not std::thread there: MinGW-w64's GCC 12 runs it
// on winpthreads, whose detach lost threads under Wine (of 3000 detached
// threads, one never ran, or ran on freed state and crashed the process;
// 9000 through _beginthreadex all ran). A thread that cannot be started
// throws std::system_error, as std::thread's constructor does.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_DETACHED_THREAD_HPP
#define TURNLOOP_DETAIL_BLOCKING_DETACHED_THREAD_HPP

#include <turnloop/detail/config.hpp>

#if defined(TURNLOOP_HAS_WIN32_THREADS)
# include <turnloop/detail/asio.hpp>
// Winsock's headers before windows.h, as Asio includes them.
# include TURNLOOP_ASIO_HEADER(detail/socket_types.hpp)
# include <process.h>
# include <cerrno>
# include <cstdint>
# include <memory>
# include <system_error>
#else // defined(TURNLOOP_HAS_WIN32_THREADS)
# include <thread>
#endif // defined(TURNLOOP_HAS_WIN32_THREADS)

#include <utility>

namespace turnloop {
namespace detail {

#if defined(TURNLOOP_HAS_WIN32_THREADS)
template <typename Function>
unsigned __stdcall run_detached_thread(void* function) noexcept
{
  const std::unique_ptr<Function> f(static_cast<Function*>(function));
  (*f)();
  return 0;
}
#endif // defined(TURNLOOP_HAS_WIN32_THREADS)

/// Runs @p f, which must not throw, on a new thread nobody joins.
template <typename Function>
void start_detached_thread(Function f)
{
#if defined(TURNLOOP_HAS_WIN32_THREADS)
  auto owned = std::make_unique<Function>(std::move(f));
  const std::uintptr_t handle = ::_beginthreadex(nullptr, 0,
      &run_detached_thread<Function>, owned.get(), 0, nullptr);
  if (handle == 0)
    throw std::system_error(errno, std::generic_category(), "_beginthreadex");
  owned.release(); // the thread's now
  ::CloseHandle(reinterpret_cast<HANDLE>(handle));
#else // defined(TURNLOOP_HAS_WIN32_THREADS)
  std::thread(std::move(f)).detach();
#endif // defined(TURNLOOP_HAS_WIN32_THREADS)
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_DETACHED_THREAD_HPP
