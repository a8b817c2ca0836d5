//
// test/blocking_credit.cpp
//
// The blocking service's ceilings: every admitted job holds a credit until
// its completion is *delivered* (not until its worker finishes), the result
// ring is sized by max_undelivered and never overflows, the queue and the
// long-thread ceilings and the loop's max_operations refuse with
// resource_limit in a later turn without running the job, and a large
// ceiling costs no memory until it is used.
//

#include <turnloop/blocking.hpp>

#define BOOST_TEST_MODULE blocking_credit
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#if !defined(_WIN32)
# include <unistd.h>
#endif // !defined(_WIN32)

#include "blocking_support.hpp"

using turnloop::error_code;

namespace {

// What happened to one submission.
struct outcome
{
  int completions = 0;
  error_code ec;
  int value = -1;
  std::atomic<bool> ran{false};
};

// Submits job @p i: it waits for @p g, then returns i.
void submit(turnloop::loop& l, bool long_job, std::deque<outcome>& outcomes,
    test::gate& g)
{
  const int i = static_cast<int>(outcomes.size());
  outcome& o = outcomes.emplace_back();
  auto job = [&o, &g, i] {
    o.ran = true;
    g.wait();
    return i;
  };
  auto handler = [&o](error_code ec, std::exception_ptr e, int v) {
    BOOST_TEST(!e);
    ++o.completions;
    o.ec = ec;
    o.value = v;
  };
  if (long_job)
    turnloop::async_blocking_long(l, job, handler);
  else
    turnloop::async_blocking(l, job, handler);
}

std::uint64_t refused(turnloop::loop& l)
{
  return turnloop::blocking_statistics(l).refused;
}

// Anonymous resident memory of this process, in KiB (code pages excluded).
long rss_anon_kib()
{
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("RssAnon:", 0) == 0)
      return std::stol(line.substr(8));
  return -1;
}

// The measurements, each made in a fresh process (this test module run
// again, for one case, with TURNLOOP_RSS_CHILD naming the measurement): RSS
// is a high-water mark, and a forked child would inherit the parent's heap.
constexpr const char* memory_case =
  "a_million_undelivered_costs_no_more_memory_than_sixteen";

void measure(const std::string& what)
{
  // Read while what was built is alive: freeing it would give memory back.
  const long before = rss_anon_kib();
  long growth = -1;
  const std::size_t colon = what.find(':');
  const std::string kind = what.substr(0, colon);
  if (kind == "touch")
  {
    // Proves the measure is live.
    std::vector<char> v(4 << 20);
    std::memset(v.data(), 1, v.size());
    asm volatile("" : : "r"(v.data()) : "memory");
    growth = rss_anon_kib() - before;
  }
  else
  {
    turnloop::config c;
    c.blocking.max_undelivered = std::stoul(what.substr(colon + 1));
    turnloop::loop l(c);
    if (kind == "round_trip")
    {
      turnloop::async_blocking(l, [] { return 1; },
          [](error_code, std::exception_ptr, int) {});
    }
    l.run();
    growth = rss_anon_kib() - before;
  }
  std::printf("rss_growth %ld\n", growth);
}

// Growth of a fresh process's anonymous resident memory across
// measure(@p what), in KiB; -1 if the child failed.
long resident_growth_in_child(const std::string& what)
{
#if defined(_WIN32)
  BOOST_FAIL("runs this module again under a POSIX shell");
  return -1;
#else // defined(_WIN32)
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return -1;
  self[n] = 0;
  const std::string command = "TURNLOOP_RSS_CHILD=" + what + " '"
    + std::string(self) + "' --run_test=" + memory_case
    + " --log_level=nothing --report_level=no";
  FILE* child = ::popen(command.c_str(), "r");
  if (!child)
    return -1;
  long growth = -1;
  if (std::fscanf(child, "rss_growth %ld", &growth) != 1)
    growth = -1;
  return ::pclose(child) == 0 ? growth : -1;
#endif // defined(_WIN32)
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized = true; // shadow memory distorts resident sizes
#else // defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized = false;
#endif // defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)

} // namespace

