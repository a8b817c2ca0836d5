//
// test/loop_io_context_ref.cpp
//
// Existing code that takes `asio::io_context&` and drives the context
// itself (run, poll, stop, restart, get_executor through the base class)
// works on a loop: nothing is lost or stuck.
//

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE loop_io_context_ref
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <atomic>
#include <thread>
#include <vector>

#include "support.hpp"

using asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

// Library code written for io_context: creates its own objects, posts
// through io_context's executor, and runs the context itself.
struct legacy_component
{
  asio::io_context& ioc;
  asio::steady_timer timer{ioc};
  int ticks = 0;

  explicit legacy_component(asio::io_context& c) : ioc(c) {}

  void start(int n)
  {
    timer.expires_after(1ms);
    timer.async_wait([this, n](turnloop::error_code ec) {
      if (ec)
        return;
      ++ticks;
      asio::post(ioc.get_executor(), [this, n] {
        if (n > 1)
          start(n - 1);
      });
    });
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(a_loop_binds_to_io_context_and_its_run_drives_everything)
{
  turnloop::loop l;
  asio::io_context& ioc = l;
  legacy_component component(ioc);
  component.start(5);
  int loop_posts = 0;
  for (int i = 0; i < 10; ++i)
    asio::post(l, [&] { ++loop_posts; });
  ioc.run();
  BOOST_TEST(component.ticks == 5);
  BOOST_TEST(loop_posts == 10);
  BOOST_TEST(ioc.stopped());
  BOOST_TEST(l.stopped());
}

BOOST_AUTO_TEST_CASE(base_poll_runs_the_loops_ready_handlers)
{
  turnloop::loop l;
  asio::io_context& ioc = l;
  auto guard = asio::make_work_guard(l);
  int count = 0;
  for (int i = 0; i < 5; ++i)
    asio::post(l, [&] { ++count; });
  ioc.poll();
  BOOST_TEST(count == 5);
}

BOOST_AUTO_TEST_CASE(base_stop_and_restart_lose_nothing)
{
  turnloop::loop l;
  asio::io_context& ioc = l;
  std::vector<int> order;
  asio::post(l, [&] { order.push_back(1); ioc.stop(); });
  for (int i = 2; i <= 5; ++i)
    asio::post(l, [&, i] { order.push_back(i); });
  ioc.run();
  BOOST_TEST(ioc.stopped());
  BOOST_TEST(l.stopped());
  ioc.restart();
  ioc.run();
  BOOST_TEST(order == (std::vector<int>{1, 2, 3, 4, 5}));
}

BOOST_AUTO_TEST_CASE(a_loop_stop_is_seen_by_a_base_restart_and_run)
{
  turnloop::loop l;
  asio::io_context& ioc = l;
  int count = 0;
  asio::post(l, [&] { ++count; l.stop(); });
  asio::post(l, [&] { ++count; });
  l.run();
  BOOST_TEST(count == 1);
  ioc.restart(); // io_context's restart cannot clear the loop's own flag
  ioc.run();
  BOOST_TEST(count == 2);
}

BOOST_AUTO_TEST_CASE(base_run_on_another_thread_receives_cross_thread_posts,
    * test::threads_label())
{
  turnloop::loop l;
  asio::io_context& ioc = l;
  auto guard = asio::make_work_guard(ioc);
  std::thread runner([&] { ioc.run(); });
  std::atomic<int> count{0};
  for (int i = 0; i < 10000; ++i)
    asio::post(l, [&] { ++count; });
  BOOST_TEST(test::wait_for([&] { return count.load() == 10000; }));
  guard.reset();
  runner.join();
}

BOOST_AUTO_TEST_CASE(base_run_on_two_threads_runs_loop_handlers_once_and_serially,
    * test::threads_label())
{
  turnloop::loop l;
  asio::io_context& ioc = l;
  auto guard = asio::make_work_guard(ioc);
  std::atomic<int> inside{0};
  std::atomic<int> overlap{0};
  std::atomic<int> count{0};
  std::thread a([&] { ioc.run(); });
  std::thread b([&] { ioc.run(); });
  std::thread producer([&] {
    for (int i = 0; i < 20000; ++i)
    {
      asio::post(l, [&] {
        if (inside.fetch_add(1) != 0)
          ++overlap;
        ++count;
        inside.fetch_sub(1);
      });
    }
  });
  producer.join();
  BOOST_TEST(test::wait_for([&] { return count.load() == 20000; }));
  guard.reset();
  a.join();
  b.join();
  BOOST_TEST(count.load() == 20000);
  BOOST_TEST(overlap.load() == 0);
}

BOOST_AUTO_TEST_CASE(coroutines_spawned_on_the_io_context_executor_run)
{
  turnloop::loop l;
  asio::io_context& ioc = l;
  bool done = false;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor, 1ms);
        co_await t.async_wait(asio::use_awaitable);
        done = true;
      }, asio::detached);
  ioc.run();
  BOOST_TEST(done);
}

