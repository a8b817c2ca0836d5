//
// test/loop_completion_order.cpp
//
// A loop completes I/O in the same order as io_context: operations the
// reactor finds ready run behind the completions already queued (a
// speculative write, a post), and what a turn's budget leaves of them runs
// before anything their handlers queue. Each scenario runs on io_context and
// on a loop, and the two sequences must be equal (on Windows, where the
// completion port's order varies from run to run, see
// same_order_as_io_context).
//

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE loop_completion_order
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "stream_pair.hpp"
#include "support.hpp"

using stream = test::pair_protocol;

namespace {

using sequence = std::vector<std::string>;

// A connected pair: `tested` is the socket under test, `peer` its peer.
template <typename Context>
struct pair
{
  stream::socket tested;
  stream::socket peer;

  explicit pair(Context& ctx)
    : tested(ctx),
      peer(ctx)
  {
    test::connect_pair(tested, peer);
  }

  // Makes `tested` readable: the reactor finds it ready at its next poll.
  void make_readable()
  {
    asio::write(peer, asio::buffer("r", 1));
  }
};

// A read is waiting in the reactor; its data arrives; then a write on the
// same socket succeeds speculatively and its completion is queued. The
// reactor finds the read ready only after that.
template <typename Context>
sequence queued_write_then_ready_read(Context& ctx)
{
  sequence seen;
  pair<Context> p(ctx);
  std::array<char, 8> in{};
  p.tested.async_read_some(asio::buffer(in),
      [&](turnloop::error_code ec, std::size_t) {
        seen.push_back(ec ? "read failed" : "read");
      });
  p.make_readable();
  p.tested.async_write_some(asio::buffer("w", 1),
      [&](turnloop::error_code ec, std::size_t) {
        seen.push_back(ec ? "write failed" : "write");
      });
  ctx.run();
  return seen;
}

// The same, but the write starts from a handler running inside run(), as a
// server's handler does (Beast's advanced_server: a response is written
// while the next request's read waits in the reactor). The read's data
// arrives before the handler is posted, or from the handler after its write.
enum class data_arrives { before_the_post, after_the_write };

template <typename Context>
sequence write_from_a_handler_and_a_ready_read(Context& ctx, data_arrives when)
{
  sequence seen;
  pair<Context> p(ctx);
  std::array<char, 8> in{};
  p.tested.async_read_some(asio::buffer(in),
      [&](turnloop::error_code ec, std::size_t) {
        seen.push_back(ec ? "read failed" : "read");
      });
  if (when == data_arrives::before_the_post)
    p.make_readable();
  asio::post(ctx, [&] {
    seen.push_back("handler");
    p.tested.async_write_some(asio::buffer("w", 1),
        [&](turnloop::error_code ec, std::size_t) {
          seen.push_back(ec ? "write failed" : "write");
        });
    if (when == data_arrives::after_the_write)
      p.make_readable();
  });
  ctx.run();
  return seen;
}

// Three reads become ready in one reactor poll and each one's handler
// writes speculatively. io_context queues every read before any write's
// completion. On a loop with a budget of two, the read the reactor step
// leaves over must still run before the first write.
template <typename Context>
sequence ready_reads_before_the_writes_they_start(Context& ctx)
{
  sequence seen;
  std::vector<std::unique_ptr<pair<Context>>> pairs;
  for (int i = 0; i != 3; ++i)
    pairs.push_back(std::make_unique<pair<Context>>(ctx));
  // Take the sockets' first readiness events (writable), so the poll that
  // matters reports exactly the three reads.
  ctx.poll();
  ctx.restart();
  std::array<std::array<char, 8>, 3> in{};
  for (std::size_t i = 0; i != pairs.size(); ++i)
  {
    pair<Context>& p = *pairs[i];
    const std::string name = std::to_string(i);
    p.tested.async_read_some(asio::buffer(in[i]),
        [&seen, &p, name](turnloop::error_code ec, std::size_t) {
          seen.push_back(ec ? "read failed" : "read " + name);
          p.tested.async_write_some(asio::buffer("w", 1),
              [&seen, name](turnloop::error_code ec, std::size_t) {
                seen.push_back(ec ? "write failed" : "write " + name);
              });
        });
  }
  for (auto& p : pairs)
    p->make_readable();
  ctx.run();
  return seen;
}

turnloop::config budget_of(std::size_t events)
{
  turnloop::config cfg;
  cfg.events_per_turn = events;
  return cfg;
}

} // namespace

namespace {

// Runs @p scenario on io_context, which must give @p expected, then on a loop,
// which must give the same. @p expected is what the reactors give; Asio's
// io_uring backend orders completions as the kernel reports them, so there
// the loop must give io_context's order, whatever it is.
//
// On Windows the IOCP context orders them as the completion port delivers
// them, and a read's packet reaches the port when the system completes the
// read, after the peer's write, at a time of the system's choosing: the
// same run may see it before or after a packet posted later (under Wine,
// 1 run of the CI's 4 gave io_context "read, handler, write" and the loop
// "handler, read, write"). There each context must complete every
// operation once, and none may fail.
template <typename Scenario>
void same_order_as_io_context(Scenario scenario, const sequence& expected)
{
  asio::io_context ioc(1);
  const sequence stock = scenario(ioc);
  turnloop::loop l;
  const sequence ours = scenario(l);
  if constexpr (turnloop::detail::has_iocp_engine)
  {
    BOOST_TEST(std::is_permutation(stock.begin(), stock.end(),
        expected.begin(), expected.end()));
    BOOST_TEST(std::is_permutation(ours.begin(), ours.end(),
        expected.begin(), expected.end()));
    return;
  }
  if (!test::on_asio_io_uring)
    BOOST_TEST(stock == expected, boost::test_tools::per_element());
  BOOST_TEST(ours == stock, boost::test_tools::per_element());
}

} // namespace

