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
// - Buffers are lent to the ring only while it holds fewer free buffers
//   than there are reads in flight, and minted only when data found the
//   ring empty, so idle reads mint nothing. A free buffer in the ring is
//   out of try_lease's and async_lease's reach until a read takes it and
//   its lease is released (doc/io_uring.md, "Bounds").
// - A read that ends without data (end of stream, an error, a
//   cancellation) leaves the buffer lent for it in the ring: the kernel
//   cannot hand a provided buffer back, and while any receive that selects
//   buffers is in the kernel it may take any of them. Once none is (every
//   receive's completion reaped), the ring's tail is wound back over the
//   buffers it still holds and they go back to the pool. While receives
//   are in flight, a lease that finds the pool at its ceiling with such
//   buffers in the ring has them taken back the same way: every receive
//   is cancelled, the ones started meanwhile are held back, and once the
//   last completion is reaped, the buffers go back to the pool (its
//   waiters first) and the cancelled and held receives are submitted
//   again, unseen by their reads.
// - Every operation submitted is counted until its completion is reaped;
//   at shutdown all are cancelled and reaped before the ring goes.
//
// An Asio socket's close() and cancel() do not reach the kernel's queue, so
// each socket with io_uring operations has a watcher: a reactor operation
// queued on the socket's registration that never completes by itself, and
// lists the socket's operations in flight. close() and cancel() abort it
// like any of the socket's operations, and its completion cancels the
// io_uring operations it lists. It stays queued between operations (the
// next one finds it by descriptor number), so an operation costs the
// reactor nothing; close() or cancel() ends it, and the next operation
// queues a new one.
//
// The watcher must not change how the socket's stock operations behave:
// - it leaves the socket's epoll registration as Asio made it (Asio's
//   record of it is what Asio's own operations rely on: a stock read
//   queued on a registration without EPOLLIN would never complete);
// - it waits in the queue of out-of-band operations, where a stock
//   async_wait(wait_error) or out-of-band read (and the pool's own watch of
//   a read that waits for a buffer) may queue behind it. Asio performs a
//   queue's operations in order and stops at the first that is not done,
//   so when the socket's readiness reaches it with an operation behind it,
//   it steps aside: it completes (without ending anything) and queues
//   itself again at once, behind the others.
//

#ifndef TURNLOOP_DETAIL_URING_POOL_RING_HPP
#define TURNLOOP_DETAIL_URING_POOL_RING_HPP

#include <turnloop/detail/config.hpp>

// turnloop's io_uring path: Linux with Asio's epoll reactor
// (detail/platform.hpp).
#if defined(TURNLOOP_HAS_IO_URING_PATH)
#include <turnloop/detail/engine/reactor_hook.hpp>
#include <turnloop/detail/uring/uring_ring.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(cancellation_type.hpp)
#include TURNLOOP_ASIO_HEADER(detail/epoll_reactor.hpp)
#include TURNLOOP_ASIO_HEADER(detail/reactor_op.hpp)
#include TURNLOOP_ASIO_HEADER(detail/scheduler_operation.hpp)

#include <cstddef>
#include <cstdint>
#include <vector>

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
class uring_op : public asio::detail::scheduler_operation
{
public:
  uring_result result_;

  /// A receive's buffer, taken from the ring when its completion was
  /// reaped (counted as leased from then on); nullptr if none.
  pooled_buffer* buffer_ = nullptr;

  /// Set once close(), cancel() or a cancellation slot has asked for the
  /// end: the operation is not submitted again.
  bool aborted_ = false;

  /// Set when the ring cancelled this receive to take buffers back (see
  /// pool_ring::reclaim): a completion with -ECANCELED then means "submit
  /// again", not an end.
  bool reclaimed_ = false;

protected:
  explicit uring_op(func_type complete) noexcept
    : scheduler_operation(complete)
  {
  }

  ~uring_op() = default;

private:
  friend class pool_ring;
  friend class uring_watch;
  uring_watch* watch_ = nullptr;     // its socket's, while it lists it
  uring_op* watch_next_ = nullptr;   // the next operation it lists
  uring_op* held_next_ = nullptr;    // held back while buffers come back
  int recv_fd_ = -1;             // a receive's socket and its poll_first,
  bool recv_poll_first_ = false; // to submit it when held back
  bool in_flight_ = false;       // submitted, its completion not reaped
  bool reads_ = false;           // a receive
};

/// A socket's watcher (see the file comment). Recycled by the pool_ring.
class uring_watch final : public asio::detail::reactor_op
{
public:
  TURNLOOP_DECL explicit uring_watch(pool_ring* ring) noexcept;

private:
  friend class pool_ring;
  friend class uring_op;
  TURNLOOP_DECL static status do_perform(reactor_op* base) noexcept;
  TURNLOOP_DECL static void do_complete(void* owner,
      asio::detail::operation* base,
      const error_code&, std::size_t);

