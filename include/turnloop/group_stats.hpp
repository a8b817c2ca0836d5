//
// turnloop/group_stats.hpp
//
// A snapshot of a loop_group's counters, from loop_group::stats().
//

#ifndef TURNLOOP_GROUP_STATS_HPP
#define TURNLOOP_GROUP_STATS_HPP

#include <turnloop/loop_stats.hpp>

#include <vector>

namespace turnloop {

/// Counters of every loop of a group, and their sum.
struct group_stats
{
  /// loops[i] is group.loop(i).stats().
  std::vector<loop_stats> loops;

  /// Every counter summed over the loops. For a ceiling_use, limit, in_use
  /// and refusals are sums (the ceilings are per loop, so the limit is what
  /// the group as a whole can hold); high_water is the sum of the loops'
  /// high-water marks, an upper bound on the group's, since the loops need
  /// not have peaked at the same moment. The same holds for every other
  /// high-water field.
  loop_stats total;
};

} // namespace turnloop

#endif // TURNLOOP_GROUP_STATS_HPP
