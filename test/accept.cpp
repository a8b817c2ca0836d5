//
// test/accept.cpp
//
// turnloop::async_accept caps live connections at config::max_handles: an
// accept at the ceiling leaves connections in the kernel's backlog (not
// accepted, not reset) until an accepted socket is destroyed; waiting
// accepts proceed first come first served; cancellation, refusal at
// max_operations and loop destruction leak nothing; running out of
// descriptors backs off instead of spinning.
//

#include <turnloop/accept.hpp>

#define BOOST_TEST_MODULE accept
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <atomic>
#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#if !defined(_WIN32)
# include <netinet/in.h>
# include <netinet/tcp.h>
# include <sys/socket.h>
# include <sys/wait.h>
# include <unistd.h>
#endif // !defined(_WIN32)
#include <time.h>

#include "support.hpp"

using asio::ip::tcp;
using turnloop::error_code;
using namespace std::chrono_literals;
using socket_type = turnloop::accepted_socket<tcp>;

static_assert(std::is_base_of_v<tcp::socket, socket_type>,
    "an accepted socket is an ordinary stream socket");
static_assert(std::is_nothrow_move_constructible_v<socket_type>);
static_assert(!std::is_copy_constructible_v<socket_type>);
static_assert(std::is_same_v<
    decltype(turnloop::async_accept(std::declval<tcp::acceptor&>(),
        asio::use_future)),
    std::future<socket_type>>);

namespace {

turnloop::config capped(std::size_t handles, std::size_t operations = 4096)
{
  turnloop::config c;
  c.max_handles = handles;
  c.max_operations = operations;
  return c;
}

tcp::acceptor listening(turnloop::loop& l)
{
  return tcp::acceptor(l, {asio::ip::address_v4::loopback(), 0});
}

// Runs the loop until @p done holds or the deadline passes. In whole turns
// (run_for, not run_one), so that handlers run in the order a server sees.
template <typename Condition>
bool run_until(turnloop::loop& l, Condition done)
{
  const auto end = std::chrono::steady_clock::now() + test::deadline;
  while (!done())
  {
    if (std::chrono::steady_clock::now() > end)
      return false;
    if (l.stopped())
      l.restart();
    l.run_for(2ms);
  }
  return true;
}

// Connections completed by the kernel and not yet accepted: a listening
// socket's accept queue, as TCP_INFO reports it (Linux). Winsock tells no
// listener's queue length, only whether a connection waits in it (the
// listener is readable): there backlog() is 1 for any and 0 for none, which
// is all that the cases not marked counts_backlog ask.
#if defined(__linux__)
constexpr bool counts_backlog = true;
#else // defined(__linux__)
constexpr bool counts_backlog = false;
#endif // defined(__linux__)
const char* const backlog_why = "counts the accept queue with TCP_INFO";

std::size_t backlog(tcp::acceptor& acceptor)
{
#if defined(__linux__)
  tcp_info info{};
  socklen_t size = sizeof(info);
  BOOST_REQUIRE(::getsockopt(acceptor.native_handle(), IPPROTO_TCP, TCP_INFO,
        &info, &size) == 0);
  return info.tcpi_unacked;
#elif defined(_WIN32)
  WSAPOLLFD listener{};
  listener.fd = acceptor.native_handle();
  listener.events = POLLRDNORM;
  BOOST_REQUIRE(::WSAPoll(&listener, 1, 0) >= 0);
  return (listener.revents & POLLRDNORM) != 0 ? 1 : 0;
#else // defined(__linux__)
  BOOST_FAIL(backlog_why);
  return 0;
#endif // defined(__linux__)
}

std::size_t operations_in_use(turnloop::loop& l)
{
  return turnloop::detail::core_of(l).operations().in_use();
}

// One accept's outcome.
struct outcome
{
  int calls = 0;
  error_code ec;
  std::optional<socket_type> socket;
};

auto record(outcome& o)
{
  return [&o](error_code ec, socket_type s) {
    ++o.calls;
    o.ec = ec;
    o.socket.emplace(std::move(s));
  };
}

// A client that connects and then waits for the server's one-byte greeting.
struct client
{
  explicit client(turnloop::loop& l)
    : socket(l)
  {
  }

