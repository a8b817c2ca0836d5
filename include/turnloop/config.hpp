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

  /// Ceiling on pooled read buffers. 0 disables the pool. Range 0 .. max_index.
  std::size_t pooled_buffers = 256;

  /// Bytes per pooled read buffer. Range 1 .. 64 MiB.
  std::size_t pooled_buffer_size = 16 * 1024;

  /// Ceiling on cross-thread posts that are queued and not yet run, as seen
  /// by the refusable loop::try_post. Standard Asio posts are never refused
  /// (Asio's API has no way to report it) but count towards the same total.
  /// Range 1 .. max_index.
  std::size_t post_capacity = 1024;

  /// The blocking-completion service.
  struct blocking_config
  {
    /// Worker threads for bounded jobs, started on first use. Range 1 .. 1024.
    std::size_t threads = 4;

    /// Ceiling on bounded jobs waiting for a worker. Range 1 .. max_index.
    std::size_t queue_capacity = 1024;

    /// Ceiling on threads running long jobs (one thread per job, created on
    /// demand, never queued). 0 refuses every long job. Range 0 .. 65536.
    std::size_t long_threads_max = 512;

    /// Ceiling on admitted blocking jobs whose result has not yet been
    /// delivered to the loop. Range 1 .. max_index.
    std::size_t max_undelivered = 4096;
  } blocking;

  /// Largest value accepted for a count that indexes loop storage.
  static constexpr std::size_t max_index = std::size_t(1) << 24;

  /// Checks every field.
  /// @throws boost::system::system_error with turnloop::error::invalid_config
  /// and a message naming the first field out of range.
  TURNLOOP_DECL void validate() const;

  /// Checks every field; sets @p ec to turnloop::error::invalid_config if one
  /// is out of range, and clears it otherwise.
  TURNLOOP_DECL void validate(boost::system::error_code& ec) const noexcept;
};

} // namespace turnloop

#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/impl/config.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_CONFIG_HPP
