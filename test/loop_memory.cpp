//
// test/loop_memory.cpp
//
// Every capacity in turnloop::config is a ceiling, not a preallocation: a
// loop configured for its worst day costs, idle, what a minimal one costs.
// Each measurement is the peak resident-set growth across constructing a
// loop and running one empty turn, in a child process of its own (RSS is a
// high-water mark, so a second loop in the same process would inherit the
// first's).
//

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE loop_memory
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <vector>

#include "support.hpp"

namespace {

long idle_loop_kib(const turnloop::config& c)
{
  return test::peak_rss_growth_in_child_kib([&] {
    turnloop::loop l(c);
    asio::post(l, [] {});
    l.run();
  });
}

// The original's "net profile": sized for a busy server.
turnloop::config net_profile()
{
  turnloop::config c;
  c.max_handles = 65536;
  c.max_operations = 32768;
  c.pooled_buffers = 64;
  c.pooled_buffer_size = 16 * 1024;
  c.post_capacity = 256;
  return c;
}

turnloop::config minimal()
{
  turnloop::config c;
  c.max_handles = 1;
  c.max_operations = 1;
  c.pooled_buffers = 0;
  c.post_capacity = 1;
  c.blocking.max_undelivered = 1;
  c.blocking.queue_capacity = 1;
  return c;
}

turnloop::config every_ceiling_at_its_maximum()
{
  const std::size_t n = turnloop::config::max_index;
  turnloop::config c;
  c.max_handles = n;
  c.max_operations = n;
  c.pooled_buffers = n;
  c.pooled_buffer_size = 64 << 20;
  c.post_capacity = n;
  c.blocking.queue_capacity = n;
  c.blocking.long_threads_max = 65536;
  c.blocking.max_undelivered = n;
  return c;
}

// Each measurement needs a child process of its own (test::has_fork).
const char* const forks =
  "measured in a child process of its own; no fork on Windows";

} // namespace

BOOST_AUTO_TEST_CASE(the_rss_probe_sees_a_real_allocation,
    * test::only_where(test::has_fork, forks))
{
  // Calibration: 1 MiB written in the child shows up, even though it is
  // freed before the measurement.
  const long growth = test::peak_rss_growth_in_child_kib([] {
    std::vector<char> big(1 << 20, 1);
    asm volatile("" : : "r"(big.data()) : "memory");
  });
  BOOST_TEST(growth >= 1000);
}

BOOST_AUTO_TEST_CASE(the_net_profile_costs_what_a_minimal_config_costs_idle,
    * test::only_where(test::has_fork, forks))
{
  const long net = idle_loop_kib(net_profile());
  const long small = idle_loop_kib(minimal());
  BOOST_TEST_MESSAGE("idle loop: net profile " << net << " KiB, minimal "
      << small << " KiB");
  BOOST_REQUIRE(net >= 0);
  BOOST_REQUIRE(small >= 0);
  BOOST_TEST(net - small <= 64);
}

BOOST_AUTO_TEST_CASE(every_ceiling_at_its_maximum_costs_nothing_idle,
    * test::only_where(test::has_fork, forks))
{
  // 16 M handles, operations and posts, 16 M pooled buffers of 64 MiB (a
  // petabyte, as a ceiling): still what a minimal loop costs.
  const long huge = idle_loop_kib(every_ceiling_at_its_maximum());
  const long small = idle_loop_kib(minimal());
  BOOST_TEST_MESSAGE("idle loop: every ceiling at its maximum " << huge
      << " KiB, minimal " << small << " KiB");
  BOOST_REQUIRE(huge >= 0);
  BOOST_TEST(huge - small <= 64);
}