BOOST_AUTO_TEST_CASE(a_base_run_throws_from_a_handler_and_continues)
{
  turnloop::loop l;
  asio::io_context& ioc = l;
  std::vector<int> order;
  asio::post(l, [&] { order.push_back(1); throw std::runtime_error("x"); });
  asio::post(l, [&] { order.push_back(2); });
  BOOST_CHECK_THROW(ioc.run(), std::runtime_error);
  ioc.run();
  BOOST_TEST(order == (std::vector<int>{1, 2}));
}

namespace {

// What Beast's websocket tests do: count the handlers each base run_one()
// or poll_one() runs.
template <typename Context>
void one_handler_per_base_call(Context& ctx)
{
  asio::io_context& ioc = ctx;
  int ran = 0;
  auto post_three = [&] {
    for (int i = 0; i < 3; ++i)
      asio::post(ctx, [&] { ++ran; });
  };

  post_three();
  BOOST_TEST(ioc.run_one() == 1u);
  BOOST_TEST(ran == 1);
  BOOST_TEST(ioc.poll_one() == 1u);
  BOOST_TEST(ran == 2);
  BOOST_TEST(ioc.run_one_for(test::deadline) == 1u);
  BOOST_TEST(ran == 3);
  BOOST_TEST(ioc.stopped()); // out of work, as io_context
  ioc.restart();

  post_three();
  BOOST_TEST(ioc.run_one_until(std::chrono::steady_clock::now() + test::deadline)
      == 1u);
  BOOST_TEST(ran == 4);
  BOOST_TEST(ioc.poll() == 2u);
  BOOST_TEST(ran == 6);
  ioc.restart();

  // A handler's own posts wait for the next call.
  asio::post(ctx, [&] { ++ran; asio::post(ctx, [&] { ++ran; }); });
  BOOST_TEST(ioc.run_one() == 1u);
  BOOST_TEST(ran == 7);
  BOOST_TEST(ioc.run_one() == 1u);
  BOOST_TEST(ran == 8);
  BOOST_TEST(ioc.run() == 0u);
}

} // namespace

BOOST_AUTO_TEST_CASE(base_run_one_and_poll_one_run_one_handler_as_on_io_context)
{
  asio::io_context ioc;
  one_handler_per_base_call(ioc);
  turnloop::loop l;
  one_handler_per_base_call(l);
}

BOOST_AUTO_TEST_CASE(base_run_one_runs_one_timer_or_socket_completion)
{
  turnloop::loop l;
  asio::io_context& ioc = l;
  int ran = 0;
  asio::steady_timer t1(l), t2(l);
  t1.expires_after(0ms);
  t2.expires_after(0ms);
  t1.async_wait([&](turnloop::error_code) { ++ran; });
  t2.async_wait([&](turnloop::error_code) { ++ran; });
  std::size_t calls = 0;
  while (ran < 2 && calls < 100)
  {
    const int before = ran;
    calls += ioc.run_one_for(test::deadline);
    BOOST_TEST(ran - before <= 1);
  }
  BOOST_TEST(ran == 2);
}