  void start(const tcp::endpoint& server)
  {
    socket.async_connect(server, [this](error_code ec) {
      if (ec)
        error = ec;
      connected = !ec;
      if (!ec)
        asio::async_read(socket, asio::buffer(&byte, 1),
            [this](error_code ec, std::size_t) {
              if (ec)
                error = ec;
              greeted = !ec;
            });
    });
  }

  tcp::socket socket;
  char byte = 0;
  bool connected = false;
  bool greeted = false;
  error_code error;
};

// A server that accepts for ever, greets each connection and keeps it open
// until told to close it.
struct server
{
  explicit server(tcp::acceptor& a)
    : acceptor(a)
  {
  }

  void accept()
  {
    turnloop::async_accept(acceptor, [this](error_code ec, socket_type s) {
      if (ec)
      {
        error = ec;
        return;
      }
      ++accepted;
      auto& kept = connections.emplace_back(std::move(s));
      asio::async_write(kept, asio::buffer("!", 1),
          [](error_code, std::size_t) {});
      accept();
    });
  }

  tcp::acceptor& acceptor;
  std::deque<socket_type> connections;
  std::size_t accepted = 0;
  error_code error;
};

} // namespace

BOOST_AUTO_TEST_CASE(an_accepted_socket_holds_a_handle_until_it_is_destroyed)
{
  turnloop::loop l;
  tcp::acceptor acceptor = listening(l);
  tcp::socket c(l);
  outcome o;
  turnloop::async_accept(acceptor, record(o));
  c.async_connect(acceptor.local_endpoint(), [](error_code) {});
  BOOST_REQUIRE(run_until(l, [&] { return o.calls == 1; }));
  BOOST_TEST(!o.ec);
  BOOST_TEST(o.socket->is_open());
  BOOST_TEST(o.socket->remote_endpoint() == c.local_endpoint());
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 1u);
  BOOST_TEST(operations_in_use(l) == 0u);

  // close() ends the connection but the handle belongs to the object.
  o.socket->close();
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 1u);
  o.socket.reset();
  const turnloop::handle_stats s = turnloop::handle_statistics(l);
  BOOST_TEST(s.in_use == 0u);
  BOOST_TEST(s.high_water == 1u);
  BOOST_TEST(s.limit == turnloop::config().max_handles);
  BOOST_TEST(s.accepts_pending == 0u);
  BOOST_TEST(s.accept_waits == 0u);
}

BOOST_AUTO_TEST_CASE(a_capped_server_leaves_excess_connections_in_the_backlog,
    * test::only_where(counts_backlog, backlog_why))
{
  // With max_handles = N, N + 10 clients: N are accepted and the other 10
  // wait in the kernel's backlog, connected but not accepted; each accepted
  // connection closed lets exactly one more in; nobody is reset.
  constexpr std::size_t n = 4;
  constexpr std::size_t excess = 10;
  turnloop::loop l(capped(n));
  tcp::acceptor acceptor = listening(l);
  server s(acceptor);
  s.accept();
  std::deque<client> clients;
  for (std::size_t i = 0; i < n + excess; ++i)
    clients.emplace_back(l).start(acceptor.local_endpoint());

  auto count = [&](bool client::*flag) {
    std::size_t k = 0;
    for (const client& c : clients)
      k += c.*flag ? 1 : 0;
    return k;
  };
  BOOST_REQUIRE(run_until(l, [&] {
    return count(&client::connected) == n + excess
      && count(&client::greeted) >= n;
  }));
  l.poll();
  BOOST_TEST(s.accepted == n);
  BOOST_TEST(count(&client::greeted) == n);
  BOOST_TEST(backlog(acceptor) == excess);
  turnloop::handle_stats stats = turnloop::handle_statistics(l);
  BOOST_TEST(stats.in_use == n);
  BOOST_TEST(stats.accepts_waiting == 1u); // the server's next accept
  BOOST_TEST(stats.accept_waits == 1u);

  for (std::size_t closed = 1; closed <= excess; ++closed)
  {
    s.connections.pop_front();
    BOOST_REQUIRE(run_until(l, [&] {
      return count(&client::greeted) == n + closed;
    }));
    BOOST_TEST(s.accepted == n + closed);
    BOOST_TEST(backlog(acceptor) == excess - closed);
    BOOST_TEST(turnloop::handle_statistics(l).in_use == n);
  }
  for (const client& c : clients)
    BOOST_TEST(!c.error, "client error: " << c.error.message());
  BOOST_TEST(!s.error);
  stats = turnloop::handle_statistics(l);
  BOOST_TEST(stats.high_water == n);
  BOOST_TEST(stats.accept_waits == 1u + excess);

  acceptor.close();
  s.connections.clear();
  BOOST_REQUIRE(run_until(l, [&] { return bool(s.error); }));
  BOOST_TEST(s.error == asio::error::operation_aborted);
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 0u);
  BOOST_TEST(operations_in_use(l) == 0u);
}

