//
// test/loop_threads.cpp
//
// Posting from other threads: nothing is lost, per-producer order is kept, a
// running loop is never woken with a syscall, a parked one always is, and
// stop() reaches a loop blocked in epoll_wait, and a post reaches a loop
// kept busy by I/O alone.
//

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE loop_threads
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "stream_pair.hpp"
#include "support.hpp"

using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(cross_thread, * test::threads_label())

BOOST_AUTO_TEST_CASE(four_threads_post_100000_each_and_every_post_arrives_in_order)
{
  constexpr int producers = 4;
  constexpr int per_producer = 100000;
  turnloop::loop l;
  auto guard = asio::make_work_guard(l);
  std::vector<int> next(producers, 0);
  int total = 0;
  bool in_order = true;

  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
  {
    threads.emplace_back([&, p] {
      for (int i = 0; i < per_producer; ++i)
      {
        asio::post(l, [&, p, i] {
          in_order = in_order && next[p] == i;
          next[p] = i + 1;
          if (++total == producers * per_producer)
            guard.reset();
        });
      }
    });
  }
  const std::size_t ran = l.run();
  for (auto& t : threads)
    t.join();
  BOOST_TEST(total == producers * per_producer);
  BOOST_TEST(ran == std::size_t(producers * per_producer));
  BOOST_TEST(in_order);
  BOOST_TEST(l.stats().posts_queued == 0u);
}

BOOST_AUTO_TEST_CASE(posts_racing_the_loop_as_it_parks_are_never_lost)
{
  // Ping-pong between a thread and the loop: every post lands while the loop
  // is parking, parked or just waking. A lost wake-up hangs one round, which
  // the deadline turns into a failure.
  constexpr int rounds = 20000;
  turnloop::loop l;
  auto guard = asio::make_work_guard(l);
  std::atomic<int> done{0};
  std::thread loop_thread([&] { l.run(); });
  bool all_arrived = true;
  for (int i = 0; i < rounds && all_arrived; ++i)
  {
    asio::post(l, [&] { done.fetch_add(1, std::memory_order_release); });
    all_arrived = test::wait_for([&] { return done.load() == i + 1; });
  }
  BOOST_TEST(all_arrived);
  BOOST_TEST(done.load() == rounds);
  asio::post(l, [&] { guard.reset(); });
  loop_thread.join();
}

BOOST_AUTO_TEST_CASE(a_parked_loop_is_woken_by_one_post)
{
  turnloop::loop l;
  auto guard = asio::make_work_guard(l);
  std::atomic<pid_t> tid{0};
  asio::post(l, [&] { tid = test::this_thread_id(); });
  std::thread loop_thread([&] { l.run(); });
  BOOST_TEST(test::wait_for([&] { return tid.load() != 0; }));
  BOOST_TEST(test::wait_for([&] { return test::parked_in_reactor(tid); }));

  std::atomic<bool> ran{false};
  asio::post(l, [&] { ran = true; });
  BOOST_TEST(test::wait_for([&] { return ran.load(); }));
  std::atomic<std::uint64_t> wakes{0};
  asio::post(l, [&] { wakes = l.stats().wakes; guard.reset(); });
  loop_thread.join();
  BOOST_TEST(wakes.load() >= 1u);
}

BOOST_AUTO_TEST_CASE(a_running_loop_is_not_woken_with_a_syscall)
{
  // The loop stays busy with a handler chain while another thread posts
  // 10000 handlers: every one arrives, and none needed a wake (a wake is the
  // only place the loop makes a syscall on a post's behalf).
  turnloop::loop l;
  std::atomic<bool> producer_done{false};
  std::atomic<bool> chain_running{false};
  int arrived = 0;
  std::function<void()> chain = [&] {
    chain_running = true;
    if (!producer_done.load() || arrived < 10000)
      asio::post(l, chain);
  };
  asio::post(l, chain);
  std::thread producer([&] {
    test::wait_for([&] { return chain_running.load(); });
    for (int i = 0; i < 10000; ++i)
      asio::post(l, [&] { ++arrived; });
    producer_done = true;
  });
  l.run();
  producer.join();
  BOOST_TEST(arrived == 10000);
  BOOST_TEST(l.stats().wakes == 0u);
  BOOST_TEST(l.stats().os_waits == 0u);
}

BOOST_AUTO_TEST_CASE(stop_from_another_thread_wakes_a_loop_blocked_in_epoll)
{
  turnloop::loop l;
  auto guard = asio::make_work_guard(l);
  asio::steady_timer distant(l, 1h); // the reactor has a timer 1 h away
  distant.async_wait([](turnloop::error_code) {});
  std::atomic<pid_t> tid{0};
  std::atomic<bool> returned{false};
  asio::post(l, [&] { tid = test::this_thread_id(); });
  std::thread loop_thread([&] { l.run(); returned = true; });
  BOOST_TEST(test::wait_for([&] { return tid.load() != 0; }));
  BOOST_TEST(test::wait_for([&] { return test::parked_in_reactor(tid); }));
  BOOST_TEST(!returned.load());

  l.stop();
  BOOST_TEST(test::wait_for([&] { return returned.load(); }));
  loop_thread.join();
  BOOST_TEST(l.stopped());
}

