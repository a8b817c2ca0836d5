//
// test/read_pooled_reactor.cpp
//
// Pooled reads of sockets wait as the reactor's own read operations: a
// read that waits for data does not re-arm its socket (no epoll_ctl per
// read, which async_wait would cost), and echo over many connections, with
// fewer buffers than connections, is byte-exact. This module counts the
// epoll reactor's epoll_ctl calls by defining epoll_ctl itself, which the
// program's calls (Asio's among them) reach before the C library's: the
// cases that count are epoll's, and not applicable on other reactors.
//

#if defined(_WIN32)
// Nothing of this module exists on Windows: one case says so.
#define BOOST_TEST_MODULE read_pooled_reactor
#include <boost/test/unit_test.hpp>

#include "support.hpp"

BOOST_AUTO_TEST_CASE(this_module_tests_what_only_linux_has,
    * test::only_where(false, "counts the epoll reactor's epoll_ctl calls (Linux); pooled reads on Windows wait with async_wait, tested by read_pooled"))
{
}

#else // defined(_WIN32)

#include <turnloop/read_pooled.hpp>

#include <turnloop/buffer_pool.hpp>
#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE read_pooled_reactor
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pooled_echo.hpp"
#include "support.hpp"

namespace {

std::atomic<long> modifications{0};

} // namespace

extern "C" int epoll_ctl(int epfd, int op, int fd, epoll_event* event) noexcept
{
  if (op == EPOLL_CTL_MOD)
    modifications.fetch_add(1, std::memory_order_relaxed);
  return static_cast<int>(::syscall(SYS_epoll_ctl, epfd, op, fd, event));
}

using asio::ip::tcp;
using turnloop::error_code;
using turnloop::buffer_lease;
using turnloop::buffer_pool;

namespace {

turnloop::config pool_config(std::size_t buffers, std::size_t size)
{
  turnloop::config c;
  c.pooled_buffers = buffers;
  c.pooled_buffer_size = size;
  // This module is about the epoll reactor's path.
  c.pooled_io = turnloop::io_path::epoll;
  return c;
}

using test::connections;
using test::echo_client;
using echo_session = test::pooled_echo_session;

} // namespace

// The counter sees Asio's calls: otherwise the next case could not fail.
namespace {
const char* const counts_epoll_ctl = "counts the epoll reactor's epoll_ctl calls";
} // namespace

BOOST_AUTO_TEST_CASE(an_async_wait_rearms_its_socket_as_the_counter_sees,
    * test::only_where(std::string_view(TURNLOOP_REACTOR_NAME) == "epoll",
      counts_epoll_ctl))
{
  turnloop::loop l;
  connections c(l, 1);
  const long before = modifications.load();
  c.servers[0]->async_wait(tcp::socket::wait_read, [](error_code) {});
  BOOST_TEST(modifications.load() == before + 1);
  c.servers[0]->close();
  l.run();
}

// Checked that it can fail: with read_pooled_op::wait_readable() waiting
// with async_wait(wait_read), as it did, this case counted 1001
// modifications for the 1000 rounds.
BOOST_AUTO_TEST_CASE(a_pooled_read_waiting_for_data_does_not_rearm_its_socket,
    * test::only_where(std::string_view(TURNLOOP_REACTOR_NAME) == "epoll",
      counts_epoll_ctl))
{
  constexpr int warm_up = 10;
  constexpr int rounds = 1000;
  turnloop::loop l(pool_config(4, 4096));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  echo_session server(*c.servers[0]);
  echo_client client(*c.clients[0], warm_up + rounds, 1, 1024);
  long marked = 0;
  client.at_round(warm_up, [&] { marked = modifications.load(); });
  server.start();
  client.start();
  l.run();
  const long after = modifications.load();
  BOOST_TEST(client.done() == warm_up + rounds);
  BOOST_TEST(client.mismatches() == 0);
  BOOST_TEST(server.ended_with() == asio::error::eof);
  BOOST_TEST(after - marked <= 2);
  BOOST_TEST(pool.stats().leased == 0u);
}

// Messages up to twice the buffer size (a read takes at most one buffer, so
// some arrive in two), on more connections than buffers (reads wait for
// one): every byte comes back, every read ends once, no buffer stays leased.
BOOST_AUTO_TEST_CASE(echo_over_many_connections_with_few_buffers_is_byte_exact)
{
  constexpr std::size_t count = 48;
  constexpr int rounds = 60;
  constexpr std::size_t buffer_size = 512;
  turnloop::loop l(pool_config(8, buffer_size));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, count);
  std::vector<std::unique_ptr<echo_session>> servers;
  std::vector<std::unique_ptr<echo_client>> clients;
  for (std::size_t i = 0; i != count; ++i)
  {
    servers.push_back(std::make_unique<echo_session>(*c.servers[i]));
    clients.push_back(std::make_unique<echo_client>(*c.clients[i], rounds,
          static_cast<std::uint32_t>(i + 7), 2 * buffer_size));
    servers.back()->start();
    clients.back()->start();
  }
  l.run();
  for (std::size_t i = 0; i != count; ++i)
  {
    BOOST_TEST(clients[i]->done() == rounds);
    BOOST_TEST(clients[i]->mismatches() == 0);
    BOOST_TEST(servers[i]->ended_with() == asio::error::eof);
    BOOST_TEST(servers[i]->reads() >= rounds);
  }
  BOOST_TEST(pool.stats().leased == 0u);
  BOOST_TEST(pool.stats().minted <= 8u);
}

// A read the reactor has performed holds its lease until its completion
// runs. Started on the loop's thread with data waiting, the read is
// performed at once and its completion queued; the loop is then destroyed
// without running it: the handler is destroyed unrun, and the buffer freed
// with the pool (AddressSanitizer's leak check sees the rest).
BOOST_AUTO_TEST_CASE(a_read_performed_but_not_delivered_dies_with_its_loop,
    * test::only_where(std::string_view(TURNLOOP_REACTOR_NAME) != "select"
        && !test::on_asio_io_uring,
      "a read is performed at its start only by a reactor that tries it "
      "speculatively; select performs it after select() reports the socket, "
      "and on Asio's io_uring backend a pooled read waits for readiness first"))
{
  auto alive = std::make_shared<int>(0);
  std::weak_ptr<int> watch = alive;
  bool ran = false;
  long minted = 0;
  {
    turnloop::loop l(pool_config(2, 256));
    buffer_pool& pool = asio::use_service<buffer_pool>(l);
    connections c(l, 1);
    asio::write(*c.clients[0], asio::buffer("data", 4));
    tcp::socket& server = *c.servers[0];
    asio::post(l, [&, alive = std::move(alive)]() mutable {
      turnloop::async_read_pooled(server,
          [&ran, alive = std::move(alive)](error_code, buffer_lease) {
            ran = true;
          });
      minted = static_cast<long>(pool.stats().minted);
      l.stop();
    });
    l.run();
    BOOST_TEST(!watch.expired());
  }
  BOOST_TEST(!ran);
  BOOST_TEST(watch.expired());
  BOOST_TEST(minted == 1); // the read was performed inside the call
}

#endif // defined(_WIN32)
