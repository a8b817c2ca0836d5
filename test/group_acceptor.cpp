//
// test/group_acceptor.cpp
//
// turnloop::group_acceptor: one acceptor on one loop of a group, each
// accepted socket built on a loop of its placement (round robin, or the
// loop with the fewest live connections) and served there.
// config::max_handles is group-wide: N + 10 clients at a cap of N get
// exactly N, the rest wait in the backlog, none reset, and are served as
// connections close on any loop.
//

#include <turnloop/group_acceptor.hpp>

#define BOOST_TEST_MODULE group_acceptor
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <atomic>
#include <functional>
#include <future>
#include <stdexcept>
#include <memory>
#include <type_traits>
#include <vector>

#include "clients.hpp"
#include "support.hpp"

using asio::ip::tcp;
using turnloop::error_code;

namespace {

auto threads = boost::unit_test::label("threads");

using socket_type = turnloop::group_acceptor<>::socket_type;

// What one loop served. held is touched only on that loop's thread.
struct shard
{
  std::vector<socket_type> held;
  bool release = false;
  std::atomic<int> served{0};
  std::atomic<int> holding{0}; // held.size(), for other threads
  std::atomic<int> off_its_loop{0};
};

struct server
{
  explicit server(turnloop::loop_group& g)
    : group(g)
  {
    for (std::size_t i = 0; i < g.size(); ++i)
      shards.push_back(std::make_unique<shard>());
  }

  std::size_t index_of(socket_type& s) const
  {
    for (std::size_t i = 0; i < group.size(); ++i)
      if (&asio::query(s.get_executor(), asio::execution::context)
          == static_cast<asio::execution_context*>(&group.loop(i)))
        return i;
    return group.size();
  }

  int total() const
  {
    int n = 0;
    for (auto& s : shards)
      n += s->served.load();
    return n;
  }

  turnloop::loop_group& group;
  std::vector<std::unique_ptr<shard>> shards;
  std::atomic<int> accepted{0};
  std::atomic<int> lost{0}; // a socket on no loop of the group
};

// Runs on the socket's own loop: greets with one byte and holds the
// connection until released.
asio::awaitable<void> greet(server& srv, std::size_t i, socket_type socket)
{
  shard& s = *srv.shards[i];
  if (!srv.group.loop(i).get_executor().running_in_this_thread())
    ++s.off_its_loop;
  ++s.served;
  co_await asio::async_write(socket, asio::buffer("x", 1),
      asio::as_tuple(asio::use_awaitable));
  if (!s.release)
  {
    s.held.push_back(std::move(socket));
    ++s.holding;
  }
}

// Runs on the accepting loop: hands each socket to its loop.
asio::awaitable<void> deal(server& srv, turnloop::group_acceptor<>& a)
{
  for (;;)
  {
    auto [ec, socket] = co_await a.async_accept(
        asio::as_tuple(asio::use_awaitable));
    if (ec)
      co_return;
    ++srv.accepted;
    const std::size_t i = srv.index_of(socket);
    if (i == srv.group.size())
    {
      ++srv.lost;
      continue;
    }
    auto ex = socket.get_executor();
    asio::co_spawn(ex, greet(srv, i, std::move(socket)), asio::detached);
  }
}

} // namespace

BOOST_AUTO_TEST_CASE(the_acceptor_listens_on_the_accepting_loop)
{
  turnloop::loop_group g(3);
  turnloop::group_acceptor<> a(g, test::loopback(), 2);
  BOOST_TEST(a.accepting_loop() == 2u);
  BOOST_TEST(&asio::query(a.acceptor().get_executor(), asio::execution::context)
      == static_cast<asio::execution_context*>(&g.loop(2)));
  BOOST_TEST(a.local_endpoint().port() != 0);
}

BOOST_AUTO_TEST_CASE(an_accepting_loop_past_the_end_is_refused)
{
  turnloop::loop_group g(2);
  BOOST_CHECK_THROW(turnloop::group_acceptor<>(g, test::loopback(), 2),
      turnloop::system_error);
}

BOOST_AUTO_TEST_CASE(a_port_in_use_is_refused_with_a_message_naming_bind)
{
  asio::io_context ctx;
  tcp::acceptor holder(ctx, test::loopback());
  turnloop::loop_group g(2);
  BOOST_CHECK_EXCEPTION(turnloop::group_acceptor<>(g, holder.local_endpoint()),
      turnloop::system_error,
      [](const turnloop::system_error& e) {
        return e.code() == asio::error::address_in_use
          && std::string(e.what()).find("bind") != std::string::npos;
      });
}

