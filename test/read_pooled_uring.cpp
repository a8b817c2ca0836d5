//
// read_pooled_uring.cpp
//
// Pooled reads through the pool's io_uring (config::pooled_io): the path
// is chosen and reported, the ring's buffers stay within their bounds,
// close(), cancel() and cancellation slots reach a receive in the kernel,
// nothing is lost or leaked when the loop goes with receives in flight, and
// a refused io_uring falls back to epoll (or, when required, is refused at
// construction). read_pooled.cpp's cases also run on this path.
//
// These cases need a kernel that lets this process use io_uring, as the
// machines this project builds on do; TURNLOOP_TEST_NO_IO_URING=1 skips them
// where it cannot (a container whose seccomp profile refuses io_uring).
//

#if defined(_WIN32)
// Nothing of this module exists on Windows: one case says so.
#define BOOST_TEST_MODULE read_pooled_uring
#include <boost/test/unit_test.hpp>

#include "support.hpp"

BOOST_AUTO_TEST_CASE(this_module_tests_what_only_linux_has,
    * test::only_where(false, "turnloop's io_uring path (Linux)"))
{
}

#else // defined(_WIN32)

#define BOOST_TEST_MODULE read_pooled_uring
#include <boost/test/unit_test.hpp>

#include <turnloop/read_pooled.hpp>
#include <turnloop/write_lease.hpp>
#include <turnloop/detail/uring/uring_ring.hpp>

#include "asio.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/resource.h>

#include "pooled_echo.hpp"
#include "support.hpp"

// The whole module is about turnloop's io_uring path (detail/platform.hpp).
#if defined(TURNLOOP_HAS_IO_URING_PATH)

using asio::ip::tcp;
using turnloop::error_code;
using turnloop::buffer_lease;
using turnloop::buffer_pool;
using turnloop::io_path;

namespace {

turnloop::config ring_config(std::size_t buffers, std::size_t size,
    io_path path = io_path::io_uring)
{
  turnloop::config c;
  c.pooled_buffers = buffers;
  c.pooled_buffer_size = size;
  c.pooled_io = path;
  return c;
}

using test::connections;
using test::echo_client;
using echo_session = test::pooled_echo_session;

// The bytes a lease holds.
std::string text_of(const buffer_lease& lease)
{
  return std::string(static_cast<const char*>(lease.data().data()),
      lease.size());
}

// Starts a pooled read of @p s that expects no error and appends what it
// reads to @p got.
void read_into(tcp::socket& s, std::string& got)
{
  turnloop::async_read_pooled(s, [&got](error_code ec, buffer_lease lease) {
    BOOST_TEST(!ec);
    got += text_of(lease);
  });
}

// Pooled reads of one socket after another (start() each), noting how many
// ended, the last one's error and the text the last lease held.
struct reads_of
{
  error_code last;
  int count = 0;
  std::string got;

  void start(tcp::socket& s)
  {
    turnloop::async_read_pooled(s, [this](error_code ec, buffer_lease lease) {
      last = ec;
      ++count;
      if (lease)
        got = text_of(lease);
    });
  }
};

// Starts a read of @p s and lets it reach the kernel, then closes @p s: the
// read ends with operation_aborted.
void close_ends_a_read(turnloop::loop& l, tcp::socket& s, reads_of& reads)
{
  const int before = reads.count;
  asio::post(l, [&] { reads.start(s); });
  for (int i = 0; i != 5; ++i)
    l.poll();
  asio::post(l, [&] { s.close(); });
  BOOST_TEST(test::run_until(l, [&] { return reads.count == before + 1; }));
  BOOST_TEST(reads.last == asio::error::operation_aborted);
}

// A lease from @p pool holding @p size bytes, each @p byte.
buffer_lease make_lease(buffer_pool& pool, std::size_t size, char byte)
{
  buffer_lease lease = pool.try_lease();
  std::memset(lease.storage().data(), byte, size);
  lease.resize(size);
  return lease;
}

// Connection 0's server sends into a socket buffer of @p bytes, its client
// receives into one, and the server's socket is non-blocking: a large write
// fills them and the rest waits.
void throttle(connections& c, int bytes)
{
  c.servers[0]->set_option(asio::socket_base::send_buffer_size(bytes));
  c.clients[0]->set_option(asio::socket_base::receive_buffer_size(bytes));
  c.servers[0]->non_blocking(true);
}

int refuse_with_eperm() noexcept
{
  return EPERM;
}

struct refusal_scope
{
  refusal_scope() { turnloop::detail::uring_setup_refusal = &refuse_with_eperm; }
  ~refusal_scope() { turnloop::detail::uring_setup_refusal = nullptr; }
};

} // namespace

// The path is decided at the first pooled read of a socket: before it the
// loop has no ring; after it, stats() says io_uring.
BOOST_AUTO_TEST_CASE(the_first_pooled_read_sets_the_ring_up)
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config(8, 512, io_path::automatic));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  BOOST_TEST((pool.stats().path == io_path::automatic));
  connections c(l, 1);
  std::string got;
  // Started off the loop's thread: the reactor's read. The next one, from
  // its completion on the loop's thread, the ring's.
  turnloop::async_read_pooled(*c.servers[0], [&](error_code ec,
        buffer_lease lease) {
    BOOST_TEST(!ec);
    got = text_of(lease);
    BOOST_TEST((pool.stats().path == io_path::automatic));
    read_into(*c.servers[0], got);
  });
  asio::write(*c.clients[0], asio::buffer("hello", 5));
  BOOST_TEST(test::run_until(l, [&] { return got == "hello"; }));
  BOOST_TEST((pool.stats().path == io_path::io_uring));
  BOOST_TEST(pool.stats().io_uring_error == 0);
  asio::write(*c.clients[0], asio::buffer(" ring", 5));
  BOOST_TEST(test::run_until(l, [&] { return got == "hello ring"; }));
  BOOST_TEST(pool.stats().leased == 0u);
}

