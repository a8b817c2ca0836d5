//
// test/read_pooled_uring_stock.cpp
//
// Stock Asio operations on a socket that the pool's io_uring also uses
// (doc/io_uring.md, "Stock operations on a socket the ring uses"): a
// stock read, wait or write behaves exactly as on the epoll path, in every
// order with the ring's operations and with each other. The ring's watcher
// of a socket is a reactor operation queued on the socket's registration;
// it must neither change what epoll reports for the socket nor hold up the
// socket's other operations.
//
// Each case runs the same scenario on both paths (config::pooled_io epoll,
// then io_uring) and expects the same of each.
//
// TURNLOOP_TEST_NO_IO_URING=1 skips the io_uring runs (read_pooled_uring.cpp).
//

#if defined(_WIN32)
// Nothing of this module exists on Windows: one case says so.
#define BOOST_TEST_MODULE read_pooled_uring_stock
#include <boost/test/unit_test.hpp>

#include "support.hpp"

BOOST_AUTO_TEST_CASE(this_module_tests_what_only_linux_has,
    * test::only_where(false, "stock operations beside turnloop's io_uring path (Linux)"))
{
}

#else // defined(_WIN32)

#define BOOST_TEST_MODULE read_pooled_uring_stock
#include <boost/test/unit_test.hpp>

#include <turnloop/read_pooled.hpp>
#include <turnloop/write_lease.hpp>

#include "asio.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <sys/socket.h>

#include "pooled_echo.hpp"
#include "support.hpp"

using asio::ip::tcp;
using turnloop::error_code;
using turnloop::buffer_lease;
using turnloop::buffer_pool;
using turnloop::io_path;

namespace {

using test::connections;

turnloop::config path_config(io_path path, std::size_t buffers = 16)
{
  turnloop::config c;
  c.pooled_buffers = buffers;
  c.pooled_buffer_size = 256;
  c.pooled_io = path;
  return c;
}

// The paths a case runs on: epoll (the reactor's), and io_uring where the
// build has it (detail/platform.hpp) unless skipped.
std::vector<io_path> paths()
{
  std::vector<io_path> p{io_path::epoll};
  if (turnloop::detail::has_io_uring_path && !test::io_uring_skipped())
    p.push_back(io_path::io_uring);
  return p;
}

const char* name_of(io_path p)
{
  return p == io_path::io_uring ? "io_uring" : "epoll";
}

// A lease from @p pool holding @p text.
buffer_lease lease_of(buffer_pool& pool, const std::string& text)
{
  buffer_lease lease = pool.try_lease();
  std::memcpy(lease.storage().data(), text.data(), text.size());
  lease.resize(text.size());
  return lease;
}

// Lets a pooled read that was just started reach the kernel (on the ring,
// its receive is submitted with the next turn's entries).
void let_it_reach_the_kernel(turnloop::loop& l)
{
  for (int i = 0; i != 5; ++i)
    l.poll();
}

// Sends one byte of urgent (out-of-band) data: the receiver's socket
// reports EPOLLPRI until it is read with MSG_OOB.
void send_urgent(tcp::socket& s)
{
  s.send(asio::buffer("!", 1), tcp::socket::message_out_of_band);
}

} // namespace

