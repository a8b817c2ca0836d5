//
// bench/support/region.hpp
//
// The measured region of a workload: the steady-state stretch between its
// warm-up and its end. Depending on the mode it is timed (and its user-space
// instructions counted, where the machine allows), or its heap allocations
// are counted, or callgrind instruments it.
//

#ifndef TURNLOOP_BENCH_SUPPORT_REGION_HPP
#define TURNLOOP_BENCH_SUPPORT_REGION_HPP

#include "allocation_counter.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace bench {

enum class measure_mode
{
  time,        // wall clock, plus perf instructions:u if available
  allocations, // heap allocations on every thread
  callgrind    // callgrind instruments only the region (--instr-atstart=no)
};

class region
{
public:
  explicit region(measure_mode mode) noexcept
    : mode_(mode)
  {
  }

  ~region();
  region(const region&) = delete;
  region& operator=(const region&) = delete;

  /// Starts measuring. Called once, on any thread.
  void begin();

  /// Stops measuring. Called once, after begin(), on the thread that called
  /// begin() when instructions are to be counted.
  void end();

  bool complete() const noexcept
  {
    return state_ == state::ended;
  }

  double seconds() const noexcept
  {
    return std::chrono::duration<double>(stop_ - start_).count();
  }

  /// User-space instructions of the thread that called begin() and of the
  /// threads it started and joined inside the region; empty if perf
  /// counters are not available (then instructions_note() says why).
  std::optional<std::uint64_t> instructions() const noexcept
  {
    return instructions_;
  }

  const std::string& instructions_note() const noexcept
  {
    return instructions_note_;
  }

  /// Set in measure_mode::allocations.
  std::optional<allocation_totals> allocations() const noexcept
  {
    return allocations_;
  }

private:
  enum class state { idle, begun, ended };

  measure_mode mode_;
  state state_ = state::idle;
  int perf_fd_ = -1;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point stop_;
  std::optional<std::uint64_t> instructions_;
  std::string instructions_note_;
  std::optional<allocation_totals> allocations_;
};

} // namespace bench

#endif // TURNLOOP_BENCH_SUPPORT_REGION_HPP