// Byte-exact echo over 48 connections with 8 buffers of 512 bytes and
// messages up to 1 KiB: every read delivers (many wait for a buffer), and
// every buffer comes back.
BOOST_AUTO_TEST_CASE(many_connections_echo_byte_exact_through_the_ring)
{
  if (test::io_uring_skipped())
    return;
  constexpr std::size_t count = 48;
  constexpr int rounds = 40;
  turnloop::loop l(ring_config(8, 512));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, count);
  std::vector<std::unique_ptr<echo_session>> servers;
  std::vector<std::unique_ptr<echo_client>> clients;
  asio::post(l, [&] {
    for (std::size_t i = 0; i != count; ++i)
    {
      servers.push_back(std::make_unique<echo_session>(*c.servers[i]));
      clients.push_back(std::make_unique<echo_client>(*c.clients[i], rounds,
            static_cast<std::uint32_t>(i + 3), 1024));
      servers.back()->start();
      clients.back()->start();
    }
  });
  BOOST_TEST(test::run_until(l, [&] {
    for (auto& s : servers)
      if (!s->ended_with())
        return false;
    return servers.size() == count;
  }));
  for (std::size_t i = 0; i != count; ++i)
  {
    BOOST_TEST(clients[i]->done() == rounds);
    BOOST_TEST(clients[i]->mismatches() == 0);
    BOOST_TEST(servers[i]->ended_with() == asio::error::eof);
  }
  const turnloop::buffer_pool_stats s = pool.stats();
  BOOST_TEST((s.path == io_path::io_uring));
  BOOST_TEST(s.leased == 0u);
  BOOST_TEST(s.minted <= 8u);
  BOOST_TEST(s.waits > 0u);
}

// Reads waiting for data mint nothing and hold nothing; the ring holds no
// more free buffers than there are reads in flight.
BOOST_AUTO_TEST_CASE(idle_reads_mint_nothing_and_the_ring_stays_within_reads)
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config(64, 512));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 16);
  int received = 0;
  asio::post(l, [&] {
    for (auto& s : c.servers)
      turnloop::async_read_pooled(*s, [&](error_code ec, buffer_lease) {
        BOOST_TEST(!ec);
        ++received;
      });
  });
  for (int i = 0; i != 20; ++i)
    l.poll();
  BOOST_TEST((pool.stats().path == io_path::io_uring));
  BOOST_TEST(pool.stats().minted == 0u);
  BOOST_TEST(pool.stats().in_ring == 0u);
  // Data on 4 connections: 4 buffers minted, lent, read into and returned;
  // the 12 reads still waiting may find them in the ring.
  for (int i = 0; i != 4; ++i)
    asio::write(*c.clients[i], asio::buffer("x", 1));
  BOOST_TEST(test::run_until(l, [&] { return received == 4; }));
  l.poll();
  const turnloop::buffer_pool_stats s = pool.stats();
  BOOST_TEST(s.minted <= 4u);
  BOOST_TEST(s.leased == 0u);
  BOOST_TEST(s.in_ring <= 12u);
  BOOST_TEST(s.in_ring + s.leased <= s.minted);
}

// A fast sender and a reader that keeps its leases: the connection holds
// one buffer per read it asked for, the rest of the pool stays free for
// others, and nothing is lost: the data waits in the socket.
BOOST_AUTO_TEST_CASE(a_fast_sender_cannot_drain_the_pool_behind_a_slow_reader)
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config(8, 256));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 2);
  std::vector<char> flood(64 * 1024, 'x');
  std::vector<buffer_lease> kept;
  int reads = 0;
  std::function<void()> read_one = [&] {
    turnloop::async_read_pooled(*c.servers[0], [&](error_code ec,
          buffer_lease lease) {
      BOOST_TEST(!ec);
      kept.push_back(std::move(lease));
      ++reads;
    });
  };
  asio::post(l, read_one);
  std::thread sender([&] {
    error_code ec;
    asio::write(*c.clients[0], asio::buffer(flood), ec);
  });
  BOOST_TEST(test::run_until(l, [&] { return reads == 1; }));
  // Turns go by with the socket full of data and no read asked for.
  for (int i = 0; i != 50; ++i)
    l.poll();
  BOOST_TEST(reads == 1);
  BOOST_TEST(pool.stats().leased == 1u);
  // A second connection is served meanwhile.
  std::string other;
  asio::post(l, [&] { read_into(*c.servers[1], other); });
  asio::write(*c.clients[1], asio::buffer("other", 5));
  BOOST_TEST(test::run_until(l, [&] { return other == "other"; }));
  // Reading the rest, one read at a time, gets every byte.
  std::size_t total = kept[0].size();
  kept.clear();
  std::function<void()> drain = [&] {
    turnloop::async_read_pooled(*c.servers[0], [&](error_code ec,
          buffer_lease lease) {
      if (ec)
        return;
      total += lease.size();
      BOOST_TEST(pool.stats().leased <= 1u);
      if (total < flood.size())
        drain();
    });
  };
  asio::post(l, drain);
  BOOST_TEST(test::run_until(l, [&] { return total == flood.size(); }));
  sender.join();
  BOOST_TEST(pool.stats().minted <= 8u);
}