// Issue 25, item 1: a stock read, or a stock wait for readability, pending
// on a socket when a lease write makes the ring's watcher for it, still
// completes when the peer sends.
BOOST_AUTO_TEST_CASE(a_stock_read_pending_when_a_lease_write_uses_the_ring_completes)
{
  for (const io_path path : paths())
  {
    BOOST_TEST_CONTEXT("path " << name_of(path))
    {
      turnloop::loop l(path_config(path));
      buffer_pool& pool = asio::use_service<buffer_pool>(l);
      connections c(l, 2);
      char byte = 0;
      std::optional<error_code> read, waited, wrote0, wrote1;
      asio::post(l, [&] {
        c.servers[0]->async_read_some(asio::buffer(&byte, 1),
            [&](error_code ec, std::size_t) { read = ec; });
        c.servers[1]->async_wait(tcp::socket::wait_read,
            [&](error_code ec) { waited = ec; });
        turnloop::async_write_lease(*c.servers[0], lease_of(pool, "lease"),
            [&](error_code ec, std::size_t) { wrote0 = ec; });
        turnloop::async_write_lease(*c.servers[1], lease_of(pool, "lease"),
            [&](error_code ec, std::size_t) { wrote1 = ec; });
      });
      BOOST_TEST_REQUIRE(test::run_until(l, [&] { return wrote0 && wrote1; }));
      BOOST_TEST(!*wrote0);
      BOOST_TEST(!*wrote1);
      BOOST_TEST((pool.stats().path == path));
      asio::write(*c.clients[0], asio::buffer("a", 1));
      asio::write(*c.clients[1], asio::buffer("b", 1));
      BOOST_TEST(test::run_until(l, [&] { return read && waited; }));
      BOOST_TEST((read && !*read && byte == 'a'));
      BOOST_TEST((waited && !*waited));
    }
  }
}

// Issue 25, item 2: a stock read started after cancel() has ended a pooled
// read of the socket completes when the peer sends; so does one started in
// the handler that calls cancel(), before the cancelled read's completion.
BOOST_AUTO_TEST_CASE(a_stock_read_after_cancel_of_a_pooled_read_completes)
{
  for (const io_path path : paths())
  {
    for (const bool at_once : {false, true})
    {
      BOOST_TEST_CONTEXT("path " << name_of(path) << ", started with cancel(): "
          << at_once)
      {
        turnloop::loop l(path_config(path));
        buffer_pool& pool = asio::use_service<buffer_pool>(l);
        connections c(l, 1);
        tcp::socket& server = *c.servers[0];
        std::optional<error_code> pooled, read;
        char byte = 0;
        auto stock_read = [&] {
          server.async_read_some(asio::buffer(&byte, 1),
              [&](error_code ec, std::size_t) { read = ec; });
        };
        asio::post(l, [&] {
          turnloop::async_read_pooled(server, [&](error_code ec,
                buffer_lease) { pooled = ec; });
        });
        let_it_reach_the_kernel(l);
        BOOST_TEST((pool.stats().path == path));
        asio::post(l, [&] {
          server.cancel();
          if (at_once)
            stock_read();
        });
        BOOST_TEST_REQUIRE(test::run_until(l, [&] { return !!pooled; }));
        BOOST_TEST(*pooled == asio::error::operation_aborted);
        if (!at_once)
          asio::post(l, stock_read);
        let_it_reach_the_kernel(l);
        BOOST_TEST(!read);
        asio::write(*c.clients[0], asio::buffer("z", 1));
        BOOST_TEST(test::run_until(l, [&] { return !!read; }));
        BOOST_TEST((read && !*read && byte == 'z'));
      }
    }
  }
}

namespace {

// How a scenario's socket uses the ring, next to its stock operations.
enum class ring_use
{
  lease_write,          // a lease write started among the stock operations
  after_lease_write,    // a lease write done before they start
  after_read,           // a pooled read done (with data) before they start
  after_cancelled_read, // a pooled read ended by cancel() before they start
  cancel_then_start     // a pooled read pending, then, in one handler,
                        // cancel() and the stock operations
};

const char* name_of(ring_use u)
{
  switch (u)
  {
  case ring_use::lease_write:
    return "lease write among them";
  case ring_use::after_lease_write:
    return "after a lease write";
  case ring_use::after_read:
    return "after a pooled read";
  case ring_use::after_cancelled_read:
    return "after a cancelled pooled read";
  case ring_use::cancel_then_start:
    return "with cancel() of a pooled read";
  }
  return "?";
}

const char* name_of(tcp::socket::wait_type w)
{
  switch (w)
  {
  case tcp::socket::wait_read:
    return "wait_read";
  case tcp::socket::wait_write:
    return "wait_write";
  case tcp::socket::wait_error:
    return "wait_error";
  }
  return "?";
}

// One server socket with a stock async_read_some, async_wait and
// async_write_some started in a given order, around the ring's use of it.
// The client sends "datadata"; the read takes four bytes of it, so that it
// does not drain the socket (a read that does makes Asio leave the
// operations queued behind it for the next edge), the wait is for what the
// client makes ready (that data, or urgent data for wait_error), and the
// write sends "stock".
struct scenario
{
  enum op { read, wait, write };

