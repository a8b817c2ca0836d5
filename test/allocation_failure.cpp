//
// test/allocation_failure.cpp
//
// An allocation that fails inside one of turnloop's services ends the
// affected operation with asio::error::no_memory and never drops an
// operation it accepted: the exception does not escape run(), the handler
// is called, and once memory is back the service works again. Allocations
// fail on demand: through the global operator new (test/counting_allocator.hpp)
// or through a handler's associated allocator.
//

#include <turnloop/read_pooled.hpp>

#define BOOST_TEST_MODULE allocation_failure
#include <boost/test/unit_test.hpp>

#include <turnloop/accept.hpp>
#include <turnloop/blocking.hpp>
#include <turnloop/buffer_pool.hpp>
#include <turnloop/loop.hpp>
#include <turnloop/write_lease.hpp>
#include <turnloop/detail/pool/buffer_waiter.hpp>

#include "asio.hpp"

#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#if !defined(_WIN32)
# include <fcntl.h>
#endif // !defined(_WIN32)

#include "counting_allocator.hpp"
#include "pooled_echo.hpp"
#include "stream_pair.hpp"
#include "support.hpp"

using turnloop::error_code;
using stream_protocol = test::pair_protocol;
using namespace std::chrono_literals;

namespace {

// An allocator that fails on demand: while *failures is not 0 it throws
// std::bad_alloc, for every request while it is negative, for that many
// requests while it is positive.
template <typename T>
struct failing_allocator
{
  using value_type = T;

  explicit failing_allocator(std::atomic<int>* f) noexcept
    : failures(f)
  {
  }

  template <typename U>
  failing_allocator(const failing_allocator<U>& other) noexcept
    : failures(other.failures)
  {
  }

  T* allocate(std::size_t n)
  {
    int left = failures->load();
    while (left != 0)
    {
      if (left < 0 || failures->compare_exchange_weak(left, left - 1))
        throw std::bad_alloc();
    }
    return std::allocator<T>().allocate(n);
  }

  void deallocate(T* p, std::size_t n) noexcept
  {
    std::allocator<T>().deallocate(p, n);
  }

  template <typename U>
  bool operator==(const failing_allocator<U>& other) const noexcept
  {
    return failures == other.failures;
  }

  template <typename U>
  bool operator!=(const failing_allocator<U>& other) const noexcept
  {
    return failures != other.failures;
  }

  std::atomic<int>* failures;
};

constexpr int every_request = -1;

// An unusual size, so that failing requests of at least this many bytes
// fails the pool's buffers and nothing else.
constexpr std::size_t buffer_size = 200000;

turnloop::config pool_config(std::size_t buffers)
{
  turnloop::config cfg;
  cfg.pooled_buffers = buffers;
  cfg.pooled_buffer_size = buffer_size;
  return cfg;
}

struct outcome
{
  int calls = 0;
  error_code ec;
  std::string text;
};

auto record(outcome& o)
{
  return [&o](error_code ec, turnloop::buffer_lease lease) {
    ++o.calls;
    o.ec = ec;
    o.text.assign(static_cast<const char*>(lease.data().data()),
        lease.data().size());
  };
}

struct fail_buffers
{
  fail_buffers()
  {
    test::fail_from_bytes = buffer_size;
  }

