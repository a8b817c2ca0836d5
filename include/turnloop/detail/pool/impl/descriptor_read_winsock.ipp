//
// turnloop/detail/pool/impl/descriptor_read_winsock.ipp
//
// Winsock's calls (TURNLOOP_HAS_WINSOCK; descriptor_read.ipp has POSIX's).
// Every stream a pooled read takes there is a socket. The read sets it to
// non-blocking mode before read_nonblocking; the probe may come first.
//

#ifndef TURNLOOP_DETAIL_POOL_IMPL_DESCRIPTOR_READ_WINSOCK_IPP
#define TURNLOOP_DETAIL_POOL_IMPL_DESCRIPTOR_READ_WINSOCK_IPP

#include <turnloop/detail/pool/descriptor_read.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(error.hpp)

#include <climits>

namespace turnloop {
namespace detail {

TURNLOOP_DECL std::size_t read_nonblocking(native_descriptor fd, bool,
    void* data, std::size_t size, error_code& ec) noexcept
{
  const int n = ::recv(fd, static_cast<char*>(data),
      size > INT_MAX ? INT_MAX : static_cast<int>(size), 0);
  if (n > 0)
  {
    ec.clear();
    return static_cast<std::size_t>(n);
  }
  if (n == 0)
  {
    ec = asio::error::eof;
    return 0;
  }
  const int error = ::WSAGetLastError();
  if (error == WSAEWOULDBLOCK)
  {
    ec.clear();
    return 0;
  }
  ec.assign(error, asio::error::get_system_category());
  return 0;
}

TURNLOOP_DECL unread probe_unread(native_descriptor fd,
    error_code& ec) noexcept
{
  // Winsock has no MSG_DONTWAIT, and the socket may still block here (the
  // read makes it non-blocking later): so nothing here may wait. FIONREAD
  // counts what is buffered; with nothing buffered, a stream socket that
  // is readable has ended (or failed), and a peek then returns at once.
  u_long buffered = 0;
  if (::ioctlsocket(fd, FIONREAD, &buffered) != 0)
  {
    const int error = ::WSAGetLastError();
    if (error == WSAENOTSOCK)
      return unread::data;
    ec.assign(error, asio::error::get_system_category());
    return unread::end;
  }
  if (buffered != 0)
    return unread::data;
  fd_set readable;
  FD_ZERO(&readable);
  FD_SET(fd, &readable);
  timeval no_wait = {0, 0};
  if (::select(0, &readable, nullptr, nullptr, &no_wait) != 1)
    return unread::nothing;
  char byte;
  const int n = ::recv(fd, &byte, 1, MSG_PEEK);
  if (n > 0)
    return unread::data; // arrived since FIONREAD
  if (n == 0)
  {
    ec = asio::error::eof;
    return unread::end;
  }
  const int error = ::WSAGetLastError();
  if (error == WSAEWOULDBLOCK)
    return unread::nothing;
  ec.assign(error, asio::error::get_system_category());
  return unread::end;
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_POOL_IMPL_DESCRIPTOR_READ_WINSOCK_IPP
