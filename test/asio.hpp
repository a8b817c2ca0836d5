//
// test/asio.hpp
//
// The tests' Asio: the whole of the flavour turnloop is built for (Boost.Asio,
// or standalone Asio with TURNLOOP_STANDALONE_ASIO), named ::asio in both, so
// that a test spells `asio::` and `turnloop::error_code` and compiles on
// either. The tests' one place that knows the flavour (with test/asio.cpp).
//

#ifndef TURNLOOP_TEST_ASIO_HPP
#define TURNLOOP_TEST_ASIO_HPP

#include <turnloop/asio.hpp>

#if !defined(TURNLOOP_STANDALONE_ASIO)
// Standalone Asio is ::asio; with Boost.Asio the tests name it so too.
namespace asio = boost::asio;
#endif // !defined(TURNLOOP_STANDALONE_ASIO)

#endif // TURNLOOP_TEST_ASIO_HPP