  scenario(std::array<op, 3> o, tcp::socket::wait_type w, ring_use u,
      int at = 0)
    : order(o),
      wait_type(w),
      use(u),
      lease_at(at)
  {
  }

  std::array<op, 3> order;
  tcp::socket::wait_type wait_type;
  ring_use use;
  int lease_at; // ring_use::lease_write: its place among the three

  tcp::socket* server = nullptr;
  tcp::socket* client = nullptr;

  std::optional<error_code> ring;   // the ring's operation
  std::optional<error_code> read_ec, wait_ec, write_ec;
  std::array<char, 4> bytes{};
  std::string got;
  std::size_t written = 0;

  std::string name() const
  {
    static const char* const ops[] = {"read", "wait", "write"};
    std::ostringstream s;
    s << name_of(use);
    if (use == ring_use::lease_write)
      s << " at " << lease_at;
    s << ", " << name_of(wait_type) << ", order";
    for (op o : order)
      s << ' ' << ops[o];
    return s.str();
  }

  bool done() const
  {
    return ring && read_ec && wait_ec && write_ec;
  }

  void start_ring_read()
  {
    turnloop::async_read_pooled(*server, [this](error_code ec,
          buffer_lease lease) {
      ring = ec;
      if (lease)
        got.assign(static_cast<const char*>(lease.data().data()),
            lease.size());
    });
  }

  void start_lease_write(buffer_pool& pool)
  {
    turnloop::async_write_lease(*server, lease_of(pool, "lease"),
        [this](error_code ec, std::size_t) { ring = ec; });
  }

  void start(op o)
  {
    switch (o)
    {
    case read:
      server->async_read_some(asio::buffer(bytes),
          [this](error_code ec, std::size_t n) {
            read_ec = ec;
            got.assign(bytes.data(), n);
          });
      break;
    case wait:
      server->async_wait(wait_type, [this](error_code ec) { wait_ec = ec; });
      break;
    case write:
      server->async_write_some(asio::buffer("stock", 5),
          [this](error_code ec, std::size_t n) {
            write_ec = ec;
            written = n;
          });
      break;
    }
  }

  // The stock operations, in order, with what goes with them.
  void start_stock(buffer_pool& pool)
  {
    if (use == ring_use::cancel_then_start)
      server->cancel();
    for (int i = 0; i != 3; ++i)
    {
      if (use == ring_use::lease_write && lease_at == i)
        start_lease_write(pool);
      start(order[i]);
    }
    if (use == ring_use::lease_write && lease_at == 3)
      start_lease_write(pool);
  }
};

// Every scenario: each order of the three, each wait type, each use of
// the ring.
std::vector<scenario> every_scenario()
{
  std::vector<scenario> all;
  std::array<scenario::op, 3> order{scenario::read, scenario::wait,
    scenario::write};
  do
  {
    for (const auto w : {tcp::socket::wait_read, tcp::socket::wait_write,
        tcp::socket::wait_error})
    {
      for (int at = 0; at != 4; ++at)
        all.emplace_back(order, w, ring_use::lease_write, at);
      for (const auto use : {ring_use::after_lease_write, ring_use::after_read,
          ring_use::after_cancelled_read, ring_use::cancel_then_start})
        all.emplace_back(order, w, use);
    }
  } while (std::next_permutation(order.begin(), order.end()));
  return all;
}

} // namespace

