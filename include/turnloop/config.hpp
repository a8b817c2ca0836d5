//
// turnloop/config.hpp
//
// The loop's configuration. Every capacity here is a ceiling, not a
// preallocation: storage grows as work first reaches it, and a loop that never
// comes near a ceiling pays nothing for it. doc/configuration.md has the table.
//

#ifndef TURNLOOP_CONFIG_HPP
#define TURNLOOP_CONFIG_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/error.hpp>

#include <cstddef>

namespace turnloop {

/// How pooled reads of sockets and lease writes reach the kernel
/// (config::pooled_io).
enum class io_path
{
  /// io_uring where this system allows it (decided at the first pooled
  /// read, which sets the ring up), else epoll.
  automatic,

  /// The epoll reactor, as Asio's own sockets: one recv() per message.
  epoll,

  /// io_uring, required, never epoll: the loop's constructor checks that a
  /// ring can be set up and throws if not; the loop's own ring is set up at
  /// the first pooled read or lease write of a socket, and if that fails
  /// (at the descriptor limit, out of memory) the operation fails with the
  /// system's error and the next one tries again.
  io_uring
};

/// Configuration of a turnloop::loop, validated by the loop's constructor.
struct config
{
  /// Ceiling on live handles the loop owns: today, connections accepted
  /// through turnloop::async_accept (stock Asio sockets and timers are not
  /// counted). A connection holds its handle from the moment its accept
  /// starts until the turnloop::accepted_socket that owns it is destroyed.
  /// Enforced by async_accept before it calls accept: at the ceiling the
  /// accept is not refused but waits, first come first served, for a
  /// handle to be released, and meanwhile does not call accept, so further
  /// connections wait in the kernel's listen backlog (the backlog's own
  /// limit, listen(2)'s, then applies). Every accept, waiting or not, also
  /// holds one unit of max_operations until its handler is called. Costs
  /// nothing until the first accept; see doc/configuration.md.
  /// Range 1 .. max_index.
  std::size_t max_handles = 1024;

  /// Ceiling on outstanding operations the loop tracks itself, including
  /// completed results not yet delivered. Range 1 .. max_index.
  std::size_t max_operations = 4096;

  /// Per-source budget of a turn: at most this many handlers from the loop's
  /// own queue, and at most this many cross-thread posts, run before the loop
  /// returns to the reactor (I/O and timers). Range 1 .. 65536.
  std::size_t events_per_turn = 256;

  /// Ceiling on the buffers of the loop's buffer_pool (the buffers that
  /// async_read_pooled reads into and buffer_pool leases out; see
  /// doc/buffer_pool.md). A buffer is allocated only when a lease finds none
  /// free, and is then kept for reuse: an idle loop has none, whatever the
  /// ceiling. At the ceiling, try_lease refuses with resource_limit while
  /// async_lease and pooled reads wait for a buffer to be returned. 0
  /// disables the pool: every lease and pooled read is refused with
  /// resource_limit. Range 0 .. max_index.
  std::size_t pooled_buffers = 256;

  /// Bytes per pooled buffer: the most one pooled read delivers. Buffers
  /// are not zeroed. Range 1 .. 64 MiB.
  std::size_t pooled_buffer_size = 16 * 1024;

  /// The path of pooled reads of sockets (doc/io_uring.md). With io_uring,
  /// the ring is set up at the first pooled read of a socket (a loop that
  /// never reads pooled has none), the pool's free buffers are lent to the
  /// kernel's buffer ring, and a turn's reads are submitted and reaped in
  /// one system call. io_uring needs pooled_buffers of at most 32768;
  /// `automatic` uses epoll beyond that. buffer_pool_stats::path tells the
  /// path in use. Stream descriptors always use epoll.
  /// The default is epoll until io_uring measures faster here (it makes a
  /// third of the system calls, at the same throughput and server CPU per
  /// message in bench/tcp's echo rows).
  io_path pooled_io = io_path::epoll;

  /// Ceiling on cross-thread posts that are queued and not yet run, as seen
  /// by the refusable loop::try_post. Standard Asio posts are never refused
  /// (Asio's API has no way to report it) but count towards the same total.
  /// Range 1 .. max_index.
  std::size_t post_capacity = 1024;

  /// The blocking-completion service (turnloop/blocking.hpp; doc/blocking.md
  /// says how to size it). None of it exists before the first
  /// async_blocking or async_blocking_long: a loop that never submits has no
  /// threads and no result ring. At every ceiling below, a submission is
  /// refused: the job never runs and its completion receives
  /// turnloop::error::resource_limit in a later turn. An admitted job also
  /// counts against max_operations until its completion is delivered.
  struct blocking_config
  {
    /// Worker threads for bounded jobs (async_blocking), all started on the
    /// first bounded job. Range 1 .. 1024.
    std::size_t threads = 4;

    /// Ceiling on bounded jobs waiting for a worker (those running are not
    /// counted). The queue is intrusive: it costs nothing until used.
    /// Range 1 .. max_index.
    std::size_t queue_capacity = 1024;

    /// Ceiling on long jobs (async_blocking_long) running at once, each on a
    /// thread created for it and ended with it; long jobs are never queued.
    /// 0 refuses every long job. Range 0 .. 65536.
    std::size_t long_threads_max = 512;

    /// Ceiling on admitted jobs whose completion has not been delivered yet:
    /// queued, running, or finished and waiting for the loop's turn. Each
    /// holds a credit from submission until its completion is delivered, so
    /// a loop that does not turn cannot pile up results. It is also the
    /// capacity of the result ring (8 bytes a result, allocated at the first
    /// submission; a large ring is resident only as far as it is used).
    /// Range 1 .. max_index.
    std::size_t max_undelivered = 4096;
  } blocking;

  /// Largest value accepted for a count that indexes loop storage.
  static constexpr std::size_t max_index = std::size_t(1) << 24;

  /// Checks every field.
  /// @throws system_error with turnloop::error::invalid_config
  /// and a message naming the first field out of range.
  TURNLOOP_DECL void validate() const;

  /// Checks every field; sets @p ec to turnloop::error::invalid_config if one
  /// is out of range, and clears it otherwise.
  TURNLOOP_DECL void validate(error_code& ec) const noexcept;
};

} // namespace turnloop

#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/impl/config.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_CONFIG_HPP
