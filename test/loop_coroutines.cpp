//
// test/loop_coroutines.cpp
//
// C++20 coroutines, completion tokens, awaitable operators with cancellation,
// composed operations, per-operation cancellation and strands on a loop.
//

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE loop_coroutines
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <atomic>
#include <stdexcept>
#include <thread>

#include "support.hpp"

using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;

namespace {

awaitable<int> add_after_post(int x)
{
  co_await asio::post(co_await asio::this_coro::executor, use_awaitable);
  co_return x + 1;
}

awaitable<void> wait_for_ms(std::chrono::milliseconds d)
{
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(use_awaitable);
}

awaitable<void> throw_after_post()
{
  co_await asio::post(co_await asio::this_coro::executor, use_awaitable);
  throw std::runtime_error("from coroutine");
}

// Echoes lines until the peer closes.
awaitable<void> echo_session(tcp::socket socket)
{
  asio::streambuf buffer;
  for (;;)
  {
    auto [ec, n] = co_await asio::async_read_until(socket, buffer, '\n',
        asio::as_tuple(use_awaitable));
    if (ec)
      co_return;
    co_await asio::async_write(socket, buffer.data(), asio::transfer_exactly(n),
        use_awaitable);
    buffer.consume(n);
  }
}

awaitable<void> echo_server(tcp::acceptor& acceptor, int sessions)
{
  for (int i = 0; i < sessions; ++i)
  {
    tcp::socket socket = co_await acceptor.async_accept(use_awaitable);
    asio::co_spawn(acceptor.get_executor(), echo_session(std::move(socket)),
        asio::detached);
  }
}

awaitable<std::size_t> echo_client(tcp::endpoint server, int lines)
{
  tcp::socket socket(co_await asio::this_coro::executor);
  co_await socket.async_connect(server, use_awaitable);
  std::size_t echoed = 0;
  asio::streambuf buffer;
  for (int i = 0; i < lines; ++i)
  {
    const std::string line = "line " + std::to_string(i) + "\n";
    co_await asio::async_write(socket, asio::buffer(line), use_awaitable);
    const std::size_t n = co_await asio::async_read_until(socket, buffer, '\n',
        use_awaitable);
    std::string got(asio::buffers_begin(buffer.data()),
        asio::buffers_begin(buffer.data()) + n);
    buffer.consume(n);
    if (got == line)
      echoed += n;
  }
  co_return echoed;
}

} // namespace

BOOST_AUTO_TEST_CASE(co_spawn_with_a_callback_delivers_the_result)
{
  turnloop::loop l;
  int result = 0;
  asio::co_spawn(l, add_after_post(41),
      [&](std::exception_ptr e, int v) {
        BOOST_TEST(!e);
        result = v;
      });
  l.run();
  BOOST_TEST(result == 42);
}

BOOST_AUTO_TEST_CASE(co_spawn_detached_keeps_run_alive_until_done)
{
  turnloop::loop l;
  bool done = false;
  asio::co_spawn(l, [&]() -> awaitable<void> {
        co_await wait_for_ms(5ms);
        done = true;
      }, asio::detached);
  l.run();
  BOOST_TEST(done);
}

BOOST_AUTO_TEST_CASE(co_spawn_with_use_future_from_another_thread,
    * test::threads_label())
{
  turnloop::loop l;
  auto guard = asio::make_work_guard(l);
  std::thread runner([&] { l.run(); });
  std::future<int> f = asio::co_spawn(l, add_after_post(1), asio::use_future);
  BOOST_TEST(f.get() == 2);
  std::future<void> failing = asio::co_spawn(l, throw_after_post(),
      asio::use_future);
  BOOST_CHECK_THROW(failing.get(), std::runtime_error);
  guard.reset();
  runner.join();
}

BOOST_AUTO_TEST_CASE(co_spawn_with_deferred_starts_when_invoked)
{
  turnloop::loop l;
  auto op = asio::co_spawn(l, add_after_post(9), asio::deferred);
  l.run(); // nothing started yet
  BOOST_TEST(l.stopped());
  l.restart();
  int result = 0;
  std::move(op)([&](std::exception_ptr, int v) { result = v; });
  l.run();
  BOOST_TEST(result == 10);
}