BOOST_AUTO_TEST_CASE(waiting_accepts_proceed_first_come_first_served,
    * test::only_where(counts_backlog, backlog_why))
{
  turnloop::loop l(capped(1));
  tcp::acceptor acceptor = listening(l);
  std::deque<client> clients;
  outcome first;
  turnloop::async_accept(acceptor, record(first));
  clients.emplace_back(l).start(acceptor.local_endpoint());
  BOOST_REQUIRE(run_until(l, [&] { return first.calls == 1; }));

  std::vector<char> order;
  std::deque<socket_type> kept;
  auto accept_as = [&](char name) {
    turnloop::async_accept(acceptor, [&, name](error_code ec, socket_type s) {
      BOOST_TEST(!ec);
      order.push_back(name);
      kept.push_back(std::move(s));
    });
  };
  accept_as('A');
  accept_as('B');
  accept_as('C');
  for (int i = 0; i < 4; ++i)
    clients.emplace_back(l).start(acceptor.local_endpoint());
  BOOST_REQUIRE(run_until(l, [&] { return backlog(acceptor) == 4; }));
  BOOST_TEST(turnloop::handle_statistics(l).accepts_waiting == 3u);
  BOOST_TEST(order.empty());

  first.socket.reset();
  BOOST_REQUIRE(run_until(l, [&] { return order.size() == 1; }));
  // A newcomer, after A's connection is closed, must not overtake B and C.
  asio::post(l, [&] {
    kept.clear();
    accept_as('D');
  });
  BOOST_REQUIRE(run_until(l, [&] { return order.size() == 2; }));
  kept.clear();
  BOOST_REQUIRE(run_until(l, [&] { return order.size() == 3; }));
  kept.clear();
  BOOST_REQUIRE(run_until(l, [&] { return order.size() == 4; }));
  BOOST_TEST(std::string(order.begin(), order.end()) == "ABCD");
  kept.clear();
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 0u);
  BOOST_TEST(operations_in_use(l) == 0u);
}

namespace {

// A loop at its ceiling of one handle, with a client in the backlog and one
// accept (`waiting`) in line for the handle `held` holds.
struct one_waiting
{
  one_waiting()
    : l(capped(1)),
      acceptor(listening(l)),
      c1(l),
      c2(l)
  {
    outcome first;
    turnloop::async_accept(acceptor, record(first));
    c1.start(acceptor.local_endpoint());
    BOOST_REQUIRE(run_until(l, [&] { return first.calls == 1; }));
    held.emplace(std::move(*first.socket));
    c2.start(acceptor.local_endpoint());
    BOOST_REQUIRE(run_until(l, [&] { return backlog(acceptor) == 1; }));
  }

  template <typename Token>
  void wait(Token&& token)
  {
    turnloop::async_accept(acceptor, std::forward<Token>(token));
    l.poll();
    BOOST_REQUIRE(turnloop::handle_statistics(l).accepts_waiting == 1u);
  }

  // The operation ended with operation_aborted, exactly once, took no
  // connection, and holds nothing.
  void check_aborted(const outcome& o)
  {
    BOOST_REQUIRE(run_until(l, [&] { return o.calls != 0; }));
    l.poll();
    BOOST_TEST(o.calls == 1);
    BOOST_TEST(o.ec == asio::error::operation_aborted);
    BOOST_TEST(!o.socket->is_open());
    BOOST_TEST(backlog(acceptor) == 1u);
    held.reset();
    l.poll();
    const turnloop::handle_stats s = turnloop::handle_statistics(l);
    BOOST_TEST(s.in_use == 0u);
    BOOST_TEST(s.accepts_pending == 0u);
    BOOST_TEST(s.accepts_waiting == 0u);
    BOOST_TEST(operations_in_use(l) == 0u);
  }

