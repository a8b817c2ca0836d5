//
// test/blocking_threads.cpp
//
// Several loops on several threads, each keeping many blocking jobs in
// flight (bounded and long, some watching a stop token) with random
// cancellation and small ceilings: every submission gets exactly one
// completion, a cancelled-before-start or refused job never runs, a job that
// ran is never reported aborted, and every count adds up. Run under
// ThreadSanitizer by test/run.sh.
//

#include <turnloop/blocking.hpp>

#define BOOST_TEST_MODULE blocking_threads
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "support.hpp"

using turnloop::error_code;

namespace {

#if defined(__SANITIZE_THREAD__)
constexpr int jobs_per_loop = 3'000; // ThreadSanitizer is ~10x slower
#else // defined(__SANITIZE_THREAD__)
constexpr int jobs_per_loop = 25'000;
#endif // defined(__SANITIZE_THREAD__)

constexpr int loops = 3;
constexpr int in_flight = 48;

struct job_record
{
  std::atomic<bool> ran{false};
  int completions = 0;
  error_code ec;
  bool bad_outcome = false; // an exception, or a value that is not its own
  std::shared_ptr<asio::cancellation_signal> signal;
};

// One loop's share of the test, all on that loop's thread (so nothing here
// uses Boost.Test, which is not thread-safe, until check()).
class driver
{
public:
  explicit driver(unsigned seed)
    : loop_(make_config()),
      records_(jobs_per_loop),
      random_(seed)
  {
  }

  void run()
  {
    asio::post(loop_, [this] {
      for (int i = 0; i < in_flight; ++i)
        submit_next();
    });
    loop_.run();
  }

  void check() const
  {
    int completed = 0;
    int aborted = 0;
    int refused = 0;
    int wrong = 0;
    for (const job_record& r : records_)
    {
      completed += r.completions;
      if (r.completions != 1 || r.bad_outcome)
        ++wrong;
      if (r.ec == asio::error::operation_aborted)
      {
        ++aborted;
        wrong += r.ran.load();
      }
      else if (r.ec == turnloop::error::resource_limit)
      {
        ++refused;
        wrong += r.ran.load();
      }
      else
        wrong += r.ec || !r.ran.load();
    }
    BOOST_TEST(completed == jobs_per_loop);
    BOOST_TEST(wrong == 0);
    BOOST_TEST(aborted > 0);    // the test exercised what it claims
    BOOST_TEST(refused > 0);
    const turnloop::blocking_stats s = stats_;
    BOOST_TEST(s.undelivered == 0u);
    BOOST_TEST(s.queued == 0u);
    BOOST_TEST(s.admitted == s.delivered);
    BOOST_TEST(s.admitted + s.refused == std::uint64_t(jobs_per_loop));
    BOOST_TEST(s.aborted == std::uint64_t(aborted));
    BOOST_TEST(s.refused == std::uint64_t(refused));
    BOOST_TEST(s.undelivered_high_water <= 40u);
  }

private:
  static turnloop::config make_config()
  {
    turnloop::config c;
    c.blocking.threads = 3;
    c.blocking.queue_capacity = 24;
    c.blocking.long_threads_max = 2;
    c.blocking.max_undelivered = 40; // below in_flight: some refusals
    c.events_per_turn = 16;
    return c;
  }

  void submit_next()
  {
    if (next_ == jobs_per_loop)
      return;
    const int i = next_++;
    job_record& r = records_[i];
    const unsigned kind = random_() % 100;
    if (kind < 25)
      r.signal = std::make_shared<asio::cancellation_signal>();
    auto handler = [this, i](error_code ec, std::exception_ptr e, int v) {
      job_record& r = records_[i];
      ++r.completions;
      r.ec = ec;
      r.bad_outcome = e || (!ec && v != i);
      on_completion();
    };
    auto plain = [&r, i] {
      r.ran = true;
      return i;
    };
    auto stoppable = [&r, i](turnloop::stop_token stop) {
      r.ran = true;
      for (int spin = 0; spin < 2000 && !stop.stop_requested(); ++spin)
        std::this_thread::yield();
      return i;
    };
    auto submit = [&](auto job, auto h) {
      if (kind < 3)
        turnloop::async_blocking_long(loop_, std::move(job), std::move(h));
      else
        turnloop::async_blocking(loop_, std::move(job), std::move(h));
    };
    if (r.signal)
    {
      auto bound = asio::bind_cancellation_slot(r.signal->slot(), handler);
      if (kind % 2)
        submit(stoppable, bound);
      else
        submit(plain, bound);
      cancellable_.push_back(i);
      if (kind < 10)
        r.signal->emit(asio::cancellation_type::terminal); // before it starts
    }
    else
      submit(plain, handler);
  }

  void on_completion()
  {
    // Now and then, cancel a job submitted earlier: queued, running or
    // finished by now, the worker decides.
    if (!cancellable_.empty() && random_() % 4 == 0)
    {
      const std::size_t pick = random_() % cancellable_.size();
      records_[cancellable_[pick]].signal->emit(
          asio::cancellation_type::terminal);
      cancellable_[pick] = cancellable_.back();
      cancellable_.pop_back();
    }
    submit_next();
    if (++done_ == jobs_per_loop)
      stats_ = turnloop::blocking_statistics(loop_);
  }

  turnloop::loop loop_;
  std::vector<job_record> records_;
  std::vector<int> cancellable_;
  std::minstd_rand random_;
  int next_ = 0;
  int done_ = 0;
  turnloop::blocking_stats stats_;
};

} // namespace

BOOST_AUTO_TEST_CASE(several_loops_with_random_cancellation_account_for_every_job,
    * test::threads_label())
{
  std::vector<std::unique_ptr<driver>> drivers;
  for (int i = 0; i < loops; ++i)
    drivers.push_back(std::make_unique<driver>(1234u + i));
  std::vector<std::thread> threads;
  for (auto& d : drivers)
    threads.emplace_back([&d] { d->run(); });
  for (std::thread& t : threads)
    t.join();
  for (const auto& d : drivers)
    d->check();
}
