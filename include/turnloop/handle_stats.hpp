//
// turnloop/handle_stats.hpp
//
// A snapshot of a loop's handle ceiling (config::max_handles) and of the
// accepts that wait on it, from turnloop::handle_statistics().
//

#ifndef TURNLOOP_HANDLE_STATS_HPP
#define TURNLOOP_HANDLE_STATS_HPP

#include <cstddef>
#include <cstdint>

namespace turnloop {

/// Counters of a loop's handles. Totals count since the loop was built.
struct handle_stats
{
  /// The ceiling: config::max_handles.
  std::size_t limit = 0;

  /// Handles held now, and the most ever held at once. A handle is held by
  /// each turnloop::accepted_socket until it is destroyed, and by each
  /// accept that has reserved one and not completed yet.
  std::size_t in_use = 0;
  std::size_t high_water = 0;

  /// turnloop::async_accept operations submitted and not completed yet
  /// (each holds one unit of config::max_operations), and of those, the
  /// ones in line for a handle now (they have not called accept).
  std::size_t accepts_pending = 0;
  std::size_t accepts_waiting = 0;

  /// Accepts that found no handle free and waited in line for one. Waiting
  /// is what the handle ceiling does to an accept: it is not a refusal, so
  /// the ceiling's own refusal count is left alone.
  std::uint64_t accept_waits = 0;

  /// Accepts refused with turnloop::error::resource_limit because
  /// config::max_operations operations were outstanding.
  std::uint64_t accepts_refused = 0;

  /// Times accept failed for want of descriptors or memory (EMFILE, ENFILE,
  /// ENOBUFS, ENOMEM) and was tried again after a backoff instead of
  /// completing with the error.
  std::uint64_t accept_backoffs = 0;
};

} // namespace turnloop

#endif // TURNLOOP_HANDLE_STATS_HPP
