//
// test/read_pooled_uring_wait.cpp
//
// A loop with pooled reads in its io_uring waits in the ring: its blocking
// wait is io_uring_enter, with epoll's descriptor polled through the ring
// (doc/io_uring.md, "One system call a turn"). Everything that ends an
// epoll wait must end this one: a post from another thread, a timer, data
// on a socket that Asio reads, run_for()'s time. And epoll_wait is not
// called for the ring's own traffic: this module counts the program's
// epoll_wait calls by defining epoll_wait itself, which Asio's calls reach
// before the C library's.
//
// A case that must catch the loop blocked in the ring reads the loop
// thread's /proc/self/task/<tid>/syscall, which names the system call it
// is blocked in, before it acts.
//
// TURNLOOP_TEST_NO_IO_URING=1 skips these cases (read_pooled_uring.cpp).
//

#if defined(_WIN32)
// Nothing of this module exists on Windows: one case says so.
#define BOOST_TEST_MODULE read_pooled_uring_wait
#include <boost/test/unit_test.hpp>

#include "support.hpp"

BOOST_AUTO_TEST_CASE(this_module_tests_what_only_linux_has,
    * test::only_where(false, "the wait in turnloop's io_uring path (Linux)"))
{
}

#else // defined(_WIN32)

#include <turnloop/read_pooled.hpp>

#include <turnloop/buffer_pool.hpp>
#include <turnloop/loop.hpp>
#include <turnloop/write_lease.hpp>

#define BOOST_TEST_MODULE read_pooled_uring_wait
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <string>
#include <thread>

#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pooled_echo.hpp"
#include "support.hpp"

// The whole module is about turnloop's io_uring path (detail/platform.hpp).
#if defined(TURNLOOP_HAS_IO_URING_PATH)

namespace {

std::atomic<unsigned long> epoll_wait_calls{0};

} // namespace

extern "C" int epoll_wait(int epfd, epoll_event* events, int maxevents,
    int timeout)
{
  epoll_wait_calls.fetch_add(1, std::memory_order_relaxed);
  return static_cast<int>(::syscall(SYS_epoll_pwait, epfd, events, maxevents,
        timeout, nullptr, 8));
}

using asio::ip::tcp;
using turnloop::error_code;
using turnloop::buffer_lease;
using turnloop::buffer_pool;
using turnloop::io_path;
using namespace std::chrono_literals;

namespace {

turnloop::config ring_config()
{
  turnloop::config c;
  c.pooled_buffers = 16;
  c.pooled_buffer_size = 1024;
  c.pooled_io = io_path::io_uring;
  return c;
}

using test::connections;

/// True once thread @p tid is blocked in io_uring_enter, as its /proc
/// entry tells; false at the deadline.
bool blocked_in_the_ring(pid_t tid)
{
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/syscall",
      static_cast<int>(tid));
  return test::wait_for([&] {
    std::FILE* f = std::fopen(path, "r");
    if (!f)
      return false;
    long number = -1;
    const int got = std::fscanf(f, "%ld", &number);
    std::fclose(f);
    return got == 1 && number == SYS_io_uring_enter;
  });
}

/// A loop run on a thread of its own, with one pooled read of
/// c.servers[0] in its ring that stays pending (its client sends nothing)
/// until stop() closes that socket, ending the loop's work.
struct waiting_loop
{
  turnloop::loop l{ring_config()};
  connections c{l, 2};
  std::atomic<pid_t> tid{0};
  std::atomic<bool> read_ended{false};
  std::thread runner;

  waiting_loop()
  {
    asio::post(l, [this] {
      tid = static_cast<pid_t>(::syscall(SYS_gettid));
      turnloop::async_read_pooled(*c.servers[0], [this](error_code,
            buffer_lease) { read_ended = true; });
    });
    runner = std::thread([this] { l.run(); });
  }

  ~waiting_loop()
  {
    stop();
  }

  void stop()
  {
    if (!runner.joinable())
      return;
    asio::post(l, [this] { c.servers[0]->close(); });
    runner.join();
  }

  bool blocked()
  {
    return test::wait_for([&] { return tid.load() != 0; })
      && blocked_in_the_ring(tid.load());
  }
};

} // namespace

