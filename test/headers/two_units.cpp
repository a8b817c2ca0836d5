//
// test/headers/two_units.cpp
//
// The first translation unit of the two-unit header-only program (see
// two_units.hpp): it runs a loop that both units put work on, and checks
// what each did. Exits 1 if a check failed.
//

#include "two_units.hpp"

#include "../asio.hpp"

#include <cstdio>
#include <exception>

int main()
{
  turnloop::config cfg;
  cfg.pooled_buffer_size = 256;
  turnloop::loop ctx(cfg);

  int mine = 0;
  turnloop::async_blocking(ctx, [] { return 1; },
      [&mine](turnloop::error_code ec, std::exception_ptr e, int r) {
        if (!ec && !e)
          mine = r;
      });
  int theirs = 0;
  std::size_t leased = 0;
  start_other_unit(ctx, theirs, leased);
  ctx.run();

  const turnloop::loop_stats stats = ctx.stats();
  int failures = 0;
  auto check = [&failures](bool ok, const char* what) {
    if (!ok)
    {
      std::printf("FAILED: %s\n", what);
      ++failures;
    }
  };
  check(mine == 1, "this unit's blocking job delivers its result");
  check(theirs == 42, "the other unit's blocking job delivers its result");
  check(leased == 256, "the other unit leases a buffer of the configured size");
  check(stats.blocking.delivered == 2, "stats see both units' blocking jobs");
  check(stats.pool.minted == 1, "stats see the other unit's buffer");
  if (failures == 0)
    std::printf("two units: every check passed\n");
  return failures == 0 ? 0 : 1;
}