// close() and cancel() reach a receive waiting in the kernel, through the
// socket's watcher; a cancellation slot reaches it directly. Each ends with
// operation_aborted, holding no buffer.
BOOST_AUTO_TEST_CASE(close_cancel_and_slots_end_a_receive_in_the_kernel)
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config(4, 256));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 3);
  error_code by_close, by_cancel, by_slot;
  int ended = 0;
  asio::cancellation_signal signal;
  asio::post(l, [&] {
    turnloop::async_read_pooled(*c.servers[0], [&](error_code ec,
          buffer_lease lease) {
      by_close = ec;
      BOOST_TEST(!lease);
      ++ended;
    });
    turnloop::async_read_pooled(*c.servers[1], [&](error_code ec,
          buffer_lease lease) {
      by_cancel = ec;
      BOOST_TEST(!lease);
      ++ended;
    });
    turnloop::async_read_pooled(*c.servers[2], asio::bind_cancellation_slot(
          signal.slot(), [&](error_code ec, buffer_lease lease) {
            by_slot = ec;
            BOOST_TEST(!lease);
            ++ended;
          }));
  });
  for (int i = 0; i != 5; ++i)
    l.poll();
  BOOST_TEST(ended == 0);
  BOOST_TEST((pool.stats().path == io_path::io_uring));
  asio::post(l, [&] {
    c.servers[0]->close();
    c.servers[1]->cancel();
    signal.emit(asio::cancellation_type::terminal);
  });
  BOOST_TEST(test::run_until(l, [&] { return ended == 3; }));
  BOOST_TEST(by_close == asio::error::operation_aborted);
  BOOST_TEST(by_cancel == asio::error::operation_aborted);
  BOOST_TEST(by_slot == asio::error::operation_aborted);
  BOOST_TEST(pool.stats().leased == 0u);

  // The cancelled sockets still read afterwards.
  std::string got;
  asio::post(l, [&] { read_into(*c.servers[1], got); });
  asio::write(*c.clients[1], asio::buffer("again", 5));
  BOOST_TEST(test::run_until(l, [&] { return got == "again"; }));
}

// The loop destroyed with receives waiting in the kernel, and one whose
// data arrived but whose completion has not run: every handler is destroyed
// unrun, and no buffer leaks (AddressSanitizer's leak check).
BOOST_AUTO_TEST_CASE(receives_in_flight_die_with_their_loop)
{
  if (test::io_uring_skipped())
    return;
  auto alive = std::make_shared<int>(0);
  std::weak_ptr<int> watch = alive;
  int ran = 0;
  {
    turnloop::loop l(ring_config(4, 256));
    connections c(l, 3);
    asio::post(l, [&, alive]() mutable {
      for (auto& s : c.servers)
        turnloop::async_read_pooled(*s, [&ran, alive](error_code,
              buffer_lease) { ++ran; });
    });
    for (int i = 0; i != 5; ++i)
      l.poll();
    asio::write(*c.clients[0], asio::buffer("data", 4));
    alive.reset();
    BOOST_TEST(!watch.expired());
  }
  BOOST_TEST(watch.expired());
  BOOST_TEST(ran <= 1);
}

// stats() names the path the pool chose even once the ring has gone at
// shutdown: asked from the destructor of a receive's handler, which the
// ring's teardown destroys unrun.
BOOST_AUTO_TEST_CASE(stats_name_the_path_after_the_ring_has_gone)
{
  if (test::io_uring_skipped())
    return;
  struct records_path_when_destroyed
  {
    turnloop::loop* l;
    io_path* seen;
    records_path_when_destroyed(turnloop::loop& l, io_path& seen)
      : l(&l), seen(&seen) {}
    records_path_when_destroyed(records_path_when_destroyed&& o) noexcept
      : l(std::exchange(o.l, nullptr)), seen(o.seen) {}
    ~records_path_when_destroyed()
    {
      if (l)
        *seen = asio::use_service<buffer_pool>(*l).stats().path;
    }
    void operator()(error_code, buffer_lease) {}
  };
  io_path seen = io_path::automatic;
  {
    turnloop::loop l(ring_config(4, 256));
    connections c(l, 1);
    asio::post(l, [&] {
      turnloop::async_read_pooled(*c.servers[0],
          records_path_when_destroyed(l, seen));
    });
    BOOST_TEST(test::run_until(l, [&] {
      return asio::use_service<buffer_pool>(l).stats().path
        == io_path::io_uring;
    }));
  }
  BOOST_TEST((seen == io_path::io_uring));
}

// Leases released on other threads while receives wait in the kernel come
// back to the loop (and to the ring), none lost.
BOOST_AUTO_TEST_CASE(leases_released_on_other_threads_return_to_the_ring,
    *test::threads_label())
{
  if (test::io_uring_skipped())
    return;
  constexpr int messages = 200;
  turnloop::loop l(ring_config(4, 128));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  std::atomic<int> released{0};
  std::vector<std::thread> releasers;
  std::atomic<int> received{0};
  std::function<void()> read = [&] {
    turnloop::async_read_pooled(*c.servers[0], [&](error_code ec,
          buffer_lease lease) {
      if (ec)
        return;
      received.fetch_add(1);
      releasers.emplace_back([&, lease = std::move(lease)]() mutable {
        lease = buffer_lease();
        released.fetch_add(1);
      });
      if (received.load() < messages)
        read();
    });
  };
  asio::post(l, read);
  std::thread writer([&] {
    for (int i = 0; i != messages; ++i)
    {
      char byte = static_cast<char>(i);
      asio::write(*c.clients[0], asio::buffer(&byte, 1));
      // One byte at a time, each read before the next is written.
      test::wait_for([&] { return received.load() > i; });
    }
  });
  BOOST_TEST(test::run_until(l, [&] {
    return received.load() == messages && released.load() == messages;
  }));
  writer.join();
  for (auto& t : releasers)
    t.join();
  l.poll();
  BOOST_TEST(pool.stats().leased == 0u);
  BOOST_TEST(pool.stats().minted <= 4u);
}