  ~fail_buffers()
  {
    test::fail_from_bytes = 0;
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(the_failing_allocator_fails_on_demand)
{
  // ::operator new itself, as the pool mints buffers: under the sanitizers
  // new[] is theirs, not the replacement's.
  auto allocate = [](std::size_t n) { ::operator delete(::operator new(n)); };
  {
    fail_buffers failing;
    BOOST_CHECK_THROW(allocate(buffer_size), std::bad_alloc);
    BOOST_CHECK_NO_THROW(allocate(16));
  }
  BOOST_CHECK_NO_THROW(allocate(buffer_size));
  BOOST_CHECK_THROW((test::fail_next_on_this_thread = 1, allocate(16)),
      std::bad_alloc);
  BOOST_CHECK_NO_THROW(allocate(16));
}

BOOST_AUTO_TEST_CASE(a_pooled_read_whose_buffer_cannot_be_minted_ends_with_no_memory)
{
  turnloop::loop l(pool_config(2));
  stream_protocol::socket a(l), b(l);
  test::connect_pair(a, b);
  asio::write(a, asio::buffer(std::string("hello")));

  outcome first;
  turnloop::async_read_pooled(b, record(first));
  {
    fail_buffers failing;
    BOOST_CHECK_NO_THROW(l.run());
  }
  BOOST_TEST(first.calls == 1);
  BOOST_TEST((first.ec == asio::error::no_memory));

  // Memory is back: the data waited in the socket, and the next read gets it.
  outcome second;
  l.restart();
  turnloop::async_read_pooled(b, record(second));
  l.run();
  BOOST_TEST(second.calls == 1);
  BOOST_TEST(!second.ec);
  BOOST_TEST(second.text == "hello");
}

BOOST_AUTO_TEST_CASE(a_pooled_read_whose_wait_for_a_buffer_cannot_be_recorded_ends_with_no_memory)
{
  turnloop::loop l(pool_config(1));
  auto& pool = asio::use_service<turnloop::buffer_pool>(l);
  std::optional<turnloop::buffer_lease> held(pool.try_lease());
  stream_protocol::socket a(l), b(l);
  test::connect_pair(a, b);

  std::atomic<int> failures{0};
  outcome o;
  turnloop::async_read_pooled(b, asio::bind_allocator(
        failing_allocator<void>(&failures), record(o)));
  l.poll(); // the read now waits for input, its wait allocated
  failures = every_request;
  asio::write(a, asio::buffer(std::string("hello")));
  BOOST_CHECK_NO_THROW(l.run());
  failures = 0;
  BOOST_TEST(o.calls == 1);
  BOOST_TEST((o.ec == asio::error::no_memory));
  BOOST_TEST(pool.stats().waiting == 0u);
}

BOOST_AUTO_TEST_CASE(an_async_lease_from_another_thread_whose_buffer_cannot_be_minted_ends_with_no_memory,
    * test::threads_label())
{
  turnloop::loop l(pool_config(2));
  auto& pool = asio::use_service<turnloop::buffer_pool>(l);
  outcome o;
  std::thread([&] { pool.async_lease(record(o)); }).join();
  {
    fail_buffers failing;
    BOOST_CHECK_NO_THROW(l.run());
  }
  BOOST_TEST(o.calls == 1);
  BOOST_TEST((o.ec == asio::error::no_memory));
  BOOST_TEST(l.stats().operations.in_use == 0u);

  outcome again;
  l.restart();
  pool.async_lease(record(again));
  l.run();
  BOOST_TEST(again.calls == 1);
  BOOST_TEST(!again.ec);
}

BOOST_AUTO_TEST_CASE(a_blocking_job_from_another_thread_that_cannot_be_recorded_ends_with_no_memory,
    * test::threads_label())
{
  turnloop::loop l;
  int calls = 0;
  error_code got;
  int value = -1;
  auto handler = [&](error_code ec, std::exception_ptr, int v) {
    ++calls;
    got = ec;
    value = v;
  };
  std::thread([&] {
    // Posted first, so it runs just before the job reaches the loop: the
    // loop's next allocation, the job's record, fails.
    asio::post(l, [] { test::fail_next_on_this_thread = 1; });
    turnloop::async_blocking(l, [] { return 7; }, handler);
  }).join();
  BOOST_CHECK_NO_THROW(l.run());
  test::fail_next_on_this_thread = 0;
  BOOST_TEST(calls == 1);
  BOOST_TEST((got == asio::error::no_memory));
  const turnloop::blocking_stats s = turnloop::blocking_statistics(l);
  BOOST_TEST(s.undelivered == 0u);
  BOOST_TEST(s.queued == 0u);
  BOOST_TEST(l.stats().operations.in_use == 0u);

  l.restart();
  turnloop::async_blocking(l, [] { return 7; }, handler);
  l.run();
  BOOST_TEST(calls == 2);
  BOOST_TEST(!got);
  BOOST_TEST(value == 7);
}

BOOST_AUTO_TEST_CASE(a_blocking_result_its_strand_cannot_take_for_lack_of_memory_is_delivered_in_a_later_turn,
    * test::threads_label())
{
  turnloop::loop l;
  auto strand = asio::make_strand(l);
  std::atomic<int> failures{0};
  int calls = 0;
  error_code got;
  int value = -1;
  bool in_strand = false;
  turnloop::async_blocking(l, [] { return 7; }, asio::bind_allocator(
        failing_allocator<void>(&failures), asio::bind_executor(strand,
          [&](error_code ec, std::exception_ptr, int v) {
            ++calls;
            got = ec;
            value = v;
            in_strand = strand.running_in_this_thread();
          })));
  // The strand's queue node is what fails: twice, so the delivery is tried
  // in three turns.
  failures = 2;
  BOOST_CHECK_NO_THROW(l.run());
  BOOST_TEST(failures == 0);
  BOOST_TEST(calls == 1);
  BOOST_TEST(!got);
  BOOST_TEST(value == 7);
  BOOST_TEST(in_strand);
  BOOST_TEST(turnloop::blocking_statistics(l).undelivered == 0u);
  BOOST_TEST(l.stats().operations.in_use == 0u);
}

BOOST_AUTO_TEST_CASE(a_granted_lease_its_strand_cannot_take_for_lack_of_memory_is_delivered_in_a_later_turn)
{
  turnloop::loop l(pool_config(1));
  auto& pool = asio::use_service<turnloop::buffer_pool>(l);
  std::optional<turnloop::buffer_lease> held(pool.try_lease());
  auto strand = asio::make_strand(l);
  std::atomic<int> failures{0};
  outcome o;
  bool in_strand = false;
  pool.async_lease(asio::bind_allocator(failing_allocator<void>(&failures),
        asio::bind_executor(strand,
          [&](error_code ec, turnloop::buffer_lease lease) {
            record(o)(ec, std::move(lease));
            in_strand = strand.running_in_this_thread();
          })));
  l.poll();
  BOOST_TEST(pool.stats().waiting == 1u);
  failures = 2;
  held.reset(); // the buffer goes to the waiter
  BOOST_CHECK_NO_THROW(l.run());
  BOOST_TEST(failures == 0);
  BOOST_TEST(o.calls == 1);
  BOOST_TEST(!o.ec);
  BOOST_TEST(in_strand);
  BOOST_TEST(pool.stats().leased == 0u); // the handler's lease came back
  BOOST_TEST(l.stats().operations.in_use == 0u);
}

BOOST_AUTO_TEST_CASE(a_pooled_read_its_strand_cannot_take_for_lack_of_memory_is_delivered_in_a_later_turn)
{
  turnloop::loop l(pool_config(2));
  stream_protocol::socket a(l), b(l);
  test::connect_pair(a, b);
  auto strand = asio::make_strand(l);
  std::atomic<int> failures{0};
  outcome o;
  bool in_strand = false;
  turnloop::async_read_pooled(b, asio::bind_allocator(
        failing_allocator<void>(&failures), asio::bind_executor(strand,
          [&](error_code ec, turnloop::buffer_lease lease) {
            record(o)(ec, std::move(lease));
            in_strand = strand.running_in_this_thread();
          })));
  l.poll(); // waiting for data, its wait allocated
  failures = 2;
  asio::write(a, asio::buffer(std::string("hello")));
  BOOST_CHECK_NO_THROW(l.run());
  BOOST_TEST(failures == 0);
  BOOST_TEST(o.calls == 1);
  BOOST_TEST(!o.ec);
  BOOST_TEST(o.text == "hello");
  BOOST_TEST(in_strand);
  BOOST_TEST(l.stats().operations.in_use == 0u);
}

BOOST_AUTO_TEST_CASE(a_blocking_refusal_its_strand_cannot_take_for_lack_of_memory_is_delivered_in_a_later_turn,
    * test::threads_label())
{
  turnloop::config cfg;
  cfg.blocking.max_undelivered = 1;
  turnloop::loop l(cfg);
  auto strand = asio::make_strand(l);
  std::atomic<int> failures{0};
  int admitted = 0;
  int calls = 0;
  error_code got;
  bool in_strand = false;
  turnloop::async_blocking(l, [] { return 1; },
      [&](error_code, std::exception_ptr, int) { ++admitted; });
  turnloop::async_blocking(l, [] { return 2; }, asio::bind_allocator(
        failing_allocator<void>(&failures), asio::bind_executor(strand,
          [&](error_code ec, std::exception_ptr, int) {
            ++calls;
            got = ec;
            in_strand = strand.running_in_this_thread();
          })));
  failures = 2;
  BOOST_CHECK_NO_THROW(l.run());
  BOOST_TEST(failures == 0);
  BOOST_TEST(admitted == 1);
  BOOST_TEST(calls == 1);
  BOOST_TEST((got == turnloop::error::resource_limit));
  BOOST_TEST(in_strand);
}

BOOST_AUTO_TEST_CASE(a_lease_refusal_its_strand_cannot_take_for_lack_of_memory_is_delivered_in_a_later_turn)
{
  for (const bool on_loop : {false, true})
  {
    turnloop::loop l(pool_config(0)); // a disabled pool refuses every lease
    auto& pool = asio::use_service<turnloop::buffer_pool>(l);
    auto strand = asio::make_strand(l);
    std::atomic<int> failures{0};
    outcome o;
    bool in_strand = false;
    auto lease = [&] {
      pool.async_lease(asio::bind_allocator(
            failing_allocator<void>(&failures), asio::bind_executor(strand,
              [&](error_code ec, turnloop::buffer_lease lease) {
                record(o)(ec, std::move(lease));
                in_strand = strand.running_in_this_thread();
              })));
      failures = 2;
    };
    if (on_loop)
      asio::post(l, lease);
    else
      lease();
    BOOST_CHECK_NO_THROW(l.run());
    BOOST_TEST(failures == 0);
    BOOST_TEST(o.calls == 1);
    BOOST_TEST((o.ec == turnloop::error::resource_limit));
    BOOST_TEST(in_strand);
  }
}

BOOST_AUTO_TEST_CASE(a_delivery_its_strand_never_takes_is_destroyed_with_the_loop)
{
  std::atomic<int> failures{0};
  int calls = 0;
  std::weak_ptr<int> alive;
  {
    turnloop::loop l;
    auto strand = asio::make_strand(l);
    auto token = std::make_shared<int>(0);
    alive = token;
    turnloop::async_blocking(l, [] { return 7; }, asio::bind_allocator(
          failing_allocator<void>(&failures), asio::bind_executor(strand,
            [&calls, token](error_code, std::exception_ptr, int) {
              ++calls;
            })));
    token.reset();
    // Memory never comes back: the delivery is tried once a turn.
    constexpr int many = 1 << 30;
    failures = many;
    const auto deadline = std::chrono::steady_clock::now() + test::deadline;
    while (failures > many - 3 && std::chrono::steady_clock::now() < deadline)
      BOOST_CHECK_NO_THROW(l.run_for(10ms));
    BOOST_TEST(failures <= many - 3);
    BOOST_TEST(!alive.expired());
  }
  failures = 0;
  BOOST_TEST(calls == 0);
  BOOST_TEST(alive.expired()); // destroyed, not leaked
}

namespace {

using asio::ip::tcp;
using accepted = turnloop::accepted_socket<tcp>;

struct accept_outcome
{
  int calls = 0;
  error_code ec;
  std::optional<accepted> socket;
  bool in_strand = false;
};

// Runs @p l in whole turns until @p done holds or the deadline passes.
template <typename Condition>
bool run_until(turnloop::loop& l, Condition done)
{
  const auto end = std::chrono::steady_clock::now() + test::deadline;
  while (!done() && std::chrono::steady_clock::now() < end)
  {
    l.restart();
    l.run_for(2ms);
  }
  return done();
}

} // namespace

BOOST_AUTO_TEST_CASE(an_accept_that_cannot_be_issued_again_after_waiting_for_a_handle_ends_with_no_memory_and_loses_no_connection)
{
  turnloop::config cfg;
  cfg.max_handles = 1;
  turnloop::loop l(cfg);
  tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
  tcp::socket c1(l), c2(l);
  c1.connect(acceptor.local_endpoint());
  c2.connect(acceptor.local_endpoint());

  accept_outcome first;
  turnloop::async_accept(acceptor, [&](error_code ec, accepted s) {
    ++first.calls;
    first.socket.emplace(std::move(s));
  });
  BOOST_REQUIRE(run_until(l, [&] { return first.calls == 1; }));

  // The only handle is held: the next accept waits for it, parked.
  std::atomic<int> failures{0};
  accept_outcome second;
  turnloop::async_accept(acceptor, asio::bind_allocator(
        failing_allocator<void>(&failures), [&](error_code ec, accepted s) {
          ++second.calls;
          second.ec = ec;
          second.socket.emplace(std::move(s));
        }));
  l.restart();
  l.poll();
  BOOST_TEST(second.calls == 0);

  // The handle comes back; issuing the accept again allocates Asio's
  // operation with the handler's allocator, and that fails.
  failures = 1;
  first.socket.reset();
  BOOST_REQUIRE(run_until(l, [&] { return second.calls == 1; }));
  BOOST_TEST(failures == 0);
  BOOST_TEST((second.ec == asio::error::no_memory));
  BOOST_TEST(!second.socket->is_open());
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 0u);

  // The connection waited in the backlog: the next accept takes it.
  accept_outcome third;
  turnloop::async_accept(acceptor, [&](error_code ec, accepted s) {
    ++third.calls;
    third.ec = ec;
    third.socket.emplace(std::move(s));
  });
  BOOST_REQUIRE(run_until(l, [&] { return third.calls == 1; }));
  BOOST_TEST(!third.ec);
  BOOST_TEST((third.socket->remote_endpoint() == c2.local_endpoint()));
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 1u);
  BOOST_TEST(l.stats().operations.in_use == 0u);
}

BOOST_AUTO_TEST_CASE(a_handle_released_on_a_thread_out_of_memory_resumes_the_accept_in_line, * boost::unit_test::label("threads"))
{
  turnloop::config cfg;
  cfg.max_handles = 1;
  turnloop::loop l(cfg);
  tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
  tcp::socket c1(l), c2(l);
  c1.connect(acceptor.local_endpoint());
  c2.connect(acceptor.local_endpoint());

  accept_outcome first;
  turnloop::async_accept(acceptor, [&](error_code, accepted s) {
    ++first.calls;
    first.socket.emplace(std::move(s));
  });
  BOOST_REQUIRE(run_until(l, [&] { return first.calls == 1; }));

  // The only handle is held: the next accept waits for it, parked.
  accept_outcome second;
  turnloop::async_accept(acceptor, [&](error_code ec, accepted s) {
    ++second.calls;
    second.ec = ec;
    second.socket.emplace(std::move(s));
  });
  l.restart();
  l.poll();
  BOOST_REQUIRE(second.calls == 0);

  // The handle comes back on a thread where every allocation fails (a new
  // thread: Asio has no cached handler memory there). The release passes the
  // handle to the accept in line and posts its resume, which must not
  // allocate: the release is noexcept, a bad_alloc there would terminate.
  long unused_failures = 0;
  std::thread releaser([&] {
    test::fail_next_on_this_thread = 1000;
    first.socket.reset();
    unused_failures = test::fail_next_on_this_thread;
    test::fail_next_on_this_thread = 0;
  });
  releaser.join();
  BOOST_TEST(unused_failures == 1000); // nothing even tried to allocate

  BOOST_REQUIRE(run_until(l, [&] { return second.calls == 1; }));
  BOOST_TEST(!second.ec);
  BOOST_TEST((second.socket->remote_endpoint() == c2.local_endpoint()));
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 1u);
}

