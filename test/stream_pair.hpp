//
// test/stream_pair.hpp
//
// A connected pair of stream sockets for the cases that need one: a
// socketpair of local stream sockets (POSIX), or a TCP loopback connection
// (Windows, where Asio has no connect_pair). Cases name the sockets through
// test::pair_protocol, so that they compile and run on both.
//

#ifndef TURNLOOP_TEST_STREAM_PAIR_HPP
#define TURNLOOP_TEST_STREAM_PAIR_HPP

#include "asio.hpp"

namespace test {

#if defined(_WIN32)
using pair_protocol = asio::ip::tcp;
#else // defined(_WIN32)
using pair_protocol = asio::local::stream_protocol;
#endif // defined(_WIN32)

/// Connects @p a and @p b to each other (blocking; neither context runs).
template <typename SocketA, typename SocketB>
void connect_pair(SocketA& a, SocketB& b)
{
#if defined(_WIN32)
  // Nagle's algorithm off, as a socketpair has none: one-byte writes are
  // sent at once.
  asio::ip::tcp::acceptor acceptor(a.get_executor(),
      {asio::ip::address_v4::loopback(), 0});
  b.connect(acceptor.local_endpoint());
  acceptor.accept(a);
  a.set_option(asio::ip::tcp::no_delay(true));
  b.set_option(asio::ip::tcp::no_delay(true));
#else // defined(_WIN32)
  asio::local::connect_pair(a, b);
#endif // defined(_WIN32)
}

} // namespace test

#endif // TURNLOOP_TEST_STREAM_PAIR_HPP
