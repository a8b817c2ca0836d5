//
// bench/blocking.cpp
//
// Blocking work handed off the loop and its result delivered back: a no-op
// job (the round trip alone) and stat(".") (a real system call), with a
// fixed number of jobs in flight.
//
// The stock side posts each job to an asio::thread_pool whose job posts the
// result back to the context through a tracked executor, as hand-written
// Asio code does today. turnloop's side submits the same job through the
// loop's blocking service, turnloop::async_blocking, with the default
// turnloop::config (as many workers as the stock pool has threads).
//

#include "support/driver.hpp"

#include <turnloop/blocking.hpp>

#include <turnloop/asio.hpp>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>

namespace net = turnloop::asio; // Boost.Asio, or standalone Asio

namespace {

enum class job_kind { no_op, stat_dot };

int run_job(job_kind kind) noexcept
{
  if (kind == job_kind::no_op)
    return 0;
  struct stat info;
  return ::stat(".", &info);
}

// A busy machine: one thread per hardware thread, each spinning until the
// hog goes.
class cpu_hog
{
public:
  explicit cpu_hog(bool on)
  {
    if (!on)
      return;
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i != n; ++i)
      threads_.emplace_back([this] {
        std::uint64_t x = 1;
        while (!stop_.load(std::memory_order_relaxed))
          x = x * 6364136223846793005u + 1442695040888963407u;
        sink_.fetch_add(x, std::memory_order_relaxed);
      });
  }

  ~cpu_hog()
  {
    stop_.store(true, std::memory_order_relaxed);
    for (std::thread& t : threads_)
      t.join();
  }

  cpu_hog(const cpu_hog&) = delete;
  cpu_hog& operator=(const cpu_hog&) = delete;

private:
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> sink_{0};
  std::vector<std::thread> threads_;
};

// Keeps `concurrency` jobs in flight until `target` have completed; each
// completion, run on the context's thread, submits the next job. Submitter
// says how a job is handed off: submitter.submit(ctx, job, on_done).
template <typename Context, typename Submitter>
class round_trip_driver
{
public:
  round_trip_driver(Context& ctx, Submitter submitter, job_kind kind)
    : ctx_(ctx),
      submitter_(submitter),
      kind_(kind)
  {
  }

  void start(std::uint64_t jobs, std::size_t concurrency)
  {
    target_ = submitted_ + jobs;
    net::post(ctx_, [this, concurrency] {
      for (std::size_t i = 0; i != concurrency && submitted_ < target_; ++i)
        submit();
    });
  }

  std::uint64_t completed() const noexcept
  {
    return completed_;
  }

  std::uint64_t failures() const noexcept
  {
    return failures_;
  }

private:
  void submit()
  {
    ++submitted_;
    submitter_.submit(ctx_, kind_, [this](int rc) { on_done(rc); });
  }

  void on_done(int rc)
  {
    if (rc != 0)
      ++failures_;
    ++completed_;
    if (submitted_ < target_)
      submit();
  }

  Context& ctx_;
  Submitter submitter_;
  job_kind kind_;
  std::uint64_t target_ = 0;
  std::uint64_t submitted_ = 0;
  std::uint64_t completed_ = 0;
  std::uint64_t failures_ = 0;
};

// The stock way: post to a thread pool, which posts the result back to the
// context through a tracked executor.
struct thread_pool_submitter
{
  net::thread_pool* pool;

  template <typename Context, typename Done>
  void submit(Context& ctx, job_kind kind, Done done) const
  {
    auto home = net::prefer(ctx.get_executor(),
        net::execution::outstanding_work.tracked);
    net::post(*pool, [home, kind, done] {
      const int rc = run_job(kind);
      net::post(home, [done, rc] { done(rc); });
    });
  }
};

// turnloop's blocking service; a refusal or an exception counts as a
// failure (the check rejects the run).
struct blocking_service_submitter
{
  template <typename Done>
  void submit(turnloop::loop& l, job_kind kind, Done done) const
  {
    turnloop::async_blocking(l, [kind] { return run_job(kind); },
        [done](turnloop::error_code ec, std::exception_ptr e, int rc) {
          done(ec || e ? -1 : rc);
        });
  }
};

struct round_trips
{
  job_kind kind;

  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    const std::uint64_t n = o.number("jobs", 100'000);
    const std::size_t concurrency = o.number("concurrency", 1);
    const bool busy = o.number("hog", 0) != 0;
    const cpu_hog hog(busy);
    auto ctx = make();
    if constexpr (bench::is_turnloop<Maker>)
      return measure(*ctx, blocking_service_submitter{}, n, concurrency, busy,
          r);
    else
    {
      // As many workers as turnloop's blocking service starts by default.
      net::thread_pool pool(turnloop::config().blocking.threads);
      bench::result res = measure(*ctx, thread_pool_submitter{&pool}, n,
          concurrency, busy, r);
      pool.join();
      return res;
    }
  }

  template <typename Context, typename Submitter>
  bench::result measure(Context& ctx, Submitter submitter, std::uint64_t n,
      std::size_t concurrency, bool busy, bench::region& r) const
  {
    round_trip_driver driver(ctx, submitter, kind);
    const std::uint64_t warmup = n / 10 + 1;
    driver.start(warmup, concurrency);
    ctx.run();
    ctx.restart();
    r.begin();
    driver.start(n, concurrency);
    ctx.run();
    r.end();

    if (driver.completed() != warmup + n || driver.failures() != 0)
      return bench::result::failed(std::to_string(driver.completed())
          + " of " + std::to_string(warmup + n) + " jobs delivered, "
          + std::to_string(driver.failures()) + " failed");
    bench::result res;
    res.ops = n;
    res.metrics = {{"jobs_per_s", double(n) / r.seconds()},
      {"us_per_job", r.seconds() * 1e6 / double(n)}};
    res.checked = std::to_string(n) + " job results delivered to the "
      "context, " + std::to_string(concurrency) + " in flight"
      + (busy ? ", a spinning thread per hardware thread" : "");
    bench::add_loop_stats(res, ctx);
    return res;
  }
};

} // namespace

std::vector<bench::workload> TURNLOOP_BENCH_WORKLOADS()
{
  return {
    {"no_op", bench::on_each_side(round_trips{job_kind::no_op})},
    {"stat", bench::on_each_side(round_trips{job_kind::stat_dot})},
  };
}
