//
// bench/support/process_windows.cpp
//
// process.hpp on Windows (bench/run.sh --windows, run under Wine): the
// resident set is the working set; nothing is prefaulted; there is no
// descriptor limit to raise.
//

#include "process.hpp"

#include <winsock2.h>
#include <windows.h>
#include <psapi.h>

namespace bench {

resident_set resident() noexcept
{
  resident_set r;
  PROCESS_MEMORY_COUNTERS_EX counters{};
  counters.cb = sizeof counters;
  if (::GetProcessMemoryInfo(::GetCurrentProcess(),
        reinterpret_cast<PROCESS_MEMORY_COUNTERS*>(&counters), sizeof counters))
  {
    r.total_kib = static_cast<std::int64_t>(counters.WorkingSetSize / 1024);
    r.anonymous_kib = static_cast<std::int64_t>(counters.PrivateUsage / 1024);
  }
  return r;
}

bool prefault_mapped_files() noexcept
{
  return false;
}

cpu_seconds this_thread_cpu_seconds() noexcept
{
  FILETIME created, exited, kernel, user;
  if (!::GetThreadTimes(::GetCurrentThread(), &created, &exited, &kernel, &user))
    return {};
  // 100 ns units.
  const auto seconds = [](const FILETIME& t) {
    return double((std::uint64_t(t.dwHighDateTime) << 32) | t.dwLowDateTime) * 1e-7;
  };
  return {seconds(user), seconds(kernel)};
}

void raise_descriptor_limit() noexcept
{
}

} // namespace bench