// Refused (as seccomp or an old kernel would refuse it), io_uring is not
// used: `automatic` reads through epoll and says why; `io_uring`, required,
// is refused at construction with the system's error.
BOOST_AUTO_TEST_CASE(a_refused_io_uring_falls_back_to_epoll_or_is_refused)
{
  refusal_scope refused;
  {
    turnloop::loop l(ring_config(4, 256, io_path::automatic));
    buffer_pool& pool = asio::use_service<buffer_pool>(l);
    connections c(l, 1);
    std::string got;
    asio::post(l, [&] { read_into(*c.servers[0], got); });
    asio::write(*c.clients[0], asio::buffer("epoll", 5));
    BOOST_TEST(test::run_until(l, [&] { return got == "epoll"; }));
    BOOST_TEST((pool.stats().path == io_path::epoll));
    BOOST_TEST(pool.stats().io_uring_error == EPERM);
  }
  try
  {
    turnloop::loop l(ring_config(4, 256, io_path::io_uring));
    BOOST_TEST(false, "a required io_uring that is refused must throw");
  }
  catch (const turnloop::system_error& e)
  {
    BOOST_TEST(e.code().value() == EPERM);
    BOOST_TEST(std::string(e.what()).find("pooled_io") != std::string::npos);
  }
}

// Configured epoll: no ring, whatever the system allows.
BOOST_AUTO_TEST_CASE(configured_epoll_sets_no_ring_up)
{
  turnloop::loop l(ring_config(4, 256, io_path::epoll));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  bool done = false;
  asio::post(l, [&] {
    turnloop::async_read_pooled(*c.servers[0], [&](error_code ec,
          buffer_lease) {
      BOOST_TEST(!ec);
      done = true;
    });
  });
  asio::write(*c.clients[0], asio::buffer("x", 1));
  BOOST_TEST(test::run_until(l, [&] { return done; }));
  BOOST_TEST((pool.stats().path == io_path::epoll));
  BOOST_TEST(pool.stats().io_uring_error == 0);
}

// io_uring's bounds are checked with the rest of the configuration.
BOOST_AUTO_TEST_CASE(io_uring_with_too_many_buffers_is_an_invalid_config)
{
  turnloop::config c = ring_config(40000, 64);
  error_code ec;
  c.validate(ec);
  BOOST_TEST(ec == turnloop::error::invalid_config);
  c.pooled_io = io_path::automatic;
  c.validate(ec);
  BOOST_TEST(!ec);
}

// The echo pattern end to end on the ring: read pooled, write the lease.
// Every byte comes back, each buffer returns when its write ends, and the
// turn's receives and sends go in io_uring system calls, not one recv and
// one send each.
BOOST_AUTO_TEST_CASE(writing_leases_back_echoes_through_the_ring)
{
  if (test::io_uring_skipped())
    return;
  constexpr std::size_t count = 16;
  constexpr int rounds = 30;
  turnloop::loop l(ring_config(8, 512));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, count);
  long writes = 0;
  auto write_lease = [&](tcp::socket& socket, buffer_lease lease,
      std::function<void(error_code)> next) {
    const std::size_t size = lease.size();
    turnloop::async_write_lease(socket, std::move(lease),
        [&writes, size, next](error_code ec, std::size_t n) {
          BOOST_TEST(!ec);
          BOOST_TEST(n == size);
          ++writes;
          next(ec);
        });
  };
  std::vector<std::unique_ptr<echo_session>> servers;
  std::vector<std::unique_ptr<echo_client>> clients;
  asio::post(l, [&] {
    for (std::size_t i = 0; i != count; ++i)
    {
      servers.push_back(std::make_unique<echo_session>(*c.servers[i],
            write_lease));
      clients.push_back(std::make_unique<echo_client>(*c.clients[i], rounds,
            static_cast<std::uint32_t>(i + 11), 1500));
      servers.back()->start();
      clients.back()->start();
    }
  });
  BOOST_TEST(test::run_until(l, [&] {
    for (auto& s : servers)
      if (!s->ended_with())
        return false;
    return servers.size() == count;
  }));
  for (std::size_t i = 0; i != count; ++i)
  {
    BOOST_TEST(clients[i]->done() == rounds);
    BOOST_TEST(clients[i]->mismatches() == 0);
    BOOST_TEST(servers[i]->ended_with() == asio::error::eof);
  }
  BOOST_TEST(writes >= static_cast<long>(count) * rounds);
  BOOST_TEST(pool.stats().leased == 0u);
  BOOST_TEST(pool.stats().minted <= 8u);
}

// A write of a lease on a socket whose peer has gone ends with the system's
// error, and the lease still goes back.
BOOST_AUTO_TEST_CASE(a_lease_written_to_a_closed_peer_reports_and_returns)
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config(2, 4096));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  c.clients[0]->set_option(asio::socket_base::linger(true, 0));
  c.clients[0]->close(); // a reset
  error_code got;
  int writes = 0;
  std::function<void()> write_one = [&] {
    turnloop::async_write_lease(*c.servers[0], make_lease(pool, 4096, 'y'),
        [&](error_code ec, std::size_t) {
          ++writes;
          if (ec)
            got = ec;
          else
            write_one();
        });
  };
  asio::post(l, write_one);
  BOOST_TEST(test::run_until(l, [&] { return !!got; }));
  BOOST_TEST((got == asio::error::connection_reset
        || got == asio::error::broken_pipe));
  BOOST_TEST(pool.stats().leased == 0u);
}

