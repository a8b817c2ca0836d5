//
// bench/timers.cpp
//
// Timers: a zero-delay wait chain, arm/cancel churn over a set of timers,
// and a million timers with spread deadlines (insert, dispatch and cleanup
// timed separately, as libuv's million_timers does). Each twice: with
// Asio's steady_timer (typed on any_io_executor, as most code has it), and
// with the timer typed on the context's own executor (the *_typed
// subcommands: turnloop::steady_timer on a loop, io_objects of io_context's
// executor on io_context).
//

#include "support/driver.hpp"

#include <turnloop/asio.hpp>
#include <turnloop/io_objects.hpp>

#include <chrono>
#include <string>
#include <type_traits>
#include <vector>

namespace net = turnloop::asio; // Boost.Asio, or standalone Asio

using turnloop::error_code;

namespace {

// The timer a workload uses on a context of type Context: Asio's own
// (any_io_executor), or (Typed) the one typed on the context's executor.
template <bool Typed, typename Context>
using timer_for = std::conditional_t<Typed,
  typename turnloop::io_objects<typename Context::executor_type>::steady_timer,
  net::steady_timer>;

// One timer re-armed with a zero delay from its own handler: each wait goes
// through the timer queue and the reactor (timerfd, epoll_wait) once.
template <typename Timer>
class zero_delay_chain
{
public:
  template <typename Context>
  explicit zero_delay_chain(Context& ctx)
    : timer_(ctx)
  {
  }

  void start(std::uint64_t waits)
  {
    target_ = fired_ + waits;
    arm();
  }

  std::uint64_t fired() const noexcept
  {
    return fired_;
  }

  std::uint64_t errors() const noexcept
  {
    return errors_;
  }

private:
  void arm()
  {
    timer_.expires_after(std::chrono::nanoseconds(0));
    timer_.async_wait([this](const error_code& ec) {
      if (ec)
        ++errors_;
      else if (++fired_ < target_)
        arm();
    });
  }

  Timer timer_;
  std::uint64_t target_ = 0;
  std::uint64_t fired_ = 0;
  std::uint64_t errors_ = 0;
};

template <bool Typed>
struct chain
{
  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    const std::uint64_t n = o.number("ops", 200'000);
    const std::uint64_t warmup = n / 10 + 1;
    auto ctx = make();
    zero_delay_chain<timer_for<Typed, typename Maker::context_type>> timer(*ctx);

    timer.start(warmup);
    ctx->run();
    ctx->restart();
    r.begin();
    timer.start(n);
    ctx->run();
    r.end();

    if (timer.fired() != warmup + n || timer.errors() != 0)
      return bench::result::failed(std::to_string(timer.fired()) + " of "
          + std::to_string(warmup + n) + " waits fired, "
          + std::to_string(timer.errors()) + " with an error");
    bench::result res;
    res.ops = n;
    res.metrics = {{"waits_per_s", double(n) / r.seconds()}};
    res.checked = std::to_string(n) + " zero-delay waits fired in order";
    bench::add_loop_stats(res, *ctx);
    return res;
  }
};

// Every round arms each timer an hour ahead and cancels it at once; the next
// round starts when all cancelled handlers have run. One op = arm + cancel
// + the aborted handler.
template <typename Timer>
class churn
{
public:
  template <typename Context>
  churn(Context& ctx, std::size_t timers)
  {
    timers_.reserve(timers);
    for (std::size_t i = 0; i != timers; ++i)
      timers_.emplace_back(ctx);
  }

  void start(std::uint64_t rounds)
  {
    target_rounds_ = rounds_ + rounds;
    start_round();
  }

  std::uint64_t aborted() const noexcept
  {
    return aborted_;
  }

  std::uint64_t unexpected() const noexcept
  {
    return unexpected_;
  }

private:
  void start_round()
  {
    for (Timer& t : timers_)
    {
      t.expires_after(std::chrono::hours(1));
      t.async_wait([this](const error_code& ec) { on_wait(ec); });
    }
    for (Timer& t : timers_)
      t.cancel();
  }

  void on_wait(const error_code& ec)
  {
    if (ec == net::error::operation_aborted)
      ++aborted_;
    else
      ++unexpected_;
    if (++done_in_round_ == timers_.size())
    {
      done_in_round_ = 0;
      if (++rounds_ < target_rounds_)
        start_round();
    }
  }

