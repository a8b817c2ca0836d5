//
// turnloop/detail/uring/pool_ring.hpp
//
// The pool's io_uring service: pooled reads of sockets and writes of leases
// as io_uring operations, the pool's free buffers lent to the kernel's
// buffer ring, and the completions run in the loop's reactor step (it is
// the reactor's hook, detail/engine/reactor_hook.hpp). doc/io_uring.md has
// the whole story.
//
// Bounds kept here:
// - A read holds no buffer until data arrives: the kernel picks one from
//   the ring then. A connection never holds more buffers than the reads
//   its owner asked for (one read, one buffer).
// - The ring holds no more free buffers than there are reads in flight.
//   Buffers are minted only when data found the ring empty, so idle reads
//   mint nothing. A free buffer in the ring is out of try_lease's and
//   async_lease's reach until a read takes it and its lease is released
//   (doc/io_uring.md, "Bounds").
// - Every operation submitted is counted until its completion is reaped;
//   at shutdown all are cancelled and reaped before the ring goes.
//
// An Asio socket's close() and cancel() do not reach the kernel's queue, so
// each operation in flight has a watcher: a reactor operation queued on the
// socket's registration that never completes by itself. close() and
// cancel() abort it like any of the socket's operations, and its
// completion cancels the io_uring operation.
//

#ifndef TURNLOOP_DETAIL_URING_POOL_RING_HPP
#define TURNLOOP_DETAIL_URING_POOL_RING_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/engine/reactor_hook.hpp>
#include <turnloop/detail/uring/uring_ring.hpp>

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/detail/scheduler_operation.hpp>

#include <cstddef>
#include <cstdint>

namespace turnloop {
namespace detail {

class buffer_store;
class loop_core;
struct pooled_buffer;
class pool_ring;
class uring_watch;

/// An operation in the ring. The reaped completion is stored in result_ and
/// the operation queued as a scheduler operation; its complete function
/// then runs in the turn's I/O step (owner null: destroyed unrun).
class uring_op : public boost::asio::detail::scheduler_operation
{
public:
  uring_result result_;

  /// A receive's buffer, taken from the ring when its completion was
  /// reaped (counted as leased from then on); nullptr if none.
  pooled_buffer* buffer_ = nullptr;

  /// Set once close(), cancel() or a cancellation slot has asked for the
  /// end: the operation is not submitted again.
  bool aborted_ = false;

protected:
  /// Destroyed unrun: its watcher, if its ring still has it, forgets it.
  void forget_watch() noexcept;

  explicit uring_op(func_type complete) noexcept
    : scheduler_operation(complete)
  {
  }

  ~uring_op() = default;

private:
  friend class pool_ring;
  friend class uring_watch;
  uring_watch* watch_ = nullptr; // while the socket is watched for it
  bool in_flight_ = false;       // submitted, its completion not reaped
  bool reads_ = false;           // a receive
};

/// The watcher (see the file comment). Recycled by the pool_ring.
class uring_watch final : public boost::asio::detail::reactor_op
{
public:
  TURNLOOP_DECL explicit uring_watch(pool_ring* ring) noexcept;

private:
  friend class pool_ring;
  friend class uring_op;
  TURNLOOP_DECL static status do_perform(reactor_op*) noexcept;
  TURNLOOP_DECL static void do_complete(void* owner,
      boost::asio::detail::operation* base,
      const boost::system::error_code&, std::size_t);

  pool_ring* ring_;
  uring_op* op_ = nullptr;
  uring_watch* prev_ = nullptr; // live list, or free list (next_ only)
  uring_watch* next_ = nullptr;
};

class pool_ring final : public reactor_hook
{
public:
  using epoll_reactor = boost::asio::detail::epoll_reactor;

  /// Sets the ring up for @p store's buffers, watched by @p core's reactor,
  /// and installs it as the reactor's hook. nullptr with @p error set if
  /// io_uring cannot be used here.
  TURNLOOP_DECL static pool_ring* create(loop_core& core, buffer_store& store,
      std::size_t ceiling, std::size_t buffer_size, int& error) noexcept;

  /// Cancels and reaps every operation in flight, destroying each unrun,
  /// takes the lent buffers back into @p store's free list, and removes
  /// the hook. Then deletes itself.
  TURNLOOP_DECL void destroy() noexcept;

  /// What starting any io_uring operation takes, before it is submitted:
  /// a watcher, a canceller in @p slot if it is connected, then the
  /// operation made at @p memory by @p construct (noexcept) and watched on
  /// @p fd's registration @p data.
  /// @returns the operation.
  /// @throws std::bad_alloc, with nothing taken and nothing constructed.
  template <typename Op, typename Slot, typename Construct>
  Op* begin(Slot slot, void* memory, int fd,
      epoll_reactor::per_descriptor_data& data, Construct construct);

  /// @p op is destroyed unrun: its watcher forgets it and stays queued
  /// until the socket or the reactor lets go.
  TURNLOOP_DECL void forget_watch(uring_op& op) noexcept;

  /// The operation's completion arrived: stops watching for it, if close()
  /// or cancel() has not ended the watch already. @p state is the socket's
  /// registration as it was when the operation started (the reactor keeps
  /// a registration's memory for its own life, so it is safe to name even
  /// once the socket is gone; it is used only while the watch is queued
  /// there, which close() would have ended).
  TURNLOOP_DECL void unwatch(uring_op& op, int fd,
      epoll_reactor::per_descriptor_data state) noexcept;

