//
// turnloop/detail/pool/descriptor_read.hpp
//
// The system calls of a pooled read: one read that never blocks, and a
// probe that tells, without a buffer, whether a readable descriptor has
// data, nothing, or has ended (end of stream or an error).
//
// They take the native descriptor and bypass the I/O object's synchronous
// functions, which would block in poll() on a stream that the user has not
// put in non-blocking mode. POSIX's calls in impl/descriptor_read.ipp,
// Winsock's in impl/descriptor_read_winsock.ipp (TURNLOOP_HAS_WINSOCK).
//

#ifndef TURNLOOP_DETAIL_POOL_DESCRIPTOR_READ_HPP
#define TURNLOOP_DETAIL_POOL_DESCRIPTOR_READ_HPP

#include <turnloop/detail/config.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(detail/socket_types.hpp)

#include <cstddef>

namespace turnloop {
namespace detail {

/// A stream's native descriptor: a file descriptor (POSIX), a SOCKET
/// (Winsock).
using native_descriptor = asio::detail::socket_type;

/// Reads at most @p size bytes from @p fd, which must be in non-blocking
/// mode, with recv() if it is a @p socket (cheaper), else with read()
/// (POSIX; with Winsock every such stream is a socket).
/// @returns the bytes read; or 0, with @p ec clear if nothing can be read
/// now, or set to eof at the end of the stream or to the system's error.
TURNLOOP_DECL std::size_t read_nonblocking(native_descriptor fd, bool socket,
    void* data, std::size_t size, error_code& ec) noexcept;

/// What a read from a readable descriptor would find.
enum class unread
{
  data,    // bytes are waiting (or it cannot be told: not a socket)
  nothing, // nothing: the readiness was spurious, or urgent data only
  end      // end of stream or an error, in ec: a read needs no buffer
};

/// Peeks at socket @p fd without consuming anything.
TURNLOOP_DECL unread probe_unread(native_descriptor fd,
    error_code& ec) noexcept;

} // namespace detail
} // namespace turnloop

#if defined(TURNLOOP_HEADER_ONLY)
# if defined(TURNLOOP_HAS_WINSOCK)
#  include <turnloop/detail/pool/impl/descriptor_read_winsock.ipp>
# else // defined(TURNLOOP_HAS_WINSOCK)
#  include <turnloop/detail/pool/impl/descriptor_read.ipp>
# endif // defined(TURNLOOP_HAS_WINSOCK)
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_DETAIL_POOL_DESCRIPTOR_READ_HPP