BOOST_AUTO_TEST_CASE(a_million_undelivered_costs_no_more_memory_than_sixteen,
    * test::only_where(test::has_fork,
      "measures /proc/self/status's RssAnon in fresh processes that a POSIX "
      "shell starts"))
{
  if (const char* what = std::getenv("TURNLOOP_RSS_CHILD"))
  {
    measure(what);
    return;
  }
  if (sanitized)
  {
    BOOST_TEST_MESSAGE("skipped: resident sizes mean nothing under a sanitizer");
    return;
  }

  const long touched = resident_growth_in_child("touch");
  BOOST_TEST(touched >= 4000);

  // Constructing a loop creates nothing of the service.
  const long idle_small = resident_growth_in_child("idle:16");
  const long idle_large = resident_growth_in_child("idle:1000000");
  // One round trip creates the service, its ring and its workers: the ring
  // has room for a million results, but only what is used is resident.
  const long small = resident_growth_in_child("round_trip:16");
  const long large = resident_growth_in_child("round_trip:1000000");
  BOOST_TEST_MESSAGE("resident growth, KiB: idle " << idle_small << " / "
      << idle_large << ", one job " << small << " / " << large
      << " (max_undelivered 16 / 1000000)");
  BOOST_TEST_REQUIRE(idle_small >= 0);
  BOOST_TEST_REQUIRE(idle_large >= 0);
  BOOST_TEST_REQUIRE(small >= 0);
  BOOST_TEST_REQUIRE(large >= 0);
  BOOST_TEST(idle_large <= idle_small + 16);
  BOOST_TEST(large <= small + 64);
}

BOOST_AUTO_TEST_SUITE(ceilings, * test::threads_label())

BOOST_AUTO_TEST_CASE(the_adversarial_sequence_fills_the_ring_exactly_and_loses_nothing)
{
  // Small ceilings, and a loop that does not turn while the sequence runs:
  // submit until refused, let the workers drain the queue into the ring,
  // submit again, repeat. Credits are only given back on delivery, so the
  // ring (max_undelivered) always has room: the undelivered ceiling refuses
  // before the ring can overflow.
  turnloop::config c;
  c.blocking.threads = 2;
  c.blocking.queue_capacity = 4;
  c.blocking.long_threads_max = 2;
  c.blocking.max_undelivered = 16;
  turnloop::loop l(c);
  std::deque<outcome> outcomes;
  std::deque<test::gate> gates;
  std::size_t full_rounds = 0;

  asio::post(l, [&] {
    for (int round = 0; round < 8; ++round)
    {
      test::gate& g = gates.emplace_back();
      // Bounded jobs until refused, then long ones until refused.
      for (bool long_job : {false, true})
      {
        for (;;)
        {
          const std::uint64_t before = refused(l);
          submit(l, long_job, outcomes, g);
          if (refused(l) != before)
            break;
        }
      }
      // Let this round's jobs finish; their results wait in the ring.
      g.open = true;
      BOOST_TEST(test::all_results_in_ring(l));
      BOOST_TEST(test::wait_for([&] {
        return turnloop::blocking_statistics(l).long_threads == 0;
      }));
      const turnloop::blocking_stats s = turnloop::blocking_statistics(l);
      BOOST_TEST(s.undelivered <= 16u);
      if (s.undelivered == 16)
        ++full_rounds;
    }
  });
  l.run();

  const turnloop::blocking_stats s = turnloop::blocking_statistics(l);
  BOOST_TEST(full_rounds >= 2u); // the ring was full, and was refilled at
                                 // again with nothing delivered in between
  BOOST_TEST(s.admitted == 16u);
  BOOST_TEST(s.delivered == 16u);
  BOOST_TEST(s.undelivered == 0u);
  BOOST_TEST(s.undelivered_high_water == 16u);
  BOOST_TEST(s.refused_undelivered >= 2u);
  BOOST_TEST(s.refused == outcomes.size() - 16);

  int admitted = 0;
  for (std::size_t i = 0; i < outcomes.size(); ++i)
  {
    const outcome& o = outcomes[i];
    BOOST_TEST(o.completions == 1, "submission " << i);
    if (o.ec)
    {
      BOOST_TEST((o.ec == turnloop::error::resource_limit), "submission " << i);
      BOOST_TEST(!o.ran.load(), "refused submission " << i << " ran");
    }
    else
    {
      ++admitted;
      BOOST_TEST(o.value == static_cast<int>(i));
    }
  }
  BOOST_TEST(admitted == 16);
  BOOST_TEST(turnloop::detail::core_of(l).operations().in_use() == 0u);
}

