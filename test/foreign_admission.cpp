//
// test/foreign_admission.cpp
//
// Submissions that a ceiling bounds are admitted or refused at the call,
// on whichever thread makes it: a thread other than the loop's that floods
// async_blocking, async_blocking_long or async_lease while the loop is
// blocked in a handler leaves at most the ceilings' worth of work queued,
// and every submission that was not refused at the call is completed
// exactly once after the loop resumes.
//

#include <turnloop/blocking.hpp>

#define BOOST_TEST_MODULE foreign_admission
#include <boost/test/unit_test.hpp>

#include <turnloop/buffer_pool.hpp>
#include <turnloop/error.hpp>
#include <turnloop/loop.hpp>

#include "asio.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "support.hpp"

using namespace std::chrono_literals;

namespace {

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// The sanitizers keep freed memory in quarantine, so RSS says nothing there;
// without fork (Windows) the flood runs in this process, whose high-water
// mark is not the flood's.
constexpr bool rss_is_meaningful = test::has_fork;
#else // !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
constexpr bool rss_is_meaningful = false;
#endif // !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)

// What one flood did, counted in a child process.
struct figures
{
  long calls = 0;        // submissions made
  long thrown = 0;       // refused at the call with a system_error
  long invoked = 0;      // completion handlers invoked
  long succeeded = 0;    // ... with no error
  long refused = 0;      // ... with resource_limit
  long other = 0;        // ... with anything else
  long queued = 0;       // cross-thread posts queued at the end of the flood
  long rss_growth_kib = 0;
};

// Runs @p work in a child process (in this one, without fork) and returns
// what it reports; calls == -1 if the child failed.
figures in_child(std::function<figures()> work)
{
  if constexpr (!test::has_fork)
    return work();
  if (const std::optional<figures> f = test::result_in_child(work))
    return *f;
  figures failed;
  failed.calls = -1;
  return failed;
}

turnloop::config small_ceilings()
{
  turnloop::config cfg;
  cfg.max_operations = 16;
  cfg.post_capacity = 16;
  cfg.blocking.threads = 2;
  cfg.blocking.queue_capacity = 16;
  cfg.blocking.max_undelivered = 16;
  cfg.blocking.long_threads_max = 4;
  cfg.pooled_buffers = 4;
  cfg.pooled_buffer_size = 256;
  return cfg;
}

// While the loop is blocked in a handler, another thread calls @p submit
// for a second; @p submit passes on a completion that records its error.
// Then the loop resumes and runs until every completion is in.
template <typename Submit>
figures flood(turnloop::loop& l, Submit submit)
{
  figures f;
  auto completed = [&f](const turnloop::error_code& ec) {
    ++f.invoked;
    if (!ec)
      ++f.succeeded;
    else if (ec == turnloop::error::resource_limit)
      ++f.refused;
    else
      ++f.other;
  };
  asio::post(l, [&] {
    const long before = test::status_kib("VmRSS");
    std::thread flooder([&] {
      const auto end = std::chrono::steady_clock::now() + 1s;
      while (std::chrono::steady_clock::now() < end)
      {
        ++f.calls;
        try
        {
          submit(completed);
        }
        catch (const turnloop::system_error& e)
        {
          if (e.code() == turnloop::error::resource_limit)
            ++f.thrown;
        }
      }
    });
    flooder.join();
    f.queued = static_cast<long>(l.stats().posts_queued);
    f.rss_growth_kib = test::status_kib("VmHWM") - before;
  });
  l.run();
  return f;
}

void check(const figures& f, long admitted, long most_queued)
{
  BOOST_TEST_MESSAGE("calls " << f.calls << ", refused at the call "
      << f.thrown << ", completed " << f.invoked << " (" << f.succeeded
      << " succeeded, " << f.refused << " refused), queued at the end of the"
      " flood " << f.queued << ", RSS growth " << f.rss_growth_kib << " KiB");
  BOOST_REQUIRE(f.calls > 0);
  // Each submission not refused at the call completes exactly once.
  BOOST_TEST(f.invoked == f.calls - f.thrown);
  BOOST_TEST(f.succeeded == admitted);
  BOOST_TEST(f.other == 0);
  BOOST_TEST(f.queued <= most_queued);
  BOOST_TEST(f.thrown > 0);
  if (rss_is_meaningful)
    BOOST_TEST(f.rss_growth_kib < 4 * 1024);
}

} // namespace

BOOST_AUTO_TEST_CASE(a_foreign_async_blocking_flood_queues_no_more_than_the_ceilings,
    * test::threads_label())
{
  const figures f = in_child([] {
    turnloop::loop l(small_ceilings());
    figures r = flood(l, [&](auto completed) {
      turnloop::async_blocking(l, [] { return 1; },
          [completed](turnloop::error_code ec, std::exception_ptr,
            int) { completed(ec); });
    });
    // The service counts the same admissions.
    if (turnloop::blocking_statistics(l).admitted
        != static_cast<std::uint64_t>(r.succeeded))
      r.other = -1;
    return r;
  });
  // Nothing is delivered while the loop is blocked, so the credits
  // (max_undelivered = queue_capacity = max_operations) admit that many.
  const turnloop::config cfg = small_ceilings();
  check(f, static_cast<long>(cfg.blocking.max_undelivered),
      static_cast<long>(cfg.blocking.max_undelivered + cfg.post_capacity));
}

BOOST_AUTO_TEST_CASE(a_foreign_async_blocking_long_flood_queues_no_more_than_the_ceilings,
    * test::threads_label())
{
  const figures f = in_child([] {
    turnloop::loop l(small_ceilings());
    return flood(l, [&](auto completed) {
      turnloop::async_blocking_long(l, [] {},
          [completed](turnloop::error_code ec, std::exception_ptr) {
            completed(ec);
          });
    });
  });
  const turnloop::config cfg = small_ceilings();
  check(f, static_cast<long>(cfg.blocking.long_threads_max),
      static_cast<long>(cfg.blocking.long_threads_max + cfg.post_capacity));
}

BOOST_AUTO_TEST_CASE(a_foreign_async_lease_flood_queues_no_more_than_the_ceilings,
    * test::threads_label())
{
  const figures f = in_child([] {
    turnloop::loop l(small_ceilings());
    auto& pool = asio::use_service<turnloop::buffer_pool>(l);
    return flood(l, [&](auto completed) {
      pool.async_lease([completed](turnloop::error_code ec,
            turnloop::buffer_lease) { completed(ec); });
    });
  });
  const turnloop::config cfg = small_ceilings();
  check(f, static_cast<long>(cfg.max_operations),
      static_cast<long>(cfg.max_operations + cfg.post_capacity));
}
