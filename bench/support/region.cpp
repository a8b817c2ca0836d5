//
// bench/support/region.cpp
//

#include "region.hpp"

#include <cerrno>
#include <cstring>

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

namespace bench {

namespace {

// Opens a disabled counter of user-space instructions for the calling thread
// and the threads it creates from now on; returns -1 and sets errno if the
// kernel or the virtual machine does not provide one.
int open_instruction_counter() noexcept
{
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_INSTRUCTIONS;
  attr.disabled = 1;
  attr.inherit = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
}

} // namespace

region::~region()
{
  if (perf_fd_ >= 0)
    ::close(perf_fd_);
}

void region::begin()
{
  state_ = state::begun;
  switch (mode_)
  {
  case measure_mode::time:
    perf_fd_ = open_instruction_counter();
    if (perf_fd_ < 0)
      instructions_note_ = std::string("unavailable (perf counters not supported: ")
        + std::strerror(errno) + ")";
    else
    {
      ::ioctl(perf_fd_, PERF_EVENT_IOC_RESET, 0);
      ::ioctl(perf_fd_, PERF_EVENT_IOC_ENABLE, 0);
    }
    break;
  case measure_mode::allocations:
    start_counting_allocations();
    break;
  case measure_mode::callgrind:
    CALLGRIND_START_INSTRUMENTATION;
    break;
  }
  start_ = std::chrono::steady_clock::now();
}

void region::end()
{
  stop_ = std::chrono::steady_clock::now();
  state_ = state::ended;
  switch (mode_)
  {
  case measure_mode::time:
    if (perf_fd_ >= 0)
    {
      ::ioctl(perf_fd_, PERF_EVENT_IOC_DISABLE, 0);
      std::uint64_t count = 0;
      if (::read(perf_fd_, &count, sizeof count) == sizeof count)
        instructions_ = count;
      else
        instructions_note_ = "unavailable (perf counter could not be read)";
    }
    break;
  case measure_mode::allocations:
    allocations_ = stop_counting_allocations();
    break;
  case measure_mode::callgrind:
    CALLGRIND_STOP_INSTRUMENTATION;
    break;
  }
}

} // namespace bench
