//
// turnloop/buffer_pool_stats.hpp
//
// A snapshot of a buffer pool's counters, from buffer_pool::stats().
//

#ifndef TURNLOOP_BUFFER_POOL_STATS_HPP
#define TURNLOOP_BUFFER_POOL_STATS_HPP

#include <turnloop/config.hpp>

#include <cstddef>
#include <cstdint>

namespace turnloop {

/// Counters of a buffer_pool. Totals count since the pool was created.
struct buffer_pool_stats
{
  /// Bytes per buffer (config::pooled_buffer_size).
  std::size_t buffer_size = 0;

  /// The ceiling on buffers (config::pooled_buffers).
  std::size_t capacity = 0;

  /// Buffers allocated so far. Never more than capacity; a buffer is kept
  /// for reuse once minted, so this is also the pool's memory in buffers.
  std::size_t minted = 0;

  /// Buffers held by leases now, and the most ever held at once. A buffer
  /// granted to a waiting operation counts from the grant, until its
  /// operation's handler (or whoever it passed the lease to) lets go.
  std::size_t leased = 0;
  std::size_t leased_high_water = 0;

  /// Operations waiting for a buffer now (async_lease, and pooled reads that
  /// found data but no buffer), and how many times one had to wait.
  std::size_t waiting = 0;
  std::uint64_t waits = 0;

  /// Requests refused with turnloop::error::resource_limit: try_lease with
  /// every buffer leased, anything with the pool disabled, and async
  /// operations refused at config::max_operations.
  std::uint64_t refusals = 0;

  /// The path pooled reads of sockets take: io_path::io_uring once the
  /// ring is set up, io_path::epoll once that was refused or configured;
  /// io_path::automatic before the first pooled read of a socket (and,
  /// with io_uring required, while the ring could not be set up).
  io_path path = io_path::automatic;

  /// If io_uring was tried and refused: the system's error number
  /// (ENOSYS, EPERM, EMFILE...); 0 if it was not, or once a ring is set up.
  int io_uring_error = 0;

  /// Free buffers lent to the kernel's buffer ring now, waiting for data
  /// (io_uring only): at most one per pooled read in flight, and those
  /// that reads which ended without data left there until they come back
  /// (doc/io_uring.md, "Bounds"). Counted in minted, not in leased.
  std::size_t in_ring = 0;

  /// io_uring_enter calls the pool's ring has made (submissions and waits;
  /// io_uring only).
  std::uint64_t io_uring_enters = 0;

  /// True while the loop's blocking waits are the ring's: io_uring_enter,
  /// with epoll's descriptor polled through the ring, so that a turn of the
  /// ring's I/O costs one system call (doc/io_uring.md). False where the
  /// loop waits in epoll (no ring, or /proc could not name epoll's
  /// descriptor, or the kernel lacks IORING_FEAT_EXT_ARG).
  bool io_uring_waits = false;
};

} // namespace turnloop

#endif // TURNLOOP_BUFFER_POOL_STATS_HPP