  turnloop::loop l;
  tcp::acceptor acceptor;
  client c1;
  client c2;
  std::optional<socket_type> held;
};

} // namespace

BOOST_AUTO_TEST_CASE(a_waiting_accept_is_cancelled_through_its_slot)
{
  one_waiting t;
  asio::cancellation_signal signal;
  outcome o;
  t.wait(asio::bind_cancellation_slot(signal.slot(), record(o)));
  signal.emit(asio::cancellation_type::terminal);
  BOOST_TEST(o.calls == 0); // delivered as a completion, not inside emit
  t.check_aborted(o);
}

BOOST_AUTO_TEST_CASE(a_waiting_accept_is_cancelled_by_the_acceptor_cancel)
{
  one_waiting t;
  outcome o;
  t.wait(record(o));
  t.acceptor.cancel();
  t.check_aborted(o);

  // The acceptor still works: the connection left in the backlog is next.
  outcome next;
  turnloop::async_accept(t.acceptor, record(next));
  BOOST_REQUIRE(run_until(t.l, [&] { return next.calls == 1; }));
  BOOST_TEST(!next.ec);
  BOOST_TEST(next.socket->remote_endpoint() == t.c2.socket.local_endpoint());
}

BOOST_AUTO_TEST_CASE(a_waiting_accept_is_cancelled_by_closing_the_acceptor)
{
  one_waiting t;
  outcome o;
  t.wait(record(o));
  t.acceptor.close();
  BOOST_REQUIRE(run_until(t.l, [&] { return o.calls != 0; }));
  t.l.poll();
  BOOST_TEST(o.calls == 1);
  BOOST_TEST(o.ec == asio::error::operation_aborted);
  t.held.reset();
  BOOST_TEST(turnloop::handle_statistics(t.l).in_use == 0u);
  BOOST_TEST(operations_in_use(t.l) == 0u);
}

BOOST_AUTO_TEST_CASE(a_cancel_just_before_a_handle_is_released_still_cancels,
    * test::only_where(!test::on_asio_io_uring,
        "Asio's io_uring backend ends a cancelled wait only when the kernel "
        "answers, so an accept resumed in the handler that cancelled can take "
        "its connection first, as an accept in flight there can"))
{
  // In one handler: the acceptor is cancelled while the accept waits, then
  // a handle is released to it. Asio reports the cancel only through a
  // completion it queues, which must be seen before the accept resumes.
  one_waiting t;
  outcome o;
  t.wait(record(o));
  asio::post(t.l, [&] {
    t.acceptor.cancel();
    t.held.reset();
  });
  t.check_aborted(o);
}

BOOST_AUTO_TEST_CASE(a_slot_emitted_after_a_handle_is_granted_still_cancels)
{
  one_waiting t;
  asio::cancellation_signal signal;
  outcome o;
  t.wait(asio::bind_cancellation_slot(signal.slot(), record(o)));
  asio::post(t.l, [&] {
    t.held.reset();
    signal.emit(asio::cancellation_type::terminal);
  });
  t.check_aborted(o);
}

namespace {

// A loop at its ceiling of one handle with no connection in the backlog:
// an accept in line, once given the handle, waits in the kernel.
struct one_waiting_for_nobody
{
  one_waiting_for_nobody()
    : l(capped(1)),
      acceptor(listening(l)),
      c(l)
  {
    outcome first;
    turnloop::async_accept(acceptor, record(first));
    c.start(acceptor.local_endpoint());
    BOOST_REQUIRE(run_until(l, [&] { return first.calls == 1; }));
    held.emplace(std::move(*first.socket));
  }

  void check_aborted(const outcome& o)
  {
    BOOST_REQUIRE(run_until(l, [&] { return o.calls != 0; }));
    l.poll();
    BOOST_TEST(o.calls == 1);
    BOOST_TEST(o.ec == asio::error::operation_aborted);
    BOOST_TEST(turnloop::handle_statistics(l).in_use == 0u);
    BOOST_TEST(turnloop::handle_statistics(l).accepts_pending == 0u);
    BOOST_TEST(operations_in_use(l) == 0u);
  }