BOOST_AUTO_TEST_CASE(next_executor_deals_the_loops_in_turn)
{
  turnloop::loop_group g(3);
  turnloop::group_acceptor<> a(g, test::loopback(),
      turnloop::placement::round_robin, 1);
  BOOST_TEST((a.placement() == turnloop::placement::round_robin));
  for (std::size_t k = 0; k < 7; ++k)
    BOOST_TEST(&asio::query(a.next_executor(), asio::execution::context)
        == static_cast<asio::execution_context*>(&g.loop(k % 3)));
}

BOOST_AUTO_TEST_CASE(connections_are_dealt_evenly_over_every_loop_and_served_there, * threads)
{
  turnloop::loop_group g(3);
  turnloop::group_acceptor<> a(g, test::loopback(),
      turnloop::placement::round_robin);
  server srv(g);
  asio::co_spawn(g.loop(0), deal(srv, a), asio::detached);
  g.start();
  asio::io_context ctx;
  auto clients = test::connect_clients(ctx, a.local_endpoint(), 60);
  for (auto& c : clients)
    BOOST_TEST(test::greeted(c));
  g.stop();
  g.join();
  BOOST_TEST(srv.accepted.load() == 60);
  BOOST_TEST(srv.lost.load() == 0);
  // Round robin: exactly a third each, the accepting loop included.
  for (auto& s : srv.shards)
  {
    BOOST_TEST(s->served.load() == 20);
    BOOST_TEST(s->off_its_loop.load() == 0);
  }
}

BOOST_AUTO_TEST_CASE(with_the_loops_own_executor_type_connections_are_dealt_the_same, * threads)
{
  using native = turnloop::group_acceptor<tcp, turnloop::loop::executor_type>;
  static_assert(std::is_same_v<native::socket_type,
      turnloop::accepted_socket<tcp, turnloop::loop::executor_type>>);
  turnloop::loop_group g(2);
  native a(g, test::loopback());
  std::atomic<int> on_loop[2] = {0, 0};
  std::atomic<int> off_its_loop{0};
  std::vector<native::socket_type> held[2]; // each touched on its loop
  std::function<void()> deal = [&] {
    a.async_accept([&](error_code ec, native::socket_type s) {
      if (ec)
        return;
      const std::size_t i = &asio::query(s.get_executor(),
          asio::execution::context)
        == static_cast<asio::execution_context*>(&g.loop(0)) ? 0 : 1;
      auto ex = s.get_executor();
      asio::post(ex, [&, i, s = std::move(s)]() mutable {
        if (!g.loop(i).get_executor().running_in_this_thread())
          ++off_its_loop;
        asio::write(s, asio::buffer("x", 1));
        held[i].push_back(std::move(s));
        ++on_loop[i];
      });
      deal();
    });
  };
  asio::post(g.loop(0), deal);
  g.start();
  asio::io_context ctx;
  auto clients = test::connect_clients(ctx, a.local_endpoint(), 10);
  for (auto& c : clients)
    BOOST_TEST(test::greeted(c));
  BOOST_TEST(test::wait_for([&] {
    return on_loop[0].load() + on_loop[1].load() == 10;
  }));
  g.stop();
  g.join();
  BOOST_TEST(on_loop[0].load() == 5);
  BOOST_TEST(on_loop[1].load() == 5);
  BOOST_TEST(off_its_loop.load() == 0);
  held[0].clear();
  held[1].clear();
}

BOOST_AUTO_TEST_CASE(sockets_closed_on_their_own_loops_give_their_handles_back, * threads)
{
  // The handles come from the accepting loop; each socket is destroyed on
  // its own loop, from which its handle goes back.
  turnloop::loop_group g(2);
  turnloop::group_acceptor<> a(g, test::loopback(),
      turnloop::placement::round_robin);
  server srv(g);
  for (auto& s : srv.shards)
    s->release = true;
  asio::co_spawn(g.loop(0), deal(srv, a), asio::detached);
  g.start();
  asio::io_context ctx;
  auto clients = test::connect_clients(ctx, a.local_endpoint(), 40);
  for (auto& c : clients)
    BOOST_TEST(test::greeted(c));
  BOOST_TEST(test::wait_for([&] {
    const turnloop::group_stats s = g.stats();
    // Only the next accept's reserved handle is left.
    return s.loops[0].handles.in_use == 1 && s.loops[1].handles.in_use == 0;
  }));
  g.stop();
  g.join();
  BOOST_TEST(srv.shards[0]->served.load() == 20);
  BOOST_TEST(srv.shards[1]->served.load() == 20);
}

