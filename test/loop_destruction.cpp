//
// test/loop_destruction.cpp
//
// Destroying a loop with pending work destroys every handler without running
// it: no leak, no use-after-free (ASan run), no hang.
//

#include <turnloop/loop.hpp>
#include <turnloop/detail/loop_of.hpp>

#define BOOST_TEST_MODULE loop_destruction
#include <boost/test/unit_test.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>

#include "support.hpp"

namespace asio = boost::asio;
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
    timer.async_wait([t](boost::system::error_code) { ++t->ran; });
    tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
    tcp::socket client(l);
    tcp::socket server(l);
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
    static char data[16];
    server.async_read_some(asio::buffer(data),
        [t](boost::system::error_code, std::size_t) { ++t->ran; });
    acceptor.async_accept([t](boost::system::error_code, tcp::socket) {
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
          boost::system::error_code) {});
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
            boost::system::error_code) { ++t->ran; });
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
        sizeof(boost::asio::io_context)));
  auto* l = new (memory) turnloop::loop;
  BOOST_TEST(turnloop::detail::loop_of(*l) == l);
  BOOST_TEST(turnloop::detail::loop_of(*l) == l);
  l->~loop();
  auto* ioc = new (memory) boost::asio::io_context;
  {
    boost::asio::steady_timer timer(*ioc); // a reactor, but Asio's own
    BOOST_TEST(turnloop::detail::loop_of(*ioc) == nullptr);
  }
  ioc->~io_context();
  ::operator delete(memory);
}

