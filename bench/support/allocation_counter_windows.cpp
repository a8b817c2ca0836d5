//
// bench/support/allocation_counter_windows.cpp
//
// allocation_counter.hpp on Windows: nothing is counted (the counter
// interposes glibc's allocator); region_windows.cpp refuses the mode that
// would ask.
//

#include "allocation_counter.hpp"

namespace bench {

void start_counting_allocations() noexcept
{
}

allocation_totals stop_counting_allocations() noexcept
{
  return {};
}

} // namespace bench