BOOST_AUTO_TEST_CASE(dispatch_from_another_thread_queues_instead_of_running_inline)
{
  turnloop::loop l;
  auto guard = asio::make_work_guard(l);
  std::atomic<pid_t> loop_tid{0};
  std::atomic<pid_t> ran_on{0};
  asio::post(l, [&] { loop_tid = test::this_thread_id(); });
  std::thread loop_thread([&] { l.run(); });
  BOOST_TEST(test::wait_for([&] { return loop_tid.load() != 0; }));
  asio::dispatch(l, [&] { ran_on = test::this_thread_id(); guard.reset(); });
  loop_thread.join();
  BOOST_TEST(ran_on.load() == loop_tid.load());
}

BOOST_AUTO_TEST_CASE(work_released_on_other_threads_lets_run_return)
{
  // Tracked executors made on several threads, some on the loop thread and
  // released elsewhere, some the other way round: when the last goes, run()
  // returns.
  turnloop::loop l;
  using tracked = asio::executor_work_guard<turnloop::loop::executor_type>;
  std::vector<std::unique_ptr<tracked>> from_loop;
  std::atomic<bool> made{false};
  asio::post(l, [&] {
    for (int i = 0; i < 64; ++i)
      from_loop.push_back(std::make_unique<tracked>(l.get_executor()));
    made = true;
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
  {
    threads.emplace_back([&, t] {
      tracked own(l.get_executor()); // made on this thread
      test::wait_for([&] { return made.load(); });
      for (int i = t; i < 64; i += 4)
        from_loop[i].reset();
    });
  }
  l.run();
  for (auto& t : threads)
    t.join();
  BOOST_TEST(l.stopped());
}

BOOST_AUTO_TEST_CASE(the_loop_runs_handlers_only_on_its_own_thread)
{
  turnloop::loop l;
  auto guard = asio::make_work_guard(l);
  std::atomic<pid_t> loop_tid{0};
  std::atomic<int> wrong_thread{0};
  std::atomic<int> count{0};
  std::thread loop_thread([&] { loop_tid = test::this_thread_id(); l.run(); });
  test::wait_for([&] { return loop_tid.load() != 0; });
  std::vector<std::thread> producers;
  for (int p = 0; p < 3; ++p)
  {
    producers.emplace_back([&] {
      for (int i = 0; i < 20000; ++i)
      {
        asio::post(l, [&] {
          if (test::this_thread_id() != loop_tid.load())
            ++wrong_thread;
          ++count;
        });
      }
    });
  }
  for (auto& t : producers)
    t.join();
  BOOST_TEST(test::wait_for([&] { return count.load() == 60000; }));
  asio::post(l, [&] { guard.reset(); });
  loop_thread.join();
  BOOST_TEST(wrong_thread.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_post_reaches_a_loop_kept_polling_by_typed_sockets)
{
  // Sockets typed on the loop's executor complete through the scheduler,
  // not in the loop's turns, and a ping-pong between two of them makes every
  // reactor step a poll (each write completes at once and queues its
  // completion): the loop never parks and runs no turn of its own. A post
  // from another thread must still run, while the ping-pong goes on.
  using socket = asio::basic_stream_socket<test::pair_protocol,
    turnloop::loop::executor_type>;
  turnloop::loop l;
  socket a(l);
  socket b(l);
  test::connect_pair(a, b);

  std::atomic<bool> post_ran{false};
  std::atomic<std::uint64_t> rounds{0};
  bool deadline_ended_it = false;
  const auto end = std::chrono::steady_clock::now() + test::deadline;
  char to_b = 'p';
  char at_b = 0;
  char at_a = 0;
  const auto written = [](turnloop::error_code ec, std::size_t) {
    BOOST_TEST(!ec);
  };
  std::function<void()> round = [&] {
    if (post_ran.load())
      return;
    if (std::chrono::steady_clock::now() > end)
    {
      deadline_ended_it = true;
      return;
    }
    asio::async_write(a, asio::buffer(&to_b, 1), written);
    asio::async_read(b, asio::buffer(&at_b, 1),
        [&](turnloop::error_code ec, std::size_t) {
      if (ec)
        return;
      asio::async_write(b, asio::buffer(&at_b, 1), written);
      asio::async_read(a, asio::buffer(&at_a, 1),
          [&](turnloop::error_code ec, std::size_t) {
        if (ec)
          return;
        ++rounds;
        round();
      });
    });
  };
  round();

  std::thread poster([&] {
    // Posted once the ping-pong runs; and if it never does, run() ends at
    // the deadline without it.
    test::wait_for([&] { return rounds.load() >= 100; });
    asio::post(l, [&] { post_ran = true; });
  });
  l.run();
  poster.join();
  BOOST_TEST(rounds.load() >= 100u);
  BOOST_TEST(post_ran.load());
  BOOST_TEST(!deadline_ended_it, "the post waited until the ping-pong ended");
}

BOOST_AUTO_TEST_SUITE_END()