BOOST_AUTO_TEST_CASE(max_handles_is_group_wide_and_n_plus_ten_clients_get_exactly_n_none_reset, * threads)
{
  // A cap of 6 over two loops, 16 clients: exactly 6 accepted, 3 on each
  // loop; the accepting loop's next accept waits for a handle, not calling
  // accept, and the other 10 clients wait in the backlog. Once the six are
  // closed, on their own loops, all 16 are served and none is reset.
  constexpr int cap = 6;
  turnloop::config cfg;
  cfg.max_handles = cap;
  turnloop::loop_group g(2, cfg);
  turnloop::group_acceptor<> a(g, test::loopback(),
      turnloop::placement::round_robin);
  server srv(g);
  asio::co_spawn(g.loop(0), deal(srv, a), asio::detached);
  g.start();
  asio::io_context ctx;
  auto clients = test::connect_clients(ctx, a.local_endpoint(), cap + 10);

  BOOST_REQUIRE(test::wait_for([&] {
    if (srv.total() < cap)
      return false;
    return g.stats().loops[0].accepts.accepts_waiting == 1;
  }));
  BOOST_TEST(srv.accepted.load() == cap);
  BOOST_TEST(srv.total() == cap);
  BOOST_TEST(srv.shards[0]->served.load() == cap / 2);
  BOOST_TEST(srv.shards[1]->served.load() == cap / 2);
  const turnloop::group_stats s = g.stats();
  BOOST_TEST(s.loops[0].handles.in_use == std::size_t(cap));
  BOOST_TEST(s.loops[0].handles.limit == std::size_t(cap));
  BOOST_TEST(s.loops[1].handles.in_use == 0u);

  for (std::size_t i = 0; i < 2; ++i)
    asio::post(g.loop(i), [&s = *srv.shards[i]] {
      s.release = true;
      s.held.clear();
    });
  int served = 0;
  for (auto& c : clients)
    served += test::greeted(c) ? 1 : 0;
  BOOST_TEST(served == cap + 10);
  BOOST_TEST(srv.accepted.load() == cap + 10);
  g.stop();
  g.join();
}

BOOST_AUTO_TEST_CASE(destroying_the_acceptor_then_the_group_with_an_accept_pending_leaks_nothing, * threads)
{
  // Sockets of the accepting loop's handles, held on both loops and by a
  // pending accept, all destroyed with the group (ASan checks the rest).
  auto g = std::make_unique<turnloop::loop_group>(2);
  auto a = std::make_unique<turnloop::group_acceptor<>>(*g, test::loopback());
  server srv(*g);
  asio::co_spawn(g->loop(0), deal(srv, *a), asio::detached);
  g->start();
  asio::io_context ctx;
  auto clients = test::connect_clients(ctx, a->local_endpoint(), 8);
  for (auto& c : clients)
    BOOST_TEST(test::greeted(c));
  // A client can read its greeting before the server holds its socket.
  BOOST_TEST(test::wait_for([&] {
    return srv.shards[0]->holding.load() == 4
      && srv.shards[1]->holding.load() == 4;
  }));
  g->stop();
  g->join();
  BOOST_TEST(srv.shards[0]->held.size() == 4u);
  BOOST_TEST(srv.shards[1]->held.size() == 4u);
  for (auto& s : srv.shards)
    s->held.clear();
  a.reset();
  g.reset();
}

BOOST_AUTO_TEST_CASE(by_default_connections_go_to_the_loop_with_the_fewest)
{
  turnloop::loop_group g(3);
  turnloop::group_acceptor<> a(g, test::loopback());
  BOOST_TEST((a.placement() == turnloop::placement::least_connections));
  // Nothing counted: ties, dealt in turn.
  for (std::size_t k = 0; k < 4; ++k)
    BOOST_TEST(&asio::query(a.next_executor(), asio::execution::context)
        == static_cast<asio::execution_context*>(&g.loop(k % 3)));
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_TEST(a.connections(i) == 0u);
  BOOST_CHECK_THROW(a.connections(3), turnloop::system_error);
}

namespace {

// A server that holds every socket on its own loop (srv.shards[i].held)
// until close_on() closes some.
struct keeper
{
  explicit keeper(turnloop::loop_group& g) : group(g), srv(g) {}