  turnloop::loop l;
  tcp::acceptor acceptor;
  client c;
  std::optional<socket_type> held;
};

} // namespace

BOOST_AUTO_TEST_CASE(a_resumed_accept_is_cancelled_through_its_slot)
{
  one_waiting_for_nobody t;
  asio::cancellation_signal signal;
  outcome o;
  turnloop::async_accept(t.acceptor,
      asio::bind_cancellation_slot(signal.slot(), record(o)));
  t.l.poll();
  t.held.reset();
  t.l.poll(); // resumed: now in the kernel, with no connection to take
  BOOST_TEST(o.calls == 0);
  BOOST_TEST(turnloop::handle_statistics(t.l).in_use == 1u);
  signal.emit(asio::cancellation_type::terminal);
  t.check_aborted(o);
}

BOOST_AUTO_TEST_CASE(a_cancel_just_after_a_handle_is_released_ends_the_accept)
{
  // The handle is released, then the acceptor cancelled, in one handler:
  // the accept resumes behind the cancel, and must not then wait for a
  // connection for ever (a server stopping this way would hang).
  one_waiting_for_nobody t;
  outcome o;
  turnloop::async_accept(t.acceptor, record(o));
  t.l.poll();
  asio::post(t.l, [&] {
    t.held.reset();
    t.acceptor.cancel();
  });
  t.check_aborted(o);
}

BOOST_AUTO_TEST_CASE(an_awaited_accept_loses_a_race_cleanly)
{
  using namespace asio::experimental::awaitable_operators;
  one_waiting t;
  int finished = 0;
  asio::co_spawn(t.l, [&]() -> asio::awaitable<void> {
    asio::steady_timer timer(t.l, 1ms);
    auto result = co_await (
        turnloop::async_accept(t.acceptor, asio::use_awaitable)
        || timer.async_wait(asio::use_awaitable));
    BOOST_TEST(result.index() == 1u);
    ++finished;
  }, asio::detached);
  BOOST_REQUIRE(run_until(t.l, [&] { return finished == 1; }));
  t.l.poll();
  BOOST_TEST(backlog(t.acceptor) == 1u);
  t.held.reset();
  BOOST_TEST(turnloop::handle_statistics(t.l).in_use == 0u);
  BOOST_TEST(turnloop::handle_statistics(t.l).accepts_pending == 0u);
  BOOST_TEST(operations_in_use(t.l) == 0u);
}

BOOST_AUTO_TEST_CASE(an_accept_in_the_kernel_is_cancelled_through_its_slot)
{
  turnloop::loop l;
  tcp::acceptor acceptor = listening(l);
  asio::cancellation_signal signal;
  outcome o;
  turnloop::async_accept(acceptor,
      asio::bind_cancellation_slot(signal.slot(), record(o)));
  l.poll();
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 1u); // reserved
  signal.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(run_until(l, [&] { return o.calls != 0; }));
  l.poll();
  BOOST_TEST(o.calls == 1);
  BOOST_TEST(o.ec == asio::error::operation_aborted);
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 0u);
  BOOST_TEST(operations_in_use(l) == 0u);
}

BOOST_AUTO_TEST_CASE(max_operations_refuses_an_accept_with_resource_limit)
{
  turnloop::loop l(capped(1, 2));
  tcp::acceptor acceptor = listening(l);
  outcome first;
  outcome second;
  outcome refused;
  turnloop::async_accept(acceptor, record(first));  // in the kernel
  turnloop::async_accept(acceptor, record(second)); // in line
  turnloop::async_accept(acceptor, record(refused));
  BOOST_TEST(refused.calls == 0); // never inside the call
  BOOST_REQUIRE(run_until(l, [&] { return refused.calls != 0; }));
  l.poll();
  BOOST_TEST(refused.calls == 1);
  BOOST_TEST(refused.ec == turnloop::error::resource_limit);
  BOOST_TEST(!refused.socket->is_open());
  BOOST_TEST(first.calls == 0);
  BOOST_TEST(second.calls == 0);
  turnloop::handle_stats s = turnloop::handle_statistics(l);
  BOOST_TEST(s.accepts_refused == 1u);
  BOOST_TEST(s.accepts_pending == 2u);
  BOOST_TEST(operations_in_use(l) == 2u);

  acceptor.close();
  BOOST_REQUIRE(run_until(l, [&] {
    return first.calls != 0 && second.calls != 0;
  }));
  l.poll();
  BOOST_TEST(first.calls == 1);
  BOOST_TEST(second.calls == 1);
  BOOST_TEST(refused.calls == 1);
  s = turnloop::handle_statistics(l);
  BOOST_TEST(s.in_use == 0u);
  BOOST_TEST(s.accepts_pending == 0u);
  BOOST_TEST(operations_in_use(l) == 0u);
}

