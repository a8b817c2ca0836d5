//
// test/consumer/main.cpp
//
// The consumer's program: what a user's first turnloop program does (a
// loop, a post, a timer, a blocking job, the stats), checking each. Prints
// one line naming the build mode and the Asio it was compiled against;
// exits 1 if a check failed.
//

#include <turnloop.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/version.hpp>

#include <chrono>
#include <cstdio>
#include <exception>

int main()
{
  turnloop::loop ctx;

  int posted = 0;
  boost::asio::post(ctx, [&] { ++posted; });

  bool timer_fired = false;
  boost::asio::steady_timer timer(ctx);
  timer.expires_after(std::chrono::milliseconds(1));
  timer.async_wait([&](boost::system::error_code ec) { timer_fired = !ec; });

  int answer = 0;
  turnloop::async_blocking(ctx, [] { return 42; },
      [&](boost::system::error_code ec, std::exception_ptr e, int r) {
        if (!ec && !e)
          answer = r;
      });

  ctx.run();

  const bool ok = posted == 1 && timer_fired && answer == 42
    && ctx.stats().blocking.delivered == 1;
#if defined(TURNLOOP_HEADER_ONLY)
  const char* mode = "header-only";
#else // defined(TURNLOOP_HEADER_ONLY)
  const char* mode = "compiled";
#endif // defined(TURNLOOP_HEADER_ONLY)
  std::printf("consumer (%s, Asio %d.%d.%d): %s\n", mode,
      BOOST_ASIO_VERSION / 100000, BOOST_ASIO_VERSION / 100 % 1000,
      BOOST_ASIO_VERSION % 100, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
