//
// turnloop/buffer_pool.hpp
//
// turnloop::buffer_pool: the loop's pool of read buffers, minted on demand up
// to config::pooled_buffers and kept for reuse. Buffers are lent out as
// buffer_lease objects, directly (try_lease, async_lease) or by pooled reads
// (turnloop/read_pooled.hpp). doc/buffer_pool.md has the whole story.
//

#ifndef TURNLOOP_BUFFER_POOL_HPP
#define TURNLOOP_BUFFER_POOL_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/buffer_lease.hpp>
#include <turnloop/buffer_pool_stats.hpp>
#include <turnloop/loop.hpp>
#include <turnloop/detail/pool/buffer_store.hpp>
#include <turnloop/detail/pool/buffer_waiter.hpp>
#include <turnloop/detail/platform.hpp>
#include <turnloop/detail/slot_table.hpp>
#include <turnloop/detail/engine/turn_source.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(async_result.hpp)
#include TURNLOOP_ASIO_HEADER(cancellation_type.hpp)
#include TURNLOOP_ASIO_HEADER(execution_context.hpp)

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace turnloop {
namespace detail {

template <typename Stream, typename Handler>
class read_pooled_op;

class pool_ring;

template <typename Stream>
class initiate_write_lease;

} // namespace detail

/// The buffer pool of a turnloop::loop, an Asio service of the loop:
///
///     turnloop::buffer_pool& pool =
///       asio::use_service<turnloop::buffer_pool>(loop);
///
/// config::pooled_buffers x config::pooled_buffer_size is a ceiling, not a
/// preallocation. A buffer is minted (allocated, not zeroed) only when a
/// lease finds none free and the ceiling allows; once minted it is kept,
/// and the most recently returned buffer is lent first, so hot buffers stay
/// in cache. An idle loop, or one whose pool was never used, has minted
/// nothing; a warm one leases and returns buffers without allocating.
///
/// At the ceiling, try_lease refuses with turnloop::error::resource_limit,
/// while async_lease and pooled reads wait, first come first served, until
/// a buffer is returned. With config::pooled_buffers = 0 the pool is
/// disabled and refuses everything with resource_limit.
///
/// Every pending async_lease and async_read_pooled is one of the loop's
/// config::max_operations. An operation that waits for a buffer is recorded
/// in a slot table with that ceiling, so recording it cannot fail.
///
/// Thread safety: try_lease and stats() are for the loop's thread, or for
/// when no thread runs the loop (as loop::stats()). async_lease may be
/// started from any thread: it is admitted or refused at the call, and an
/// admitted request starts in the loop's next turn. A lease may be released
/// on any thread (see buffer_lease).
class buffer_pool
  : public asio::execution_context::service,
    private detail::turn_source
{
public:
  /// The loop's executor, on which the pool's completions are delivered
  /// unless a handler has an executor of its own.
  using executor_type = loop::executor_type;

  /// Identifies the service to Asio's service registry.
  static inline asio::execution_context::id id;

  /// Creates the pool of @p ctx. Use asio::use_service, which creates
  /// the pool on first use and returns the same one afterwards.
  /// @throws system_error with
  /// asio::error::operation_not_supported if @p ctx is not a
  /// turnloop::loop.
  TURNLOOP_DECL explicit buffer_pool(asio::execution_context& ctx);

  TURNLOOP_DECL ~buffer_pool() override;

  /// The loop's executor.
  executor_type get_executor() noexcept
  {
    return loop_.get_executor();
  }

  /// Bytes per buffer (config::pooled_buffer_size).
  std::size_t buffer_size() const noexcept
  {
    return buffer_size_;
  }

  /// The ceiling on buffers (config::pooled_buffers); 0 if disabled.
  std::size_t capacity() const noexcept
  {
    return capacity_;
  }

  /// Leases a buffer now if one is free or can be minted; never waits.
  /// @returns a lease with size() 0 and capacity() buffer_size().
  /// @throws system_error with turnloop::error::resource_limit
  /// if every buffer is leased (or the pool is disabled); std::bad_alloc if
  /// a new buffer cannot be allocated.
  TURNLOOP_DECL buffer_lease try_lease();

  /// Leases a buffer now if one is free or can be minted; never waits.
  /// @returns a lease, or an empty one with @p ec set to
  /// turnloop::error::resource_limit if every buffer is leased (or the pool
  /// is disabled).
  /// @throws std::bad_alloc if a new buffer cannot be allocated.
  TURNLOOP_DECL buffer_lease try_lease(error_code& ec);

  /// Leases a buffer, waiting for one to be returned if every buffer is
  /// leased. Waiters are served first come, first served, before any new
  /// request. The completion is always delivered in a turn of the loop,
  /// never inside this call, even when a buffer is free at once.
  ///
  /// Signature: `void(error_code, turnloop::buffer_lease)`.
  /// Errors (the lease is then empty): turnloop::error::resource_limit if
  /// the pool is disabled or config::max_operations operations are
  /// outstanding; asio::error::operation_aborted if cancelled through
  /// the handler's cancellation slot (any cancellation type) while waiting;
  /// asio::error::no_memory if a request made on another thread, on
  /// reaching the loop, could not mint a buffer or record its wait for lack
  /// of memory (on the loop's thread the call throws std::bad_alloc instead).
  ///
  /// If the loop is destroyed first, the handler is destroyed without
  /// running. Any thread: the request is admitted or refused at the call
  /// (one of max_operations), and off the loop's thread an admitted one
  /// starts in the loop's next turn, while a refusal is posted to the loop
  /// as one of config::post_capacity cross-thread posts.
  /// @throws system_error (resource_limit) if the call comes
  /// from another thread, is refused, and post_capacity cross-thread posts
  /// are already queued (the handler is destroyed without being invoked).
  template <typename CompletionToken>
  auto async_lease(CompletionToken&& token);

  /// A snapshot of the pool's counters.
  TURNLOOP_DECL buffer_pool_stats stats() const noexcept;

private:
  template <typename Stream, typename Handler>
  friend class detail::read_pooled_op;
  template <typename Stream>
  friend class detail::initiate_write_lease;
  friend class detail::buffer_store;

  class initiate_lease;
  struct canceller;
  struct watch_handler;

  TURNLOOP_DECL void shutdown() override;
  TURNLOOP_DECL std::size_t run_ready(std::size_t budget) override;

  // Takes one of the loop's operation units for a new asynchronous request;
  // if none is left (or the pool is disabled), sets @p ec to resource_limit
  // and counts a refusal. Any thread.
  TURNLOOP_DECL bool admit(detail::operation_unit& unit,
      error_code& ec) noexcept;

  // The rest is for the loop's thread.

  // Admits a lease request (any thread) and starts it on the loop's thread.
  template <typename Handler>
  void start_lease(Handler&& handler);

  // The rest of an admitted request, on the loop's thread.
  // @throws std::bad_alloc, leaving @p handler with the caller.
  template <typename Handler>
  void lease_admitted(Handler& handler, detail::operation_unit&& unit);

  // A buffer for a new lease: one released elsewhere goes to the waiters
  // first; then a free one, or a new one below the ceiling; else nullptr.
  TURNLOOP_DECL detail::pooled_buffer* take();

  static buffer_lease lease_of(detail::pooled_buffer* b,
      std::size_t size) noexcept
  {
    return buffer_lease(b, size);
  }

  // Takes the buffer out of @p lease, which becomes empty.
  static detail::pooled_buffer* buffer_of(buffer_lease& lease) noexcept
  {
    lease.size_ = 0;
    return std::exchange(lease.buffer_, nullptr);
  }

  // Records @p handler as a waiting operation, not yet in either list.
  // @throws std::bad_alloc, leaving @p handler and @p unit untouched.
  template <typename Handler>
  detail::slot_id add_waiter(Handler& handler, detail::operation_unit&& unit);

  // A pooled read that found data but no buffer: waits for one, watching
  // @p stream so that the stream's cancel() and close() still reach it.
  // False, with @p handler untouched, if the wait could not be recorded for
  // lack of memory.
  template <typename Handler, typename Stream>
  bool wait_for_read(Handler&& handler, Stream& stream);

  // A buffer comes back on the loop's thread: to the oldest waiter, else to
  // the free list.
  TURNLOOP_DECL void give_back(detail::pooled_buffer* b) noexcept;

  // The io_uring ring for pooled reads of sockets, set up at the first
  // call unless config::pooled_io says epoll; nullptr for the epoll path.
  // With io_uring required, a ring that cannot be set up is nullptr with
  // @p ec the system's error (the operation fails with it), and the next
  // call tries again. Loop thread. Inline once the path is chosen: every
  // pooled read and lease write asks, up to three times a round trip.
  detail::pool_ring* ring_for_sockets(error_code& ec) noexcept
  {
    if (path_ == io_path::automatic) [[unlikely]]
      return choose_ring_for_sockets(ec);
    ec.clear();
    return ring_;
  }

  // ring_for_sockets() while the path is still automatic.
  TURNLOOP_DECL detail::pool_ring* choose_ring_for_sockets(
      error_code& ec) noexcept;

  // Takes back the buffers released on other threads.
  TURNLOOP_DECL void take_back_returned() noexcept;

  // A buffer was released on another thread. Any thread.
  TURNLOOP_DECL void returned_elsewhere() noexcept;

  TURNLOOP_DECL void link_waiting(detail::slot_id id,
      detail::buffer_waiter& w) noexcept;
  TURNLOOP_DECL void unlink_waiting(detail::buffer_waiter& w) noexcept;
  TURNLOOP_DECL void make_ready(detail::slot_id id, detail::buffer_waiter& w,
      const error_code& ec, detail::pooled_buffer* b) noexcept;

  // Ends the wait of @p id with @p ec, if it is still waiting.
  TURNLOOP_DECL void end_wait(detail::slot_id id,
      const error_code& ec) noexcept;

  // A pooled read's watch completed with @p ec.
  TURNLOOP_DECL void on_watch(detail::slot_id id,
      error_code ec) noexcept;

  TURNLOOP_DECL void destroy_waiters() noexcept;

  loop& loop_;
  detail::loop_core& core_;
  const std::size_t capacity_;
  const std::size_t buffer_size_;
  detail::buffer_store* store_;
  detail::slot_table<detail::buffer_waiter> waiters_;
  detail::slot_id wait_head_;
  detail::slot_id wait_tail_;
  detail::slot_id ready_head_;
  detail::slot_id ready_tail_;
  std::size_t waiting_ = 0;
  std::uint64_t waits_ = 0;
  bool in_turns_ = false; // registered as one of the loop's turn sources
  // The path ring_for_sockets() chose (automatic until it has, and while
  // a required ring could not be set up), kept after the ring goes at
  // shutdown so that stats() still says which it was. Without turnloop's
  // ring in the build it is the reactor's from the start.
  io_path path_ = detail::has_io_uring_path ? io_path::automatic
    : io_path::epoll;
  detail::pool_ring* ring_ = nullptr;
  int ring_error_ = 0;
  std::atomic<std::uint64_t> refusals_{0};
};

} // namespace turnloop

#include <turnloop/impl/buffer_pool.hpp>
#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/impl/buffer_pool.ipp>
# include <turnloop/detail/uring/impl/uring_ring.ipp>
# include <turnloop/detail/uring/impl/pool_ring.ipp>
# include <turnloop/detail/pool/impl/buffer_store.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_BUFFER_POOL_HPP