BOOST_AUTO_TEST_CASE(an_accepted_connection_its_strand_cannot_take_for_lack_of_memory_is_delivered_in_a_later_turn)
{
  turnloop::loop l;
  tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
  auto strand = asio::make_strand(l);
  std::atomic<int> failures{0};
  accept_outcome o;
  turnloop::async_accept(acceptor, asio::bind_allocator(
        failing_allocator<void>(&failures), asio::bind_executor(strand,
          [&](error_code ec, accepted s) {
            ++o.calls;
            o.ec = ec;
            o.socket.emplace(std::move(s));
            o.in_strand = strand.running_in_this_thread();
          })));
  l.poll(); // the accept is in the kernel, its operation allocated
  failures = 2;
  tcp::socket c(l);
  c.connect(acceptor.local_endpoint());
  bool done = false;
  BOOST_CHECK_NO_THROW(done = run_until(l, [&] { return o.calls == 1; }));
  BOOST_REQUIRE(done);
  BOOST_TEST(failures == 0);
  BOOST_TEST(!o.ec);
  BOOST_TEST(o.in_strand);
  BOOST_TEST((o.socket->remote_endpoint() == c.local_endpoint()));
  BOOST_TEST(turnloop::handle_statistics(l).in_use == 1u);
}

namespace {

// In a child process (it lowers RLIMIT_NOFILE): an accept that runs out of
// descriptors backs off, and parking it fails for lack of memory. Returns 0
// if it ended with no_memory, a code naming the check that failed otherwise.
int accept_that_cannot_park()
{
  using asio::ip::tcp;
  turnloop::loop l;
  tcp::acceptor acceptor(l, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  tcp::socket c(l);
  c.open(tcp::v4()); // connects once descriptors have run out

  std::atomic<int> failures{0};
  int calls = 0;
  error_code got;
  turnloop::async_accept(acceptor, asio::bind_allocator(
        failing_allocator<void>(&failures), [&](error_code ec, auto) {
          ++calls;
          got = ec;
        }));

  const std::optional<test::descriptor_limit> saved = test::run_out_of_descriptors();
  if (!saved)
    return 9;
  failures = every_request;
  error_code connected;
  c.connect(acceptor.local_endpoint(), connected);
  if (connected)
    return 14;
  try
  {
    l.run_for(2s);
  }
  catch (const std::bad_alloc&)
  {
    return 11; // escaped run(): the accept's handler was dropped
  }
  failures = 0;
  test::restore_descriptor_limit(*saved);
  if (calls != 1)
    return 12;
  if (got != asio::error::no_memory)
    return 13;
  return 0;
}

} // namespace

BOOST_AUTO_TEST_CASE(an_accept_that_cannot_be_parked_for_lack_of_memory_ends_with_no_memory,
    * test::only_where(test::has_fork && test::has_descriptor_limit,
      "runs a child process out of descriptors (fork, RLIMIT_NOFILE)"))
{
  BOOST_TEST(test::exit_status_in_child(accept_that_cannot_park) == 0);
}

// --- the io_uring path (doc/io_uring.md) ----------------------------------------
//
// Operations started on the loop's thread go through the pool's ring; the
// same rules hold there: a refusal at the call throws std::bad_alloc and
// leaves nothing behind, a failure after acceptance ends the operation
// with no_memory, and memory back, the path works again.

namespace {

turnloop::config ring_pool_config(std::size_t buffers)
{
  turnloop::config cfg = pool_config(buffers);
  cfg.pooled_io = turnloop::io_path::io_uring;
  return cfg;
}

// A socket connected to @p peer whose descriptor number is at least 1000,
// so that the ring's table of sockets by descriptor number must grow to
// more than 8000 bytes for it: an allocation no other step of a read or a
// write makes, which test::fail_from_bytes can aim at.
stream_protocol::socket high_numbered_socket(turnloop::loop& l,
    stream_protocol::socket& peer)
{
  stream_protocol::socket low(l);
  test::connect_pair(peer, low);
#if defined(_WIN32)
  BOOST_FAIL("a socket by descriptor number: POSIX (the io_uring path's)");
  return low;
#else // defined(_WIN32)
  const int fd = ::fcntl(low.native_handle(), F_DUPFD_CLOEXEC, 1000);
  BOOST_TEST_REQUIRE(fd >= 1000);
  low.close();
  return stream_protocol::socket(l, stream_protocol(), fd);
#endif // defined(_WIN32)
}

constexpr std::size_t table_bytes = 8000;

struct fail_large
{
  fail_large()
  {
    test::fail_from_bytes = table_bytes;
  }