  std::vector<Timer> timers_;
  std::uint64_t rounds_ = 0;
  std::uint64_t target_rounds_ = 0;
  std::size_t done_in_round_ = 0;
  std::uint64_t aborted_ = 0;
  std::uint64_t unexpected_ = 0;
};

template <bool Typed>
struct arm_cancel
{
  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    const std::size_t timers = o.number("timers", 1000);
    const std::uint64_t rounds = o.number("rounds", 2000);
    const std::uint64_t warmup = rounds / 10 + 1;
    auto ctx = make();
    churn<timer_for<Typed, typename Maker::context_type>> c(*ctx, timers);

    net::post(*ctx, [&] { c.start(warmup); });
    ctx->run();
    ctx->restart();
    r.begin();
    net::post(*ctx, [&] { c.start(rounds); });
    ctx->run();
    r.end();

    const std::uint64_t expected = (warmup + rounds) * timers;
    if (c.aborted() != expected || c.unexpected() != 0)
      return bench::result::failed(std::to_string(c.aborted()) + " of "
          + std::to_string(expected) + " waits aborted, "
          + std::to_string(c.unexpected()) + " completed otherwise");
    bench::result res;
    res.ops = rounds * timers;
    res.metrics = {{"arm_cancels_per_s", double(res.ops) / r.seconds()}};
    res.checked = std::to_string(res.ops) + " waits armed, cancelled and "
      "aborted over " + std::to_string(timers) + " timers";
    bench::add_loop_stats(res, *ctx);
    return res;
  }
};

// Deadlines are distinct and inserted in a scrambled order (so the timer
// heap does real work), and all lie within n nanoseconds of the start: by
// the time insertion ends they have expired, so dispatch measures taking
// timers off the heap and running handlers, not waiting for the clock.
template <bool Typed>
struct million
{
  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    using clock = std::chrono::steady_clock;
    const std::uint64_t n = o.number("timers", 1'000'000);
    if (n == 0)
      return bench::result::failed("--timers must be at least 1");
    // An odd stride coprime with n scrambles 0..n-1 into a permutation.
    std::uint64_t stride = 7919;
    while (n % stride == 0)
      stride += 2;

    auto ctx = make();
    using timer = timer_for<Typed, typename Maker::context_type>;
    std::vector<timer> timers;
    timers.reserve(n);
    std::uint64_t fired = 0;
    std::uint64_t errors = 0;
    auto on_fire = [&](const error_code& ec) { ec ? ++errors : ++fired; };

    r.begin();
    const clock::time_point start = clock::now();
    for (std::uint64_t i = 0; i != n; ++i)
    {
      timer& t = timers.emplace_back(*ctx);
      t.expires_at(start + std::chrono::nanoseconds((i * stride) % n));
      t.async_wait(on_fire);
    }
    const clock::time_point inserted = clock::now();
    ctx->run();
    const clock::time_point dispatched = clock::now();
    timers.clear();
    const clock::time_point cleaned = clock::now();
    r.end();

    if (fired != n || errors != 0)
      return bench::result::failed(std::to_string(fired) + " of "
          + std::to_string(n) + " timers fired, " + std::to_string(errors)
          + " with an error");
    const auto ns_per_timer = [n](clock::duration d) {
      return double(std::chrono::duration_cast<std::chrono::nanoseconds>(d)
          .count()) / double(n);
    };
    bench::result res;
    res.ops = n;
    res.metrics = {
      {"insert_ns_per_timer", ns_per_timer(inserted - start)},
      {"dispatch_ns_per_timer", ns_per_timer(dispatched - inserted)},
      {"cleanup_ns_per_timer", ns_per_timer(cleaned - dispatched)}};
    res.checked = std::to_string(n) + " timers fired";
    bench::add_loop_stats(res, *ctx);
    return res;
  }
};

} // namespace

std::vector<bench::workload> TURNLOOP_BENCH_WORKLOADS()
{
  return {
    {"chain", bench::on_each_side(chain<false>{})},
    {"arm_cancel", bench::on_each_side(arm_cancel<false>{})},
    {"million", bench::on_each_side(million<false>{})},
    {"chain_typed", bench::on_each_side(chain<true>{})},
    {"arm_cancel_typed", bench::on_each_side(arm_cancel<true>{})},
    {"million_typed", bench::on_each_side(million<true>{})},
  };
}