BOOST_AUTO_TEST_CASE(as_tuple_delivers_errors_as_values)
{
  turnloop::loop l;
  turnloop::error_code result;
  asio::co_spawn(l, [&]() -> awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor, 1h);
        asio::post(co_await asio::this_coro::executor, [&] { t.cancel(); });
        auto [ec] = co_await t.async_wait(asio::as_tuple(use_awaitable));
        result = ec;
      }, asio::detached);
  l.run();
  BOOST_TEST(result == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(a_coroutine_exception_reaches_the_completion_handler)
{
  turnloop::loop l;
  std::exception_ptr caught;
  asio::co_spawn(l, throw_after_post(),
      [&](std::exception_ptr e) { caught = e; });
  l.run();
  BOOST_TEST(static_cast<bool>(caught));
}

BOOST_AUTO_TEST_CASE(or_operator_cancels_the_slower_operation)
{
  turnloop::loop l;
  std::size_t winner = 99;
  const auto start = std::chrono::steady_clock::now();
  asio::co_spawn(l, [&]() -> awaitable<void> {
        auto r = co_await (wait_for_ms(5ms) || wait_for_ms(10min));
        winner = r.index();
      }, asio::detached);
  l.run(); // returns only if the 10 min timer was cancelled
  BOOST_TEST(winner == 0u);
  BOOST_TEST((std::chrono::steady_clock::now() - start < 1min));
}

BOOST_AUTO_TEST_CASE(and_operator_cancels_the_rest_when_one_throws)
{
  turnloop::loop l;
  std::exception_ptr caught;
  asio::co_spawn(l, [&]() -> awaitable<void> {
        co_await (throw_after_post() && wait_for_ms(10min));
      }, [&](std::exception_ptr e) { caught = e; });
  l.run();
  BOOST_TEST(static_cast<bool>(caught));
}

BOOST_AUTO_TEST_CASE(and_operator_waits_for_both)
{
  turnloop::loop l;
  int sum = 0;
  asio::co_spawn(l, [&]() -> awaitable<void> {
        auto [a, b] = co_await (add_after_post(1) && add_after_post(2));
        sum = a + b;
      }, asio::detached);
  l.run();
  BOOST_TEST(sum == 5);
}

BOOST_AUTO_TEST_CASE(a_cancellation_slot_cancels_one_operation)
{
  turnloop::loop l;
  asio::cancellation_signal signal;
  asio::steady_timer t(l, 1h);
  asio::steady_timer other(l, 5ms);
  turnloop::error_code cancelled;
  turnloop::error_code untouched = asio::error::would_block;
  t.async_wait(asio::bind_cancellation_slot(signal.slot(),
        [&](turnloop::error_code ec) { cancelled = ec; }));
  other.async_wait([&](turnloop::error_code ec) { untouched = ec; });
  asio::post(l, [&] { signal.emit(asio::cancellation_type::all); });
  l.run();
  BOOST_TEST(cancelled == asio::error::operation_aborted);
  BOOST_TEST(!untouched);
}

BOOST_AUTO_TEST_CASE(a_coroutine_echo_over_loopback_echoes_every_line)
{
  turnloop::loop l;
  tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
  constexpr int clients = 8;
  constexpr int lines = 200;
  asio::co_spawn(l, echo_server(acceptor, clients), asio::detached);
  std::size_t echoed = 0;
  std::size_t expected = 0;
  for (int i = 0; i < lines; ++i)
    expected += ("line " + std::to_string(i) + "\n").size();
  for (int c = 0; c < clients; ++c)
  {
    asio::co_spawn(l, echo_client(acceptor.local_endpoint(), lines),
        [&](std::exception_ptr e, std::size_t n) {
          BOOST_TEST(!e);
          echoed += n;
        });
  }
  l.run();
  BOOST_TEST(echoed == clients * expected);
}

BOOST_AUTO_TEST_CASE(a_strand_serialises_handlers_posted_from_several_threads,
    * test::threads_label())
{
  turnloop::loop l;
  auto strand = asio::make_strand(l);
  auto guard = asio::make_work_guard(l);
  std::atomic<int> inside{0};
  std::atomic<int> overlap{0};
  std::atomic<int> count{0};
  std::thread runner([&] { l.run(); });
  std::vector<std::thread> producers;
  for (int p = 0; p < 3; ++p)
  {
    producers.emplace_back([&] {
      for (int i = 0; i < 5000; ++i)
      {
        asio::post(strand, [&] {
          if (inside.fetch_add(1) != 0)
            ++overlap;
          ++count;
          inside.fetch_sub(1);
        });
      }
    });
  }
  for (auto& t : producers)
    t.join();
  BOOST_TEST(test::wait_for([&] { return count.load() == 15000; }));
  guard.reset();
  runner.join();
  BOOST_TEST(overlap.load() == 0);
}

BOOST_AUTO_TEST_CASE(strand_dispatch_runs_inline_inside_the_strand)
{
  turnloop::loop l;
  auto strand = asio::make_strand(l);
  std::vector<int> order;
  asio::post(strand, [&] {
    asio::dispatch(strand, [&] { order.push_back(1); });
    order.push_back(2);
  });
  l.run();
  BOOST_TEST(order == (std::vector<int>{1, 2}));
}

BOOST_AUTO_TEST_CASE(a_strand_passes_exceptions_through_and_keeps_going)
{
  turnloop::loop l;
  auto strand = asio::make_strand(l);
  std::vector<int> order;
  asio::post(strand, [&] { order.push_back(1); throw std::runtime_error("x"); });
  asio::post(strand, [&] { order.push_back(2); });
  BOOST_CHECK_THROW(l.run(), std::runtime_error);
  l.run();
  BOOST_TEST(order == (std::vector<int>{1, 2}));
}

BOOST_AUTO_TEST_CASE(destroying_a_strand_with_queued_handlers_is_clean)
{
  auto counter = std::make_shared<int>(0);
  {
    turnloop::loop l;
    {
      auto strand = asio::make_strand(l);
      for (int i = 0; i < 10; ++i)
        asio::post(strand, [counter] { ++*counter; });
    }
    l.run();
  }
  BOOST_TEST(*counter == 10);
  BOOST_TEST(counter.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(io_context_strand_works_on_a_loop)
{
  turnloop::loop l;
  asio::io_context::strand strand(l);
  std::vector<int> order;
  asio::post(strand, [&] {
    asio::dispatch(strand, [&] { order.push_back(1); });
    order.push_back(2);
  });
  asio::post(l, strand.wrap([&] { order.push_back(3); }));
  l.run();
  BOOST_TEST(order == (std::vector<int>{1, 2, 3}));
}

#if TURNLOOP_ASIO_VERSION < 103400
// Asio 1.34 (Boost 1.87) removed the one-argument strand::post and dispatch.
BOOST_AUTO_TEST_CASE(io_context_strand_members_work_on_a_loop)
{
  turnloop::loop l;
  asio::io_context::strand strand(l);
  std::vector<int> order;
  strand.post([&] {
    strand.dispatch([&] { order.push_back(1); });
    order.push_back(2);
  });
  l.run();
  BOOST_TEST(order == (std::vector<int>{1, 2}));
}
#endif // TURNLOOP_ASIO_VERSION < 103400