  ~fail_large()
  {
    test::fail_from_bytes = 0;
  }
};

} // namespace

namespace {
const char* const ring_only = "turnloop's io_uring path needs Linux with "
  "Asio's epoll reactor";
} // namespace

BOOST_AUTO_TEST_CASE(a_ring_read_whose_buffer_cannot_be_minted_ends_with_no_memory,
    * test::only_where(turnloop::detail::has_io_uring_path, ring_only))
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_pool_config(2));
  auto& pool = asio::use_service<turnloop::buffer_pool>(l);
  stream_protocol::socket a(l), b(l);
  test::connect_pair(a, b);

  outcome first;
  asio::post(l, [&] { turnloop::async_read_pooled(b, record(first)); });
  l.poll(); // in the kernel, with no buffer yet: the ring mints on arrival
  BOOST_TEST_REQUIRE((pool.stats().path == turnloop::io_path::io_uring));
  asio::write(a, asio::buffer(std::string("hello")));
  {
    fail_buffers failing;
    BOOST_CHECK_NO_THROW(BOOST_TEST(test::run_until(l,
            [&] { return first.calls == 1; })));
  }
  BOOST_TEST(first.calls == 1);
  BOOST_TEST((first.ec == asio::error::no_memory));
  BOOST_TEST(pool.stats().minted == 0u);
  BOOST_TEST(pool.stats().leased == 0u);

  // Memory is back: the data waited in the socket, and the next read gets it.
  outcome second;
  asio::post(l, [&] { turnloop::async_read_pooled(b, record(second)); });
  BOOST_TEST(test::run_until(l, [&] { return second.calls == 1; }));
  BOOST_TEST(!second.ec);
  BOOST_TEST(second.text == "hello");
  BOOST_TEST(pool.stats().io_uring_enters > 0u);
  BOOST_TEST(l.stats().operations.in_use == 0u);
}