BOOST_AUTO_TEST_CASE(a_queued_speculative_write_completes_before_a_read_that_becomes_ready_later)
{
  same_order_as_io_context(
      [](auto& ctx) { return queued_write_then_ready_read(ctx); },
      {"write", "read"});
}

BOOST_AUTO_TEST_CASE(a_write_started_by_a_handler_completes_before_a_read_that_becomes_ready_later)
{
  same_order_as_io_context([](auto& ctx) {
        return write_from_a_handler_and_a_ready_read(ctx, data_arrives::after_the_write);
      },
      {"handler", "write", "read"});
}

BOOST_AUTO_TEST_CASE(a_posted_handler_runs_before_a_read_the_reactor_finds_ready_behind_it)
{
  same_order_as_io_context([](auto& ctx) {
        return write_from_a_handler_and_a_ready_read(ctx, data_arrives::before_the_post);
      },
      {"handler", "read", "write"});
}

namespace {

// On Windows (same_order_as_io_context says why): every read and write
// completed once, and each write after the read whose handler started it.
bool a_port_order_of_reads_and_writes(const sequence& seen)
{
  sequence expected;
  for (const char* kind : {"read ", "write "})
    for (int i = 0; i != 3; ++i)
      expected.push_back(kind + std::to_string(i));
  if (!std::is_permutation(seen.begin(), seen.end(), expected.begin(),
        expected.end()))
    return false;
  const auto at = [&](const std::string& s) {
    return std::find(seen.begin(), seen.end(), s) - seen.begin();
  };
  for (int i = 0; i != 3; ++i)
    if (at("write " + std::to_string(i)) < at("read " + std::to_string(i)))
      return false;
  return true;
}

} // namespace

BOOST_AUTO_TEST_CASE(reads_left_over_by_the_turn_budget_complete_before_what_their_handlers_queue)
{
  asio::io_context ioc(1);
  const sequence stock = ready_reads_before_the_writes_they_start(ioc);
  if constexpr (turnloop::detail::has_iocp_engine)
  {
    BOOST_TEST(a_port_order_of_reads_and_writes(stock));
    for (std::size_t events : {1u, 2u, 256u})
    {
      turnloop::loop l(budget_of(events));
      BOOST_TEST(a_port_order_of_reads_and_writes(
            ready_reads_before_the_writes_they_start(l)),
          "events_per_turn " << events);
    }
    return;
  }
  BOOST_TEST_REQUIRE(stock.size() == 6u);
  for (std::size_t i = 0; i != stock.size(); ++i)
    BOOST_TEST(stock[i].starts_with(i < 3 ? "read" : "write"));

  for (std::size_t events : {1u, 2u, 256u})
  {
    BOOST_TEST_CONTEXT("events_per_turn " << events)
    {
      turnloop::loop l(budget_of(events));
      const sequence ours = ready_reads_before_the_writes_they_start(l);
      BOOST_TEST(ours == stock, boost::test_tools::per_element());
    }
  }
}

namespace {

// The loop waits in epoll with a read pending; another thread posts a
// handler and then makes the read ready. On io_context the post is queued
// before the reactor returns the read, so it runs first; on a loop too,
// whether it was posted through the loop's executor or io_context's.
template <typename Executor>
sequence post_then_data_from_another_thread(turnloop::loop& l, Executor ex)
{
  sequence seen;
  pair<turnloop::loop> p(l);
  l.poll();
  l.restart();
  std::array<char, 8> in{};
  p.tested.async_read_some(asio::buffer(in),
      [&](turnloop::error_code ec, std::size_t) {
        seen.push_back(ec ? "read failed" : "read");
      });
  std::atomic<pid_t> loop_thread{0};
  std::thread runner([&] {
    loop_thread = test::this_thread_id();
    l.run();
  });
  const bool parked = test::wait_for([&] {
    return loop_thread != 0 && test::parked_in_reactor(loop_thread);
  });
  BOOST_TEST(parked);
  asio::post(ex, [&] { seen.push_back("post"); });
  p.make_readable();
  runner.join();
  return seen;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_post_from_another_thread_before_the_data_runs_before_the_read,
    * boost::unit_test::label("threads"))
{
  for (int i = 0; i != 50; ++i)
  {
    {
      turnloop::loop l;
      const sequence via_loop = post_then_data_from_another_thread(l, l.get_executor());
      BOOST_TEST(via_loop == (sequence{"post", "read"}), boost::test_tools::per_element());
    }
    {
      turnloop::loop l;
      const sequence via_base = post_then_data_from_another_thread(
          l, static_cast<asio::io_context&>(l).get_executor());
      BOOST_TEST(via_base == (sequence{"post", "read"}), boost::test_tools::per_element());
    }
  }
}
