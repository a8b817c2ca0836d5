//
// bench/support/region_windows.cpp
//
// region.hpp on Windows (bench/run.sh --windows, run under Wine): wall
// clock only. There are no perf counters, no callgrind, and no glibc to
// interpose for counting allocations (allocation_counter_windows.cpp):
// those modes fail with a message saying so.
//

#include "region.hpp"

#include <stdexcept>

namespace bench {

region::~region() = default;

void region::begin()
{
  if (mode_ != measure_mode::time)
    throw std::runtime_error("only --mode time on Windows: no callgrind, "
                             "and allocations are counted through glibc");
  state_ = state::begun;
  instructions_note_ = "unavailable (no perf counters on Windows)";
  start_ = std::chrono::steady_clock::now();
}

void region::end()
{
  stop_ = std::chrono::steady_clock::now();
  state_ = state::ended;
}

} // namespace bench