  /// Submits a receive into a buffer from the ring, in the turn's batch.
  TURNLOOP_DECL void submit_recv(uring_op& op, int fd, bool poll_first) noexcept;

  /// Submits a send, in the turn's batch.
  TURNLOOP_DECL void submit_send(uring_op& op, int fd, const void* data,
      std::size_t size) noexcept;

  /// Asks the kernel to end @p op (aborted_ is set). Loop thread.
  TURNLOOP_DECL void abort(uring_op& op) noexcept;

  /// The buffer a receive's completion carries, counted as leased; nullptr
  /// if it carries none.
  TURNLOOP_DECL pooled_buffer* buffer_of(const uring_result& r) noexcept;

  /// True if a free buffer should go to the ring rather than the free list.
  TURNLOOP_DECL bool wants_buffer() const noexcept;

  /// Lends @p b, a buffer taken from the store, to the kernel.
  TURNLOOP_DECL void lend(pooled_buffer* b) noexcept;

  /// True if the ring holds as many free buffers as it may (as far as
  /// reaped completions tell).
  bool full() const noexcept
  {
    return lent_ >= ring_limit_;
  }

  std::size_t buffer_size() const noexcept
  {
    return buffer_size_;
  }

  // reactor_hook
  TURNLOOP_DECL bool before_wait(op_queue& ops, bool blocking)
    noexcept override;
  TURNLOOP_DECL void after_wait(op_queue& ops) noexcept override;

private:
  friend class uring_watch;

  // A watcher for an operation about to start; std::bad_alloc if none is
  // free and none can be made.
  TURNLOOP_DECL uring_watch* take_watch();

  // Returns a watcher taken for an operation that did not start.
  TURNLOOP_DECL void give_back_watch(uring_watch* w) noexcept;

  // Watches @p fd's registration for @p op with @p w.
  TURNLOOP_DECL void watch(uring_op& op, uring_watch* w, int fd,
      epoll_reactor::per_descriptor_data& data) noexcept;

  TURNLOOP_DECL pool_ring(loop_core& core, buffer_store& store,
      uring_ring* ring, std::size_t ceiling, std::size_t buffer_size) noexcept;
  TURNLOOP_DECL ~pool_ring();

  TURNLOOP_DECL void reap(op_queue& ops) noexcept;

  // The ring's withdraw_function: an entry whose operation has been aborted
  // (a cancellation slot) or whose socket has been closed or cancelled
  // (its watcher aborted) since it was queued does not go to the kernel.
  // Closing frees the descriptor's number for the next socket, which the
  // entry would otherwise read from or write to.
  TURNLOOP_DECL static bool withdrawn(std::uint64_t user_data) noexcept;
  TURNLOOP_DECL void watch_fired(uring_watch& w) noexcept;
  TURNLOOP_DECL void recycle(uring_watch* w) noexcept;

  // The reactor's wake-up for the ring: a read that never completes, on
  // the ring's eventfd.
  class wake_op;

  loop_core& core_;
  buffer_store& store_;
  uring_ring* ring_;
  const std::size_t buffer_size_;
  const std::size_t ring_limit_;   // most free buffers lent at once (the
                                   // ceiling; also no more than reads)
  std::size_t lent_ = 0;           // free buffers in the kernel's ring
  std::size_t ids_ = 0;            // buffer ids given out
  std::size_t in_flight_ = 0;      // operations whose completion is due
  std::size_t reads_in_flight_ = 0;
  uring_watch* live_ = nullptr;    // watchers queued on sockets
  uring_watch* free_ = nullptr;
  epoll_reactor::per_descriptor_data wake_data_ = nullptr;
  bool signalling_ = false;        // the eventfd is on, for a blocking wait
};

/// Installed in an io_uring operation's cancellation slot: any type asks
/// the kernel to end it.
class uring_cancellation
{
public:
  uring_cancellation(pool_ring& ring, uring_op* op) noexcept
    : ring_(&ring),
      op_(op)
  {
  }

  void operator()(boost::asio::cancellation_type_t type) const noexcept
  {
    if (type != boost::asio::cancellation_type::none)
      ring_->abort(*op_);
  }

private:
  pool_ring* ring_;
  uring_op* op_;
};

template <typename Op, typename Slot, typename Construct>
Op* pool_ring::begin(Slot slot, void* memory, int fd,
    epoll_reactor::per_descriptor_data& data, Construct construct)
{
  uring_watch* w = take_watch();
  if (slot.is_connected())
  {
    try
    {
      slot.template emplace<uring_cancellation>(*this,
          static_cast<uring_op*>(static_cast<Op*>(memory)));
    }
    catch (...)
    {
      give_back_watch(w);
      throw;
    }
  }
  Op* op = construct(memory);
  watch(*op, w, fd, data);
  return op;
}

inline void uring_op::forget_watch() noexcept
{
  if (watch_)
    watch_->op_ = nullptr;
  watch_ = nullptr;
}

/// A watcher's key in the socket's except queue is the watcher itself.
inline void* watch_key(uring_watch* w) noexcept
{
  return w;
}

} // namespace detail
} // namespace turnloop

#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/detail/uring/impl/pool_ring.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_DETAIL_URING_POOL_RING_HPP