  /// True while close() or cancel() has not aborted it.
  bool queued() const noexcept
  {
    return !ec_;
  }

  /// Adds @p op to the list.
  void add(uring_op& op) noexcept
  {
    op.watch_ = this;
    op.watch_next_ = ops_;
    ops_ = &op;
  }

  /// Takes @p op off the list. A socket has few operations at once (a read
  /// and a write, as a rule), so the walk is short.
  void remove(uring_op& op) noexcept
  {
    for (uring_op** at = &ops_; *at; at = &(*at)->watch_next_)
      if (*at == &op)
      {
        *at = op.watch_next_;
        break;
      }
    op.watch_ = nullptr;
    op.watch_next_ = nullptr;
  }

  /// Takes every operation off the list; returns the first (linked by
  /// watch_next_, whose watch_ is already null).
  uring_op* release_all() noexcept
  {
    uring_op* first = ops_;
    for (uring_op* op = ops_; op; op = op->watch_next_)
      op->watch_ = nullptr;
    ops_ = nullptr;
    return first;
  }

  pool_ring* ring_;
  uring_op* ops_ = nullptr;     // the socket's operations in flight
  uring_watch* prev_ = nullptr; // live list, or free list (next_ only)
  uring_watch* next_ = nullptr;
  int fd_ = -1;                 // the socket's descriptor, while live
  // The socket's registration, to queue itself on again after stepping
  // aside; and whether its completion is for that (not for an abort).
  asio::detail::epoll_reactor::per_descriptor_data state_ = nullptr;
  bool stepped_aside_ = false;
};

class pool_ring final : public reactor_hook
{
public:
  using epoll_reactor = asio::detail::epoll_reactor;

  /// True if an io_uring with a buffer ring can be set up here now (one is
  /// made and closed: the loop's constructor asks, for io_path::io_uring);
  /// false with @p error set if not.
  TURNLOOP_DECL static bool probe(int& error) noexcept;

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
  /// the socket's watcher (a new one queued on @p fd's registration @p data
  /// if it has none), a canceller in @p slot if it is connected, then the
  /// operation made at @p memory by @p construct (noexcept) and listed by
  /// the watcher.
  /// @returns the operation.
  /// @throws std::bad_alloc, with nothing taken and nothing constructed.
  template <typename Op, typename Slot, typename Construct>
  Op* begin(Slot slot, void* memory, int fd,
      epoll_reactor::per_descriptor_data& data, Construct construct);

  /// The operation's completion arrived, or it is destroyed unrun: its
  /// socket's watcher, if close() or cancel() has not ended it, stops
  /// listing it and stays queued for the socket's next operation.
  static void unwatch(uring_op& op) noexcept
  {
    if (uring_watch* w = op.watch_)
      w->remove(op);
  }

  /// A receive is about to be submitted: if the ring holds fewer free
  /// buffers than receives will then be in flight, lends it one the pool
  /// has free (never a new one). Data then finds a buffer at once, not an
  /// empty ring (-ENOBUFS and a second submission), when the buffer of the
  /// read before went back only after this read was asked for.
  TURNLOOP_DECL void top_up() noexcept;

  /// Submits a receive into a buffer from the ring, in the turn's batch
  /// (or, while buffers are being taken back, once they are).
  TURNLOOP_DECL void submit_recv(uring_op& op, int fd, bool poll_first) noexcept;

  /// A lease found the pool at its ceiling: if the ring holds more free
  /// buffers than there are receives in flight (reads that ended without
  /// data left them), takes them back for the pool (see the file comment)
  /// once the receives, all cancelled, have completed. Loop thread.
  TURNLOOP_DECL void reclaim() noexcept;

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
  bool waits_itself() const noexcept override
  {
    return waits_itself_;
  }
  TURNLOOP_DECL void wait(long usec, op_queue& ops) noexcept override;
  TURNLOOP_DECL bool reactor_ready() noexcept override;

  /// The reactor's epoll descriptor, if found and fit for the ring to wait
  /// on (see reactor_descriptor_of); -1 if the loop waits in epoll.
  int reactor_descriptor() const noexcept
  {
    return reactor_fd_;
  }

  /// io_uring_enter calls made so far.
  std::uint64_t enters() const noexcept
  {
    return ring_->enters();
  }

private:
  friend class uring_watch;

  // @p fd's watcher, if it has one still queued; nullptr if not.
  uring_watch* watch_of(int fd) const noexcept
  {
    const auto i = static_cast<std::size_t>(fd);
    if (i >= watch_by_fd_.size())
      return nullptr;
    uring_watch* w = watch_by_fd_[i];
    return w && w->queued() ? w : nullptr;
  }

  // A new watcher for @p fd, with room to find it by @p fd;
  // std::bad_alloc if none is free and none can be made.
  TURNLOOP_DECL uring_watch* take_watch(int fd);

  // Returns a watcher taken for an operation that did not start.
  TURNLOOP_DECL void give_back_watch(uring_watch* w) noexcept;

