//
// test/blocking_destruction.cpp
//
// Destroying a loop with blocking jobs queued, running, or finished and
// waiting for a turn: queued jobs never run, running ones are asked to stop
// and waited for, no handler is invoked, every handler and function is
// destroyed (no leak, no use-after-free under ASan).
//

#include <turnloop/blocking.hpp>

#define BOOST_TEST_MODULE blocking_destruction
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <atomic>
#include <memory>
#include <thread>

#include "blocking_support.hpp"

using turnloop::error_code;

namespace {

// Held by handlers and functions: use_count says how many still exist.
struct tracker
{
  std::atomic<int> jobs_ran{0};
  std::atomic<int> handlers_ran{0};
};

// A job that runs until it is asked to stop.
auto until_stopped(std::shared_ptr<tracker> t, std::atomic<bool>& started)
{
  return [t, &started](turnloop::stop_token stop) {
    ++t->jobs_ran;
    started = true;
    test::wait_for([&] { return stop.stop_requested(); });
    return 1;
  };
}

auto counting_handler(std::shared_ptr<tracker> t)
{
  return [t](error_code, std::exception_ptr, int) { ++t->handlers_ran; };
}

struct frame_guard
{
  std::shared_ptr<tracker> t;
};

} // namespace

BOOST_AUTO_TEST_SUITE(destruction, * test::threads_label())

BOOST_AUTO_TEST_CASE(queued_jobs_never_run_and_the_running_one_is_stopped_and_waited_for)
{
  auto t = std::make_shared<tracker>();
  std::atomic<bool> started{false};
  {
    turnloop::config c;
    c.blocking.threads = 1;
    turnloop::loop l(c);
    asio::post(l, [&] {
      turnloop::async_blocking(l, until_stopped(t, started),
          counting_handler(t));
      for (int i = 0; i < 10; ++i)
      {
        turnloop::async_blocking(l, [t] { ++t->jobs_ran; return 0; },
            counting_handler(t));
      }
      BOOST_TEST(test::wait_for([&] { return started.load(); }));
    });
    l.run_one();
    BOOST_TEST(turnloop::blocking_statistics(l).queued == 10u);
  }
  BOOST_TEST(t->jobs_ran == 1);
  BOOST_TEST(t->handlers_ran == 0);
  BOOST_TEST(t.use_count() == 1); // every function and handler destroyed
}

BOOST_AUTO_TEST_CASE(results_waiting_for_a_turn_are_dropped_with_their_handlers)
{
  auto t = std::make_shared<tracker>();
  {
    turnloop::loop l;
    asio::post(l, [&] {
      for (int i = 0; i < 20; ++i)
      {
        turnloop::async_blocking(l, [t] { ++t->jobs_ran; return 0; },
            counting_handler(t));
      }
      BOOST_TEST(test::all_results_in_ring(l));
    });
    l.run_one();
    BOOST_TEST(turnloop::blocking_statistics(l).undelivered == 20u);
  }
  BOOST_TEST(t->jobs_ran == 20);
  BOOST_TEST(t->handlers_ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(the_destructor_waits_for_a_running_job_that_ignores_the_stop_request)
{
  // The job sees the stop request (so the destructor has begun) and still
  // takes its time; the destructor returns only after the job has.
  std::atomic<bool> started{false};
  std::atomic<bool> saw_stop{false};
  std::atomic<bool> may_return{false};
  std::atomic<bool> returned{false};
  std::thread opener([&] {
    test::wait_for([&] { return saw_stop.load(); });
    may_return = true;
  });
  {
    turnloop::loop l;
    asio::post(l, [&] {
      turnloop::async_blocking(l,
          [&](turnloop::stop_token stop) {
            started = true;
            test::wait_for([&] { return stop.stop_requested(); });
            saw_stop = true;
            test::wait_for([&] { return may_return.load(); });
            returned = true;
          },
          [](error_code, std::exception_ptr) { BOOST_FAIL("invoked"); });
      BOOST_TEST(test::wait_for([&] { return started.load(); }));
    });
    l.run_one();
  }
  BOOST_TEST(returned.load());
  opener.join();
}

BOOST_AUTO_TEST_CASE(long_jobs_are_stopped_and_waited_for)
{
  auto t = std::make_shared<tracker>();
  std::atomic<bool> started[3] = {false, false, false};
  {
    turnloop::loop l;
    asio::post(l, [&] {
      for (auto& s : started)
        turnloop::async_blocking_long(l, until_stopped(t, s), counting_handler(t));
      BOOST_TEST(test::wait_for([&] {
        return started[0] && started[1] && started[2];
      }));
    });
    l.run_one();
    BOOST_TEST(turnloop::blocking_statistics(l).long_threads == 3u);
  }
  BOOST_TEST(t->jobs_ran == 3);
  BOOST_TEST(t->handlers_ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(a_coroutine_suspended_on_a_job_is_destroyed_with_its_frame)
{
  auto t = std::make_shared<tracker>();
  std::atomic<bool> started{false};
  {
    turnloop::loop l;
    asio::co_spawn(l, [&, g = frame_guard{t}]() -> asio::awaitable<void> {
      auto [e, v] = co_await turnloop::async_blocking(l,
          until_stopped(t, started), asio::use_awaitable);
      ++g.t->handlers_ran;
    }, asio::detached);
    l.run_one();
    BOOST_TEST(test::wait_for([&] { return started.load(); }));
  }
  BOOST_TEST(t->handlers_ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(cancellation_handlers_of_pending_jobs_do_not_outlive_their_use)
{
  // The signals outlive nothing they point into: each is destroyed with the
  // handler that owns it, during the loop's destruction.
  auto t = std::make_shared<tracker>();
  {
    turnloop::config c;
    c.blocking.threads = 1;
    turnloop::loop l(c);
    std::atomic<bool> started{false};
    asio::post(l, [&] {
      turnloop::async_blocking(l, until_stopped(t, started),
          counting_handler(t));
      for (int i = 0; i < 5; ++i)
      {
        auto signal = std::make_shared<asio::cancellation_signal>();
        turnloop::async_blocking(l, [t] { ++t->jobs_ran; return 0; },
            asio::bind_cancellation_slot(signal->slot(),
              [t, signal](error_code, std::exception_ptr, int) {
                ++t->handlers_ran;
              }));
      }
    });
    l.run_one();
  }
  BOOST_TEST(t->handlers_ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(loops_destroyed_right_after_their_last_delivery)
{
  // The workers may still be on their way back from pushing the last
  // results: the destructor must not reach a job the loop has freed.
  int delivered = 0;
  for (int i = 0; i < 300; ++i)
  {
    turnloop::loop l;
    for (int j = 0; j < 8; ++j)
    {
      turnloop::async_blocking(l, [](turnloop::stop_token) { return 1; },
          [&](error_code, std::exception_ptr, int v) { delivered += v; });
    }
    l.run();
  }
  BOOST_TEST(delivered == 300 * 8);
}

BOOST_AUTO_TEST_SUITE_END()
