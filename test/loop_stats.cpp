//
// test/loop_stats.cpp
//
// loop::stats() reports every ceiling of turnloop::config with its limit,
// use and high-water mark, and reading it creates no service.
//

#include <turnloop/loop_stats.hpp>

#include <turnloop.hpp>

#define BOOST_TEST_MODULE loop_stats
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <thread>

#include "support.hpp"

using asio::ip::tcp;

BOOST_AUTO_TEST_CASE(every_ceiling_reports_its_limit_and_an_idle_loop_uses_none)
{
  turnloop::config c;
  c.max_handles = 11;
  c.max_operations = 22;
  c.post_capacity = 33;
  c.pooled_buffers = 44;
  c.blocking.queue_capacity = 55;
  c.blocking.long_threads_max = 66;
  c.blocking.max_undelivered = 77;
  turnloop::loop l(c);
  const std::size_t threads = test::thread_count();
  const turnloop::loop_stats s = l.stats();
  BOOST_TEST(s.handles.limit == 11u);
  BOOST_TEST(s.operations.limit == 22u);
  BOOST_TEST(s.posts.limit == 33u);
  BOOST_TEST(s.pooled_buffers.limit == 44u);
  BOOST_TEST(s.blocking_queue.limit == 55u);
  BOOST_TEST(s.blocking_long_threads.limit == 66u);
  BOOST_TEST(s.blocking_undelivered.limit == 77u);
  for (const turnloop::ceiling_use& u : {s.handles, s.operations, s.posts,
         s.pooled_buffers, s.blocking_queue, s.blocking_long_threads,
         s.blocking_undelivered})
  {
    BOOST_TEST(u.in_use == 0u);
    BOOST_TEST(u.high_water == 0u);
    BOOST_TEST(u.refusals == 0u);
  }
  BOOST_TEST(s.pool.minted == 0u);
  BOOST_TEST(s.blocking.threads == 0u);
  // Reading the statistics started no service and no thread.
  BOOST_TEST(!asio::has_service<turnloop::buffer_pool>(l));
  BOOST_TEST(test::thread_count() == threads);
}

BOOST_AUTO_TEST_CASE(use_and_high_water_follow_the_work)
{
  turnloop::loop l;
  auto& pool = asio::use_service<turnloop::buffer_pool>(l);
  std::size_t leased_inside = 0;
  std::size_t operations_inside = 0;
  asio::post(l, [&] {
    turnloop::buffer_lease a = pool.try_lease();
    turnloop::buffer_lease b = pool.try_lease();
    leased_inside = l.stats().pooled_buffers.in_use;
    turnloop::async_blocking(l, [] { return 1; },
        [&](turnloop::error_code, std::exception_ptr, int) {});
    operations_inside = l.stats().operations.in_use;
  });
  l.run();
  const turnloop::loop_stats s = l.stats();
  BOOST_TEST(leased_inside == 2u);
  BOOST_TEST(s.pooled_buffers.in_use == 0u);
  BOOST_TEST(s.pooled_buffers.high_water == 2u);
  BOOST_TEST(operations_inside == 1u);
  BOOST_TEST(s.operations.in_use == 0u);
  BOOST_TEST(s.operations.high_water >= 1u);
  BOOST_TEST(s.blocking_undelivered.high_water == 1u);
  BOOST_TEST(s.blocking.delivered == 1u);
}

BOOST_AUTO_TEST_CASE(accepted_connections_count_as_handles)
{
  turnloop::config c;
  c.max_handles = 4;
  turnloop::loop l(c);
  tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
  tcp::socket client(l);
  std::size_t handles_inside = 0;
  turnloop::async_accept(acceptor,
      [&](turnloop::error_code ec, turnloop::accepted_socket<tcp> s) {
        BOOST_TEST(!ec);
        handles_inside = l.stats().handles.in_use;
      });
  client.async_connect(acceptor.local_endpoint(), [](auto) {});
  l.run();
  BOOST_TEST(handles_inside == 1u);
  BOOST_TEST(l.stats().handles.in_use == 0u);
  BOOST_TEST(l.stats().handles.high_water == 1u);
  BOOST_TEST(l.stats().handles.limit == 4u);
}

BOOST_AUTO_TEST_CASE(the_local_queue_high_water_mark_counts_cross_thread_posts_taken_into_it,
    * test::threads_label())
{
  turnloop::loop l;
  int ran = 0;
  std::thread([&] {
    for (int i = 0; i != 100; ++i)
      asio::post(l, [&] { ++ran; });
  }).join();
  BOOST_TEST(l.stats().local_queued_high_water == 0u);
  l.run();
  BOOST_TEST(ran == 100);
  // One turn takes all 100 (below events_per_turn) into the local queue.
  BOOST_TEST(l.stats().local_queued_high_water == 100u);
  BOOST_TEST(l.stats().local_queued == 0u);
}
