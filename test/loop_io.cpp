//
// test/loop_io.cpp
//
// Stock Asio I/O objects run on a turnloop::loop in the loop's turn, on the
// loop's thread, with no hidden thread; an idle loop uses no CPU; the reactor
// is polled once per turn at most.
//

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE loop_io
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>
#include <vector>
#include <csignal>
#include <ctime>
#include <thread>

#include <unistd.h>

#include "support.hpp"

using asio::ip::tcp;
using asio::ip::udp;
using namespace std::chrono_literals;

namespace {

// Records, for each completion, whether it ran on the thread running the loop.
struct thread_check
{
  turnloop::loop& loop;
  int completions = 0;
  int off_thread = 0;

  void operator()()
  {
    ++completions;
    if (!loop.get_executor().running_in_this_thread())
      ++off_thread;
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(timers_complete_on_the_loop_thread_without_a_thread)
{
  // No thread beyond what stock Asio adds for the same timers: none on
  // POSIX; on Windows Asio's IOCP context waits for its timers on a thread
  // of its own, on a loop as on io_context.
  auto run_timers_on = [](auto& context, auto&& check) {
    const std::size_t before = test::thread_count();
    asio::steady_timer steady(context, 1ms);
    asio::system_timer system(context, 1ms);
    steady.async_wait([&](turnloop::error_code ec) { BOOST_TEST(!ec); check(); });
    system.async_wait([&](turnloop::error_code ec) { BOOST_TEST(!ec); check(); });
    BOOST_TEST(test::ran(context.run(), 2u));
    return test::thread_count() - before;
  };
  asio::io_context stock;
  const std::size_t stock_threads = run_timers_on(stock, [] {});
  turnloop::loop l;
  thread_check check{l};
  const std::size_t loop_threads = run_timers_on(l, [&] { check(); });
  BOOST_TEST(loop_threads == stock_threads);
  if constexpr (!turnloop::detail::has_iocp_engine)
    BOOST_TEST(loop_threads == 0u);
  BOOST_TEST(check.completions == 2);
  BOOST_TEST(check.off_thread == 0);
}

BOOST_AUTO_TEST_CASE(a_cancelled_timer_completes_with_operation_aborted)
{
  turnloop::loop l;
  asio::steady_timer t(l, 1h);
  turnloop::error_code result;
  t.async_wait([&](turnloop::error_code ec) { result = ec; });
  asio::post(l, [&] { t.cancel(); });
  l.run();
  BOOST_TEST(result == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(tcp_accept_connect_and_echo_run_on_the_loop_thread)
{
  const std::size_t threads_before = test::thread_count();
  turnloop::loop l;
  thread_check check{l};
  tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
  tcp::socket server(l);
  tcp::socket client(l);
  std::array<char, 5> server_buf{};
  std::array<char, 5> client_buf{};

  acceptor.async_accept(server, [&](turnloop::error_code ec) {
    BOOST_TEST(!ec);
    check();
    asio::async_read(server, asio::buffer(server_buf),
        [&](turnloop::error_code ec, std::size_t n) {
          BOOST_TEST(!ec);
          check();
          asio::async_write(server, asio::buffer(server_buf, n),
              [&](turnloop::error_code ec, std::size_t) {
                BOOST_TEST(!ec);
                check();
              });
        });
  });
  client.async_connect(acceptor.local_endpoint(),
      [&](turnloop::error_code ec) {
        BOOST_TEST(!ec);
        check();
        asio::async_write(client, asio::buffer("hello", 5),
            [&](turnloop::error_code ec, std::size_t) {
              BOOST_TEST(!ec);
              check();
              asio::async_read(client, asio::buffer(client_buf),
                  [&](turnloop::error_code ec, std::size_t) {
                    BOOST_TEST(!ec);
                    check();
                  });
            });
      });
  l.run();
  BOOST_TEST(check.completions == 6);
  BOOST_TEST(check.off_thread == 0);
  BOOST_TEST(std::string(client_buf.data(), 5) == "hello");
  BOOST_TEST(test::thread_count() == threads_before);
}

BOOST_AUTO_TEST_CASE(udp_send_and_receive_run_on_the_loop_thread)
{
  const std::size_t threads_before = test::thread_count();
  turnloop::loop l;
  thread_check check{l};
  udp::socket receiver(l, {asio::ip::address_v4::loopback(), 0});
  udp::socket sender(l, {asio::ip::address_v4::loopback(), 0});
  std::array<char, 16> buf{};
  udp::endpoint from;
  receiver.async_receive_from(asio::buffer(buf), from,
      [&](turnloop::error_code ec, std::size_t n) {
        BOOST_TEST(!ec);
        BOOST_TEST(n == 4u);
        check();
      });
  sender.async_send_to(asio::buffer("ping", 4), receiver.local_endpoint(),
      [&](turnloop::error_code ec, std::size_t) {
        BOOST_TEST(!ec);
        check();
      });
  l.run();
  BOOST_TEST(check.completions == 2);
  BOOST_TEST(check.off_thread == 0);
  BOOST_TEST(from == sender.local_endpoint());
  BOOST_TEST(test::thread_count() == threads_before);
}

BOOST_AUTO_TEST_CASE(signal_set_completes_on_the_loop_thread)
{
#if defined(_WIN32)
  const int signal_number = SIGTERM; // Windows' C library raises no SIGUSR1
#else // defined(_WIN32)
  const int signal_number = SIGUSR1;
#endif // defined(_WIN32)
  const std::size_t threads_before = test::thread_count();
  turnloop::loop l;
  thread_check check{l};
  asio::signal_set signals(l, signal_number);
  int received = 0;
  signals.async_wait([&](turnloop::error_code ec, int signo) {
    BOOST_TEST(!ec);
    received = signo;
    check();
  });
  asio::post(l, [=] { ::raise(signal_number); });
  l.run();
  BOOST_TEST(received == signal_number);
  BOOST_TEST(check.off_thread == 0);
  BOOST_TEST(test::thread_count() == threads_before);
}

BOOST_AUTO_TEST_CASE(stream_descriptor_reads_a_pipe_on_the_loop_thread,
    * test::only_where(test::has_posix_descriptors, "POSIX stream descriptors"))
{
#if defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
  const std::size_t threads_before = test::thread_count();
  turnloop::loop l;
  thread_check check{l};
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  asio::posix::stream_descriptor reader(l, fds[0]);
  asio::posix::stream_descriptor writer(l, fds[1]);
  std::array<char, 3> buf{};
  asio::async_read(reader, asio::buffer(buf),
      [&](turnloop::error_code ec, std::size_t n) {
        BOOST_TEST(!ec);
        BOOST_TEST(n == 3u);
        check();
      });
  asio::async_write(writer, asio::buffer("abc", 3),
      [&](turnloop::error_code ec, std::size_t) {
        BOOST_TEST(!ec);
        check();
      });
  l.run();
  BOOST_TEST(check.completions == 2);
  BOOST_TEST(check.off_thread == 0);
  BOOST_TEST(std::string(buf.data(), 3) == "abc");
  BOOST_TEST(test::thread_count() == threads_before);
#endif // defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
}

BOOST_AUTO_TEST_CASE(the_resolver_adds_no_thread_beyond_what_stock_asio_adds)
{
  // Asio's asynchronous resolver runs getaddrinfo on a thread of its own on
  // any context; the loop must add none of its own on top, and complete on
  // the loop thread.
  auto resolve_on = [](auto& context, auto&& check) {
    const std::size_t before = test::thread_count();
    tcp::resolver resolver(context);
    std::size_t results = 0;
    resolver.async_resolve("127.0.0.1", "80",
        [&](turnloop::error_code ec, tcp::resolver::results_type r) {
          BOOST_TEST(!ec);
          results = r.size();
          check();
        });
    context.run();
    BOOST_TEST(results >= 1u);
    return test::thread_count() - before;
  };

  asio::io_context stock;
  const std::size_t stock_threads = resolve_on(stock, [] {});
  turnloop::loop l;
  thread_check check{l};
  const std::size_t loop_threads = resolve_on(l, [&] { check(); });
  BOOST_TEST(loop_threads == stock_threads);
  BOOST_TEST(check.completions == 1);
  BOOST_TEST(check.off_thread == 0);
}

BOOST_AUTO_TEST_CASE(an_idle_loop_with_a_far_timer_uses_no_cpu)
{
  // 300 ms of run_for with a timer 10 s away: the loop blocks in one
  // epoll_wait instead of ticking or spinning.
  turnloop::loop l;
  asio::steady_timer distant(l, 10s);
  distant.async_wait([](turnloop::error_code) {});
  timespec cpu_before{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_before);
  const auto start = std::chrono::steady_clock::now();
  l.run_for(300ms);
  const auto wall = std::chrono::steady_clock::now() - start;
  timespec cpu_after{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_after);
  const double cpu_ms = (cpu_after.tv_sec - cpu_before.tv_sec) * 1e3
    + (cpu_after.tv_nsec - cpu_before.tv_nsec) / 1e6;
  BOOST_TEST((wall >= 300ms));
  // A spinning loop would use most of the 300 ms. Under Wine a thread's CPU
  // time moves in 10 ms steps, so there the bound leaves room for a few.
  BOOST_TEST(cpu_ms < (turnloop::detail::has_iocp_engine ? 100.0 : 30.0));
  BOOST_TEST(l.stats().reactor_runs <= 4u);
}

BOOST_AUTO_TEST_CASE(the_reactor_is_polled_once_per_turn_budget_not_per_handler,
    * test::only_where(!turnloop::detail::has_iocp_engine,
      "no reactor to poll: the IOCP engine's turns are packets"))
{
  // 10000 chained posts while a socket exists. io_context polls epoll after
  // every handler; the loop returns to the reactor once per events_per_turn
  // handlers, and never blocks while handlers are ready.
  turnloop::config c;
  c.events_per_turn = 64;
  turnloop::loop l(c);
  tcp::socket socket(l);
  socket.open(tcp::v4());
  int remaining = 10000;
  std::function<void()> chain = [&] {
    if (--remaining > 0)
      asio::post(l, chain);
  };
  asio::post(l, chain);
  l.run();
  const turnloop::loop_stats s = l.stats();
  BOOST_TEST(remaining == 0);
  BOOST_TEST(s.handlers_run == 10000u);
  BOOST_TEST(s.reactor_runs <= 10000u / 64 + 3);
  BOOST_TEST(s.os_waits == 0u);
  BOOST_TEST(s.turns >= 10000u); // one handler ready per turn
}

namespace {

// Timers that are already due: all become ready in one reactor run.
struct due_timers
{
  std::vector<std::unique_ptr<asio::steady_timer>> timers;

  // Due in the order made, each 1 ms after the one before: expiries read
  // from the clock one after another can be equal (Windows' clock ticks
  // every 100 ns under Wine), and Asio's timer heap orders equal ones as
  // it likes.
  due_timers(turnloop::loop& l, int n)
  {
    const auto base = std::chrono::steady_clock::now() - 1s;
    for (int i = 0; i < n; ++i)
      timers.push_back(std::make_unique<asio::steady_timer>(l,
            base + i * 1ms));
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(io_completions_run_in_the_reactor_step_within_the_budget,
    * test::only_where(!turnloop::detail::has_iocp_engine
        && test::counts_handlers_only,
      turnloop::detail::has_iocp_engine
        ? "no reactor step: each completion is a packet of its own"
        : "the reactor step's in-place completions are the reactors'; Asio's "
          "io_uring backend queues its timers' completions for the scheduler"))
{
  // Four timers ready at once and a budget of four: all four complete in the
  // reactor step.
  turnloop::config c;
  c.events_per_turn = 4;
  turnloop::loop l(c);
  due_timers due(l, 4);
  int ran = 0;
  for (auto& t : due.timers)
    t->async_wait([&](turnloop::error_code ec) { BOOST_TEST(!ec); ++ran; });
  BOOST_TEST(l.run() == 4u);
  BOOST_TEST(ran == 4);
  BOOST_TEST(l.stats().io_completions == 4u);
}

BOOST_AUTO_TEST_CASE(more_io_completions_than_the_budget_all_go_through_the_scheduler,
    * test::only_where(test::counts_handlers_only, test::backend_counts_its_own))
{
  // Ten ready and a budget of four: completing four in the reactor step would
  // queue the other six behind what those four handlers queue, out of
  // io_context's order, so all ten go through the scheduler's queue, in order.
  turnloop::config c;
  c.events_per_turn = 4;
  turnloop::loop l(c);
  due_timers due(l, 10);
  std::vector<int> order;
  for (int i = 0; i != 10; ++i)
    due.timers[i]->async_wait([&, i](turnloop::error_code ec) {
      BOOST_TEST(!ec);
      order.push_back(i);
    });
  BOOST_TEST(l.run() == 10u);
  BOOST_TEST(order.size() == 10u);
  BOOST_TEST(std::is_sorted(order.begin(), order.end()));
  BOOST_TEST(l.stats().io_completions == 0u);
}

BOOST_AUTO_TEST_CASE(an_io_handler_that_throws_in_the_reactor_step_loses_nothing)
{
  turnloop::loop l;
  due_timers due(l, 3);
  int ran = 0;
  due.timers[0]->async_wait([&](turnloop::error_code) {
    ++ran;
    throw std::runtime_error("from a timer");
  });
  for (int i = 1; i < 3; ++i)
    due.timers[i]->async_wait([&](turnloop::error_code) { ++ran; });
  BOOST_CHECK_THROW(l.run(), std::runtime_error);
  BOOST_TEST(ran == 1);
  BOOST_TEST(!l.stopped());
  BOOST_TEST(test::ran(l.run(), 2u));
  BOOST_TEST(ran == 3);
}

BOOST_AUTO_TEST_CASE(stop_from_an_io_handler_leaves_the_rest_for_later)
{
  turnloop::loop l;
  due_timers due(l, 3);
  int ran = 0;
  due.timers[0]->async_wait([&](turnloop::error_code) { ++ran; l.stop(); });
  for (int i = 1; i < 3; ++i)
    due.timers[i]->async_wait([&](turnloop::error_code) { ++ran; });
  BOOST_TEST(test::ran(l.run(), 1u));
  BOOST_TEST(ran == 1);
  l.restart();
  BOOST_TEST(test::ran(l.run(), 2u));
  BOOST_TEST(ran == 3);
}

BOOST_AUTO_TEST_CASE(run_one_runs_one_io_completion_at_a_time,
    * test::only_where(test::counts_handlers_only, test::backend_counts_its_own))
{
  turnloop::loop l;
  due_timers due(l, 3);
  int ran = 0;
  for (auto& t : due.timers)
    t->async_wait([&](turnloop::error_code) { ++ran; });
  BOOST_TEST(l.run_one() == 1u);
  BOOST_TEST(ran == 1);
  BOOST_TEST(l.poll_one() == 1u);
  BOOST_TEST(ran == 2);
  BOOST_TEST(l.run_one() == 1u);
  BOOST_TEST(ran == 3);
  BOOST_TEST(l.run_one() == 0u);
}
