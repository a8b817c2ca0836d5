//
// bench/blocking.cpp
//
// Blocking work handed off the loop and its result delivered back: a no-op
// job (the round trip alone) and stat(".") (a real system call), with a
// fixed number of jobs in flight.
//
// The stock side posts each job to an asio::thread_pool whose job posts the
// result back to the context through a tracked executor, as hand-written
// Asio code does today. turnloop's side will go through the loop's own
// blocking service (turnloop::config::blocking), which is not implemented
// yet; until it is, that side reports "pending" rather than a number.
//

#include "support/driver.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <string>

#include <sys/stat.h>

namespace asio = boost::asio;

namespace {

enum class job_kind { no_op, stat_dot };

int run_job(job_kind kind) noexcept
{
  if (kind == job_kind::no_op)
    return 0;
  struct stat info;
  return ::stat(".", &info);
}

// Keeps `concurrency` jobs in flight until `target` have completed; each
// completion, run on the context's thread, submits the next job.
template <typename Context>
class thread_pool_driver
{
public:
  thread_pool_driver(Context& ctx, asio::thread_pool& pool, job_kind kind)
    : ctx_(ctx),
      pool_(pool),
      kind_(kind)
  {
  }

  void start(std::uint64_t jobs, std::size_t concurrency)
  {
    target_ = submitted_ + jobs;
    asio::post(ctx_, [this, concurrency] {
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
    auto home = asio::prefer(ctx_.get_executor(),
        asio::execution::outstanding_work.tracked);
    asio::post(pool_, [this, home, kind = kind_] {
      const int rc = run_job(kind);
      asio::post(home, [this, rc] { on_done(rc); });
    });
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
  asio::thread_pool& pool_;
  job_kind kind_;
  std::uint64_t target_ = 0;
  std::uint64_t submitted_ = 0;
  std::uint64_t completed_ = 0;
  std::uint64_t failures_ = 0;
};

struct round_trips
{
  job_kind kind;

  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    if constexpr (bench::is_turnloop<Maker>)
    {
      // turnloop's side plugs in here: submit run_job(kind) through the
      // loop's blocking service with the same concurrency, once the
      // "blocking service" issue provides it.
      return bench::result::pending_on("blocking service");
    }
    else
    {
      const std::uint64_t n = o.number("jobs", 100'000);
      const std::size_t concurrency = o.number("concurrency", 1);
      // As many workers as turnloop's blocking service starts by default.
      asio::thread_pool pool(turnloop::config().blocking.threads);
      auto ctx = make();
      thread_pool_driver driver(*ctx, pool, kind);

      const std::uint64_t warmup = n / 10 + 1;
      driver.start(warmup, concurrency);
      ctx->run();
      ctx->restart();
      r.begin();
      driver.start(n, concurrency);
      ctx->run();
      r.end();
      pool.join();

      if (driver.completed() != warmup + n || driver.failures() != 0)
        return bench::result::failed(std::to_string(driver.completed())
            + " of " + std::to_string(warmup + n) + " jobs delivered, "
            + std::to_string(driver.failures()) + " failed");
      bench::result res;
      res.ops = n;
      res.metrics = {{"jobs_per_s", double(n) / r.seconds()}};
      res.checked = std::to_string(n) + " job results delivered to the "
        "context, " + std::to_string(concurrency) + " in flight";
      return res;
    }
  }
};

} // namespace

int main(int argc, char** argv)
{
  return bench::run_program(argc, argv, {
    {"no_op", bench::on_each_side(round_trips{job_kind::no_op})},
    {"stat", bench::on_each_side(round_trips{job_kind::stat_dot})},
  });
}