// A send the socket takes only in part goes on from where it stopped: a
// 1 MiB lease through a non-blocking socket with 64 KiB buffers arrives
// whole and in order. (With 4 KiB buffers each round waited for a delayed
// acknowledgement, and the case took 18 s.)
BOOST_AUTO_TEST_CASE(a_short_send_goes_on_from_where_it_stopped)
{
  if (test::io_uring_skipped())
    return;
  constexpr std::size_t size = 1 << 20;
  turnloop::loop l(ring_config(1, size));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  throttle(c, 65536);
  std::vector<char> in(size);
  error_code wrote, read;
  std::size_t written = 0, received = 0;
  bool write_done = false, read_done = false;
  asio::post(l, [&] {
    buffer_lease lease = pool.try_lease();
    auto* bytes = static_cast<unsigned char*>(lease.storage().data());
    for (std::size_t i = 0; i != size; ++i)
      bytes[i] = static_cast<unsigned char>(i * 7 + i / 4096);
    lease.resize(size);
    turnloop::async_write_lease(*c.servers[0], std::move(lease),
        [&](error_code ec, std::size_t n) {
          wrote = ec;
          written = n;
          write_done = true;
        });
    asio::async_read(*c.clients[0], asio::buffer(in),
        [&](error_code ec, std::size_t n) {
          read = ec;
          received = n;
          read_done = true;
        });
  });
  BOOST_TEST(test::run_until(l, [&] { return write_done && read_done; }));
  BOOST_TEST(!wrote);
  BOOST_TEST(written == size);
  BOOST_TEST(!read);
  BOOST_TEST(received == size);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i != size; ++i)
    if (static_cast<unsigned char>(in[i])
        != static_cast<unsigned char>(i * 7 + i / 4096))
      ++wrong;
  BOOST_TEST(wrong == 0u);
  BOOST_TEST(pool.stats().leased == 0u);
}

// A lease write stuck on a peer that does not read ends with
// operation_aborted when its cancellation slot is emitted, and when the
// socket is closed; either way its buffer goes back.
BOOST_AUTO_TEST_CASE(a_stuck_lease_write_ends_by_its_slot_or_by_close)
{
  if (test::io_uring_skipped())
    return;
  constexpr std::size_t size = 1 << 20;
  for (const bool by_close : {false, true})
  {
    turnloop::loop l(ring_config(1, size));
    buffer_pool& pool = asio::use_service<buffer_pool>(l);
    connections c(l, 1);
    throttle(c, 4096);
    asio::cancellation_signal signal;
    error_code got;
    std::size_t written = size;
    bool done = false;
    asio::post(l, [&] {
      turnloop::async_write_lease(*c.servers[0], make_lease(pool, size, 'w'),
          asio::bind_cancellation_slot(signal.slot(),
            [&](error_code ec, std::size_t n) {
              got = ec;
              written = n;
              done = true;
            }));
    });
    // The socket's buffers fill; the rest of the send waits in the kernel.
    for (int i = 0; i != 20; ++i)
      l.poll();
    BOOST_TEST(!done);
    BOOST_TEST(pool.stats().leased == 1u);
    if (by_close)
      c.servers[0]->close();
    else
      signal.emit(asio::cancellation_type::terminal);
    BOOST_TEST(test::run_until(l, [&] { return done; }));
    BOOST_TEST((got == asio::error::operation_aborted), "by close: " << by_close
        << ", " << got.message());
    BOOST_TEST(written < size);
    BOOST_TEST(pool.stats().leased == 0u);
  }
}

// Data that finds the ring empty with the pool at its ceiling waits for a
// lease to come back, then arrives whole: one buffer, two connections, the
// first read's lease held while the second connection's data arrives.
BOOST_AUTO_TEST_CASE(data_at_the_ceiling_waits_for_a_returned_lease)
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config(1, 256));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 2);
  buffer_lease held;
  std::string second;
  bool first_done = false;
  asio::post(l, [&] {
    turnloop::async_read_pooled(*c.servers[0], [&](error_code ec,
          buffer_lease lease) {
      BOOST_TEST(!ec);
      held = std::move(lease);
      first_done = true;
    });
  });
  asio::write(*c.clients[0], asio::buffer("first", 5));
  BOOST_TEST(test::run_until(l, [&] { return first_done; }));
  BOOST_TEST(pool.stats().leased == 1u);
  asio::post(l, [&] { read_into(*c.servers[1], second); });
  asio::write(*c.clients[1], asio::buffer("second", 6));
  BOOST_TEST(test::run_until(l, [&] { return pool.stats().waiting == 1u; }));
  BOOST_TEST(second.empty());
  BOOST_TEST(pool.stats().minted == 1u);
  held = buffer_lease();
  BOOST_TEST(test::run_until(l, [&] { return !second.empty(); }));
  BOOST_TEST(second == "second");
  BOOST_TEST(pool.stats().waits >= 1u);
  BOOST_TEST(pool.stats().leased == 0u);
}

// An operation started and its socket closed in the same turn never reaches
// the kernel: closing frees the descriptor's number, which the next socket
// takes at once, and the entry still queued for the next submission must
// not then write to that other connection. Here the new connection's client
// takes the number; its server must receive nothing.
BOOST_AUTO_TEST_CASE(a_write_whose_socket_closed_before_submission_goes_nowhere)
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config(2, 4096));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
  tcp::socket reuse_client(l);
  tcp::socket reuse_server(l);
  int closed_fd = -1;
  error_code got;
  bool done = false;
  asio::post(l, [&] {
    turnloop::async_write_lease(*c.servers[0], make_lease(pool, 64, 'L'),
        [&](error_code ec, std::size_t) {
          got = ec;
          done = true;
        });
    closed_fd = c.servers[0]->native_handle();
    c.servers[0]->close();
    reuse_client.open(tcp::v4());
    reuse_client.connect(acceptor.local_endpoint());
    acceptor.accept(reuse_server);
  });
  BOOST_TEST(test::run_until(l, [&] { return done; }));
  BOOST_TEST_REQUIRE(reuse_client.native_handle() == closed_fd);
  BOOST_TEST((got == asio::error::operation_aborted), got.message());
  // Whatever the kernel was given has been done by now: the write's
  // completion came after the submission that carried it.
  BOOST_TEST(reuse_server.available() == 0u);
  BOOST_TEST(pool.stats().leased == 0u);
}

