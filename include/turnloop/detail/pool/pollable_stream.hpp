//
// turnloop/detail/pool/pollable_stream.hpp
//
// What async_read_pooled and async_write_lease take: a stream they can wait
// on and read from or write to without blocking.
//

#ifndef TURNLOOP_DETAIL_POOL_POLLABLE_STREAM_HPP
#define TURNLOOP_DETAIL_POOL_POLLABLE_STREAM_HPP

#include <turnloop/detail/config.hpp>

#include <turnloop/detail/pool/descriptor_read.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(buffer.hpp)

#include <concepts>

namespace turnloop {
namespace detail {

/// A stream a pooled read can wait on and read from without blocking:
/// Asio's stream sockets and POSIX stream descriptors (Windows has sockets
/// alone: its stream handles cannot wait for readability).
template <typename Stream>
concept pollable_stream = requires(Stream& s, error_code& ec)
{
  typename Stream::executor_type;
  { s.native_handle() } -> std::convertible_to<native_descriptor>;
  { s.native_non_blocking() } -> std::convertible_to<bool>;
  s.native_non_blocking(true, ec);
  s.read_some(asio::mutable_buffer(), ec);
  s.async_wait(Stream::wait_read,
      [](const error_code&) {});
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_POOL_POLLABLE_STREAM_HPP