  int holding() const
  {
    int n = 0;
    for (auto& s : srv.shards)
      n += s->holding.load();
    return n;
  }

  // Connects @p n clients to @p to, checks each is greeted and waits until
  // the server holds @p held sockets in all.
  std::vector<tcp::socket> connect(asio::io_context& ctx,
      const tcp::endpoint& to, int n, int held)
  {
    auto clients = test::connect_clients(ctx, to, n);
    for (auto& c : clients)
      BOOST_TEST(test::greeted(c));
    BOOST_REQUIRE(test::wait_for([&] { return holding() == held; }));
    return clients;
  }

  // Closes loop i's first @p n sockets on its own thread.
  void close_on(std::size_t i, int n)
  {
    std::atomic<bool> done{false};
    asio::post(group.loop(i), [&, i, n] {
      shard& s = *srv.shards[i];
      s.held.erase(s.held.begin(), s.held.begin() + n);
      s.holding -= n;
      done = true;
    });
    BOOST_REQUIRE(test::wait_for([&] { return done.load(); }));
  }

  turnloop::loop_group& group;
  server srv;
};

} // namespace

BOOST_AUTO_TEST_CASE(least_connections_refills_the_loop_whose_connections_closed_early, * threads)
{
  // 12 connections over 2 loops, 6 each; the 6 of loop 1 close. The next 6
  // all go to loop 1 (round robin would put 3 on each: see below), and the
  // counts follow the sockets' destruction on their own loops.
  turnloop::loop_group g(2);
  turnloop::group_acceptor<> a(g, test::loopback(),
      turnloop::placement::least_connections);
  keeper k(g);
  asio::co_spawn(g.loop(0), deal(k.srv, a), asio::detached);
  g.start();
  asio::io_context ctx;
  auto first = k.connect(ctx, a.local_endpoint(), 12, 12);
  BOOST_TEST(k.srv.shards[0]->served.load() == 6);
  BOOST_TEST(k.srv.shards[1]->served.load() == 6);
  // The next accept, once started, is counted on the loop it will place on.
  BOOST_TEST(test::wait_for([&] {
    return a.connections(0) + a.connections(1) == 13u;
  }));
  BOOST_TEST(a.connections(0) == 7u);

  k.close_on(1, 6);
  BOOST_TEST(test::wait_for([&] {
    return a.connections(0) + a.connections(1) == 7u;
  }));
  // The pending accept chose while loop 1 was full: it goes to loop 0 (its
  // 7th), and every accept after it to loop 1.
  auto second = k.connect(ctx, a.local_endpoint(), 7, 13);
  BOOST_TEST(k.srv.shards[0]->served.load() == 7);
  BOOST_TEST(k.srv.shards[1]->served.load() == 12);
  BOOST_TEST(k.srv.shards[0]->holding.load() == 7);
  BOOST_TEST(k.srv.shards[1]->holding.load() == 6);
  g.stop();
  g.join();
  for (auto& s : k.srv.shards)
    s->held.clear();
  BOOST_TEST(a.connections(0) + a.connections(1) <= 1u);
}

BOOST_AUTO_TEST_CASE(round_robin_keeps_dealing_in_turn_after_one_loops_connections_closed, * threads)
{
  // The same clients with placement::round_robin: the loop that lost its
  // connections gets only every other one of the next.
  turnloop::loop_group g(2);
  turnloop::group_acceptor<> a(g, test::loopback(),
      turnloop::placement::round_robin);
  keeper k(g);
  asio::co_spawn(g.loop(0), deal(k.srv, a), asio::detached);
  g.start();
  asio::io_context ctx;
  auto first = k.connect(ctx, a.local_endpoint(), 12, 12);
  k.close_on(1, 6);
  auto second = k.connect(ctx, a.local_endpoint(), 6, 12);
  BOOST_TEST(k.srv.shards[0]->holding.load() == 9);
  BOOST_TEST(k.srv.shards[1]->holding.load() == 3);
  BOOST_TEST(a.connections(1) == 3u);
  g.stop();
  g.join();
  for (auto& s : k.srv.shards)
    s->held.clear();
}

BOOST_AUTO_TEST_CASE(sockets_destroyed_after_the_acceptor_count_themselves_out_safely, * threads)
{
  // The counts are shared with the sockets: a socket that outlives its
  // acceptor gives its unit back into memory that is still there (ASan).
  turnloop::loop_group g(2);
  auto a = std::make_unique<turnloop::group_acceptor<>>(g, test::loopback());
  keeper k(g);
  asio::co_spawn(g.loop(0), deal(k.srv, *a), asio::detached);
  g.start();
  asio::io_context ctx;
  auto clients = k.connect(ctx, a->local_endpoint(), 4, 4);
  g.stop();
  g.join();
  a.reset();
  for (auto& s : k.srv.shards)
    s->held.clear();
}