// A socket's watcher stays queued between its operations, and the next one
// finds it by descriptor number. Once cancel() has aborted it, an operation
// started before its completion has run must get a new one: listed on the
// aborted watcher, it would be aborted with it (or, after close(), never).
BOOST_AUTO_TEST_CASE(a_read_after_cancel_is_not_ended_by_the_cancelled_watcher)
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config(4, 256));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  tcp::socket& server = *c.servers[0];
  reads_of reads;

  // Reads that share the socket's watcher.
  for (int round = 0; round != 3; ++round)
  {
    const std::string message = "round " + std::to_string(round);
    asio::post(l, [&] { reads.start(server); });
    asio::write(*c.clients[0], asio::buffer(message));
    BOOST_TEST_REQUIRE(test::run_until(l, [&] { return reads.got == message; }));
  }
  BOOST_TEST((pool.stats().path == io_path::io_uring));

  // One read cancelled, and another started in the same handler.
  reads_of cancelled;
  asio::post(l, [&] {
    cancelled.start(server);
    server.cancel();
    reads.start(server);
  });
  BOOST_TEST_REQUIRE(test::run_until(l, [&] { return cancelled.count == 1; }));
  BOOST_TEST(cancelled.last == asio::error::operation_aborted);
  for (int i = 0; i != 5; ++i)
    l.poll();
  BOOST_TEST(reads.count == 3); // the read after cancel() still waits
  asio::write(*c.clients[0], asio::buffer("after cancel", 12));
  BOOST_TEST(test::run_until(l, [&] { return reads.count == 4; }));
  BOOST_TEST(!reads.last);
  BOOST_TEST(reads.got == "after cancel");

  // And close() reaches the read that the new watcher lists.
  close_ends_a_read(l, server, reads);
  BOOST_TEST(pool.stats().leased == 0u);
}

// A socket closed with a watcher queued, and a new one given its descriptor
// number at once: the new socket's reads get a watcher of their own, so its
// close() ends them, and the old socket's watcher, when it completes, leaves
// the new one in place.
BOOST_AUTO_TEST_CASE(a_socket_given_a_closed_sockets_number_gets_its_own_watcher)
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config(4, 256));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
  tcp::socket reuse_client(l, tcp::v4()); // open now: the server's socket,
  tcp::socket reuse_server(l);            // accepted later, takes the number

  reads_of old_reads;
  asio::post(l, [&] { old_reads.start(*c.servers[0]); });
  asio::write(*c.clients[0], asio::buffer("first", 5));
  BOOST_TEST_REQUIRE(test::run_until(l, [&] { return old_reads.count == 1; }));
  BOOST_TEST(old_reads.got == "first");

  // The old socket's watcher is queued, its reads done; closing it and
  // accepting a socket that takes its number, with a read started on the
  // new socket before the old watcher's completion can run.
  int closed_fd = -1;
  reads_of new_reads;
  asio::post(l, [&] {
    closed_fd = c.servers[0]->native_handle();
    c.servers[0]->close();
    reuse_client.connect(acceptor.local_endpoint());
    acceptor.accept(reuse_server);
    new_reads.start(reuse_server);
  });
  for (int i = 0; i != 5; ++i)
    l.poll();
  BOOST_TEST_REQUIRE(reuse_server.native_handle() == closed_fd);
  BOOST_TEST(new_reads.count == 0);

  asio::write(reuse_client, asio::buffer("second", 6));
  BOOST_TEST(test::run_until(l, [&] { return new_reads.count == 1; }));
  BOOST_TEST(!new_reads.last);
  BOOST_TEST(new_reads.got == "second");

  // The new watcher, still queued, lists the next read; close() ends it.
  close_ends_a_read(l, reuse_server, new_reads);
  BOOST_TEST(pool.stats().leased == 0u);
}

// A read started while the pool has a free buffer lends it to the ring at
// once, so the data finds a buffer in the ring rather than an empty one
// (which costs a second submission): the echo pattern, where the lease of
// the read before goes back after the next read was asked for, keeps one
// buffer going round.
BOOST_AUTO_TEST_CASE(a_read_lends_the_ring_a_free_buffer_when_it_starts)
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config(4, 256));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  reads_of reads;

  asio::post(l, [&] { reads.start(*c.servers[0]); });
  asio::write(*c.clients[0], asio::buffer("one", 3));
  BOOST_TEST_REQUIRE(test::run_until(l, [&] { return reads.count == 1; }));
  BOOST_TEST(pool.stats().minted == 1u);
  BOOST_TEST(pool.stats().leased == 0u); // the lease died with the handler
  BOOST_TEST(pool.stats().in_ring == 0u);

  asio::post(l, [&] { reads.start(*c.servers[0]); });
  l.poll();
  BOOST_TEST(pool.stats().in_ring == 1u);
  asio::write(*c.clients[0], asio::buffer("two", 3));
  BOOST_TEST(test::run_until(l, [&] { return reads.count == 2; }));
  BOOST_TEST(!reads.last);
  BOOST_TEST(reads.got == "two");
  BOOST_TEST(pool.stats().minted == 1u);
  BOOST_TEST(pool.stats().in_ring == 0u);
}

