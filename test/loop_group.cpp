//
// test/loop_group.cpp
//
// turnloop::loop_group: N loops, each on a thread of its own while the group
// runs; run() ends when no loop can post to another any more, or on stop()
// from any thread; an exception on one loop stops the group and reaches
// run()'s caller with nothing discarded; destruction with work pending on
// every loop leaks nothing; coroutines move between loops.
//

#include <turnloop/loop_group.hpp>

#define BOOST_TEST_MODULE loop_group
#include <boost/test/unit_test.hpp>

#include <turnloop/switch_to.hpp>

#include "asio.hpp"

#include <atomic>
#include <chrono>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support.hpp"

using turnloop::error_code;
using namespace std::chrono_literals;

namespace {

auto threads = boost::unit_test::label("threads");

// Posts itself to loop (next + 1) % size until it has made @p hops hops.
void hop(turnloop::loop_group& g, std::size_t at, std::atomic<int>& hops,
    int limit)
{
  if (hops.fetch_add(1) + 1 >= limit)
    return;
  const std::size_t next = (at + 1) % g.size();
  asio::post(g.loop(next), [&g, next, &hops, limit] {
    hop(g, next, hops, limit);
  });
}

constexpr long forever = std::numeric_limits<long>::max();

// A handler that reposts itself on its loop until stopped, counting.
struct chain
{
  turnloop::loop* l;
  std::atomic<long>* count;
  long limit;
  void operator()() const
  {
    if (count->fetch_add(1) + 1 < limit)
      asio::post(*l, *this);
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(a_group_has_the_loops_it_was_asked_for_each_with_the_config)
{
  turnloop::config cfg;
  cfg.max_handles = 7;
  turnloop::loop_group g(3, cfg);
  BOOST_TEST(g.size() == 3u);
  std::set<turnloop::loop*> distinct;
  for (std::size_t i = 0; i < g.size(); ++i)
  {
    distinct.insert(&g.loop(i));
    BOOST_TEST(g.loop(i).get_config().max_handles == 7u);
  }
  BOOST_TEST(distinct.size() == 3u);
  BOOST_TEST(turnloop::loop_group().size()
      == turnloop::loop_group::default_size());
}

BOOST_AUTO_TEST_CASE(a_size_of_zero_or_a_bad_config_is_refused_with_invalid_config)
{
  auto invalid = [](const turnloop::system_error& e) {
    return e.code() == turnloop::error::invalid_config;
  };
  BOOST_CHECK_EXCEPTION(turnloop::loop_group(0), turnloop::system_error,
      invalid);
  BOOST_CHECK_EXCEPTION(turnloop::loop_group(turnloop::loop_group::max_size + 1),
      turnloop::system_error, invalid);
  turnloop::config bad;
  bad.events_per_turn = 0;
  BOOST_CHECK_EXCEPTION(turnloop::loop_group(2, bad),
      turnloop::system_error, invalid);
}

BOOST_AUTO_TEST_CASE(asking_for_a_loop_past_the_end_is_refused_with_invalid_argument)
{
  turnloop::loop_group g(2);
  BOOST_CHECK_EXCEPTION(g.loop(2), turnloop::system_error,
      [](const turnloop::system_error& e) {
        return e.code() == asio::error::invalid_argument
          && std::string(e.what()).find("index 2") != std::string::npos;
      });
}

BOOST_AUTO_TEST_CASE(next_executor_goes_round_the_loops_in_turn)
{
  turnloop::loop_group g(3);
  for (int round = 0; round < 2; ++round)
    for (std::size_t i = 0; i < 3; ++i)
    {
      auto ex = (round == 0) ? g.next_executor() : g.get_executor();
      BOOST_TEST(&ex.context() == &g.loop(i));
    }
}

BOOST_AUTO_TEST_CASE(run_runs_each_loop_on_a_thread_of_its_own, * threads)
{
  turnloop::loop_group g(3);
  // Boost.Test is not thread-safe: handlers record, the test thread checks.
  std::mutex m;
  std::vector<std::thread::id> ids(3);
  std::atomic<int> on_own_loop{0};
  for (std::size_t i = 0; i < 3; ++i)
    asio::post(g.loop(i), [&, i] {
      if (g.loop(i).get_executor().running_in_this_thread())
        ++on_own_loop;
      std::lock_guard<std::mutex> lock(m);
      ids[i] = std::this_thread::get_id();
    });
  BOOST_TEST(g.run() == 3u);
  BOOST_TEST(on_own_loop.load() == 3);
  std::set<std::thread::id> distinct(ids.begin(), ids.end());
  BOOST_TEST(distinct.size() == 3u);
  BOOST_TEST(!distinct.count(std::this_thread::get_id()));
  BOOST_TEST(!distinct.count(std::thread::id()));
  BOOST_TEST(g.stopped());
}

BOOST_AUTO_TEST_CASE(run_ends_only_when_no_loop_can_post_to_another, * threads)
{
  // Only loop 0 has work at first; the others get theirs from it later, so
  // a loop that left when it first ran out would strand the chain.
  turnloop::loop_group g(3);
  std::atomic<int> hops{0};
  asio::post(g.loop(0), [&] { hop(g, 0, hops, 3000); });
  g.run();
  BOOST_TEST(hops.load() == 3000);
}

BOOST_AUTO_TEST_CASE(a_loop_out_of_work_serves_posts_from_a_busy_one_at_once, * threads)
{
  // Loop 0 stays busy until loop 1, which had no work of its own, has run
  // its post: loop 1 must not wait for the group to go idle.
  turnloop::loop_group g(2);
  std::promise<void> served;
  bool in_time = false;
  asio::post(g.loop(0), [&] {
    asio::post(g.loop(1), [&] { served.set_value(); });
    in_time = served.get_future().wait_for(test::deadline)
      == std::future_status::ready;
  });
  g.run();
  BOOST_TEST(in_time);
}

BOOST_AUTO_TEST_CASE(a_group_with_nothing_to_do_returns_at_once_and_is_stopped)
{
  turnloop::loop_group g(2);
  BOOST_TEST(g.run() == 0u);
  BOOST_TEST(g.stopped());
  // Stopped until restart(), as io_context is.
  std::atomic<int> ran{0};
  asio::post(g.loop(1), [&] { ++ran; });
  BOOST_TEST(g.run() == 0u);
  BOOST_TEST(ran.load() == 0);
  g.restart();
  BOOST_TEST(!g.stopped());
  BOOST_TEST(g.run() == 1u);
  BOOST_TEST(ran.load() == 1);
}

BOOST_AUTO_TEST_CASE(stop_from_another_thread_ends_every_loop, * threads)
{
  turnloop::loop_group g(3);
  std::vector<std::atomic<long>> counts(3);
  for (std::size_t i = 0; i < 3; ++i)
    asio::post(g.loop(i), chain{&g.loop(i), &counts[i], forever});
  g.start();
  BOOST_REQUIRE(test::wait_for([&] {
    for (auto& c : counts)
      if (c.load() < 100)
        return false;
    return true;
  }));
  std::thread([&] { g.stop(); }).join();
  g.join();
  BOOST_TEST(g.stopped());

  // Nothing was thrown away: after restart() every chain carries on.
  std::vector<long> before;
  for (auto& c : counts)
    before.push_back(c.load());
  g.restart();
  g.start();
  BOOST_REQUIRE(test::wait_for([&] {
    for (std::size_t i = 0; i < 3; ++i)
      if (counts[i].load() < before[i] + 100)
        return false;
    return true;
  }));
  g.stop();
  g.join();
}

BOOST_AUTO_TEST_CASE(stop_from_another_thread_ends_every_loop_while_each_waits_in_its_reactor, * threads)
{
  // No loop has a handler to run: each waits in its reactor for an hour's
  // timer, so stop() must wake every one of them.
  turnloop::loop_group g(3);
  std::vector<std::unique_ptr<asio::steady_timer>> timers;
  std::atomic<int> waiting{0};
  for (std::size_t i = 0; i < 3; ++i)
  {
    timers.push_back(std::make_unique<asio::steady_timer>(g.loop(i), 1h));
    timers.back()->async_wait([](error_code) {});
    asio::post(g.loop(i), [&] { ++waiting; });
  }
  g.start();
  BOOST_REQUIRE(test::wait_for([&] { return waiting.load() == 3; }));
  std::thread([&] { g.stop(); }).join();
  auto joined = std::async(std::launch::async, [&] { return g.join(); });
  BOOST_REQUIRE(joined.wait_for(test::deadline) == std::future_status::ready);
  BOOST_TEST(joined.get() >= 3u);
  BOOST_TEST(g.stopped());
  // The timers are still pending, on loops no thread runs.
  for (auto& t : timers)
    BOOST_TEST((t->expiry() > asio::steady_timer::clock_type::now()));
}

BOOST_AUTO_TEST_CASE(stop_from_a_handler_on_one_loop_ends_every_loop, * threads)
{
  turnloop::loop_group g(2);
  std::atomic<long> count{0};
  asio::post(g.loop(0), chain{&g.loop(0), &count, forever});
  auto guard = asio::make_work_guard(g.loop(1));
  asio::post(g.loop(1), [&] {
    while (count.load() < 100)
      std::this_thread::yield();
    g.stop();
  });
  g.run();
  BOOST_TEST(g.stopped());
  guard.reset();
}

BOOST_AUTO_TEST_CASE(a_second_run_while_the_group_runs_is_refused_with_already_running, * threads)
{
  turnloop::loop_group g(2);
  auto guard = asio::make_work_guard(g.loop(0));
  g.start();
  BOOST_CHECK_EXCEPTION(g.run(), turnloop::system_error,
      [](const turnloop::system_error& e) {
        return e.code() == turnloop::error::already_running;
      });
  BOOST_CHECK_EXCEPTION(g.restart(), turnloop::system_error,
      [](const turnloop::system_error& e) {
        return e.code() == turnloop::error::already_running;
      });
  g.stop();
  g.join();
  guard.reset();
}

BOOST_AUTO_TEST_CASE(a_handler_that_throws_on_one_loop_reaches_run_and_loses_no_work, * threads)
{
  turnloop::loop_group g(3);
  std::vector<std::atomic<long>> counts(3);
  for (std::size_t i = 0; i < 3; ++i)
    asio::post(g.loop(i), chain{&g.loop(i), &counts[i], 20000});
  asio::post(g.loop(1), [] { throw std::runtime_error("from loop 1"); });

  BOOST_CHECK_EXCEPTION(g.run(), std::runtime_error,
      [](const std::runtime_error& e) {
        return std::string(e.what()) == "from loop 1";
      });
  BOOST_TEST(g.stopped());
  g.restart();
  g.run();
  for (auto& c : counts)
    BOOST_TEST(c.load() == 20000);
}

BOOST_AUTO_TEST_CASE(when_two_loops_throw_each_exception_reaches_one_run, * threads)
{
  // Each handler waits, spinning, until both run. Not std::latch: its wait
  // (C++20's atomic wait) lost a wake-up in the standard library MinGW-w64
  // ships with GCC 12 (a loop thread stayed in arrive_and_wait under Wine
  // with the other handler gone; detail/blocking/address_semaphore.hpp).
  turnloop::loop_group g(2);
  std::atomic<int> arrived{0};
  std::atomic<int> met{0};
  for (std::size_t i = 0; i < 2; ++i)
    asio::post(g.loop(i), [&arrived, &met, i] {
      ++arrived;
      met += test::wait_for([&] { return arrived.load() == 2; });
      throw std::runtime_error(i == 0 ? "zero" : "one");
    });
  std::set<std::string> seen;
  for (int call = 0; call < 2; ++call)
  {
    try
    {
      g.run();
    }
    catch (const std::runtime_error& e)
    {
      seen.insert(e.what());
    }
  }
  BOOST_TEST(met.load() == 2);
  BOOST_TEST(seen.size() == 2u);
  // Both were reported: the next run, after restart(), has nothing to do.
  g.restart();
  BOOST_TEST(g.run() == 0u);
}

BOOST_AUTO_TEST_CASE(stats_lists_each_loop_and_sums_them)
{
  turnloop::config cfg;
  cfg.max_handles = 5;
  turnloop::loop_group g(3, cfg);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t k = 0; k <= i; ++k)
      asio::post(g.loop(i), [] {});
  g.run();
  const turnloop::group_stats s = g.stats();
  BOOST_REQUIRE(s.loops.size() == 3u);
  std::uint64_t handlers = 0;
  for (std::size_t i = 0; i < 3; ++i)
  {
    BOOST_TEST(s.loops[i].handlers_run == i + 1);
    BOOST_TEST(s.loops[i].handles.limit == 5u);
    handlers += s.loops[i].handlers_run;
  }
  BOOST_TEST(s.total.handlers_run == handlers);
  BOOST_TEST(s.total.handles.limit == 15u);
  BOOST_TEST(s.total.pool.buffer_size == cfg.pooled_buffer_size);
}

BOOST_AUTO_TEST_CASE(stats_of_a_running_group_are_taken_on_each_loop, * threads)
{
  turnloop::loop_group g(2);
  std::vector<std::atomic<long>> counts(2);
  for (std::size_t i = 0; i < 2; ++i)
    asio::post(g.loop(i), chain{&g.loop(i), &counts[i], forever});
  g.start();
  BOOST_REQUIRE(test::wait_for([&] { return counts[1].load() > 100; }));
  const turnloop::group_stats s = g.stats();
  BOOST_TEST(s.loops[0].handlers_run > 0u);
  BOOST_TEST(s.loops[1].handlers_run > 0u);
  g.stop();
  g.join();
}

BOOST_AUTO_TEST_CASE(stats_from_one_of_the_loops_is_refused_instead_of_deadlocking, * threads)
{
  turnloop::loop_group g(2);
  bool refused = false;
  asio::post(g.loop(1), [&] {
    try
    {
      g.stats();
    }
    catch (const turnloop::system_error& e)
    {
      refused = e.code() == std::errc::resource_deadlock_would_occur;
    }
  });
  g.run();
  BOOST_TEST(refused);
}

BOOST_AUTO_TEST_CASE(stats_while_the_group_winds_down_still_returns, * threads)
{
  // The group may run out of work while stats() waits for its handlers.
  for (int round = 0; round < 50; ++round)
  {
    turnloop::loop_group g(2);
    std::atomic<int> hops{0};
    asio::post(g.loop(0), [&] { hop(g, 0, hops, 200); });
    g.start();
    g.stats();
    g.join();
    BOOST_TEST(hops.load() == 200);
  }
}

BOOST_AUTO_TEST_CASE(switch_to_resumes_a_coroutine_on_the_other_loop, * threads)
{
  turnloop::loop_group g(2);
  std::thread::id first, after_switch, after_timer;
  bool on_target = false;
  asio::co_spawn(g.loop(0), [&]() -> asio::awaitable<void> {
    first = std::this_thread::get_id();
    co_await turnloop::switch_to(g.loop(1));
    after_switch = std::this_thread::get_id();
    on_target = g.loop(1).get_executor().running_in_this_thread();
    // As documented: the coroutine's own executor is still loop 0's, so an
    // operation it awaits completes back there.
    asio::steady_timer t(g.loop(1), 1ms);
    co_await t.async_wait(asio::use_awaitable);
    after_timer = std::this_thread::get_id();
  }, asio::detached);
  g.run();
  BOOST_TEST(on_target);
  BOOST_TEST((after_switch != first));
  BOOST_TEST((after_timer == first));
}

BOOST_AUTO_TEST_CASE(a_coroutine_spawned_on_another_loop_runs_there_and_returns_its_result, * threads)
{
  turnloop::loop_group g(2);
  int result = 0;
  bool caller_on_own_loop = false;
  bool callee_on_other_loop = false;
  asio::co_spawn(g.loop(0), [&]() -> asio::awaitable<void> {
    result = co_await asio::co_spawn(g.loop(1),
        [&]() -> asio::awaitable<int> {
          const bool before = g.loop(1).get_executor().running_in_this_thread();
          asio::steady_timer t(co_await asio::this_coro::executor, 1ms);
          co_await t.async_wait(asio::use_awaitable);
          callee_on_other_loop = before
            && g.loop(1).get_executor().running_in_this_thread();
          co_return 42;
        }, asio::use_awaitable);
    caller_on_own_loop = g.loop(0).get_executor().running_in_this_thread();
  }, asio::detached);
  g.run();
  BOOST_TEST(result == 42);
  BOOST_TEST(callee_on_other_loop);
  BOOST_TEST(caller_on_own_loop);
}

BOOST_AUTO_TEST_CASE(a_coroutine_moved_by_a_post_bound_to_the_other_loop_runs_there, * threads)
{
  // The Asio spelling of switch_to, with state owned by each loop touched
  // only on that loop (TSan sees a step taken on the wrong thread).
  turnloop::loop_group g(2);
  long owned[2] = {0, 0}; // owned[i] belongs to loop i
  std::atomic<int> finished{0};
  std::atomic<long> on_wrong_loop{0};
  for (int c = 0; c < 10; ++c)
    asio::co_spawn(g.loop(c % 2), [&, c]() -> asio::awaitable<void> {
      for (int k = 0; k < 100; ++k)
      {
        const std::size_t i = (c + k + 1) % 2;
        co_await asio::post(asio::bind_executor(g.loop(i),
              asio::use_awaitable));
        if (!g.loop(i).get_executor().running_in_this_thread())
          ++on_wrong_loop;
        ++owned[i];
      }
      ++finished;
    }, asio::detached);
  g.run();
  BOOST_TEST(finished.load() == 10);
  BOOST_TEST(on_wrong_loop.load() == 0);
  BOOST_TEST(owned[0] + owned[1] == 1000);
}

BOOST_AUTO_TEST_CASE(coroutines_hopping_between_loops_under_load_all_finish, * threads)
{
  turnloop::loop_group g(2);
  std::atomic<int> finished{0};
  std::atomic<long> on_wrong_loop{0};
  for (int c = 0; c < 20; ++c)
    asio::co_spawn(g.loop(c % 2), [&, c]() -> asio::awaitable<void> {
      for (int k = 0; k < 200; ++k)
      {
        turnloop::loop& target = g.loop((c + k + 1) % 2);
        co_await turnloop::switch_to(target);
        if (!target.get_executor().running_in_this_thread())
          ++on_wrong_loop;
      }
      ++finished;
    }, asio::detached);
  g.run();
  BOOST_TEST(finished.load() == 20);
  BOOST_TEST(on_wrong_loop.load() == 0);
}

BOOST_AUTO_TEST_CASE(destroying_a_group_with_work_pending_on_every_loop_leaks_nothing, * threads)
{
  // Handlers, timers, coroutines (one of them having hopped to another
  // loop), and posts from loop to loop, all pending; ASan sees any leak.
  auto g = std::make_unique<turnloop::loop_group>(3);
  std::atomic<int> suspended{0};
  for (std::size_t i = 0; i < 3; ++i)
  {
    turnloop::loop& l = g->loop(i);
    turnloop::loop& other = g->loop((i + 1) % 3);
    asio::post(l, [buffer = std::make_unique<char[]>(64)] {});
    asio::co_spawn(l, [&, &other = other]() -> asio::awaitable<void> {
      auto block = std::make_unique<char[]>(128);
      co_await turnloop::switch_to(other);
      asio::steady_timer t(other, 1h);
      ++suspended;
      co_await t.async_wait(asio::use_awaitable);
    }, asio::detached);
    asio::co_spawn(l, [&]() -> asio::awaitable<void> {
      asio::steady_timer t(co_await asio::this_coro::executor, 1h);
      ++suspended;
      co_await t.async_wait(asio::use_awaitable);
    }, asio::detached);
  }
  g->start();
  BOOST_REQUIRE(test::wait_for([&] { return suspended.load() == 6; }));
  for (std::size_t i = 0; i < 3; ++i)
    asio::post(g->loop(i), [&g, i] {
      asio::post(g->loop((i + 1) % 3),
          [buffer = std::make_unique<char[]>(32)] {});
    });
  g->stop();
  g->join();
  for (std::size_t i = 0; i < 3; ++i)
    asio::post(g->loop(i), [buffer = std::make_unique<char[]>(16)] {});
  g.reset();
}

BOOST_AUTO_TEST_CASE(destroying_a_running_group_stops_and_joins_it_first, * threads)
{
  std::atomic<long> count{0};
  {
    turnloop::loop_group g(2);
    asio::post(g.loop(0), chain{&g.loop(0), &count, forever});
    auto guard = asio::make_work_guard(g.loop(1));
    g.start();
    BOOST_REQUIRE(test::wait_for([&] { return count.load() > 100; }));
    guard.reset();
  }
  BOOST_TEST(count.load() > 100);
}
