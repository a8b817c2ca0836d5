//
// test/sharded_acceptor.cpp
//
// turnloop::sharded_acceptor: SO_REUSEPORT acceptors, one per loop of a
// group. Connections spread over every loop and live on the loop that
// accepted them; config::max_handles caps each loop's connections, and the
// clients over the cap wait in the backlog, none reset.
//

#include <turnloop/sharded_acceptor.hpp>

#define BOOST_TEST_MODULE sharded_acceptor
#include <boost/test/unit_test.hpp>

#include <turnloop/accept.hpp>

#include "asio.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "clients.hpp"
#include "support.hpp"

using asio::ip::tcp;
using turnloop::error_code;

namespace {

auto threads = boost::unit_test::label("threads");

// sharded_acceptor exists where SO_REUSEPORT spreads connections over the
// sockets bound to a port; elsewhere (Windows) it refuses, naming
// group_acceptor.
constexpr bool spreads = turnloop::detail::has_balanced_reuseport;
const char* const refused =
  "sharded_acceptor is refused: SO_REUSEPORT does not spread connections here";

// One loop's server: accepts, greets each connection with one byte, and
// keeps it open until released. Touched only on its loop's thread, except
// the atomics.
struct shard
{
  std::vector<turnloop::accepted_socket<tcp>> held;
  bool release = false;
  std::atomic<int> accepted{0};
  std::atomic<int> on_wrong_loop{0};
};

asio::awaitable<void> serve(turnloop::loop& l, tcp::acceptor& acceptor,
    shard& s)
{
  for (;;)
  {
    auto [ec, socket] = co_await turnloop::async_accept(acceptor,
        asio::as_tuple(asio::use_awaitable));
    if (ec)
      co_return;
    if (!l.get_executor().running_in_this_thread()
        || &asio::query(socket.get_executor(), asio::execution::context)
          != static_cast<asio::execution_context*>(&l))
      ++s.on_wrong_loop;
    ++s.accepted;
    co_await asio::async_write(socket, asio::buffer("x", 1),
        asio::as_tuple(asio::use_awaitable));
    if (!s.release)
      s.held.push_back(std::move(socket));
  }
}

// Starts serve() on every loop of @p g, on its own acceptor.
std::vector<std::unique_ptr<shard>> serve_on_every_loop(turnloop::loop_group& g,
    turnloop::sharded_acceptor<>& a)
{
  std::vector<std::unique_ptr<shard>> shards;
  for (std::size_t i = 0; i < g.size(); ++i)
  {
    shards.push_back(std::make_unique<shard>());
    asio::co_spawn(g.loop(i), serve(g.loop(i), a.acceptor(i), *shards[i]),
        asio::detached);
  }
  return shards;
}

} // namespace

BOOST_AUTO_TEST_CASE(where_reuseport_does_not_spread_it_is_refused_naming_group_acceptor,
    * test::only_where(!spreads, "SO_REUSEPORT spreads connections here"))
{
  turnloop::loop_group g(2);
  BOOST_CHECK_EXCEPTION(turnloop::sharded_acceptor<>(g, test::loopback()),
      turnloop::system_error,
      [](const turnloop::system_error& e) {
        return e.code() == asio::error::operation_not_supported
          && std::string(e.what()).find("turnloop::group_acceptor")
            != std::string::npos;
      });
}

BOOST_AUTO_TEST_CASE(there_is_one_listening_acceptor_per_loop_on_one_port,
    * test::only_where(spreads, refused))
{
  turnloop::loop_group g(3);
  turnloop::sharded_acceptor<> a(g, test::loopback());
  BOOST_TEST(a.size() == 3u);
  for (std::size_t i = 0; i < 3; ++i)
  {
    BOOST_TEST(a.acceptor(i).local_endpoint() == a.local_endpoint());
    BOOST_TEST(&asio::query(a.acceptor(i).get_executor(),
          asio::execution::context)
        == static_cast<asio::execution_context*>(&g.loop(i)));
  }
  BOOST_TEST(a.local_endpoint().port() != 0);
  BOOST_CHECK_THROW(a.acceptor(3), turnloop::system_error);
}

BOOST_AUTO_TEST_CASE(a_port_held_without_reuseport_is_refused_with_a_message_naming_bind,
    * test::only_where(spreads, refused))
{
  asio::io_context ctx;
  tcp::acceptor holder(ctx, test::loopback());
  turnloop::loop_group g(2);
  BOOST_CHECK_EXCEPTION(turnloop::sharded_acceptor<>(g, holder.local_endpoint()),
      turnloop::system_error,
      [](const turnloop::system_error& e) {
        return e.code() == asio::error::address_in_use
          && std::string(e.what()).find("bind") != std::string::npos;
      });
}

BOOST_AUTO_TEST_CASE(connections_spread_over_every_loop_and_stay_on_it, * threads
    * test::only_where(spreads, refused))
{
  turnloop::loop_group g(2);
  turnloop::sharded_acceptor<> a(g, test::loopback());
  auto shards = serve_on_every_loop(g, a);
  g.start();
  asio::io_context ctx;
  auto clients = test::connect_clients(ctx, a.local_endpoint(), 64);
  for (auto& c : clients)
    BOOST_TEST(test::greeted(c));
  g.stop();
  g.join();
  BOOST_TEST(shards[0]->accepted.load() + shards[1]->accepted.load() == 64);
  // Each loop serves some: the kernel hashes 64 different source ports.
  BOOST_TEST(shards[0]->accepted.load() > 0);
  BOOST_TEST(shards[1]->accepted.load() > 0);
  BOOST_TEST(shards[0]->on_wrong_loop.load() + shards[1]->on_wrong_loop.load() == 0);
}

BOOST_AUTO_TEST_CASE(max_handles_caps_each_loop_and_the_clients_over_it_wait_unreset, * threads
    * test::only_where(spreads, refused))
{
  // Three handles per loop, two loops, 26 clients: exactly six accepted;
  // the other twenty wait in the backlogs and are served, none reset, once
  // the six are released.
  turnloop::config cfg;
  cfg.max_handles = 3;
  turnloop::loop_group g(2, cfg);
  turnloop::sharded_acceptor<> a(g, test::loopback());
  auto shards = serve_on_every_loop(g, a);
  g.start();
  asio::io_context ctx;
  auto clients = test::connect_clients(ctx, a.local_endpoint(), 26);

  auto total = [&] {
    return shards[0]->accepted.load() + shards[1]->accepted.load();
  };
  // At the cap, each loop's next accept waits for a handle, not calling
  // accept: both waiting means nothing more can be accepted.
  BOOST_REQUIRE(test::wait_for([&] {
    if (total() < 6)
      return false;
    const turnloop::group_stats s = g.stats();
    return s.loops[0].accepts.accepts_waiting == 1
      && s.loops[1].accepts.accepts_waiting == 1;
  }));
  BOOST_TEST(total() == 6);
  const turnloop::group_stats s = g.stats();
  BOOST_TEST(s.total.handles.in_use == 6u);
  BOOST_TEST(s.total.handles.limit == 6u);

  for (std::size_t i = 0; i < 2; ++i)
    asio::post(g.loop(i), [&s = *shards[i]] {
      s.release = true;
      s.held.clear();
    });
  int served = 0;
  for (auto& c : clients)
    served += test::greeted(c) ? 1 : 0;
  BOOST_TEST(served == 26);
  BOOST_TEST(total() == 26);
  g.stop();
  g.join();
}
