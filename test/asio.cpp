//
// test/asio.cpp
//
// Asio's non-template code, compiled once for every test module (the
// modules are built with Asio's separate compilation).
//

#include <turnloop/detail/asio.hpp>

#if defined(TURNLOOP_STANDALONE_ASIO)
# include <asio/impl/src.hpp>
#else // defined(TURNLOOP_STANDALONE_ASIO)
# include <boost/asio/impl/src.hpp>
#endif // defined(TURNLOOP_STANDALONE_ASIO)