BOOST_AUTO_TEST_CASE(a_finished_job_holds_its_credit_until_it_is_delivered)
{
  turnloop::config c;
  c.blocking.max_undelivered = 2;
  turnloop::loop l(c);
  std::deque<outcome> outcomes;
  test::gate open;
  open.open = true;
  // Once both are delivered, the credit is back.
  std::function<void()> after_delivery = [&] {
    if (outcomes[1].completions == 0)
      asio::post(l, after_delivery);
    else
      submit(l, false, outcomes, open);
  };
  asio::post(l, [&] {
    submit(l, false, outcomes, open);
    submit(l, false, outcomes, open);
    BOOST_TEST(test::all_results_in_ring(l)); // both workers are done...
    submit(l, false, outcomes, open);   // ...but the credit is not back
    asio::post(l, after_delivery);
  });
  l.run();
  BOOST_TEST_REQUIRE(outcomes.size() == 4u);
  BOOST_TEST(!outcomes[0].ec);
  BOOST_TEST(!outcomes[1].ec);
  BOOST_TEST((outcomes[2].ec == turnloop::error::resource_limit));
  BOOST_TEST(!outcomes[3].ec);
  BOOST_TEST(turnloop::blocking_statistics(l).refused_undelivered == 1u);
}

BOOST_AUTO_TEST_CASE(a_full_queue_refuses_in_a_later_turn_and_the_job_never_runs)
{
  turnloop::config c;
  c.blocking.threads = 1;
  c.blocking.queue_capacity = 2;
  turnloop::loop l(c);
  std::deque<outcome> outcomes;
  test::gate g;
  bool refusal_was_inline = true;
  asio::post(l, [&] {
    submit(l, false, outcomes, g);
    BOOST_TEST(test::wait_for([&] {
      return turnloop::blocking_statistics(l).busy == 1;
    }));
    submit(l, false, outcomes, g);
    submit(l, false, outcomes, g);
    submit(l, false, outcomes, g); // the queue holds two
    refusal_was_inline = outcomes[3].completions != 0;
    g.open = true;
  });
  l.run();
  BOOST_TEST(!refusal_was_inline);
  BOOST_TEST((outcomes[3].ec == turnloop::error::resource_limit));
  BOOST_TEST(!outcomes[3].ran.load());
  for (int i = 0; i < 3; ++i)
    BOOST_TEST(outcomes[i].value == i);
  const turnloop::blocking_stats s = turnloop::blocking_statistics(l);
  BOOST_TEST(s.refused_queue == 1u);
  BOOST_TEST(s.queued_high_water == 2u);
}

BOOST_AUTO_TEST_CASE(long_jobs_beyond_long_threads_max_are_refused)
{
  turnloop::config c;
  c.blocking.long_threads_max = 1;
  turnloop::loop l(c);
  std::deque<outcome> outcomes;
  test::gate g;
  asio::post(l, [&] {
    submit(l, true, outcomes, g);
    submit(l, true, outcomes, g);
    asio::post(l, [&] { g.open = true; });
  });
  l.run();
  BOOST_TEST(!outcomes[0].ec);
  BOOST_TEST((outcomes[1].ec == turnloop::error::resource_limit));
  BOOST_TEST(!outcomes[1].ran.load());
  BOOST_TEST(turnloop::blocking_statistics(l).refused_threads == 1u);
}

BOOST_AUTO_TEST_CASE(admitted_jobs_count_against_the_loops_max_operations)
{
  turnloop::config c;
  c.max_operations = 3;
  turnloop::loop l(c);
  turnloop::detail::ceiling& operations =
    turnloop::detail::core_of(l).operations();
  std::deque<outcome> outcomes;
  test::gate g;
  std::size_t in_use = 0;
  asio::post(l, [&] {
    for (int i = 0; i < 4; ++i)
      submit(l, false, outcomes, g);
    in_use = operations.in_use();
    g.open = true;
  });
  l.run();
  BOOST_TEST(in_use == 3u);
  BOOST_TEST((outcomes[3].ec == turnloop::error::resource_limit));
  BOOST_TEST(!outcomes[3].ran.load());
  BOOST_TEST(operations.in_use() == 0u);
  BOOST_TEST(operations.refusals() == 1u);
  BOOST_TEST(turnloop::blocking_statistics(l).refused_operations == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