  // Queues @p w, new, on @p fd's registration.
  TURNLOOP_DECL void watch(uring_watch* w, int fd,
      epoll_reactor::per_descriptor_data& data) noexcept;

  // Queues @p w again on its socket's registration, behind the operations
  // it stepped aside for.
  TURNLOOP_DECL void queue_again(uring_watch& w) noexcept;

  TURNLOOP_DECL pool_ring(loop_core& core, buffer_store& store,
      uring_ring* ring, std::size_t ceiling, std::size_t buffer_size) noexcept;
  TURNLOOP_DECL ~pool_ring();

  TURNLOOP_DECL void reap(op_queue& ops) noexcept;

  // No receive is in the kernel: takes back the free buffers still in the
  // ring, gives them to the pool, and submits the receives held back (or
  // completes, into @p ops, those aborted meanwhile).
  TURNLOOP_DECL void settle(op_queue& ops) noexcept;

  // Submits @p op, a receive whose socket and poll_first are recorded.
  TURNLOOP_DECL void enter_recv(uring_op& op) noexcept;

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

  // Queues the poll of the reactor's descriptor, unless one is queued or
  // in the kernel.
  TURNLOOP_DECL void watch_reactor(bool alone) noexcept;

  // After a system call that submitted the step's entries and reaped.
  TURNLOOP_DECL void note_submitted() noexcept;

  // The poll's user_data: no operation's address.
  static constexpr std::uint64_t reactor_watch_tag = 1;

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
  bool reclaiming_ = false;        // buffers are being taken back
  bool closing_ = false;           // destroy() is draining the ring
  uring_op* held_ = nullptr;       // receives held back meanwhile (newest
                                   // first)
  uring_watch* live_ = nullptr;    // watchers queued on sockets
  uring_watch* free_ = nullptr;
  std::vector<uring_watch*> watch_by_fd_; // each socket's newest watcher
  epoll_reactor::per_descriptor_data wake_data_ = nullptr;
  bool signalling_ = false;        // the eventfd is on, for a blocking wait

  // Waiting in the ring (doc/io_uring.md, "One system call a turn").
  int reactor_fd_ = -1;            // epoll's descriptor, polled by the ring
  bool waits_itself_ = false;      // this step's wait is the ring's
  bool watch_armed_ = false;       // the poll is queued or in the kernel
  bool reactor_ready_ = false;     // the poll fired; epoll not run since
  bool received_ = false;          // receives delivered data since the
                                   // poll was last looked at
  bool deferred_ = false;          // epoll not run when the poll last
                                   // fired (see reactor_ready)
};

/// The epoll descriptor of @p reactor, if it also watches a timerfd (the
/// reactor's timers then need no timeout of their own); -1 if not.
TURNLOOP_DECL int reactor_descriptor_of(asio::detail::epoll_reactor& reactor) noexcept;

/// True if the program runs under Valgrind, where a loop must not block in
/// io_uring_enter (see the definition).
TURNLOOP_DECL bool under_valgrind() noexcept;

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

  void operator()(asio::cancellation_type_t type) const noexcept
  {
    if (type != asio::cancellation_type::none)
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
  uring_watch* w = watch_of(fd);
  uring_watch* fresh = w ? nullptr : take_watch(fd);
  if (slot.is_connected())
  {
    try
    {
      slot.template emplace<uring_cancellation>(*this,
          static_cast<uring_op*>(static_cast<Op*>(memory)));
    }
    catch (...)
    {
      if (fresh)
        give_back_watch(fresh);
      throw;
    }
  }
  Op* op = construct(memory);
  if (fresh)
    watch(w = fresh, fd, data);
  w->add(*op);
  return op;
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

#else // defined(TURNLOOP_HAS_IO_URING_PATH)

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace turnloop {
namespace detail {

class buffer_store;
class loop_core;
struct pooled_buffer;

/// Where there is no io_uring path, no ring: create() and probe() refuse
/// with ENOTSUP, so the pool never has one, and what the pool and the
/// reads would ask of one is here only to be compiled, never reached.
class pool_ring
{
public:
  static pool_ring* create(loop_core&, buffer_store&, std::size_t,
      std::size_t, int& error) noexcept
  {
    error = ENOTSUP;
    return nullptr;
  }

  static bool probe(int& error) noexcept
  {
    error = ENOTSUP;
    return false;
  }

  void destroy() noexcept {}
  void reclaim() noexcept {}
  bool wants_buffer() const noexcept { return false; }
  void lend(pooled_buffer*) noexcept {}
  bool full() const noexcept { return true; }
  std::uint64_t enters() const noexcept { return 0; }
  int reactor_descriptor() const noexcept { return -1; }

private:
  pool_ring() = delete;
};

} // namespace detail
} // namespace turnloop

#endif // defined(TURNLOOP_HAS_IO_URING_PATH)

#endif // TURNLOOP_DETAIL_URING_POOL_RING_HPP
