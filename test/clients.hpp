//
// test/clients.hpp
//
// Blocking loopback clients for the acceptor modules (sharded_acceptor,
// group_acceptor): connect many, and read each one's one-byte greeting
// with a deadline.
//

#ifndef TURNLOOP_TEST_CLIENTS_HPP
#define TURNLOOP_TEST_CLIENTS_HPP

#include "asio.hpp"

#include <cerrno>
#include <ctime>
#include <vector>

#if !defined(_WIN32)
# include <sys/socket.h>
# include <sys/time.h>
#endif // !defined(_WIN32)

#include "support.hpp"

namespace test {

/// The loopback address, port 0 (any free port).
inline asio::ip::tcp::endpoint loopback()
{
  return {asio::ip::address_v4::loopback(), 0};
}

/// @p n blocking clients on @p ctx, each connected to @p to.
inline std::vector<asio::ip::tcp::socket> connect_clients(
    asio::io_context& ctx, const asio::ip::tcp::endpoint& to,
    int n)
{
  std::vector<asio::ip::tcp::socket> clients;
  for (int i = 0; i < n; ++i)
  {
    clients.emplace_back(ctx);
    clients.back().connect(to);
  }
  return clients;
}

/// One recv() of one byte from @p client with the clients' deadline: its
/// result (1, 0 at the end of the stream, -1 on a reset or a timeout).
inline long receive_one(asio::ip::tcp::socket& client, char& c)
{
#if defined(_WIN32)
  // Winsock takes milliseconds, and a recv() is not ended by a signal.
  const DWORD ms = static_cast<DWORD>(deadline.count() * 1000);
  ::setsockopt(client.native_handle(), SOL_SOCKET, SO_RCVTIMEO,
      reinterpret_cast<const char*>(&ms), sizeof ms);
  return ::recv(client.native_handle(), &c, 1, 0);
#else // defined(_WIN32)
  timeval tv{static_cast<time_t>(deadline.count()), 0};
  ::setsockopt(client.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  // With a receive timeout, a signal (or, on Asio's io_uring backend, the
  // kernel's notice of a completion to this thread's ring: a ring being
  // torn down here cancels its reads) ends recv() with EINTR instead of
  // restarting it.
  ssize_t got;
  do
    got = ::recv(client.native_handle(), &c, 1, 0);
  while (got < 0 && errno == EINTR);
  return static_cast<long>(got);
#endif // defined(_WIN32)
}

/// Reads one byte from @p client with the clients' deadline; false on a
/// reset, an end of stream or a timeout.
inline bool receive_byte(asio::ip::tcp::socket& client, char& c)
{
  return receive_one(client, c) == 1;
}

/// True if @p client reads the end of the stream (the server's end closed,
/// not reset) within the clients' deadline.
inline bool reads_end_of_stream(asio::ip::tcp::socket& client)
{
  char c = 0;
  return receive_one(client, c) == 0;
}

/// Reads the one-byte greeting 'x' with a deadline; false on a reset or a
/// timeout.
inline bool greeted(asio::ip::tcp::socket& client)
{
  char c = 0;
  return receive_byte(client, c) && c == 'x';
}

} // namespace test

#endif // TURNLOOP_TEST_CLIENTS_HPP
