//
// test/headers/two_units_other.cpp
//
// The second translation unit of the two-unit header-only program.
//

#include "two_units.hpp"

#include "../asio.hpp"

#include <exception>

void start_other_unit(turnloop::loop& l, int& result, std::size_t& leased)
{
  turnloop::async_blocking(l, [] { return 6 * 7; },
      [&result](turnloop::error_code ec, std::exception_ptr e, int r) {
        if (!ec && !e)
          result = r;
      });
  asio::post(l, [&l, &leased] {
    turnloop::buffer_lease lease =
      asio::use_service<turnloop::buffer_pool>(l).try_lease();
    leased = lease ? lease.capacity() : 0;
  });
}