namespace {

// Echoes one byte at a time on its own loop until the peer closes.
asio::awaitable<void> echo(socket_type socket, std::atomic<int>& echoed)
{
  char c = 0;
  for (;;)
  {
    auto [ec, n] = co_await socket.async_read_some(asio::buffer(&c, 1),
        asio::as_tuple(asio::use_awaitable));
    if (ec)
      co_return;
    co_await asio::async_write(socket, asio::buffer(&c, n),
        asio::as_tuple(asio::use_awaitable));
    ++echoed;
  }
}

asio::awaitable<void> deal_echo(turnloop::group_acceptor<>& a,
    std::atomic<int>& accepted, std::atomic<int>& echoed)
{
  for (;;)
  {
    auto [ec, socket] = co_await a.async_accept(
        asio::as_tuple(asio::use_awaitable));
    if (ec)
      co_return;
    ++accepted;
    auto ex = socket.get_executor();
    asio::co_spawn(ex, echo(std::move(socket), echoed), asio::detached);
  }
}

// Sends one byte and reads it back, with the clients' deadline.
bool echoed_back(tcp::socket& client, char c)
{
  if (::send(client.native_handle(), &c, 1, 0) != 1)
    return false;
  char back = 0;
  return test::receive_byte(client, back) && back == c;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_handler_that_throws_on_one_loop_leaves_every_connection_open_for_after_restart, * threads)
{
  // Connections on both loops, each with a read pending; a handler throws
  // on loop 1. run() rethrows it; no connection was closed or reset, and
  // after restart() every one is served again, on its own loop.
  turnloop::loop_group g(2);
  turnloop::group_acceptor<> a(g, test::loopback());
  std::atomic<int> accepted{0}, echoed{0};
  asio::co_spawn(g.loop(0), deal_echo(a, accepted, echoed), asio::detached);
  auto runner = std::async(std::launch::async, [&] { g.run(); });
  asio::io_context ctx;
  auto clients = test::connect_clients(ctx, a.local_endpoint(), 8);
  for (auto& c : clients)
    BOOST_TEST(echoed_back(c, 'a'));
  BOOST_TEST(test::wait_for([&] { // and the next accept
    return a.connections(0) + a.connections(1) == 9u;
  }));
  asio::post(g.loop(1), [] { throw std::runtime_error("from loop 1"); });
  BOOST_REQUIRE(runner.wait_for(test::deadline) == std::future_status::ready);
  BOOST_CHECK_THROW(runner.get(), std::runtime_error);
  BOOST_TEST(g.stopped());
  BOOST_TEST(a.connections(0) + a.connections(1) == 9u);

  g.restart();
  g.start();
  for (auto& c : clients)
    BOOST_TEST(echoed_back(c, 'b'));
  BOOST_TEST(test::wait_for([&] { return echoed.load() == 16; }));
  g.stop();
  g.join();
}

BOOST_AUTO_TEST_CASE(destroying_a_group_with_reads_pending_on_every_loop_leaks_nothing, * threads)
{
  // Sessions suspended in a read on both loops, their sockets holding the
  // accepting loop's handles: the group's destruction destroys them, each
  // giving its handle and its count back while the loops are torn down
  // (ASan sees any leak or use after free).
  auto g = std::make_unique<turnloop::loop_group>(2);
  auto a = std::make_unique<turnloop::group_acceptor<>>(*g,
      test::loopback());
  std::atomic<int> accepted{0}, echoed{0};
  asio::co_spawn(g->loop(0), deal_echo(*a, accepted, echoed),
      asio::detached);
  g->start();
  asio::io_context ctx;
  auto clients = test::connect_clients(ctx, a->local_endpoint(), 6);
  for (auto& c : clients)
    BOOST_TEST(echoed_back(c, 'a'));
  BOOST_TEST(test::wait_for([&] { // 3 and the next accept
    return a->connections(0) == 4u;
  }));
  BOOST_TEST(a->connections(1) == 3u);
  g->stop();
  g->join();
  a.reset();
  g.reset();
  // The server's ends are closed: every client reads end of file.
  for (auto& c : clients)
    BOOST_TEST(test::reads_end_of_stream(c));
}