// The "done when": a stock read, a stock wait (for reading, writing
// or an error) and a stock write on a socket the ring also uses complete as
// on the epoll path, in each of the six orders, with a lease write started
// before, between or after them, or a lease write or pooled read (done or
// cancelled) before them. A wait for an error is made ready by urgent data,
// which epoll reports as EPOLLPRI, so it also shows that the ring leaves
// the socket's registration as Asio made it.
BOOST_AUTO_TEST_CASE(stock_reads_waits_and_writes_complete_as_on_epoll_in_every_order,
    * test::only_where(!test::on_asio_io_uring,
        "Asio's io_uring backend leaves a wait_error pending on urgent data "
        "(io_context too), and urgent data is how this makes waits ready"))
{
  for (const io_path path : paths())
  {
    std::vector<scenario> all = every_scenario();
    turnloop::loop l(path_config(path, all.size()));
    buffer_pool& pool = asio::use_service<buffer_pool>(l);
    connections c(l, all.size());
    for (std::size_t i = 0; i != all.size(); ++i)
    {
      all[i].server = c.servers[i].get();
      all[i].client = c.clients[i].get();
    }

    // The ring's operations that come first.
    asio::post(l, [&] {
      for (scenario& s : all)
        switch (s.use)
        {
        case ring_use::after_lease_write:
          s.start_lease_write(pool);
          break;
        case ring_use::after_read:
        case ring_use::after_cancelled_read:
        case ring_use::cancel_then_start:
          s.start_ring_read();
          break;
        case ring_use::lease_write:
          break;
        }
    });
    let_it_reach_the_kernel(l);
    for (scenario& s : all)
      if (s.use == ring_use::after_read)
        asio::write(*s.client, asio::buffer("ring", 4));
    asio::post(l, [&] {
      for (scenario& s : all)
        if (s.use == ring_use::after_cancelled_read)
          s.server->cancel();
    });
    BOOST_TEST_REQUIRE(test::run_until(l, [&] {
      for (scenario& s : all)
        if (s.use != ring_use::lease_write
            && s.use != ring_use::cancel_then_start && !s.ring)
          return false;
      return true;
    }));
    BOOST_TEST((pool.stats().path == path));

    // The stock operations, then what makes them ready.
    asio::post(l, [&] {
      for (scenario& s : all)
      {
        s.got.clear();
        s.start_stock(pool);
      }
    });
    let_it_reach_the_kernel(l);
    for (scenario& s : all)
    {
      asio::write(*s.client, asio::buffer("datadata", 8));
      if (s.wait_type == tcp::socket::wait_error)
        send_urgent(*s.client);
    }
    test::run_until(l, [&] {
      return std::all_of(all.begin(), all.end(),
          [](const scenario& s) { return s.done(); });
    });

    int failed = 0;
    for (const scenario& s : all)
    {
      const bool as_expected = s.done() && !*s.read_ec && s.got == "data"
        && !*s.wait_ec && !*s.write_ec && s.written == 5
        && (s.use == ring_use::after_cancelled_read
            || s.use == ring_use::cancel_then_start
            ? *s.ring == asio::error::operation_aborted : !*s.ring);
      if (!as_expected)
        ++failed;
      BOOST_TEST(as_expected, name_of(path) << ": " << s.name() << ": read "
          << (s.read_ec ? s.read_ec->message() : "pending") << " \""
          << s.got << "\", wait "
          << (s.wait_ec ? s.wait_ec->message() : "pending") << ", write "
          << (s.write_ec ? s.write_ec->message() : "pending") << ", ring "
          << (s.ring ? s.ring->message() : "pending"));
    }
    BOOST_TEST_MESSAGE(name_of(path) << ": " << all.size() << " scenarios, "
        << failed << " failed");
  }
}