// A socket's watcher stays queued on it between reads, but it is not work:
// once the reads are done, run() returns, as io_context's does when no
// operation is pending. (Queued reactor operations count as the
// scheduler's work; the watcher gives its unit back.)
BOOST_AUTO_TEST_CASE(a_socket_read_through_the_ring_does_not_keep_run_going)
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config(4, 256));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  reads_of reads;
  // On the loop's thread: through the ring.
  asio::post(l, [&] { reads.start(*c.servers[0]); });
  asio::write(*c.clients[0], asio::buffer("only", 4));
  // Out of work, run_for() returns before its time and leaves the loop
  // stopped; at its time, not stopped.
  l.run_for(test::deadline);
  BOOST_TEST(l.stopped());
  BOOST_TEST(reads.got == "only");
  BOOST_TEST((pool.stats().path == io_path::io_uring));

  // And the watcher, still queued, ends with the socket's close().
  l.restart();
  asio::post(l, [&] {
    reads.start(*c.servers[0]);
    asio::post(l, [&] { c.servers[0]->close(); });
  });
  l.run_for(test::deadline);
  BOOST_TEST(l.stopped());
  BOOST_TEST(reads.count == 2);
  BOOST_TEST(reads.last == asio::error::operation_aborted);
}

namespace {

// Every buffer of @p pool minted, then all free again.
void mint_all(buffer_pool& pool, std::size_t count)
{
  std::vector<buffer_lease> all;
  for (std::size_t i = 0; i != count; ++i)
    all.push_back(pool.try_lease());
  BOOST_TEST_REQUIRE(pool.stats().minted == count);
}

// With @p count buffers, every one minted and free: a pooled read of each
// of the first @p count servers, each lent a buffer as it starts; all but
// @p waiting (of servers[0]) end at the end of their streams, leaving the
// buffers lent for them in the ring.
void end_all_reads_but_one(turnloop::loop& l, buffer_pool& pool,
    connections& c, std::size_t count, reads_of& waiting)
{
  mint_all(pool, count);
  int ended = 0;
  asio::post(l, [&] {
    waiting.start(*c.servers[0]);
    for (std::size_t i = 1; i != count; ++i)
      turnloop::async_read_pooled(*c.servers[i], [&](error_code ec,
            buffer_lease) {
        BOOST_TEST(ec == asio::error::eof);
        ++ended;
      });
  });
  for (int i = 0; i != 5; ++i)
    l.poll();
  BOOST_TEST(pool.stats().in_ring == count);
  for (std::size_t i = 1; i != count; ++i)
    c.clients[i]->shutdown(tcp::socket::shutdown_send);
  BOOST_TEST_REQUIRE(test::run_until(l, [&] {
    return ended == static_cast<int>(count) - 1;
  }));
}

} // namespace

// Issue 25, item 3: each read lends the ring a free buffer when it starts,
// and reads that end without data (here at the end of their streams) leave
// theirs unused. Once no read is in flight they are all back in the pool:
// every buffer can be leased directly again.
BOOST_AUTO_TEST_CASE(buffers_lent_to_reads_that_end_without_data_come_back)
{
  if (test::io_uring_skipped())
    return;
  constexpr std::size_t count = 8;
  turnloop::loop l(ring_config(count, 256));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, count);
  mint_all(pool, count);
  std::vector<error_code> ended;
  asio::post(l, [&] {
    for (auto& s : c.servers)
      turnloop::async_read_pooled(*s, [&](error_code ec, buffer_lease lease) {
        BOOST_TEST(!lease);
        ended.push_back(ec);
      });
  });
  for (int i = 0; i != 5; ++i)
    l.poll();
  BOOST_TEST((pool.stats().path == io_path::io_uring));
  BOOST_TEST(pool.stats().in_ring == count);
  for (auto& s : c.clients)
    s->shutdown(tcp::socket::shutdown_send);
  BOOST_TEST_REQUIRE(test::run_until(l, [&] { return ended.size() == count; }));
  for (const error_code& ec : ended)
    BOOST_TEST(ec == asio::error::eof);
  BOOST_TEST(pool.stats().in_ring == 0u);
  BOOST_TEST(pool.stats().leased == 0u);

  std::vector<buffer_lease> leases;
  for (std::size_t i = 0; i != count; ++i)
  {
    error_code ec;
    leases.push_back(pool.try_lease(ec));
    BOOST_TEST(!ec, "lease " << i << ": " << ec.message());
  }
  BOOST_TEST(pool.stats().minted == count);
}

