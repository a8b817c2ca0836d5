//
// turnloop/blocking_stats.hpp
//
// A snapshot of a loop's blocking-completion service, from
// turnloop::blocking_statistics().
//

#ifndef TURNLOOP_BLOCKING_STATS_HPP
#define TURNLOOP_BLOCKING_STATS_HPP

#include <cstddef>
#include <cstdint>

namespace turnloop {

/// Counters of a loop's blocking service; all zero before the first
/// submission. Totals count since the first submission.
struct blocking_stats
{
  /// Bounded worker threads started, and how many are running a job now.
  std::size_t threads = 0;
  std::size_t busy = 0;

  /// Bounded jobs waiting for a worker now (including those submitted on
  /// another thread and not yet at the loop), and the most ever waiting
  /// (ceiling: config::blocking.queue_capacity).
  std::size_t queued = 0;
  std::size_t queued_high_water = 0;

  /// Long jobs admitted and not finished now (each has, or is about to get,
  /// a thread of its own), and the most ever at once (ceiling:
  /// config::blocking.long_threads_max).
  std::size_t long_threads = 0;
  std::size_t long_threads_high_water = 0;

  /// Admitted jobs whose completion has not been delivered yet (queued,
  /// running, or finished and waiting for the loop's turn), and the most
  /// ever (ceiling: config::blocking.max_undelivered).
  std::size_t undelivered = 0;
  std::size_t undelivered_high_water = 0;

  /// Jobs admitted, and completions delivered for them (each admitted job
  /// is delivered exactly once: result, exception or operation_aborted).
  std::uint64_t admitted = 0;
  std::uint64_t delivered = 0;

  /// Of the delivered, those cancelled before they started (they never ran).
  std::uint64_t aborted = 0;

  /// Submissions refused with turnloop::error::resource_limit, in total and
  /// by the ceiling that refused them. A refused job never runs.
  std::uint64_t refused = 0;
  std::uint64_t refused_undelivered = 0; // max_undelivered
  std::uint64_t refused_queue = 0;       // queue_capacity
  std::uint64_t refused_threads = 0;     // long_threads_max, or the OS
                                         // would not create a thread
  std::uint64_t refused_operations = 0;  // config::max_operations
};

} // namespace turnloop

#endif // TURNLOOP_BLOCKING_STATS_HPP
