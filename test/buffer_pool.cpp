//
// test/buffer_pool.cpp
//
// The loop's buffer pool and its leases: minted on demand up to the
// ceiling, kept and reused most recently returned first, refusing or
// waiting (first come, first served) at the ceiling, cancellable waits,
// leases released on other threads or after the loop is gone, and an idle
// cost that does not depend on the ceiling (measured in a child process).
// Every case ends with no buffer leased.
//

#include <turnloop/buffer_pool.hpp>

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE buffer_pool
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "counting_allocator.hpp"
#include "support.hpp"

using turnloop::error_code;
using turnloop::buffer_lease;
using turnloop::buffer_pool;

namespace {

turnloop::config pool_config(std::size_t buffers, std::size_t size = 1024)
{
  turnloop::config c;
  c.pooled_buffers = buffers;
  c.pooled_buffer_size = size;
  return c;
}

buffer_pool& pool_of(turnloop::loop& l)
{
  return asio::use_service<buffer_pool>(l);
}

// A loop and its pool; at the end of a case no buffer may be leased.
struct pool_fixture
{
  explicit pool_fixture(const turnloop::config& c)
    : l(c),
      pool(pool_of(l))
  {
  }

  ~pool_fixture()
  {
    l.restart();
    l.poll(); // takes back buffers released on other threads
    BOOST_TEST(pool.stats().leased == 0u);
    BOOST_TEST(pool.stats().waiting == 0u);
  }

  turnloop::loop l;
  buffer_pool& pool;
};

// The completion of an asynchronous lease, as a test observes it.
struct lease_result
{
  bool done = false;
  error_code ec;
  buffer_lease lease;