// The ring's traffic wakes the loop through the ring: an echo of 200
// rounds, its client on another thread with blocking calls, makes at most
// one epoll_wait call a round, a poll that does not block. (The ring's
// sockets stay registered with epoll as Asio made them, so a message can
// wake epoll's descriptor too; when the next message is already there as
// the loop looks, epoll cannot tell it from a stock socket's.)
BOOST_AUTO_TEST_CASE(the_rings_traffic_costs_at_most_one_epoll_wait_a_round,
    *test::threads_label())
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config());
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  // The client's socket is not the loop's: its data must not wake the
  // loop's epoll.
  asio::io_context elsewhere;
  tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
  tcp::socket server(l);
  tcp::socket client_socket(elsewhere);
  client_socket.connect(acceptor.local_endpoint());
  acceptor.accept(server);
  test::pooled_echo_session session(server);
  asio::post(l, [&] { session.start(); });

  constexpr int rounds = 200;
  std::atomic<int> echoed{0};
  std::thread client([&] {
    tcp::socket& s = client_socket;
    std::string back(16, '\0');
    for (int i = 0; i != rounds; ++i)
    {
      const std::string message = "message " + std::to_string(1000 + i);
      asio::write(s, asio::buffer(message));
      asio::read(s, asio::buffer(back.data(), message.size()));
      if (back.compare(0, message.size(), message) == 0)
        ++echoed;
    }
    s.shutdown(tcp::socket::shutdown_both);
  });
  const unsigned long before = epoll_wait_calls.load();
  BOOST_TEST(test::run_until(l, [&] { return !!session.ended_with(); }));
  client.join();
  const unsigned long waits = epoll_wait_calls.load() - before;

  BOOST_TEST(echoed == rounds);
  BOOST_TEST(pool.stats().io_uring_waits);
  BOOST_TEST(waits <= rounds + rounds / 10u, waits << " epoll_wait calls");
  BOOST_TEST(l.stats().epoll_waits <= rounds + rounds / 10u);
  BOOST_TEST(pool.stats().io_uring_enters >= static_cast<unsigned>(rounds));
}

// A ping-pong on one loop: the client a stock socket, the server reading
// pooled and writing leases through the ring. A round trip needs one epoll
// run, for the client's socket; the message the ring reads also wakes
// epoll's descriptor (the server's socket is registered as Asio made it),
// and that wake costs no second one: the loop looks again, through the
// ring's renewed poll of epoll's descriptor, which finds nothing ready.
BOOST_AUTO_TEST_CASE(data_the_ring_reads_costs_no_epoll_run_of_its_own)
{
  if (test::io_uring_skipped())
    return;
  constexpr int rounds = 200;
  turnloop::loop l(ring_config());
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  tcp::socket& server = *c.servers[0];
  tcp::socket& client = *c.clients[0];
  int done = 0;
  char out[8] = "ping";
  char in[8];
  std::function<void()> serve = [&] {
    turnloop::async_read_pooled(server, [&](error_code ec,
          buffer_lease lease) {
      if (ec)
        return;
      turnloop::async_write_lease(server, std::move(lease),
          [&](error_code ec, std::size_t) {
            if (!ec)
              serve();
          });
    });
  };
  std::function<void()> round = [&] {
    asio::async_write(client, asio::buffer(out, 4),
        [&](error_code ec, std::size_t) {
          BOOST_TEST(!ec);
          asio::async_read(client, asio::buffer(in, 4),
              [&](error_code ec, std::size_t) {
                BOOST_TEST(!ec);
                if (++done != rounds)
                  round();
              });
        });
  };
  asio::post(l, [&] {
    serve();
    round();
  });
  // Warmed up (the ring set up, its wait on) before counting.
  BOOST_TEST_REQUIRE(test::run_until(l, [&] { return done == 10; }));
  const unsigned long before = epoll_wait_calls.load();
  const int from = done;
  BOOST_TEST_REQUIRE(test::run_until(l, [&] { return done == rounds; }));
  const unsigned long waits = epoll_wait_calls.load() - before;
  const unsigned long trips = static_cast<unsigned long>(rounds - from);
  BOOST_TEST(pool.stats().io_uring_waits);
  BOOST_TEST(waits <= trips + trips / 5, waits << " epoll_wait calls for "
      << trips << " round trips");
}

// A post from another thread reaches a loop blocked in the ring: it wakes
// epoll's interrupter, which the ring polls.
BOOST_AUTO_TEST_CASE(a_post_from_another_thread_wakes_a_loop_waiting_in_the_ring,
    *test::threads_label())
{
  if (test::io_uring_skipped())
    return;
  waiting_loop w;
  BOOST_TEST_REQUIRE(w.blocked());
  std::atomic<bool> ran{false};
  asio::post(w.l, [&] { ran = true; });
  BOOST_TEST(test::wait_for([&] { return ran.load(); }));
  BOOST_TEST(!w.read_ended);
  w.stop();
  BOOST_TEST(w.read_ended);
  BOOST_TEST(asio::use_service<buffer_pool>(w.l).stats().io_uring_waits);
}

