//
// turnloop/detail/pool/impl/descriptor_read.ipp
//
// POSIX's calls (descriptor_read_winsock.ipp has Winsock's).
//

#ifndef TURNLOOP_DETAIL_POOL_IMPL_DESCRIPTOR_READ_IPP
#define TURNLOOP_DETAIL_POOL_IMPL_DESCRIPTOR_READ_IPP

#include <turnloop/detail/pool/descriptor_read.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(error.hpp)

#include <cerrno>

#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

namespace turnloop {
namespace detail {

TURNLOOP_DECL std::size_t read_nonblocking(native_descriptor fd, bool socket,
    void* data, std::size_t size, error_code& ec) noexcept
{
  for (;;)
  {
    const ssize_t n = socket ? ::recv(fd, data, size, 0)
      : ::read(fd, data, size);
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
    switch (errno)
    {
    case EINTR:
      continue;
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif // EWOULDBLOCK != EAGAIN
      ec.clear();
      return 0;
    default:
      ec.assign(errno, asio::error::get_system_category());
      return 0;
    }
  }
}

TURNLOOP_DECL unread probe_unread(native_descriptor fd,
    error_code& ec) noexcept
{
  for (;;)
  {
    char byte;
    const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0)
      return unread::data;
    if (n == 0)
    {
      ec = asio::error::eof;
      return unread::end;
    }
    switch (errno)
    {
    case EINTR:
      continue;
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif // EWOULDBLOCK != EAGAIN
      return unread::nothing;
    case ENOTSOCK:
      return unread::data;
    default:
      ec.assign(errno, asio::error::get_system_category());
      return unread::end;
    }
  }
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_POOL_IMPL_DESCRIPTOR_READ_IPP