  auto handler()
  {
    return [this](error_code e, buffer_lease l) {
      done = true;
      ec = e;
      lease = std::move(l);
    };
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(an_idle_loop_has_minted_nothing)
{
  pool_fixture f(pool_config(65536, 16 * 1024));
  asio::post(f.l, [] {});
  f.l.run_for(test::deadline);
  const turnloop::buffer_pool_stats s = f.pool.stats();
  BOOST_TEST(s.minted == 0u);
  BOOST_TEST(s.leased == 0u);
  BOOST_TEST(s.capacity == 65536u);
  BOOST_TEST(s.buffer_size == 16u * 1024);
}

BOOST_AUTO_TEST_CASE(buffers_are_minted_on_demand_up_to_the_ceiling)
{
  pool_fixture f(pool_config(3));
  std::vector<buffer_lease> leases;
  for (std::size_t i = 1; i <= 3; ++i)
  {
    error_code ec;
    leases.push_back(f.pool.try_lease(ec));
    BOOST_TEST(!ec);
    BOOST_TEST(leases.back().capacity() == 1024u);
    BOOST_TEST(f.pool.stats().minted == i);
  }

  error_code ec;
  buffer_lease refused = f.pool.try_lease(ec);
  BOOST_TEST(ec == turnloop::error::resource_limit);
  BOOST_TEST(!refused);
  BOOST_CHECK_THROW(f.pool.try_lease(), turnloop::system_error);
  BOOST_TEST(f.pool.stats().refusals == 2u);
  BOOST_TEST(f.pool.stats().minted == 3u);
  BOOST_TEST(f.pool.stats().leased_high_water == 3u);

  // A returned buffer is kept: the next lease reuses it without minting.
  leases.pop_back();
  BOOST_TEST(f.pool.stats().leased == 2u);
  leases.push_back(f.pool.try_lease());
  BOOST_TEST(f.pool.stats().minted == 3u);
}

BOOST_AUTO_TEST_CASE(the_most_recently_returned_buffer_is_lent_first)
{
  pool_fixture f(pool_config(4));
  // On the loop's thread, where a release goes straight to the free list,
  // and then off it, where releases are taken back in a turn.
  for (bool on_loop_thread : {true, false})
  {
    auto check = [&] {
      buffer_lease a = f.pool.try_lease();
      buffer_lease b = f.pool.try_lease();
      buffer_lease c = f.pool.try_lease();
      void* const pa = a.storage().data();
      void* const pc = c.storage().data();
      a.reset();
      c.reset();
      BOOST_TEST(f.pool.try_lease().storage().data() == pc);
      // That lease went straight back, so c's buffer is again on top.
      buffer_lease first = f.pool.try_lease();
      buffer_lease second = f.pool.try_lease();
      BOOST_TEST(first.storage().data() == pc);
      BOOST_TEST(second.storage().data() == pa);
    };
    if (on_loop_thread)
    {
      asio::post(f.l, check);
      f.l.run_for(test::deadline);
    }
    else
      check();
    BOOST_TEST(f.pool.stats().minted == 3u);
  }
}

BOOST_AUTO_TEST_CASE(leasing_from_a_warm_pool_allocates_nothing)
{
  pool_fixture f(pool_config(8));
  {
    std::vector<buffer_lease> warm;
    for (int i = 0; i < 8; ++i)
      warm.push_back(f.pool.try_lease());
  }
  long before = test::allocations.load();
  test::allocate_once();
  BOOST_TEST(test::allocations.load() > before); // the counter counts

  before = test::allocations.load();
  for (int round = 0; round < 1000; ++round)
  {
    buffer_lease a = f.pool.try_lease();
    buffer_lease b = f.pool.try_lease();
    buffer_lease moved = std::move(a);
    b = std::move(moved);
  }
  BOOST_TEST(test::allocations.load() == before);
  BOOST_TEST(f.pool.stats().minted == 8u);
}

BOOST_AUTO_TEST_CASE(a_lease_is_a_move_only_view_of_its_buffer)
{
  pool_fixture f(pool_config(2, 64));
  buffer_lease empty;
  BOOST_TEST(!empty);
  BOOST_TEST(empty.size() == 0u);
  BOOST_TEST(empty.capacity() == 0u);
  BOOST_TEST(empty.data().size() == 0u);
  BOOST_TEST(empty.storage().size() == 0u);

  buffer_lease a = f.pool.try_lease();
  BOOST_TEST(a.size() == 0u);
  BOOST_TEST(a.storage().size() == 64u);
  std::memcpy(a.storage().data(), "hello", 5);
  a.resize(5);
  BOOST_TEST(std::string(static_cast<const char*>(a.data().data()),
        a.data().size()) == "hello");
  BOOST_CHECK_THROW(a.resize(65), std::length_error);
  BOOST_TEST(a.size() == 5u);

  buffer_lease b(std::move(a));
  BOOST_TEST(!a);
  BOOST_TEST(a.size() == 0u);
  BOOST_TEST(b.size() == 5u);
  const buffer_lease& cb = b;
  BOOST_TEST(cb.data().size() == 5u);

  // Assigning over a lease returns its buffer.
  buffer_lease c = f.pool.try_lease();
  BOOST_TEST(f.pool.stats().leased == 2u);
  c = std::move(b);
  BOOST_TEST(f.pool.stats().leased == 1u);
  BOOST_TEST(c.size() == 5u);
  c = std::move(c);
  BOOST_TEST(c.size() == 5u);
}

BOOST_AUTO_TEST_CASE(a_disabled_pool_refuses_every_lease)
{
  pool_fixture f(pool_config(0));
  error_code ec;
  BOOST_TEST(!f.pool.try_lease(ec));
  BOOST_TEST(ec == turnloop::error::resource_limit);

  lease_result r;
  asio::post(f.l, [&] {
    f.pool.async_lease(r.handler());
    BOOST_TEST(!r.done); // refused, but not inside the call
  });
  f.l.run_for(test::deadline);
  BOOST_TEST(r.done);
  BOOST_TEST(r.ec == turnloop::error::resource_limit);
  BOOST_TEST(!r.lease);
  BOOST_TEST(f.pool.stats().minted == 0u);
  BOOST_TEST(f.pool.stats().refusals == 2u);
}

BOOST_AUTO_TEST_CASE(async_lease_completes_in_a_turn_even_with_a_buffer_free)
{
  pool_fixture f(pool_config(2));
  lease_result r;
  asio::post(f.l, [&] {
    f.pool.async_lease(r.handler());
    BOOST_TEST(!r.done);
  });
  f.l.run_for(test::deadline);
  BOOST_TEST(r.done);
  BOOST_TEST(!r.ec);
  BOOST_TEST(r.lease.capacity() == 1024u);
  BOOST_TEST(f.pool.stats().waits == 0u);
  r.lease.reset();
}

BOOST_AUTO_TEST_CASE(waiting_leases_are_served_first_come_first_served)
{
  pool_fixture f(pool_config(1));
  buffer_lease held = f.pool.try_lease();
  std::vector<int> order;
  for (int i = 0; i < 3; ++i)
  {
    f.pool.async_lease([&, i](error_code ec, buffer_lease l) {
      BOOST_TEST(!ec);
      BOOST_TEST(l.capacity() == 1024u);
      order.push_back(i); // l goes back as this returns, to the next waiter
    });
  }
  f.l.poll();
  BOOST_TEST(order.empty());
  BOOST_TEST(f.pool.stats().waiting == 3u);
  BOOST_TEST(f.pool.stats().waits == 3u);

  // No request overtakes a waiter.
  error_code ec;
  BOOST_TEST(!f.pool.try_lease(ec));
  BOOST_TEST(ec == turnloop::error::resource_limit);

  asio::post(f.l, [&] { held.reset(); });
  f.l.run_for(test::deadline);
  BOOST_TEST((order == std::vector<int>{0, 1, 2}));
  BOOST_TEST(f.pool.stats().minted == 1u);
}

BOOST_AUTO_TEST_CASE(a_waiting_lease_is_cancelled_through_its_slot)
{
  for (auto type : {asio::cancellation_type::terminal,
         asio::cancellation_type::partial, asio::cancellation_type::total})
  {
    pool_fixture f(pool_config(1));
    buffer_lease held = f.pool.try_lease();
    asio::cancellation_signal signal;
    lease_result r;
    f.pool.async_lease(asio::bind_cancellation_slot(signal.slot(), r.handler()));
    f.l.poll();
    BOOST_TEST(f.pool.stats().waiting == 1u);
    asio::post(f.l, [&] {
      signal.emit(type);
      BOOST_TEST(!r.done); // delivered in a turn
    });
    f.l.run_for(test::deadline);
    BOOST_TEST(r.done);
    BOOST_TEST(r.ec == asio::error::operation_aborted);
    BOOST_TEST(!r.lease);
    BOOST_TEST(f.pool.stats().waiting == 0u);

    // The buffer then goes to the free list, not to the cancelled waiter.
    held.reset();
    BOOST_TEST(f.pool.stats().leased == 0u);
    // A late emit finds nothing to cancel.
    signal.emit(type);
  }
}

BOOST_AUTO_TEST_CASE(async_lease_is_refused_at_max_operations)
{
  turnloop::config c = pool_config(1);
  c.max_operations = 1;
  pool_fixture f(c);
  buffer_lease held = f.pool.try_lease();
  lease_result waiting;
  lease_result refused;
  asio::post(f.l, [&] {
    f.pool.async_lease(waiting.handler()); // takes the one operation
    f.pool.async_lease(refused.handler());
    BOOST_TEST(!refused.done);
  });
  f.l.poll();
  BOOST_TEST(refused.done);
  BOOST_TEST(refused.ec == turnloop::error::resource_limit);
  BOOST_TEST(!waiting.done);

  // Once the waiter is served the operation is free again.
  asio::post(f.l, [&] { held.reset(); });
  f.l.poll();
  BOOST_TEST(waiting.done);
  waiting.lease.reset();
  lease_result again;
  f.pool.async_lease(again.handler());
  f.l.restart();
  f.l.poll();
  BOOST_TEST(again.done);
  BOOST_TEST(!again.ec);
  again.lease.reset();
}

BOOST_AUTO_TEST_CASE(every_completion_token_delivers_a_lease)
{
  pool_fixture f(pool_config(2));
  std::size_t awaited = 0;
  std::size_t tupled = 0;
  std::size_t deferred = 0;
  asio::co_spawn(f.l, [&]() -> asio::awaitable<void> {
    buffer_lease a = co_await f.pool.async_lease(asio::use_awaitable);
    awaited = a.capacity();
    auto [ec, b] = co_await f.pool.async_lease(
        asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec);
    tupled = b.capacity();
  }, asio::detached);
  auto op = f.pool.async_lease(asio::deferred);
  std::move(op)([&](error_code ec, buffer_lease l) {
    BOOST_TEST(!ec);
    deferred = l.capacity();
  });
  f.l.run_for(test::deadline);
  BOOST_TEST(awaited == 1024u);
  BOOST_TEST(tupled == 1024u);
  BOOST_TEST(deferred == 1024u);
}

BOOST_AUTO_TEST_CASE(a_lease_released_on_another_thread_reaches_a_waiter,
    * test::threads_label())
{
  pool_fixture f(pool_config(1));
  auto work = asio::make_work_guard(f.l);
  std::thread runner([&] { f.l.run_for(test::deadline); });

  // use_future: started here, completed on the loop's thread.
  buffer_lease held = f.pool.async_lease(asio::use_future).get();
  BOOST_TEST(held.capacity() == 1024u);
  std::memcpy(held.storage().data(), "x", 1);

  // Boost.Test is not thread-safe: the handler only records.
  std::atomic<bool> served{false};
  std::atomic<std::size_t> capacity{0};
  f.pool.async_lease([&](error_code ec, buffer_lease l) {
    capacity = ec ? 0 : l.capacity();
    served = true;
  });
  held.reset(); // on this thread: handed back lock-free
  BOOST_TEST(test::wait_for([&] { return served.load(); }));
  BOOST_TEST(capacity.load() == 1024u);

  work.reset();
  runner.join();
  BOOST_TEST(f.pool.stats().minted == 1u);
}

BOOST_AUTO_TEST_CASE(two_threads_may_create_the_pool_at_once,
    * test::threads_label())
{
  // Asio may then build two pools and destroy one, unused, while the loop
  // runs (so the pool joins the loop's turns only when first used). Both
  // threads get the survivor, and it works.
  for (int round = 0; round < 20; ++round)
  {
    turnloop::loop l;
    auto work = asio::make_work_guard(l);
    std::thread runner([&] { l.run(); });
    std::atomic<int> started{0};
    buffer_pool* created[2] = {};
    std::thread creators[2];
    for (int i = 0; i < 2; ++i)
    {
      creators[i] = std::thread([&, i] {
        ++started;
        test::wait_for([&] { return started.load() == 2; });
        created[i] = &pool_of(l);
      });
    }
    for (std::thread& t : creators)
      t.join();
    BOOST_TEST(created[0] == created[1]);

    buffer_lease lease = created[0]->async_lease(asio::use_future).get();
    BOOST_TEST(lease.capacity() == 16u * 1024);
    lease.reset();
    work.reset();
    runner.join();
    BOOST_TEST(created[0]->stats().leased == 0u);
  }
}

BOOST_AUTO_TEST_CASE(a_lease_outlives_its_loop)
{
  buffer_lease survivor;
  buffer_lease last;
  {
    turnloop::loop l(pool_config(5, 32));
    buffer_pool& pool = pool_of(l);
    survivor = pool.try_lease();
    std::memcpy(survivor.storage().data(), "still here", 10);
    survivor.resize(10);
    last = pool.try_lease();

    // Buffers the loop holds when it is destroyed: in a handler that never
    // runs, on the free list, and released while no thread ran the loop.
    asio::steady_timer timer(l, std::chrono::hours(1));
    timer.async_wait([lease = pool.try_lease()](error_code) {});
    bool posted_ran = false;
    asio::post(l, [&] {
      buffer_lease a = pool.try_lease();
      buffer_lease b = pool.try_lease();
      posted_ran = true;
    });
    // One handler at a time until the post has run (on Asio's io_uring
    // backend run_one() can run one of its own operations first).
    while (!posted_ran && l.run_one() != 0)
    {
    }
    BOOST_TEST(posted_ran);
    pool.try_lease().reset();
    BOOST_TEST(pool.stats().minted == 5u);
    BOOST_TEST(pool.stats().leased == 3u);
  }
  // The loop is gone; the leases still own valid memory.
  BOOST_TEST(survivor.capacity() == 32u);
  BOOST_TEST(std::string(static_cast<const char*>(survivor.data().data()),
        survivor.size()) == "still here");
  buffer_lease moved = std::move(survivor);
  moved.reset(); // freed, not returned (AddressSanitizer checks)
  last.reset();  // the last one frees the pool's store
}

BOOST_AUTO_TEST_CASE(waiting_and_granted_leases_are_destroyed_with_their_loop)
{
  asio::cancellation_signal signal;
  bool ran = false;
  {
    turnloop::loop l(pool_config(1));
    buffer_pool& pool = pool_of(l);
    asio::post(l, [&] {
      // The first is granted the buffer, the second waits; the loop stops
      // before the pool's turn delivers anything.
      pool.async_lease([&](error_code, buffer_lease) { ran = true; });
      pool.async_lease(asio::bind_cancellation_slot(signal.slot(),
            [&](error_code, buffer_lease) { ran = true; }));
      l.stop();
    });
    l.run_for(test::deadline);
    BOOST_TEST(pool.stats().leased == 1u);
    BOOST_TEST(pool.stats().waiting == 1u);
  }
  BOOST_TEST(!ran);
  // The pool cleared the handler's slot: the signal outlives the loop.
  signal.emit(asio::cancellation_type::terminal);
  BOOST_TEST(!ran);
}

BOOST_AUTO_TEST_CASE(a_lease_outliving_its_loop_is_freed_on_another_thread,
    * test::threads_label())
{
  std::optional<buffer_lease> survivor;
  {
    turnloop::loop l(pool_config(2));
    survivor = pool_of(l).try_lease();
  }
  std::thread([&] { survivor.reset(); }).join();
}

BOOST_AUTO_TEST_CASE(the_pool_is_only_for_a_turnloop_loop)
{
  asio::io_context ctx;
  BOOST_CHECK_THROW(asio::use_service<buffer_pool>(ctx),
      turnloop::system_error);
}

namespace {

// Resident set of this process, in KiB, from /proc/self/status.
long resident_kib()
{
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key)
  {
    long value = 0;
    if (key == "VmRSS:" && status >> value)
      return value;
    status.ignore(1 << 16, '\n');
  }
  return -1;
}

// In a child process (the resident set is a high-water mark, so each
// measurement needs a fresh one): the growth of the resident set across
// constructing a loop with @p buffers pooled buffers of 16 KiB, creating
// its pool and running one turn.
long idle_cost_kib(std::size_t buffers)
{
  const std::optional<long> growth = test::result_in_child([buffers] {
    const long before = resident_kib();
    turnloop::loop l(pool_config(buffers, 16 * 1024));
    asio::use_service<buffer_pool>(l);
    asio::post(l, [] {});
    l.run_for(test::deadline);
    return before < 0 ? -1 : resident_kib() - before;
  });
  BOOST_REQUIRE(growth);
  return *growth;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_large_pool_ceiling_costs_nothing_while_idle,
    * test::only_where(test::has_fork,
      "measures the resident set in a forked child (its high-water mark "
      "starts afresh there)"))
{
  const long with_pool = idle_cost_kib(65536);
  const long without = idle_cost_kib(0);
  BOOST_TEST_MESSAGE("idle loop: " << with_pool << " KiB with 65536 pooled "
      "buffers, " << without << " KiB with 0");
  BOOST_TEST(with_pool >= 0);
  BOOST_TEST(without >= 0);
  // Pages move the figures by a few KiB; a pool that minted (or merely
  // touched) its buffers up front would cost at least 65536 pages.
  BOOST_TEST(std::labs(with_pool - without) <= 64);
}
