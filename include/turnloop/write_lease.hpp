//
// turnloop/write_lease.hpp
//
// turnloop::async_write_lease: writes a leased buffer to a stream and gives
// the buffer back to its pool, the second half of the echo and proxy
// pattern (read pooled, write the lease). doc/io_uring.md has the whole
// story.
//

#ifndef TURNLOOP_WRITE_LEASE_HPP
#define TURNLOOP_WRITE_LEASE_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/buffer_lease.hpp>
#include <turnloop/detail/pool/pollable_stream.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(async_result.hpp)

namespace turnloop {

/// Writes all of @p lease's bytes (its data()) to @p stream, then releases
/// the lease:
///
///     auto [ec, lease] = co_await turnloop::async_read_pooled(socket, t);
///     auto [ec2, n] = co_await turnloop::async_write_lease(socket,
///         std::move(lease), t);
///
/// On a loop whose pooled reads use io_uring (config::pooled_io), a socket's
/// write is a chain of io_uring sends submitted with the turn's batch, so
/// the turn's reads and writes cost one system call between them; the
/// lease is released when the last byte is written, before the handler
/// runs. Otherwise (epoll, a stream descriptor, a call off the loop's
/// thread, a stream of another context) it is asio::async_write of
/// the lease's bytes, and the lease is released when the handler has run.
///
/// @param stream a stream socket or stream descriptor; it must outlive the
/// operation and stay where it is, and only one write may be outstanding on
/// it at a time, under Asio's usual rule.
///
/// @param lease the buffer to write, typically from async_read_pooled; an
/// empty lease writes nothing.
///
/// @param token the completion token; the signature is
/// `void(error_code, std::size_t)`, with the bytes written.
///
/// Errors: asio::error::operation_aborted if cancelled (through the
/// handler's cancellation slot, any cancellation type, or the stream's
/// cancel() or close()); or the system's error (broken_pipe,
/// connection_reset, ...; and, when config::pooled_io requires io_uring
/// and the loop's ring cannot be set up, that error, with nothing written). std::bad_alloc from the call if the operation's
/// memory cannot be allocated (the lease stays with the caller's arguments
/// and is released as they go).
///
/// The handler runs through its associated executor. If the loop is
/// destroyed first, the handler is destroyed without running and the lease
/// released.
template <typename Stream,
    typename CompletionToken = asio::default_completion_token_t<
      typename Stream::executor_type>>
  requires detail::pollable_stream<Stream>
auto async_write_lease(Stream& stream, buffer_lease lease,
    CompletionToken&& token = asio::default_completion_token_t<
      typename Stream::executor_type>());

} // namespace turnloop

#include <turnloop/impl/write_lease.hpp>

#endif // TURNLOOP_WRITE_LEASE_HPP
