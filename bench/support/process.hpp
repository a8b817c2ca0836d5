//
// bench/support/process.hpp
//
// Facts about, and limits of, the benchmark process.
//

#ifndef TURNLOOP_BENCH_SUPPORT_PROCESS_HPP
#define TURNLOOP_BENCH_SUPPORT_PROCESS_HPP

#include <cstdint>

namespace bench {

/// This process's resident set, in KiB, from /proc/self/statm.
struct resident_set
{
  std::int64_t total_kib = -1;

  /// Not backed by a file: the heap, stacks, anonymous mappings. Code pages
  /// faulted in by the first call of a function count in total_kib only,
  /// which is why memory rows show both.
  std::int64_t anonymous_kib = -1;
};

/// Reads into a stack buffer, so it allocates nothing and can be called while
/// allocations are counted. Fields are -1 if statm cannot be read.
resident_set resident() noexcept;

/// Maps in every page of every file this process has mapped (the program,
/// its libraries), so that later growth of the resident set is memory the
/// process allocated rather than code touched for the first time. Needs
/// MADV_POPULATE_READ (Linux 5.14); returns false where it is missing.
bool prefault_mapped_files() noexcept;

/// CPU time the calling thread has used, in seconds, in user space and in
/// the kernel.
struct cpu_seconds
{
  double user = 0;
  double system = 0;
};

cpu_seconds this_thread_cpu_seconds() noexcept;

/// Raises RLIMIT_NOFILE's soft limit to the hard limit: the TCP workloads
/// hold thousands of descriptors.
void raise_descriptor_limit() noexcept;

} // namespace bench

#endif // TURNLOOP_BENCH_SUPPORT_PROCESS_HPP