BOOST_AUTO_TEST_CASE(a_ring_read_that_cannot_be_recorded_is_refused_at_the_call,
    * test::only_where(turnloop::detail::has_io_uring_path, ring_only))
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_pool_config(2));
  auto& pool = asio::use_service<turnloop::buffer_pool>(l);
  stream_protocol::socket a(l);
  stream_protocol::socket b = high_numbered_socket(l, a);

  outcome o;
  bool refused = false;
  bool ran = false;
  asio::post(l, [&] {
    fail_large failing;
    try
    {
      turnloop::async_read_pooled(b, record(o));
    }
    catch (const std::bad_alloc&)
    {
      refused = true;
    }
    ran = true;
  });
  // Not run(): an operation accepted by mistake would keep it waiting.
  BOOST_CHECK_NO_THROW(BOOST_TEST(test::run_until(l, [&] { return ran; })));
  BOOST_TEST(refused);
  BOOST_TEST(o.calls == 0); // refused: its handler is not called
  BOOST_TEST(l.stats().operations.in_use == 0u);
  BOOST_TEST(pool.stats().leased == 0u);

  // Memory is back: the same socket reads through the ring.
  asio::write(a, asio::buffer(std::string("hello")));
  asio::post(l, [&] { turnloop::async_read_pooled(b, record(o)); });
  BOOST_TEST(test::run_until(l, [&] { return o.calls == 1; }));
  BOOST_TEST(!o.ec);
  BOOST_TEST(o.text == "hello");
  BOOST_TEST((pool.stats().path == turnloop::io_path::io_uring));
}