// The same with one read still waiting for data: the seven buffers the
// others left in the ring cannot be taken while a receive is in the kernel
// (it may take any of them), so a lease that finds the pool at its ceiling
// has the ring take them back: its receives are cancelled and submitted
// again, unseen by their reads. async_lease is granted, try_lease gets the
// rest, and the waiting read still reads what comes.
BOOST_AUTO_TEST_CASE(buffers_left_in_the_ring_come_back_while_a_read_waits)
{
  if (test::io_uring_skipped())
    return;
  constexpr std::size_t count = 8;
  for (const bool by_async_lease : {true, false})
  {
    BOOST_TEST_CONTEXT("asked for by " << (by_async_lease ? "async_lease"
          : "try_lease"))
    {
      turnloop::loop l(ring_config(count, 256));
      buffer_pool& pool = asio::use_service<buffer_pool>(l);
      connections c(l, count);
      reads_of waiting;
      end_all_reads_but_one(l, pool, c, count, waiting);

      std::vector<buffer_lease> leases;
      if (by_async_lease)
      {
        asio::post(l, [&] {
          pool.async_lease([&](error_code ec, buffer_lease lease) {
            BOOST_TEST(!ec);
            leases.push_back(std::move(lease));
          });
        });
        BOOST_TEST_REQUIRE(test::run_until(l, [&] { return !leases.empty(); }));
      }
      else
      {
        // Refused while the buffers are the kernel's; asked for, they are
        // back within a turn or two.
        error_code ec;
        buffer_lease first = pool.try_lease(ec);
        BOOST_TEST(ec == turnloop::error::resource_limit);
        BOOST_TEST_REQUIRE(test::run_until(l, [&] {
          first = pool.try_lease(ec);
          return !ec;
        }));
        leases.push_back(std::move(first));
      }
      // The waiting read's receive holds at most one buffer in the ring.
      BOOST_TEST(pool.stats().in_ring <= 1u);
      for (std::size_t i = leases.size(); i != count - pool.stats().in_ring;
          ++i)
      {
        error_code ec;
        leases.push_back(pool.try_lease(ec));
        BOOST_TEST(!ec, "lease " << i << ": " << ec.message());
      }
      BOOST_TEST(waiting.count == 0);
      leases.clear();
      asio::write(*c.clients[0], asio::buffer("still", 5));
      BOOST_TEST(test::run_until(l, [&] { return waiting.count == 1; }));
      BOOST_TEST(!waiting.last);
      BOOST_TEST(waiting.got == "still");
      l.poll();
      BOOST_TEST(pool.stats().leased == 0u);
    }
  }
}

// Issue 25, item 6: with io_uring required, a ring that cannot be set up
// at the first pooled read (here: the process at its descriptor limit,
// after the constructor's check passed) fails that read, and a lease write,
// with the system's error; they never go to epoll. The next read, with
// descriptors to spare, sets the ring up.
BOOST_AUTO_TEST_CASE(a_required_ring_that_cannot_be_set_up_fails_the_operation)
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_config(4, 256));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, 1);
  std::optional<error_code> read, wrote;
  bool read_had_lease = true;
  {
    const std::optional<test::descriptor_limit> saved = test::run_out_of_descriptors();
    BOOST_TEST_REQUIRE(saved.has_value());
    struct restore
    {
      rlimit limit;
      ~restore() { ::setrlimit(RLIMIT_NOFILE, &limit); }
    } restore_at_end{*saved};
    asio::post(l, [&] {
      turnloop::async_read_pooled(*c.servers[0], [&](error_code ec,
            buffer_lease lease) {
        read = ec;
        read_had_lease = !!lease;
      });
      turnloop::async_write_lease(*c.servers[0], make_lease(pool, 8, 'w'),
          [&](error_code ec, std::size_t) { wrote = ec; });
    });
    BOOST_TEST(test::run_until(l, [&] { return read && wrote; }));
  }
  const error_code emfile(EMFILE, asio::error::get_system_category());
  BOOST_TEST((read && *read == emfile), (read ? read->message() : "pending"));
  BOOST_TEST(!read_had_lease);
  BOOST_TEST((wrote && *wrote == emfile), (wrote ? wrote->message() : "pending"));
  BOOST_TEST((pool.stats().path != io_path::epoll));
  BOOST_TEST(pool.stats().io_uring_error == EMFILE);
  BOOST_TEST(pool.stats().leased == 0u);
  BOOST_TEST(c.clients[0]->available() == 0u);

  std::string got;
  asio::post(l, [&] { read_into(*c.servers[0], got); });
  asio::write(*c.clients[0], asio::buffer("ring", 4));
  BOOST_TEST(test::run_until(l, [&] { return got == "ring"; }));
  BOOST_TEST((pool.stats().path == io_path::io_uring));
  BOOST_TEST(pool.stats().io_uring_error == 0);
}

// Reads started while the ring takes buffers back are held until it has
// (a receive submitted then could take one of them), then submitted; one
// whose socket is closed meanwhile ends with operation_aborted, never
// reaching the kernel.
BOOST_AUTO_TEST_CASE(reads_started_while_buffers_come_back_wait_for_them)
{
  if (test::io_uring_skipped())
    return;
  constexpr std::size_t count = 8;
  turnloop::loop l(ring_config(count, 256));
  buffer_pool& pool = asio::use_service<buffer_pool>(l);
  connections c(l, count + 2);
  reads_of waiting, held, closed;
  end_all_reads_but_one(l, pool, c, count, waiting);
  BOOST_TEST(pool.stats().in_ring == count);

  error_code refused;
  asio::post(l, [&] {
    pool.try_lease(refused); // asks the ring for its unused buffers
    held.start(*c.servers[count]);
    closed.start(*c.servers[count + 1]);
    c.servers[count + 1]->close();
  });
  BOOST_TEST_REQUIRE(test::run_until(l, [&] { return closed.count == 1; }));
  BOOST_TEST(refused == turnloop::error::resource_limit);
  BOOST_TEST(closed.last == asio::error::operation_aborted);
  // The buffers came back: a lease is granted now.
  BOOST_TEST(test::run_until(l, [&] {
    error_code ec;
    return !!pool.try_lease(ec);
  }));
  asio::write(*c.clients[count], asio::buffer("held", 4));
  BOOST_TEST(test::run_until(l, [&] { return held.count == 1; }));
  BOOST_TEST(!held.last);
  BOOST_TEST(held.got == "held");
  asio::write(*c.clients[0], asio::buffer("first", 5));
  BOOST_TEST(test::run_until(l, [&] { return waiting.count == 1; }));
  BOOST_TEST(waiting.got == "first");
  l.poll();
  BOOST_TEST(pool.stats().leased == 0u);
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
