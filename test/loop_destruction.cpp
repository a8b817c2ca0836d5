//
// test/loop_destruction.cpp
//
// Destroying a loop with pending work destroys every handler without running
// it: no leak, no use-after-free (ASan run), no hang.
//

#include <turnloop/loop.hpp>
#include <turnloop/blocking.hpp>
#include <turnloop/buffer_pool.hpp>
#include <turnloop/detail/blocking/blocking_service.hpp>
#include <turnloop/detail/loop_of.hpp>

#define BOOST_TEST_MODULE loop_destruction
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>

#include "support.hpp"

using asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

// Held by every handler: use_count tells how many are still alive, and
// `ran` whether any was invoked.
struct tracker
{
  int ran = 0;
};

// Sets a flag when a coroutine frame holding it is destroyed.
struct frame_guard
{
  std::shared_ptr<tracker> t;
  ~frame_guard() { t.reset(); }
};

asio::awaitable<void> wait_forever_on_timer(std::shared_ptr<tracker> t)
{
  frame_guard g{t};
  asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
  co_await timer.async_wait(asio::use_awaitable);
  ++t->ran;
}

asio::awaitable<void> read_forever(tcp::socket& socket,
    std::shared_ptr<tracker> t)
{
  frame_guard g{t};
  char data[16];
  co_await socket.async_read_some(asio::buffer(data), asio::use_awaitable);
  ++t->ran;
}

asio::awaitable<void> outer(std::shared_ptr<tracker> t)
{
  co_await wait_forever_on_timer(t); // a chain of suspended frames
  ++t->ran;
}

} // namespace

