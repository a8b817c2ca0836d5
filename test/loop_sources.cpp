//
// test/loop_sources.cpp
//
// The turn-source hook services use to deliver completions in the loop's
// turn: signalled from any thread, run within the turn's budget, and many
// signals to a parked loop cost one wake.
//

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE loop_sources
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <atomic>
#include <functional>
#include <stdexcept>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "support.hpp"

namespace {

// A source with a counter of ready items, as a result ring would have.
struct counting_source final : turnloop::detail::turn_source
{
  turnloop::detail::loop_core& core;
  std::atomic<int> ready{0};
  std::atomic<int> delivered{0};
  std::vector<std::size_t> budgets;
  bool on_loop_thread = true;
  turnloop::loop* l;
  std::function<void()> before_run; // called on the loop's thread, if set

  counting_source(turnloop::loop& loop)
    : core(turnloop::detail::core_of(loop)), l(&loop)
  {
    core.add_source(*this);
  }

  ~counting_source()
  {
    core.remove_source(*this);
  }

  void make_ready(int n)
  {
    ready.fetch_add(n);
    core.signal(*this);
  }

  std::size_t run_ready(std::size_t budget) override
  {
    if (before_run)
      before_run();
    budgets.push_back(budget);
    on_loop_thread = on_loop_thread && l->get_executor().running_in_this_thread();
    std::size_t n = 0;
    while (n < budget && ready.load() > 0)
    {
      ready.fetch_sub(1);
      ++delivered;
      ++n;
    }
    if (ready.load() > 0)
      core.signal(*this); // more left than the budget allowed
    return n;
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(a_signalled_source_runs_in_the_next_turn)
{
  turnloop::loop l;
  counting_source source(l);
  auto guard = asio::make_work_guard(l);
  asio::post(l, [&] { source.make_ready(3); });
  asio::post(l, [&] { asio::post(l, [&] { guard.reset(); }); });
  l.run();
  BOOST_TEST(source.delivered == 3);
  BOOST_TEST(source.on_loop_thread);
}

BOOST_AUTO_TEST_CASE(a_source_gets_at_most_the_turn_budget)
{
  turnloop::config c;
  c.events_per_turn = 10;
  turnloop::loop l(c);
  counting_source source(l);
  auto guard = asio::make_work_guard(l);
  source.make_ready(95);
  std::function<void()> check = [&] {
    if (source.delivered < 95)
      asio::post(l, check);
    else
      guard.reset();
  };
  asio::post(l, check);
  l.run();
  BOOST_TEST(source.delivered == 95);
  BOOST_TEST(source.budgets.size() >= 10u);
  for (std::size_t b : source.budgets)
    BOOST_TEST(b <= 10u);
}

BOOST_AUTO_TEST_CASE(signals_from_other_threads_wake_a_parked_loop_once,
    * test::threads_label())
{
  turnloop::loop l;
  counting_source source(l);
  auto guard = asio::make_work_guard(l);
  std::atomic<pid_t> tid{0};
  asio::post(l, [&] { tid = test::this_thread_id(); });
  std::thread loop_thread([&] { l.run(); });
  BOOST_TEST(test::wait_for([&] { return tid.load() != 0; }));
  BOOST_TEST(test::wait_for([&] { return test::parked_in_reactor(tid); }));

  // A burst of completions made ready while the loop is parked. The first
  // signal wakes it; its turn then holds the loop, awake, until the rest
  // are made, so that none of them can find it parked again (on a fast
  // host it drained each one before the next was made, a wake apiece:
  // 1001 seen). Signals made while one is set or while the loop is awake
  // cost no wake: one for the burst, one for the post below.
  std::atomic<bool> burst_made{false};
  std::atomic<bool> held_until_made{false};
  bool held = false;
  source.before_run = [&] { // the loop's thread: no Boost.Test check here
    if (!std::exchange(held, true))
      held_until_made = test::wait_for([&] { return burst_made.load(); });
  };
  for (int i = 0; i < 1000; ++i)
    source.make_ready(1);
  burst_made = true;
  BOOST_TEST(test::wait_for([&] { return source.delivered.load() == 1000; }));
  std::atomic<std::uint64_t> wakes{0};
  asio::post(l, [&] { wakes = l.stats().wakes; guard.reset(); });
  loop_thread.join();
  BOOST_TEST(held_until_made.load());
  BOOST_TEST(wakes.load() >= 1u);
  BOOST_TEST(wakes.load() <= 2u);
  BOOST_TEST(source.on_loop_thread);
}

BOOST_AUTO_TEST_CASE(a_source_signalled_before_run_is_run_by_run)
{
  turnloop::loop l;
  counting_source source(l);
  source.make_ready(2);
  auto guard = asio::make_work_guard(l);
  asio::post(l, [&] { asio::post(l, [&] { guard.reset(); }); });
  l.run();
  BOOST_TEST(source.delivered == 2);
}

namespace {

// A source whose one completion dispatches inline to a function that throws.
struct dispatching_source final : turnloop::detail::turn_source
{
  turnloop::loop& l;
  bool finished = false;

  explicit dispatching_source(turnloop::loop& loop) : l(loop)
  {
    turnloop::detail::core_of(l).add_source(*this);
  }

  ~dispatching_source()
  {
    turnloop::detail::core_of(l).remove_source(*this);
  }

  std::size_t run_ready(std::size_t) override
  {
    asio::dispatch(l, [] { throw std::logic_error("inline"); });
    finished = true;
    return 1;
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(an_exception_captured_in_a_source_surfaces_after_it)
{
  // As with io_context, the exception is held until the completion returns,
  // then propagates out of run() before anything queued after it runs.
  turnloop::loop l;
  dispatching_source source(l);
  bool later_ran = false;
  asio::post(l, [&] {
    turnloop::detail::core_of(l).signal(source);
    asio::post(l, [&] { later_ran = true; });
  });
  BOOST_CHECK_THROW(l.run(), std::logic_error);
  BOOST_TEST(source.finished);
  BOOST_TEST(!later_ran);
  l.run();
  BOOST_TEST(later_ran);
}
