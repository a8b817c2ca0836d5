//
// bench/support/driver.hpp
//
// The command line and the output of a benchmark program. A program is a set
// of named workloads; one invocation runs one workload on one side and
// prints one JSON object on stdout (bench/run.py collects them):
//
//   <program> <workload> --side io_context|io_context_1|turnloop
//             [--mode time|allocations|callgrind] [--config <name>]
//             [--<parameter> <unsigned integer>]...
//
// Exit status: 0 measured (or pending), 1 the workload failed its checks,
// 2 bad command line.
//

#ifndef TURNLOOP_BENCH_SUPPORT_DRIVER_HPP
#define TURNLOOP_BENCH_SUPPORT_DRIVER_HPP

#include "region.hpp"
#include "sides.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace bench {

struct options
{
  std::string workload;
  bench::side side = side::io_context;
  measure_mode mode = measure_mode::time;
  turnloop::config config;
  std::map<std::string, std::uint64_t> parameters;

  /// The parameter @p name, or @p fallback if it was not given.
  std::uint64_t number(const std::string& name, std::uint64_t fallback) const;
};

/// What one run of a workload reports.
struct result
{
  /// Operations in the measured region (the denominator of per-op counts).
  std::uint64_t ops = 0;

  /// The figures bench/run.py tabulates, by name (units are in the names).
  std::vector<std::pair<std::string, double>> metrics;

  /// Diagnostic counters kept in the JSON only (e.g. the loop's stats).
  std::vector<std::pair<std::string, double>> details;

  /// What the workload verified it did, e.g. "10000000 handlers ran".
  std::string checked;

  /// Non-empty if the workload did not do what it claims; nothing from the
  /// run may then be reported.
  std::string failure;

  /// Non-empty if this side cannot run yet: the feature it waits for.
  std::string pending;

  static result failed(std::string why)
  {
    result r;
    r.failure = std::move(why);
    return r;
  }

  static result pending_on(std::string feature)
  {
    result r;
    r.pending = std::move(feature);
    return r;
  }
};

/// Adds turnloop's loop_stats to @p r's details; nothing for io_context.
template <typename Context>
void add_loop_stats(result& r, const Context& ctx)
{
  if constexpr (std::is_same_v<Context, turnloop::loop>)
  {
    const turnloop::loop_stats s = ctx.stats();
    r.details.emplace_back("loop_handlers_run", double(s.handlers_run));
    r.details.emplace_back("loop_turns", double(s.turns));
    r.details.emplace_back("loop_reactor_runs", double(s.reactor_runs));
    r.details.emplace_back("loop_epoll_waits", double(s.epoll_waits));
    r.details.emplace_back("loop_os_waits", double(s.os_waits));
    r.details.emplace_back("loop_wakes", double(s.wakes));
    r.details.emplace_back("loop_posts_queued_high_water",
        double(s.posts_queued_high_water));
  }
}

using workload_function = std::function<result(const options&, region&)>;

struct workload
{
  const char* name;
  workload_function run;
};

// Each program's source is compiled twice (bench/Jamfile): once with
// TURNLOOP_BENCH_UNIT_STOCK, for io_context's two sides, and once with
// TURNLOOP_BENCH_UNIT_TURNLOOP, for the loop's. Neither side's code is then
// compiled beside the other's, so g++'s inlining of one (its budget is per
// translation unit) does not depend on what the other side inlined. A
// program defines its workloads once, as TURNLOOP_BENCH_WORKLOADS(); main
// (driver.cpp) joins the two units' lists.

/// The workloads of the unit built for io_context's sides, and of the one
/// built for the loop's; each program defines both from its one source.
std::vector<workload> stock_workloads();
std::vector<workload> turnloop_workloads();

/// One list from the two units' lists: each workload runs the loop's side
/// in the turnloop unit and io_context's sides in the stock one. Throws
/// std::logic_error if the two lists do not name the same workloads.
std::vector<workload> joined(std::vector<workload> stock,
    std::vector<workload> loop);

#if defined(TURNLOOP_BENCH_UNIT_STOCK) || defined(TURNLOOP_BENCH_UNIT_TURNLOOP)

#if defined(TURNLOOP_BENCH_UNIT_TURNLOOP)
inline constexpr bool unit_runs_turnloop = true;
#define TURNLOOP_BENCH_WORKLOADS bench::turnloop_workloads
#else
inline constexpr bool unit_runs_turnloop = false;
#define TURNLOOP_BENCH_WORKLOADS bench::stock_workloads
#endif

/// Wraps a function object with a call operator templated on the maker,
/// `result operator()(const Maker&, const options&, region&) const`, so it
/// runs on the side the command line names. Only this unit's makers are
/// instantiated; joined() sends it only the sides it was built for.
template <typename Workload>
workload_function on_each_side(Workload w)
{
  return [w](const options& o, region& r) -> result {
    if constexpr (unit_runs_turnloop)
      return w(turnloop_maker{o.config}, o, r);
    else if (o.side == side::io_context)
      return w(io_context_maker{}, o, r);
    else
      return w(io_context_1_maker{}, o, r);
  };
}

#endif

/// Parses the command line, runs the workload it names, prints the result.
int run_program(int argc, char** argv, const std::vector<workload>& workloads);

} // namespace bench

#endif // TURNLOOP_BENCH_SUPPORT_DRIVER_HPP