BOOST_AUTO_TEST_CASE(queued_posts_are_destroyed_not_run)
{
  auto t = std::make_shared<tracker>();
  {
    turnloop::loop l;
    for (int i = 0; i < 100; ++i)
      asio::post(l, [t] { ++t->ran; });
  }
  BOOST_TEST(t->ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(local_posts_left_by_a_stopped_run_are_destroyed)
{
  auto t = std::make_shared<tracker>();
  {
    turnloop::loop l;
    asio::post(l, [&l, t] {
      for (int i = 0; i < 100; ++i)
        asio::post(l, [t] { ++t->ran; });
      l.stop();
    });
    l.run();
  }
  BOOST_TEST(t->ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(cross_thread_posts_are_destroyed_not_run,
    * test::threads_label())
{
  auto t = std::make_shared<tracker>();
  {
    turnloop::loop l;
    std::thread producer([&] {
      for (int i = 0; i < 1000; ++i)
        asio::post(l, [t] { ++t->ran; });
    });
    producer.join();
  }
  BOOST_TEST(t->ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(pending_timers_and_reads_are_destroyed_not_run)
{
  auto t = std::make_shared<tracker>();
  {
    turnloop::loop l;
    asio::steady_timer timer(l, 1h);
    timer.async_wait([t](turnloop::error_code) { ++t->ran; });
    tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
    tcp::socket client(l);
    tcp::socket server(l);
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
    static char data[16];
    server.async_read_some(asio::buffer(data),
        [t](turnloop::error_code, std::size_t) { ++t->ran; });
    acceptor.async_accept([t](turnloop::error_code, tcp::socket) {
      ++t->ran;
    });
    l.poll();
  }
  BOOST_TEST(t->ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(suspended_coroutines_are_destroyed_with_their_frames)
{
  auto t = std::make_shared<tracker>();
  {
    turnloop::loop l;
    tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
    tcp::socket client(l);
    tcp::socket server(l);
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
    asio::co_spawn(l, outer(t), asio::detached);
    asio::co_spawn(l, read_forever(server, t), asio::detached);
    asio::co_spawn(asio::make_strand(l), wait_forever_on_timer(t),
        asio::detached);
    l.run_for(20ms); // every coroutine is now suspended
  }
  BOOST_TEST(t->ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(a_handler_whose_destructor_posts_during_destruction)
{
  // Destroying this handler posts another; the loop is already shutting
  // down, so the new one is destroyed too rather than queued or run.
  auto t = std::make_shared<tracker>();
  struct posts_on_destruction
  {
    turnloop::loop* l;
    std::shared_ptr<tracker> t;
    posts_on_destruction(turnloop::loop* l, std::shared_ptr<tracker> t)
      : l(l), t(std::move(t)) {}
    posts_on_destruction(posts_on_destruction&& o) noexcept
      : l(std::exchange(o.l, nullptr)), t(std::move(o.t)) {}
    ~posts_on_destruction()
    {
      if (l)
        asio::post(*l, [t = t] { ++t->ran; });
    }
    void operator()() { ++t->ran; }
  };
  {
    turnloop::loop l;
    asio::post(l, posts_on_destruction(&l, t));
    asio::steady_timer timer(l, 1h);
    timer.async_wait([p = std::make_shared<posts_on_destruction>(&l, t)](
          turnloop::error_code) {});
  }
  BOOST_TEST(t->ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(pending_work_holding_tracked_executors_is_destroyed)
{
  auto t = std::make_shared<tracker>();
  {
    turnloop::loop l;
    std::optional<asio::steady_timer> timer;
    asio::post(l, [&] {
      // The guard is made on the loop thread (a local unit of work) and
      // destroyed with the pending wait when the loop goes.
      timer.emplace(l, 1h);
      timer->async_wait([t, g = asio::make_work_guard(l)](
            turnloop::error_code) { ++t->ran; });
      asio::post(l, [&l] { l.stop(); });
    });
    l.run();
  }
  BOOST_TEST(t->ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(a_loop_that_threw_out_of_run_destroys_cleanly)
{
  auto t = std::make_shared<tracker>();
  {
    turnloop::loop l;
    asio::post(l, [] { throw std::runtime_error("x"); });
    for (int i = 0; i < 10; ++i)
      asio::post(l, [t] { ++t->ran; });
    BOOST_CHECK_THROW(l.run(), std::runtime_error);
  }
  BOOST_TEST(t->ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

// The services reached through a plain execution_context (accepts, pooled
// reads, blocking jobs on a polymorphic executor) recognise a loop by
// detail::loop_of, which each thread remembers. A loop destroyed, and an
// io_context made in its memory, is not taken for the loop.
BOOST_AUTO_TEST_CASE(a_context_made_where_a_loop_was_is_not_taken_for_it)
{
  void* memory = ::operator new(std::max(sizeof(turnloop::loop),
        sizeof(asio::io_context)));
  auto* l = new (memory) turnloop::loop;
  BOOST_TEST(turnloop::detail::loop_of(*l) == l);
  BOOST_TEST(turnloop::detail::loop_of(*l) == l);
  l->~loop();
  auto* ioc = new (memory) asio::io_context;
  {
    asio::steady_timer timer(*ioc); // a reactor, but Asio's own
    BOOST_TEST(turnloop::detail::loop_of(*ioc) == nullptr);
  }
  ioc->~io_context();
  ::operator delete(memory);
}

namespace {

// Runs its action when destroyed (not when moved from): a handler that
// never runs and reaches for one of the loop's services from its destructor.
struct acts_on_destruction
{
  std::function<void()> action;

  explicit acts_on_destruction(std::function<void()> a) : action(std::move(a)) {}
  acts_on_destruction(acts_on_destruction&& o) noexcept
    : action(std::exchange(o.action, nullptr)) {}
  ~acts_on_destruction()
  {
    if (action)
      action();
  }
  void operator()() {}
  void operator()(turnloop::error_code) {}
};

// Leaves two handlers for ~loop to destroy, each doing @p action: one in the
// loop's queue (destroyed after the services have shut down) and one in a
// timer's wait (destroyed while they shut down).
void destroy_loop_with(turnloop::loop& l, std::function<void()> action)
{
  asio::post(l, acts_on_destruction(action));
  auto timer = std::make_shared<asio::steady_timer>(l, 1h);
  timer->async_wait([timer, a = std::make_shared<acts_on_destruction>(action)](
        turnloop::error_code) {});
}

void submit_blocking(turnloop::loop& l, std::shared_ptr<tracker> t)
{
  turnloop::async_blocking(l, [t] { ++t->ran; return 1; },
      [t](turnloop::error_code, std::exception_ptr, int) { ++t->ran; });
}

void lease_both_ways(turnloop::loop& l, std::shared_ptr<tracker> t)
{
  auto& pool = asio::use_service<turnloop::buffer_pool>(l);
  turnloop::error_code ec;
  turnloop::buffer_lease lease = pool.try_lease(ec);
  if (lease)
    ++t->ran;
  pool.async_lease([t](turnloop::error_code, turnloop::buffer_lease) {
    ++t->ran;
  });
}

} // namespace

BOOST_AUTO_TEST_CASE(a_destructor_may_make_the_loops_first_blocking_submission)
{
  // The blocking service is made after the loop's services have shut down:
  // the submission is dropped (its handler destroyed unrun, its function
  // never called), as a post then, and the service goes cleanly.
  auto t = std::make_shared<tracker>();
  {
    turnloop::loop l;
    destroy_loop_with(l, [&l, t] { submit_blocking(l, t); });
  }
  BOOST_TEST(t->ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(a_destructor_may_submit_to_a_blocking_service_that_has_shut_down,
    * test::threads_label())
{
  auto t = std::make_shared<tracker>();
  {
    turnloop::loop l;
    auto before = std::make_shared<tracker>();
    submit_blocking(l, before);
    l.run();
    BOOST_TEST(before->ran == 2);
    destroy_loop_with(l, [&l, t] { submit_blocking(l, t); });
  }
  BOOST_TEST(t->ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(a_destructor_may_make_the_loops_first_lease)
{
  auto t = std::make_shared<tracker>();
  {
    turnloop::loop l;
    destroy_loop_with(l, [&l, t] { lease_both_ways(l, t); });
  }
  BOOST_TEST(t->ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(a_destructor_may_lease_from_a_pool_that_has_shut_down)
{
  auto t = std::make_shared<tracker>();
  {
    turnloop::loop l;
    auto& pool = asio::use_service<turnloop::buffer_pool>(l);
    BOOST_TEST(static_cast<bool>(pool.try_lease()));
    destroy_loop_with(l, [&l, t] { lease_both_ways(l, t); });
  }
  BOOST_TEST(t->ran == 0);
  BOOST_TEST(t.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(a_blocking_service_made_and_dropped_outside_the_registry_goes_cleanly)
{
  // What Asio does to the loser when two threads make a service at once: it
  // is constructed, never shut down, and destroyed, maybe while the loop
  // runs. Nothing of it may stay behind in the loop.
  turnloop::loop l;
  {
    turnloop::detail::blocking_service loser(l);
  }
  auto t = std::make_shared<tracker>();
  submit_blocking(l, t);
  l.run();
  BOOST_TEST(t->ran == 2);
}