BOOST_AUTO_TEST_CASE(a_ring_read_whose_handler_memory_fails_is_refused_at_the_call,
    * test::only_where(turnloop::detail::has_io_uring_path, ring_only))
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_pool_config(2));
  auto& pool = asio::use_service<turnloop::buffer_pool>(l);
  stream_protocol::socket a(l), b(l);
  test::connect_pair(a, b);

  std::atomic<int> failures{0};
  outcome o;
  bool refused = false;
  bool ran = false;
  asio::post(l, [&] {
    failures = every_request;
    try
    {
      turnloop::async_read_pooled(b, asio::bind_allocator(
            failing_allocator<void>(&failures), record(o)));
    }
    catch (const std::bad_alloc&)
    {
      refused = true;
    }
    failures = 0;
    ran = true;
  });
  BOOST_CHECK_NO_THROW(BOOST_TEST(test::run_until(l, [&] { return ran; })));
  BOOST_TEST(refused);
  BOOST_TEST(o.calls == 0);
  BOOST_TEST(l.stats().operations.in_use == 0u);

  asio::write(a, asio::buffer(std::string("hello")));
  asio::post(l, [&] {
    turnloop::async_read_pooled(b, asio::bind_allocator(
          failing_allocator<void>(&failures), record(o)));
  });
  BOOST_TEST(test::run_until(l, [&] { return o.calls == 1; }));
  BOOST_TEST(!o.ec);
  BOOST_TEST(o.text == "hello");
  BOOST_TEST((pool.stats().path == turnloop::io_path::io_uring));
  BOOST_TEST(pool.stats().leased == 0u);
}

