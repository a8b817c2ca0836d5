//
// test/asio.cpp
//
// Asio's non-template code, compiled once for every test module
// (BOOST_ASIO_SEPARATE_COMPILATION).
//

#include <boost/asio/impl/src.hpp>
