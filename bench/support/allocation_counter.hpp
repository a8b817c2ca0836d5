//
// bench/support/allocation_counter.hpp
//
// Counts the heap allocations the whole process makes while counting is on.
//
// The C allocation functions are interposed, not only operator new: Asio
// takes handler memory from std::aligned_alloc, which a replaced operator new
// never sees, so counting at operator new would report zero for exactly the
// allocations these benchmarks care about.
//

#ifndef TURNLOOP_BENCH_SUPPORT_ALLOCATION_COUNTER_HPP
#define TURNLOOP_BENCH_SUPPORT_ALLOCATION_COUNTER_HPP

#include <cstdint>

namespace bench {

/// What the process allocated between start and stop, on every thread.
struct allocation_totals
{
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;

  /// Usable bytes allocated minus usable bytes freed: the heap growth.
  std::int64_t net_bytes = 0;
};

/// Zeroes the totals and starts counting. Any thread.
void start_counting_allocations() noexcept;

/// Stops counting and returns the totals since start.
allocation_totals stop_counting_allocations() noexcept;

} // namespace bench

#endif // TURNLOOP_BENCH_SUPPORT_ALLOCATION_COUNTER_HPP