BOOST_AUTO_TEST_CASE(a_ring_read_its_strand_cannot_take_for_lack_of_memory_is_delivered_in_a_later_turn,
    * test::only_where(turnloop::detail::has_io_uring_path, ring_only))
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_pool_config(2));
  auto& pool = asio::use_service<turnloop::buffer_pool>(l);
  stream_protocol::socket a(l), b(l);
  test::connect_pair(a, b);
  auto strand = asio::make_strand(l);
  std::atomic<int> failures{0};
  outcome o;
  bool in_strand = false;
  asio::post(l, [&] {
    turnloop::async_read_pooled(b, asio::bind_allocator(
          failing_allocator<void>(&failures), asio::bind_executor(strand,
            [&](error_code ec, turnloop::buffer_lease lease) {
              record(o)(ec, std::move(lease));
              in_strand = strand.running_in_this_thread();
            })));
  });
  l.poll(); // in the kernel, its delivery reserved
  BOOST_TEST_REQUIRE((pool.stats().path == turnloop::io_path::io_uring));
  failures = 2;
  asio::write(a, asio::buffer(std::string("hello")));
  BOOST_CHECK_NO_THROW(BOOST_TEST(test::run_until(l,
          [&] { return o.calls == 1; })));
  BOOST_TEST(failures == 0);
  BOOST_TEST(!o.ec);
  BOOST_TEST(o.text == "hello");
  BOOST_TEST(in_strand);
  BOOST_TEST(pool.stats().leased == 0u);
  BOOST_TEST(l.stats().operations.in_use == 0u);
}

