//
// test/headers/smoke.cpp
//
// The small program each build mode runs, linked with one translation unit
// per public header: a loop with a configuration, posts from its own thread
// and another, a timer, a blocking job, a pooled buffer, the stats, and a
// bad configuration refused with a clear error. Prints each failed check and
// exits 1 if there was one.
//

#include <turnloop.hpp>

#include "../asio.hpp"

#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

namespace {

int failures = 0;

void check(bool ok, const char* what)
{
  if (!ok)
  {
    std::printf("FAILED: %s\n", what);
    ++failures;
  }
}

} // namespace

int main()
{
  turnloop::config cfg;
  cfg.events_per_turn = 64;
  cfg.pooled_buffers = 2;
  cfg.pooled_buffer_size = 128;
  turnloop::loop ctx(cfg);

  int posted = 0;
  asio::post(ctx, [&] { ++posted; });

  bool remote_posted = false;
  std::thread other([&] {
    turnloop::error_code ec = ctx.try_post([&] { remote_posted = true; });
    check(!ec, "a post from another thread is accepted");
  });
  other.join();

  bool timer_fired = false;
  asio::steady_timer timer(ctx);
  timer.expires_after(std::chrono::milliseconds(1));
  timer.async_wait([&](turnloop::error_code ec) { timer_fired = !ec; });

  int blocking_result = 0;
  turnloop::async_blocking(ctx, [] { return 6 * 7; },
      [&](turnloop::error_code ec, std::exception_ptr e, int r) {
        if (!ec && !e)
          blocking_result = r;
      });

  std::size_t leased_size = 0;
  asio::post(ctx, [&] {
    turnloop::buffer_lease lease =
      asio::use_service<turnloop::buffer_pool>(ctx).try_lease();
    leased_size = lease ? lease.capacity() : 0;
  });

  ctx.run();

  check(posted == 1, "a local post runs");
  check(remote_posted, "a post from another thread runs");
  check(timer_fired, "a timer fires");
  check(blocking_result == 42, "a blocking job delivers its result");
  check(leased_size == 128, "a pooled buffer of the configured size is leased");

  const turnloop::loop_stats stats = ctx.stats();
  check(stats.handlers_run >= 3, "stats count the handlers run");
  check(stats.pool.capacity == 2 && stats.pool.minted == 1,
      "stats see the pool's ceiling and its one buffer");
  check(stats.blocking.delivered == 1,
      "stats see the blocking job");

  turnloop::config bad;
  bad.events_per_turn = 0;
  try
  {
    turnloop::loop refused(bad);
    check(false, "a bad configuration is refused");
  }
  catch (const turnloop::system_error& e)
  {
    check(e.code() == turnloop::error::invalid_config,
        "a bad configuration is refused with invalid_config");
  }
  if (failures == 0)
    std::printf("smoke: every check passed\n");
  return failures == 0 ? 0 : 1;
}
