//
// test/handler_exceptions.cpp
//
// An exception thrown by a handler leaves run() alone, one per call, from
// every place a loop runs handlers: its queue, blocking results, pool
// waiters, accepts, pooled reads, socket and timer completions. That holds
// also when the handler is bound to a strand, which runs it inline and so
// hands its exception to the loop to keep until the handler that started
// the strand returns: the other handlers stay queued for the next call, and
// none is lost, as on io_context (where each run() rethrows one).
//

#include <turnloop.hpp>

#define BOOST_TEST_MODULE handler_exceptions
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "blocking_support.hpp"

using asio::ip::tcp;
using turnloop::error_code;

namespace {

constexpr int handlers = 4;

// Calls run() until it returns normally; counts the runtime_errors that
// come out of it and fails on any other exception (a multiple_exceptions
// that swallowed some of them).
template <typename Context>
int run_counting_throws(Context& ctx)
{
  int caught = 0;
  for (int calls = 0; calls <= 2 * handlers; ++calls)
  {
    try
    {
      ctx.run();
      return caught;
    }
    catch (const std::runtime_error& e)
    {
      BOOST_TEST(std::string(e.what()) == "handler");
      ++caught;
    }
    catch (...)
    {
      BOOST_ERROR("run() threw something other than the handler's exception");
      return -1;
    }
  }
  return caught;
}

[[noreturn]] void throw_from_handler()
{
  throw std::runtime_error("handler");
}

template <typename Context>
void posts_through_a_strand(Context& ctx)
{
  auto strand = asio::make_strand(ctx);
  int ran = 0;
  for (int i = 0; i < handlers; ++i)
    asio::post(strand, [&] { ++ran; throw_from_handler(); });
  BOOST_TEST(run_counting_throws(ctx) == handlers);
  BOOST_TEST(ran == handlers);
}

template <typename Context>
void timers_through_a_strand(Context& ctx)
{
  auto strand = asio::make_strand(ctx);
  std::vector<std::unique_ptr<asio::steady_timer>> timers;
  int ran = 0;
  for (int i = 0; i < handlers; ++i)
  {
    timers.push_back(std::make_unique<asio::steady_timer>(ctx));
    timers.back()->expires_after(std::chrono::milliseconds(0));
    timers.back()->async_wait(asio::bind_executor(strand,
          [&](error_code) { ++ran; throw_from_handler(); }));
  }
  BOOST_TEST(run_counting_throws(ctx) == handlers);
  BOOST_TEST(ran == handlers);
}

// A listening acceptor and connected pairs on loopback.
struct connections
{
  tcp::acceptor acceptor;
  std::vector<tcp::socket> servers;
  std::vector<tcp::socket> clients;

  template <typename Context>
  explicit connections(Context& ctx)
    : acceptor(ctx, tcp::endpoint(asio::ip::address_v4::loopback(), 0))
  {
  }

  template <typename Context>
  void connect(Context& ctx, int n)
  {
    for (int i = 0; i < n; ++i)
    {
      clients.emplace_back(ctx);
      clients.back().connect(acceptor.local_endpoint());
      servers.push_back(acceptor.accept());
    }
  }
};

template <typename Context>
void socket_reads_through_a_strand(Context& ctx)
{
  auto strand = asio::make_strand(ctx);
  connections c(ctx);
  c.connect(ctx, handlers);
  char bytes[handlers][1];
  int ran = 0;
  for (int i = 0; i < handlers; ++i)
  {
    c.servers[i].async_read_some(asio::buffer(bytes[i]),
        asio::bind_executor(strand,
          [&](error_code, std::size_t) { ++ran; throw_from_handler(); }));
  }
  for (auto& client : c.clients)
    asio::write(client, asio::buffer("x", 1));
  BOOST_TEST(run_counting_throws(ctx) == handlers);
  BOOST_TEST(ran == handlers);
}

} // namespace

BOOST_AUTO_TEST_CASE(posts_through_a_strand_throw_one_per_run_as_on_io_context)
{
  asio::io_context ioc;
  posts_through_a_strand(ioc);
  turnloop::loop l;
  posts_through_a_strand(l);
}