BOOST_AUTO_TEST_CASE(moving_an_accepted_socket_moves_its_handle)
{
  turnloop::loop l(capped(2));
  tcp::acceptor acceptor = listening(l);
  std::deque<client> clients;
  outcome a;
  outcome b;
  turnloop::async_accept(acceptor, record(a));
  turnloop::async_accept(acceptor, record(b));
  for (int i = 0; i < 3; ++i)
    clients.emplace_back(l).start(acceptor.local_endpoint());
  BOOST_REQUIRE(run_until(l, [&] { return a.calls == 1 && b.calls == 1; }));
  outcome waiting;
  turnloop::async_accept(acceptor, record(waiting));
  l.poll();
  BOOST_REQUIRE(turnloop::handle_statistics(l).accepts_waiting == 1u);

  // Move construction: the moved-from socket gives nothing back.
  std::optional<socket_type> moved(std::move(*a.socket));
  a.socket.reset();
  l.poll();
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 2u);
  BOOST_TEST(waiting.calls == 0);
  BOOST_TEST(moved->is_open());

  // Move assignment: the target's own handle is given back, after its
  // connection is closed; the source's comes with its connection.
  *moved = std::move(*b.socket);
  BOOST_REQUIRE(run_until(l, [&] { return waiting.calls == 1; }));
  BOOST_TEST(!waiting.ec);
  b.socket.reset();
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 2u);

  // Into a plain socket: the connection moves, the handle stays behind.
  tcp::socket plain(std::move(*moved));
  BOOST_TEST(plain.is_open());
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 2u);
  moved.reset();
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 1u);
  waiting.socket.reset();
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 0u);
}

BOOST_AUTO_TEST_CASE(a_handle_released_on_another_thread_wakes_a_waiting_accept,
    * test::threads_label())
{
  one_waiting t;
  outcome o;
  t.wait(record(o));
  std::thread releaser([s = std::move(*t.held)]() mutable {
    socket_type destroyed_here = std::move(s);
  });
  t.held.reset();
  const bool woke = run_until(t.l, [&] { return o.calls != 0; });
  releaser.join();
  BOOST_REQUIRE(woke);
  BOOST_TEST(!o.ec);
  BOOST_TEST(o.socket->remote_endpoint() == t.c2.socket.local_endpoint());
  o.socket.reset();
  BOOST_TEST(turnloop::handle_statistics(t.l).in_use == 0u);
}

BOOST_AUTO_TEST_CASE(a_loop_driven_through_its_io_context_still_resumes_accepts)
{
  one_waiting t;
  outcome o;
  t.wait(record(o));
  t.held.reset();
  asio::io_context& base = t.l;
  const auto end = std::chrono::steady_clock::now() + test::deadline;
  while (o.calls == 0 && std::chrono::steady_clock::now() < end)
  {
    base.restart();
    base.run_for(2ms);
  }
  BOOST_TEST(o.calls == 1);
  BOOST_TEST(!o.ec);
  BOOST_TEST(o.socket->remote_endpoint() == t.c2.socket.local_endpoint());
}

