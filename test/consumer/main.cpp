//
// test/consumer/main.cpp
//
// The consumer's program: what a user's first turnloop program does (a
// loop, a post, a timer, a blocking job, the stats), checking each. Prints
// one line naming the build mode and the Asio (flavour and version) it was
// compiled against; exits 1 if a check failed.
//

#include <turnloop.hpp>

#include <turnloop/asio.hpp>

#include <chrono>
#include <cstdio>
#include <exception>

namespace net = turnloop::asio; // Boost.Asio, or standalone Asio

int main()
{
  turnloop::loop ctx;

  int posted = 0;
  net::post(ctx, [&] { ++posted; });

  bool timer_fired = false;
  net::steady_timer timer(ctx);
  timer.expires_after(std::chrono::milliseconds(1));
  timer.async_wait([&](turnloop::error_code ec) { timer_fired = !ec; });

  int answer = 0;
  turnloop::async_blocking(ctx, [] { return 42; },
      [&](turnloop::error_code ec, std::exception_ptr e, int r) {
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
#if defined(TURNLOOP_STANDALONE_ASIO)
  const char* flavour = "standalone Asio";
#else // defined(TURNLOOP_STANDALONE_ASIO)
  const char* flavour = "Boost.Asio";
#endif // defined(TURNLOOP_STANDALONE_ASIO)
  std::printf("consumer (%s, %s %d.%d.%d): %s\n", mode, flavour,
      TURNLOOP_ASIO_VERSION / 100000, TURNLOOP_ASIO_VERSION / 100 % 1000,
      TURNLOOP_ASIO_VERSION % 100, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
