//
// bench/post.cpp
//
// Posting handlers: chained local posts, the same with a live reactor,
// cross-thread posts from producer threads, and co_await post round trips.
//

#include "support/driver.hpp"
#include "support/process.hpp"

#include <turnloop/asio.hpp>

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace net = turnloop::asio; // Boost.Asio, or standalone Asio

namespace {

// Each handler posts the next, so exactly one is queued at a time: the cost
// measured is one post plus one dispatch.
template <typename Context>
struct chain_state
{
  Context& ctx;
  std::uint64_t target;
  std::uint64_t ran = 0;
};

template <typename Context>
struct chain_step
{
  chain_state<Context>* state;

  void operator()() const
  {
    if (++state->ran < state->target)
      net::post(state->ctx, chain_step{state});
  }
};

template <typename Context>
std::uint64_t run_chain(Context& ctx, std::uint64_t n)
{
  chain_state<Context> state{ctx, n};
  net::post(ctx, chain_step<Context>{&state});
  ctx.run();
  ctx.restart();
  return state.ran;
}

struct chain
{
  // With a reactor in the context, io_context's scheduler polls it
  // (epoll_wait with timeout 0) between every two handlers; turnloop polls
  // it once per turn. A timer that is never armed is enough to create it.
  bool with_reactor;

  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    const std::uint64_t n = o.number("ops", 10'000'000);
    auto ctx = make();
    std::optional<net::steady_timer> reactor_user;
    if (with_reactor)
      reactor_user.emplace(*ctx);

    run_chain(*ctx, n / 10 + 1); // warm-up: handler memory caches, branch history
    r.begin();
    const std::uint64_t ran = run_chain(*ctx, n);
    r.end();

    if (ran != n)
      return bench::result::failed(std::to_string(ran) + " of "
          + std::to_string(n) + " chained handlers ran");
    bench::result res;
    res.ops = n;
    res.metrics = {{"posts_per_s", double(n) / r.seconds()}};
    res.checked = std::to_string(n) + " chained handlers ran";
    bench::add_loop_stats(res, *ctx);
    return res;
  }
};

double cpu_seconds_now() noexcept
{
  const bench::cpu_seconds c = bench::this_thread_cpu_seconds();
  return c.user + c.system;
}

// CPU time the producers (together) and the thread running the context
// spent, from releasing the producers to the last post's arrival.
struct cross_thread_cpu
{
  double producers = 0;
  double loop = 0;
};

// Producers wait on a flag so that starting threads is not timed; the loop
// keeps a work guard until the last post has arrived.
template <typename Context>
std::uint64_t run_cross_thread(Context& ctx, unsigned producers,
    std::uint64_t per_producer, bench::region* r,
    cross_thread_cpu* cpu = nullptr)
{
  const std::uint64_t total = producers * per_producer;
  std::uint64_t arrived = 0;
  auto guard = net::make_work_guard(ctx);
  std::atomic<bool> go{false};
  std::vector<double> producer_cpu(producers);

  std::vector<std::thread> threads;
  for (unsigned p = 0; p != producers; ++p)
  {
    threads.emplace_back([&, p] {
      while (!go.load(std::memory_order_acquire))
        std::this_thread::yield();
      const double start = cpu_seconds_now();
      for (std::uint64_t i = 0; i != per_producer; ++i)
      {
        net::post(ctx, [&arrived, &guard, total] {
          if (++arrived == total)
            guard.reset();
        });
      }
      producer_cpu[p] = cpu_seconds_now() - start;
    });
  }

  if (r)
    r->begin();
  const double loop_start = cpu_seconds_now();
  go.store(true, std::memory_order_release);
  ctx.run();
  const double loop_cpu = cpu_seconds_now() - loop_start;
  for (std::thread& t : threads)
    t.join();
  if (r)
    r->end();
  ctx.restart();
  if (cpu)
  {
    cpu->loop = loop_cpu;
    for (double seconds : producer_cpu)
      cpu->producers += seconds;
  }
  return arrived;
}

struct cross_thread
{
  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    const unsigned producers = static_cast<unsigned>(o.number("producers", 1));
    const std::uint64_t per_producer = o.number("ops", 1'000'000);
    const std::uint64_t total = producers * per_producer;
    if (total == 0)
      return bench::result::failed("--producers and --ops must be at least 1");
    auto ctx = make();

    run_cross_thread(*ctx, producers, per_producer / 10 + 1, nullptr);
    cross_thread_cpu cpu;
    const std::uint64_t arrived = run_cross_thread(*ctx, producers,
        per_producer, &r, &cpu);

    if (arrived != total)
      return bench::result::failed(std::to_string(arrived) + " of "
          + std::to_string(total) + " cross-thread posts arrived");
    bench::result res;
    res.ops = total;
    res.metrics = {{"posts_per_s", double(total) / r.seconds()}};
    res.checked = std::to_string(total) + " posts from "
      + std::to_string(producers) + " threads arrived";
    // Where the time goes: per post, on the posting threads and on the
    // thread that runs the context (the loop, or io_context's run()).
    res.details.emplace_back("producer_cpu_ns_per_post",
        cpu.producers * 1e9 / double(total));
    res.details.emplace_back("loop_cpu_ns_per_post",
        cpu.loop * 1e9 / double(total));
    bench::add_loop_stats(res, *ctx);
    return res;
  }
};

net::awaitable<void> post_round_trips(std::uint64_t warmup, std::uint64_t n,
    bench::region& r, std::uint64_t& done)
{
  const auto ex = co_await net::this_coro::executor;
  for (std::uint64_t i = 0; i != warmup; ++i)
    co_await net::post(ex, net::use_awaitable);
  r.begin();
  for (std::uint64_t i = 0; i != n; ++i)
  {
    co_await net::post(ex, net::use_awaitable);
    ++done;
  }
  r.end();
}

struct coroutine_post
{
  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    const std::uint64_t n = o.number("ops", 2'000'000);
    std::uint64_t done = 0;
    auto ctx = make();
    net::co_spawn(*ctx, post_round_trips(n / 10 + 1, n, r, done),
        net::detached);
    ctx->run();

    if (done != n)
      return bench::result::failed(std::to_string(done) + " of "
          + std::to_string(n) + " co_await post round trips completed");
    bench::result res;
    res.ops = n;
    res.metrics = {{"ns_per_round_trip", r.seconds() * 1e9 / double(n)}};
    res.checked = std::to_string(n) + " round trips resumed the coroutine";
    bench::add_loop_stats(res, *ctx);
    return res;
  }
};

} // namespace

std::vector<bench::workload> TURNLOOP_BENCH_WORKLOADS()
{
  return {
    {"chain", bench::on_each_side(chain{false})},
    {"chain_reactor", bench::on_each_side(chain{true})},
    {"cross_thread", bench::on_each_side(cross_thread{})},
    {"coroutine", bench::on_each_side(coroutine_post{})},
  };
}
