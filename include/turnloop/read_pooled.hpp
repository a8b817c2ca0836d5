//
// turnloop/read_pooled.hpp
//
// turnloop::async_read_pooled: a read that holds no buffer while it waits.
// doc/buffer_pool.md has the whole story.
//

#ifndef TURNLOOP_READ_POOLED_HPP
#define TURNLOOP_READ_POOLED_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/buffer_lease.hpp>
#include <turnloop/detail/pool/pollable_stream.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(async_result.hpp)

namespace turnloop {

/// Reads from @p stream into a buffer leased from its loop's buffer_pool,
/// taken only once data has arrived, so a connection waiting for input
/// holds no buffer:
///
///     auto [ec, lease] = co_await turnloop::async_read_pooled(socket,
///         asio::as_tuple(asio::use_awaitable));
///
/// The read waits until @p stream is readable, leases a buffer, reads once
/// without blocking (up to config::pooled_buffer_size bytes) and completes
/// with the lease, whose size() is the bytes read. Readiness that turns out
/// spurious returns the buffer and waits again. A socket's read waits as
/// one of the reactor's own read operations, which takes the buffer when it
/// performs the read, so waiting costs no system call of its own; a stream
/// descriptor's waits with `async_wait(wait_read)`.
///
/// When every buffer is leased, the read stays pending until one is
/// returned (backpressure): no retries, no errors. It then waits, first
/// come first served, behind earlier waiters; meanwhile it still watches
/// the stream, so the stream's cancel() and close() end it, and an end of
/// stream or a socket error is reported without a buffer.
///
/// @param stream a stream socket (`ip::tcp::socket`,
/// `local::stream_protocol::socket`, ...) or `posix::stream_descriptor`,
/// whose executor belongs to a turnloop::loop. The read bypasses the
/// object's own synchronous functions: it sets native_non_blocking() (which
/// leaves their behaviour unchanged) and reads the native handle with
/// recv(), or read() for a descriptor. The stream must outlive the
/// operation and stay where it is (the operation refers to it), and only
/// one read may be outstanding on it at a time.
///
/// @param token the completion token; the signature is
/// `void(error_code, turnloop::buffer_lease)`. Callbacks,
/// use_awaitable, deferred, as_tuple, use_future, ... all work.
///
/// Errors (the lease is then empty): asio::error::eof at the end of
/// the stream; asio::error::operation_aborted if cancelled (through
/// the handler's cancellation slot, any cancellation type, or the stream's
/// cancel() or close()); turnloop::error::resource_limit if the pool is
/// disabled (config::pooled_buffers = 0) or config::max_operations
/// operations are outstanding; asio::error::operation_not_supported
/// if the stream's executor does not belong to a turnloop::loop;
/// asio::error::no_memory if data arrived but no buffer could be
/// minted, or its wait for a buffer recorded, for lack of memory (the data
/// stays in the stream for the next read); or the system's error, also
/// when config::pooled_io requires io_uring and the loop's ring cannot be
/// set up (EMFILE at the descriptor limit, ...; doc/io_uring.md). Refusals
/// are delivered like any completion, never inside this call. A pending read counts as one of the loop's max_operations.
///
/// Exactly one completion, and no buffer is ever leaked: a lease is only
/// handed out with a successful completion. If the loop is destroyed first,
/// the handler is destroyed without running.
///
/// The handler runs through its associated executor; one that runs on the
/// loop's own executor (the default for a stream of the loop) is called
/// directly from the read's last step, on the loop's thread.
///
/// Thread safety: the read may be started from any thread, under Asio's
/// usual rule that one stream is not used concurrently.
///
/// One of the pool's rarer limits: if, while the read waits for a buffer,
/// the stream reports an error or hang-up while data is still unread (or
/// urgent data arrives), the read keeps waiting for a buffer to read that
/// data, but no longer watches the stream, so only its cancellation slot or
/// a returned buffer ends it.
template <typename Stream,
    typename CompletionToken = asio::default_completion_token_t<
      typename Stream::executor_type>>
  requires detail::pollable_stream<Stream>
auto async_read_pooled(Stream& stream,
    CompletionToken&& token = asio::default_completion_token_t<
      typename Stream::executor_type>());

} // namespace turnloop

#include <turnloop/impl/read_pooled.hpp>

#endif // TURNLOOP_READ_POOLED_HPP