// A timer ends a wait in the ring: Asio's timerfd is one of epoll's
// descriptors.
BOOST_AUTO_TEST_CASE(a_timer_ends_a_wait_in_the_ring,
    *test::threads_label())
{
  if (test::io_uring_skipped())
    return;
  waiting_loop w;
  BOOST_TEST_REQUIRE(w.blocked());
  asio::steady_timer timer(w.l);
  std::atomic<bool> fired{false};
  // Armed on the loop's thread, for a time well after the post has run.
  asio::post(w.l, [&] {
    timer.expires_after(50ms);
    timer.async_wait([&](error_code ec) { fired = !ec; });
  });
  BOOST_TEST_REQUIRE(w.blocked()); // back in the ring, the timer pending
  BOOST_TEST(test::wait_for([&] { return fired.load(); }));
  w.stop();
}

// Data on a socket Asio reads (on epoll) ends a wait in the ring.
BOOST_AUTO_TEST_CASE(data_on_an_asio_socket_ends_a_wait_in_the_ring,
    *test::threads_label())
{
  if (test::io_uring_skipped())
    return;
  waiting_loop w;
  char byte = 0;
  std::atomic<bool> got{false};
  asio::post(w.l, [&] {
    w.c.servers[1]->async_read_some(asio::buffer(&byte, 1),
        [&](error_code ec, std::size_t) { got = !ec && byte == 'a'; });
  });
  BOOST_TEST_REQUIRE(w.blocked());
  asio::write(*w.c.clients[1], asio::buffer("a", 1));
  BOOST_TEST(test::wait_for([&] { return got.load(); }));
  w.stop();
}

// run_for() ends at its time while the loop waits in the ring with nothing
// to do: the ring's wait takes the timeout.
BOOST_AUTO_TEST_CASE(run_for_ends_at_its_time_while_the_ring_waits,
    *test::threads_label())
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config());
  connections c(l, 1);
  bool ended = false;
  asio::post(l, [&] {
    turnloop::async_read_pooled(*c.servers[0], [&](error_code,
          buffer_lease) { ended = true; });
  });
  // Should the timeout be lost, this ends the test instead of hanging it.
  std::atomic<bool> done{false};
  std::thread guard([&] {
    if (!test::wait_for([&] { return done.load(); }))
      asio::post(l, [&] { c.servers[0]->close(); });
  });
  const auto start = std::chrono::steady_clock::now();
  l.run_for(200ms);
  const auto took = std::chrono::steady_clock::now() - start;
  done = true;
  guard.join();
  BOOST_TEST(!ended);
  BOOST_TEST(!l.stopped()); // returned at its time, with the read pending
  BOOST_TEST((took >= 190ms));
  BOOST_TEST((took < test::deadline));
  BOOST_TEST(asio::use_service<buffer_pool>(l).stats().io_uring_waits);
}

// Where the ring must not wait (here: under Valgrind, as its launcher's
// preload tells), epoll waits as before, and the echo works the same.
BOOST_AUTO_TEST_CASE(under_valgrind_the_loop_waits_in_epoll)
{
  if (test::io_uring_skipped())
    return;
  const char* old = std::getenv("LD_PRELOAD");
  const std::string saved = old ? old : "";
  ::setenv("LD_PRELOAD", "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so",
      1);
  struct restore
  {
    const char* old;
    const std::string& saved;
    ~restore()
    {
      if (old)
        ::setenv("LD_PRELOAD", saved.c_str(), 1);
      else
        ::unsetenv("LD_PRELOAD");
    }
  } restore_at_end{old, saved}; // the ring is set up at the first read
  turnloop::loop l(ring_config());
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  std::string got;
  asio::post(l, [&] {
    turnloop::async_read_pooled(*c.servers[0], [&](error_code ec,
          buffer_lease lease) {
      BOOST_TEST(!ec);
      got.assign(static_cast<const char*>(lease.data().data()),
          lease.data().size());
    });
  });
  asio::write(*c.clients[0], asio::buffer("epoll", 5));
  BOOST_TEST(test::run_until(l, [&] { return got == "epoll"; }));
  BOOST_TEST((pool.stats().path == io_path::io_uring));
  BOOST_TEST(!pool.stats().io_uring_waits);
}

#else // defined(TURNLOOP_HAS_IO_URING_PATH)

BOOST_AUTO_TEST_CASE(turnloops_io_uring_path,
    * test::only_where(false, "turnloop's io_uring path needs Linux with "
      "Asio's epoll reactor; without it config::pooled_io = io_uring is "
      "refused (test/config.cpp)"))
{
}

#endif // defined(TURNLOOP_HAS_IO_URING_PATH)

#endif // defined(_WIN32)
