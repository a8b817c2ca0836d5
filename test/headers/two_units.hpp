//
// test/headers/two_units.hpp
//
// The header-only program of two translation units: each uses turnloop's
// loop, services and stats, so each emits its own copy of their inline
// bodies, and linking the two proves those copies merge (no duplicate
// symbols) and agree.
//

#ifndef TURNLOOP_TEST_HEADERS_TWO_UNITS_HPP
#define TURNLOOP_TEST_HEADERS_TWO_UNITS_HPP

#include <turnloop.hpp>

/// Starts a blocking job on @p l that stores 42 in @p result, and leases a
/// pooled buffer, recording its capacity in @p leased (two_units_other.cpp).
void start_other_unit(turnloop::loop& l, int& result, std::size_t& leased);

#endif // TURNLOOP_TEST_HEADERS_TWO_UNITS_HPP
