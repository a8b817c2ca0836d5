//
// test/blocking_support.hpp
//
// Helpers shared by the blocking service's test modules.
//

#ifndef TURNLOOP_TEST_BLOCKING_SUPPORT_HPP
#define TURNLOOP_TEST_BLOCKING_SUPPORT_HPP

#include <turnloop/blocking.hpp>

#include <atomic>

#include "support.hpp"

namespace test {

/// Jobs wait on this until the test opens it (or the deadline passes).
struct gate
{
  std::atomic<bool> open{false};

  bool wait() const
  {
    return wait_for([this] { return open.load(); });
  }
};

/// Waits until every bounded job has left the queue and its worker: every
/// finished job's result is then in the ring, waiting for a turn. Call it on
/// the loop's thread (the loop does not turn meanwhile).
inline bool all_results_in_ring(turnloop::loop& l)
{
  return wait_for([&] {
    const turnloop::blocking_stats s = turnloop::blocking_statistics(l);
    return s.queued == 0 && s.busy == 0;
  });
}

} // namespace test

#endif // TURNLOOP_TEST_BLOCKING_SUPPORT_HPP