// An out-of-band read (Asio's except queue, as the watcher) of a socket the
// ring uses gets its urgent byte, whether it was pending before the
// watcher was made or started while the watcher is queued.
BOOST_AUTO_TEST_CASE(an_out_of_band_read_of_a_socket_the_ring_uses_gets_urgent_data,
    * test::only_where(!test::on_asio_io_uring,
        "Asio's io_uring backend does not complete an out-of-band receive "
        "or a wait_error on urgent data (io_context neither)"))
{
  for (const io_path path : paths())
  {
    for (const bool before_the_watcher : {true, false})
    {
      BOOST_TEST_CONTEXT("path " << name_of(path) << ", before the watcher: "
          << before_the_watcher)
      {
        turnloop::loop l(path_config(path));
        buffer_pool& pool = asio::use_service<buffer_pool>(l);
        connections c(l, 1);
        tcp::socket& server = *c.servers[0];
        std::optional<error_code> urgent, wrote;
        char byte = 0;
        auto receive_urgent = [&] {
          server.async_receive(asio::buffer(&byte, 1),
              tcp::socket::message_out_of_band,
              [&](error_code ec, std::size_t) { urgent = ec; });
        };
        asio::post(l, [&] {
          if (before_the_watcher)
            receive_urgent();
          turnloop::async_write_lease(server, lease_of(pool, "lease"),
              [&](error_code ec, std::size_t) { wrote = ec; });
          if (!before_the_watcher)
            receive_urgent();
        });
        BOOST_TEST_REQUIRE(test::run_until(l, [&] { return !!wrote; }));
        BOOST_TEST(!*wrote);
        BOOST_TEST((pool.stats().path == path));
        send_urgent(*c.clients[0]);
        BOOST_TEST(test::run_until(l, [&] { return !!urgent; }));
        BOOST_TEST((urgent && !*urgent && byte == '!'));
      }
    }
  }
}

// The same cause inside turnloop: a pooled read that found data but no
// buffer waits for one watching its socket with async_wait(wait_error), so
// that the socket's errors still end it. On the ring that wait is queued
// behind the socket's watcher. Here the data goes away (read by hand) and
// the peer resets: the read ends with the reset, as on epoll, instead of
// waiting for a buffer.
BOOST_AUTO_TEST_CASE(a_read_waiting_for_a_buffer_ends_when_its_peer_resets,
    * test::only_where(std::string_view(TURNLOOP_REACTOR_NAME) != "select",
      "select reports a reset as readable, not in its except set, so the "
      "wait_error watch of a read waiting for a buffer does not see it: that "
      "read learns of the reset when it gets a buffer"))
{
  for (const io_path path : paths())
  {
    BOOST_TEST_CONTEXT("path " << name_of(path))
    {
      turnloop::config cfg = path_config(path);
      cfg.pooled_buffers = 1;
      turnloop::loop l(cfg);
      buffer_pool& pool = asio::use_service<buffer_pool>(l);
      connections c(l, 2);
      buffer_lease held;
      std::optional<error_code> second;
      asio::post(l, [&] {
        turnloop::async_read_pooled(*c.servers[0], [&](error_code ec,
              buffer_lease lease) {
          BOOST_TEST(!ec);
          held = std::move(lease);
        });
      });
      asio::write(*c.clients[0], asio::buffer("first", 5));
      BOOST_TEST_REQUIRE(test::run_until(l, [&] { return !!held; }));
      asio::post(l, [&] {
        turnloop::async_read_pooled(*c.servers[1], [&](error_code ec,
              buffer_lease) { second = ec; });
      });
      asio::write(*c.clients[1], asio::buffer("x", 1));
      BOOST_TEST_REQUIRE(test::run_until(l, [&] {
        return pool.stats().waiting == 1u;
      }));
      BOOST_TEST((pool.stats().path == path));
      char byte;
      BOOST_TEST_REQUIRE(::recv(c.servers[1]->native_handle(), &byte, 1,
            MSG_DONTWAIT) == 1);
      c.clients[1]->set_option(asio::socket_base::linger(true, 0));
      c.clients[1]->close();
      BOOST_TEST(test::run_until(l, [&] { return !!second; }));
      BOOST_TEST((second && *second == asio::error::connection_reset),
          (second ? second->message() : "pending"));
      BOOST_TEST(pool.stats().waiting == 0u);
    }
  }
}

#endif // defined(_WIN32)