BOOST_AUTO_TEST_CASE(every_completion_token_works)
{
  turnloop::loop l;
  tcp::acceptor acceptor = listening(l);
  std::deque<client> clients;
  auto connect = [&] {
    clients.emplace_back(l).start(acceptor.local_endpoint());
  };

  // use_awaitable and as_tuple(use_awaitable)
  int awaited = 0;
  asio::co_spawn(l, [&]() -> asio::awaitable<void> {
    socket_type s = co_await turnloop::async_accept(acceptor,
        asio::use_awaitable);
    BOOST_TEST(s.is_open());
    auto [ec, t] = co_await turnloop::async_accept(acceptor,
        asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec);
    BOOST_TEST(t.is_open());
    ++awaited;
  }, asio::detached);
  connect();
  connect();
  BOOST_REQUIRE(run_until(l, [&] { return awaited == 1; }));

  // deferred
  auto op = turnloop::async_accept(acceptor, asio::deferred);
  outcome deferred;
  std::move(op)(record(deferred));
  connect();
  BOOST_REQUIRE(run_until(l, [&] { return deferred.calls == 1; }));
  BOOST_TEST(!deferred.ec);

  // use_future
  std::future<socket_type> f = turnloop::async_accept(acceptor,
      asio::use_future);
  connect();
  BOOST_REQUIRE(run_until(l, [&] {
    return f.wait_for(0s) == std::future_status::ready;
  }));
  BOOST_TEST(f.get().is_open());

  // Errors reach a future as exceptions.
  std::future<socket_type> aborted = turnloop::async_accept(acceptor,
      asio::use_future);
  acceptor.close();
  BOOST_REQUIRE(run_until(l, [&] {
    return aborted.wait_for(0s) == std::future_status::ready;
  }));
  BOOST_CHECK_THROW(aborted.get(), turnloop::system_error);
  deferred.socket.reset();
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 0u);
}

BOOST_AUTO_TEST_CASE(local_stream_acceptors_are_capped_too,
    * test::only_where(!turnloop::detail::has_iocp_engine,
      "local stream sockets bound to a path in /tmp (POSIX)"))
{
#if !defined(_WIN32)
  using local = asio::local::stream_protocol;
  const std::string path = "/tmp/turnloop-accept-" + std::to_string(::getpid());
  ::unlink(path.c_str());
  turnloop::loop l(capped(1));
  local::acceptor acceptor(l, local::endpoint(path));
  local::socket c1(l);
  local::socket c2(l);
  std::optional<turnloop::accepted_socket<local>> first;
  std::optional<turnloop::accepted_socket<local>> second;
  auto keep = [](auto& into) {
    return [&into](error_code ec, turnloop::accepted_socket<local> s) {
      BOOST_TEST(!ec);
      into.emplace(std::move(s));
    };
  };
  turnloop::async_accept(acceptor, keep(first));
  turnloop::async_accept(acceptor, keep(second));
  c1.connect(local::endpoint(path));
  c2.connect(local::endpoint(path));
  BOOST_REQUIRE(run_until(l, [&] { return first.has_value(); }));
  l.poll();
  BOOST_TEST(!second.has_value());
  first.reset();
  BOOST_REQUIRE(run_until(l, [&] { return second.has_value(); }));
  second.reset();
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 0u);
  ::unlink(path.c_str());
#endif // !defined(_WIN32)
}

BOOST_AUTO_TEST_CASE(an_acceptor_on_a_strand_of_the_loop_is_capped_too)
{
  turnloop::loop l(capped(1));
  tcp::acceptor acceptor(asio::make_strand(l),
      {asio::ip::address_v4::loopback(), 0});
  client c1(l);
  client c2(l);
  outcome first;
  outcome second;
  turnloop::async_accept(acceptor, record(first));
  turnloop::async_accept(acceptor, record(second));
  c1.start(acceptor.local_endpoint());
  c2.start(acceptor.local_endpoint());
  BOOST_REQUIRE(run_until(l, [&] { return first.calls == 1 && c2.connected; }));
  l.poll();
  BOOST_TEST(second.calls == 0);
  first.socket.reset();
  BOOST_REQUIRE(run_until(l, [&] { return second.calls == 1; }));
  BOOST_TEST(!second.ec);
  second.socket.reset();
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 0u);
}

BOOST_AUTO_TEST_CASE(an_acceptor_on_another_context_is_not_supported)
{
  asio::io_context ctx;
  tcp::acceptor acceptor(ctx, {asio::ip::address_v4::loopback(), 0});
  outcome o;
  turnloop::async_accept(acceptor, record(o));
  BOOST_TEST(o.calls == 0);
  ctx.run();
  BOOST_TEST(o.calls == 1);
  BOOST_TEST(o.ec == asio::error::operation_not_supported);
}