BOOST_AUTO_TEST_CASE(a_ring_write_that_cannot_be_recorded_is_refused_at_the_call_and_its_lease_returns,
    * test::only_where(turnloop::detail::has_io_uring_path, ring_only))
{
  if (test::io_uring_skipped())
    return;
  turnloop::loop l(ring_pool_config(2));
  auto& pool = asio::use_service<turnloop::buffer_pool>(l);
  stream_protocol::socket a(l);
  stream_protocol::socket b = high_numbered_socket(l, a);

  int calls = 0;
  bool refused = false;
  bool ran = false;
  asio::post(l, [&] {
    turnloop::buffer_lease lease = pool.try_lease();
    BOOST_TEST_REQUIRE(bool(lease));
    std::memcpy(lease.storage().data(), "hello", 5);
    lease.resize(5);
    BOOST_TEST(pool.stats().leased == 1u);
    fail_large failing;
    try
    {
      turnloop::async_write_lease(b, std::move(lease),
          [&](error_code, std::size_t) { ++calls; });
    }
    catch (const std::bad_alloc&)
    {
      refused = true;
    }
    ran = true;
  });
  // Not run(): an operation accepted by mistake would keep it waiting.
  BOOST_CHECK_NO_THROW(BOOST_TEST(test::run_until(l, [&] { return ran; })));
  BOOST_TEST(refused);
  BOOST_TEST(calls == 0);
  BOOST_TEST(pool.stats().leased == 0u); // the refused write's lease came back
  BOOST_TEST(l.stats().operations.in_use == 0u);

  // Memory is back: the same socket writes a lease through the ring.
  error_code written;
  std::size_t n = 0;
  asio::post(l, [&] {
    turnloop::buffer_lease lease = pool.try_lease();
    std::memcpy(lease.storage().data(), "again", 5);
    lease.resize(5);
    turnloop::async_write_lease(b, std::move(lease),
        [&](error_code ec, std::size_t bytes) {
          ++calls;
          written = ec;
          n = bytes;
        });
  });
  BOOST_TEST(test::run_until(l, [&] { return calls == 1; }));
  BOOST_TEST(!written);
  BOOST_TEST(n == 5u);
  std::string got(5, '\0');
  asio::read(a, asio::buffer(got));
  BOOST_TEST(got == "again");
  BOOST_TEST((pool.stats().path == turnloop::io_path::io_uring));
  BOOST_TEST(pool.stats().io_uring_enters > 0u);
  BOOST_TEST(pool.stats().leased == 0u);
}