BOOST_AUTO_TEST_CASE(timers_through_a_strand_throw_one_per_run_as_on_io_context)
{
  asio::io_context ioc;
  timers_through_a_strand(ioc);
  turnloop::loop l;
  timers_through_a_strand(l);
}

BOOST_AUTO_TEST_CASE(socket_reads_through_a_strand_throw_one_per_run_as_on_io_context)
{
  asio::io_context ioc;
  socket_reads_through_a_strand(ioc);
  turnloop::loop l;
  socket_reads_through_a_strand(l);
}

BOOST_AUTO_TEST_CASE(blocking_results_through_a_strand_throw_one_per_run,
    * test::threads_label())
{
  turnloop::loop l;
  auto strand = asio::make_strand(l);
  int ran = 0;
  asio::post(l, [&] {
    for (int i = 0; i < handlers; ++i)
    {
      turnloop::async_blocking(l, [i] { return i; },
          asio::bind_executor(strand, [&](error_code, std::exception_ptr, int) {
            ++ran;
            throw_from_handler();
          }));
    }
    // Every result is ready for the same turn.
    BOOST_TEST(test::all_results_in_ring(l));
  });
  BOOST_TEST(run_counting_throws(l) == handlers);
  BOOST_TEST(ran == handlers);
  BOOST_TEST(turnloop::blocking_statistics(l).undelivered == 0u);
}

BOOST_AUTO_TEST_CASE(leases_granted_through_a_strand_throw_one_per_run)
{
  turnloop::config cfg;
  cfg.pooled_buffers = 1;
  cfg.pooled_buffer_size = 64;
  turnloop::loop l(cfg);
  auto& pool = asio::use_service<turnloop::buffer_pool>(l);
  auto strand = asio::make_strand(l);
  turnloop::buffer_lease held = pool.try_lease();
  BOOST_TEST(static_cast<bool>(held));
  int ran = 0;
  for (int i = 0; i < handlers; ++i)
  {
    pool.async_lease(asio::bind_executor(strand,
          [&](error_code ec, turnloop::buffer_lease lease) {
            BOOST_TEST(!ec);
            BOOST_TEST(static_cast<bool>(lease));
            ++ran;
            throw_from_handler(); // the lease goes back to the next waiter
          }));
  }
  l.poll();
  BOOST_TEST(pool.stats().waiting == std::size_t(handlers));
  asio::post(l, [&] { held.reset(); });
  BOOST_TEST(run_counting_throws(l) == handlers);
  BOOST_TEST(ran == handlers);
  BOOST_TEST(pool.stats().leased == 0u);
}

BOOST_AUTO_TEST_CASE(accepts_through_a_strand_throw_one_per_run)
{
  turnloop::loop l;
  auto strand = asio::make_strand(l);
  tcp::acceptor acceptor(l, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  std::vector<tcp::socket> clients;
  int ran = 0;
  for (int i = 0; i < handlers; ++i)
  {
    turnloop::async_accept(acceptor, asio::bind_executor(strand,
          [&](error_code ec, turnloop::accepted_socket<tcp>) {
            BOOST_TEST(!ec);
            ++ran;
            throw_from_handler();
          }));
  }
  for (int i = 0; i < handlers; ++i)
  {
    clients.emplace_back(l);
    clients.back().connect(acceptor.local_endpoint());
  }
  BOOST_TEST(run_counting_throws(l) == handlers);
  BOOST_TEST(ran == handlers);
}

BOOST_AUTO_TEST_CASE(pooled_reads_through_a_strand_throw_one_per_run)
{
  turnloop::loop l;
  auto strand = asio::make_strand(l);
  connections c(l);
  c.connect(l, handlers);
  int ran = 0;
  for (int i = 0; i < handlers; ++i)
  {
    turnloop::async_read_pooled(c.servers[i], asio::bind_executor(strand,
          [&](error_code ec, turnloop::buffer_lease lease) {
            BOOST_TEST(!ec);
            BOOST_TEST(lease.size() == 1u);
            ++ran;
            throw_from_handler();
          }));
  }
  for (auto& client : c.clients)
    asio::write(client, asio::buffer("x", 1));
  BOOST_TEST(run_counting_throws(l) == handlers);
  BOOST_TEST(ran == handlers);
}