BOOST_AUTO_TEST_CASE(destroying_the_loop_destroys_waiting_accepts_unrun)
{
  auto alive = std::make_shared<int>(0);
  int ran = 0;
  {
    one_waiting t;
    // One in line, one in line with a cancellation slot, one coroutine.
    asio::cancellation_signal signal;
    turnloop::async_accept(t.acceptor,
        [alive, &ran](error_code, socket_type) { ++ran; });
    turnloop::async_accept(t.acceptor, asio::bind_cancellation_slot(
          signal.slot(), [alive, &ran](error_code, socket_type) { ++ran; }));
    asio::co_spawn(t.l, [alive, &ran, &t]() -> asio::awaitable<void> {
      co_await turnloop::async_accept(t.acceptor, asio::use_awaitable);
      ++ran;
    }, asio::detached);
    t.l.poll();
    BOOST_TEST(turnloop::handle_statistics(t.l).accepts_waiting == 3u);
    // The held socket is destroyed with the fixture, before the loop.
  }
  BOOST_TEST(ran == 0);
  BOOST_TEST(alive.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(a_handle_outliving_its_loop_is_released_safely)
{
  // What an accepted socket's handle does if it outlives the loop: nothing,
  // and nothing freed is touched (the ASan run checks).
  std::optional<turnloop::loop> l(std::in_place);
  turnloop::detail::handle_service* service =
    turnloop::detail::handle_service::of(*l);
  BOOST_REQUIRE(service);
  turnloop::detail::handle_service::admission a = service->admit();
  BOOST_REQUIRE(bool(a.handle));
  service->complete(a.id, true);
  turnloop::detail::handle_unit handle = std::move(a.handle);
  BOOST_TEST(turnloop::handle_statistics(*l).in_use == 1u);
  l.reset();
  handle.reset();
  BOOST_TEST(!handle);
}

namespace {

double cpu_seconds()
{
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

// In a child process: accept while the process has no descriptor to spare.
// Returns 0 on success, or which check failed.
int accept_without_descriptors()
{
  turnloop::loop l;
  tcp::acceptor acceptor = listening(l);
  tcp::socket c(l);
  c.connect(acceptor.local_endpoint());

  const std::optional<test::descriptor_limit> saved = test::run_out_of_descriptors();
  if (!saved)
    return 9;

  outcome o;
  turnloop::async_accept(acceptor, record(o));
  asio::cancellation_signal signal;
  outcome cancelled;
  turnloop::async_accept(acceptor,
      asio::bind_cancellation_slot(signal.slot(), record(cancelled)));
  const double cpu_before = cpu_seconds();
  l.run_for(300ms);
  const double cpu = cpu_seconds() - cpu_before;
  if (o.calls != 0 || cancelled.calls != 0)
    return 11; // completed (with EMFILE) instead of backing off
  const std::uint64_t backoffs = turnloop::handle_statistics(l).accept_backoffs;
  if (backoffs < 4 || backoffs > 24)
    return 12; // never retried, or retried far too often (two accepts)
  if (cpu > 0.1)
    return 13; // spun

  // Backing off, an accept is cancelled like any other.
  signal.emit(asio::cancellation_type::terminal);
  if (!run_until(l, [&] { return cancelled.calls != 0; }))
    return 17;
  if (cancelled.ec != asio::error::operation_aborted
      || turnloop::handle_statistics(l).in_use != 1)
    return 18;

  test::restore_descriptor_limit(*saved);
  if (!run_until(l, [&] { return o.calls != 0; }))
    return 14;
  if (o.ec || !o.socket->is_open())
    return 15;
  if (o.socket->remote_endpoint() != c.local_endpoint())
    return 16;
  return 0;
}

} // namespace

BOOST_AUTO_TEST_CASE(an_accept_out_of_descriptors_backs_off_without_spinning,
    * test::only_where(test::has_fork && test::has_descriptor_limit,
      "runs a child process out of descriptors (fork, RLIMIT_NOFILE)"))
{
  BOOST_TEST(test::exit_status_in_child(accept_without_descriptors) == 0);
}
