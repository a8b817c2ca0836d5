//
// turnloop/detail/uring/impl/pool_ring.ipp
//

#ifndef TURNLOOP_DETAIL_URING_IMPL_POOL_RING_IPP
#define TURNLOOP_DETAIL_URING_IMPL_POOL_RING_IPP

#include <turnloop/detail/config.hpp>

// turnloop's io_uring path: Linux with Asio's epoll reactor
// (detail/platform.hpp).
#if defined(TURNLOOP_HAS_IO_URING_PATH)

#include <turnloop/detail/uring/pool_ring.hpp>
#include <turnloop/detail/engine/loop_core.hpp>
#include <turnloop/detail/engine/turn_reactor.hpp>
#include <turnloop/detail/pool/buffer_store.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(error.hpp)
#include TURNLOOP_ASIO_HEADER(detail/op_queue.hpp)
#include TURNLOOP_ASIO_HEADER(detail/scheduler.hpp)

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

namespace turnloop {
namespace detail {

// --- the watcher ---------------------------------------------------------------

TURNLOOP_DECL uring_watch::uring_watch(pool_ring* ring) noexcept
  : reactor_op(error_code(), &uring_watch::do_perform,
      &uring_watch::do_complete),
    ring_(ring)
{
}

TURNLOOP_DECL asio::detail::reactor_op::status
uring_watch::do_perform(reactor_op* base) noexcept
{
  // Readiness is the ring's business: the watcher only waits to be aborted.
  // Asio asks it first of its queue, under the descriptor's lock, and would
  // ask nothing behind it: with an operation there, it is done (its
  // completion queues it again), and Asio goes on to the next.
  if (!asio::detail::op_queue_access::next(base))
    return not_done;
  static_cast<uring_watch*>(base)->stepped_aside_ = true;
  return done;
}

TURNLOOP_DECL void uring_watch::do_complete(void* owner,
    asio::detail::operation* base, const error_code&,
    std::size_t)
{
  uring_watch* w = static_cast<uring_watch*>(base);
  // Run (not destroyed): the scheduler, its owner, consumes a unit of work
  // once this returns, and the watcher gave its unit back when it was
  // queued (pool_ring::watch).
  if (owner)
    static_cast<asio::detail::scheduler*>(owner)->work_started();
  if (!w->ring_)
  {
    // Its ring has gone; so has its operation.
    delete w;
    return;
  }
  if (owner && std::exchange(w->stepped_aside_, false))
  {
    // Completed by the readiness that reached the operations behind it,
    // at once, in the same reactor completion (the first operation it
    // completes is this one, the front of its queue): nothing has closed
    // the socket since, so its registration is still the one it left.
    return w->ring_->queue_again(*w);
  }
  if (owner)
    return w->ring_->watch_fired(*w);
  // Destroyed with the reactor or the scheduler: the operations it lists
  // are destroyed on their own path.
  w->release_all();
  w->ring_->recycle(w);
}

// --- the ring's wake-up ----------------------------------------------------------

class pool_ring::wake_op final : public asio::detail::reactor_op
{
public:
  wake_op() noexcept
    : reactor_op(error_code(), &wake_op::do_perform,
        &wake_op::do_complete)
  {
  }

private:
  static status do_perform(reactor_op*) noexcept
  {
    // Edge-triggered: the wake is the point, the count is never read.
    return not_done;
  }

  static void do_complete(void*, asio::detail::operation* base,
      const error_code&, std::size_t)
  {
    delete static_cast<wake_op*>(base);
  }
};

// --- the ring ----------------------------------------------------------------------

TURNLOOP_DECL bool pool_ring::probe(int& error) noexcept
{
  uring_ring* ring = uring_ring::create(1, error);
  if (!ring)
    return false;
  delete ring;
  return true;
}

TURNLOOP_DECL pool_ring* pool_ring::create(loop_core& core,
    buffer_store& store, std::size_t ceiling, std::size_t buffer_size,
    int& error) noexcept
{
  // Buffer ids are 16 bits and the ring's entries at most 32768.
  if (ceiling == 0 || ceiling > 32768 || buffer_size > UINT_MAX)
  {
    error = EINVAL;
    return nullptr;
  }
  std::size_t slots = 1;
  while (slots < ceiling)
    slots <<= 1;
  uring_ring* ring = uring_ring::create(slots, error);
  if (!ring)
    return nullptr;
  pool_ring* p = new (std::nothrow) pool_ring(core, store, ring, ceiling,
      buffer_size);
  wake_op* wake = p ? new (std::nothrow) wake_op : nullptr;
  if (!wake)
  {
    error = ENOMEM;
    delete p;
    delete ring;
    return nullptr;
  }
  error = core.reactor().register_internal_descriptor(
      epoll_reactor::read_op, ring->event_descriptor(), p->wake_data_, wake);
  if (error)
  {
    delete wake;
    p->ring_ = nullptr;
    delete p;
    delete ring;
    return nullptr;
  }
  ring->set_withdraw(&pool_ring::withdrawn);
  if (ring->can_wait() && !under_valgrind())
    p->reactor_fd_ = reactor_descriptor_of(core.reactor());
  core.reactor().set_hook(p);
  return p;
}

TURNLOOP_DECL pool_ring::pool_ring(loop_core& core, buffer_store& store,
    uring_ring* ring, std::size_t ceiling, std::size_t buffer_size) noexcept
  : core_(core),
    store_(store),
    ring_(ring),
    buffer_size_(buffer_size),
    ring_limit_(ceiling)
{
}

TURNLOOP_DECL pool_ring::~pool_ring() = default;

TURNLOOP_DECL void pool_ring::destroy() noexcept
{
  core_.reactor().set_hook(nullptr);
  closing_ = true;

  // Everything in flight is cancelled and its completion reaped: only then
  // may the buffers it could write into go. A buffer a completion carries
  // goes straight back to the store; the operation is destroyed unrun.
  op_queue reaped;
  if (in_flight_)
  {
    ring_->prepare_cancel(0, false);
    for (int rounds = 0; in_flight_ && rounds < 1000; ++rounds)
    {
      int error;
      if (!ring_->submit(1, error, false))
        break;
      reap(reaped);
    }
  }
  // Receives held back for buffers to come back were never submitted.
  while (uring_op* op = held_)
  {
    held_ = op->held_next_;
    op->held_next_ = nullptr;
    reaped.push(op);
  }
  while (asio::detail::scheduler_operation* base = reaped.front())
  {
    reaped.pop();
    auto* op = static_cast<uring_op*>(base);
    if (pooled_buffer* b = std::exchange(op->buffer_, nullptr))
    {
      b->next = nullptr;
      store_.put(b);
    }
    op->destroy();
  }
  const bool drained = in_flight_ == 0;

  // The buffers still in the kernel's ring go back to the free list.
  if (drained)
  {
    for (std::size_t id = 0; id < ids_; ++id)
    {
      auto* b = static_cast<pooled_buffer*>(ring_->buffer_by_id(
            static_cast<unsigned>(id)));
      if (b->lent)
      {
        b->lent = false;
        --lent_;
        store_.return_from_ring(b);
      }
    }
  }

  core_.reactor().deregister_internal_descriptor(ring_->event_descriptor(),
      wake_data_);
  core_.reactor().cleanup_descriptor_data(wake_data_);

  // Watchers still queued on sockets forget the ring, and free themselves
  // when the socket or the reactor lets go of them.
  for (uring_watch* w = live_; w;)
  {
    uring_watch* next = w->next_;
    w->ring_ = nullptr;
    w->release_all();
    w = next;
  }
  for (uring_watch* w = free_; w;)
  {
    uring_watch* next = w->next_;
    delete w;
    w = next;
  }

  // A kernel that would not give the operations back keeps the ring, and
  // the buffers it may still write: leaked, rather than freed under it.
  if (drained)
    delete ring_;
  delete this;
}

TURNLOOP_DECL uring_watch* pool_ring::take_watch(int fd)
{
  const auto i = static_cast<std::size_t>(fd);
  if (i >= watch_by_fd_.size())
    watch_by_fd_.resize(i + 1 > 2 * watch_by_fd_.size()
        ? i + 1 : 2 * watch_by_fd_.size());
  uring_watch* w = free_;
  if (!w)
    return new uring_watch(this);
  free_ = w->next_;
  w->next_ = nullptr;
  return w;
}

TURNLOOP_DECL void pool_ring::give_back_watch(uring_watch* w) noexcept
{
  w->next_ = free_;
  free_ = w;
}

TURNLOOP_DECL void pool_ring::watch(uring_watch* w, int fd,
    epoll_reactor::per_descriptor_data& data) noexcept
{
  w->ops_ = nullptr;
  w->fd_ = fd;
  w->prev_ = nullptr;
  w->next_ = live_;
  if (live_)
    live_->prev_ = w;
  live_ = w;
  w->cancellation_key_ = watch_key(w);
  w->ec_ = error_code();
  // A watcher that close() or cancel() has aborted, its completion not yet
  // run, is replaced here; it clears the entry only if it is still its own.
  watch_by_fd_[static_cast<std::size_t>(fd)] = w;
  w->state_ = data;
  w->stepped_aside_ = false;
  queue_again(*w);
}

TURNLOOP_DECL void pool_ring::queue_again(uring_watch& w) noexcept
{
  // Speculative, as Asio's own reads start: a queued operation on an
  // edge-triggered registration costs no system call (a non-speculative
  // start re-arms the descriptor). The watcher's perform() declines (no
  // operation is queued behind it yet), so it is simply queued.
  core_.reactor().start_op(epoll_reactor::except_op, w.fd_, w.state_, &w,
      false, true);
  // A queued reactor operation counts as the scheduler's work, and this
  // one stays queued between the socket's operations: it must not keep
  // run() from returning (the operations it watches hold work of their
  // own). Its completion takes the unit back before it is consumed.
  core_.release_work(false);
}

TURNLOOP_DECL bool pool_ring::withdrawn(std::uint64_t user_data) noexcept
{
  if (user_data == reactor_watch_tag)
    return false;
  auto* op = reinterpret_cast<uring_op*>(user_data);
  if (!op->aborted_ && !(op->watch_
        && op->watch_->ec_ == asio::error::operation_aborted))
    return false;
  // Its completion (result 0) then reads as operation_aborted, and the
  // watcher's, when it runs, asks for no cancellation.
  op->aborted_ = true;
  return true;
}

TURNLOOP_DECL void pool_ring::watch_fired(uring_watch& w) noexcept
{
  for (uring_op* op = w.release_all(); op;)
  {
    uring_op* next = std::exchange(op->watch_next_, nullptr);
    abort(*op);
    op = next;
  }
  recycle(&w);
}

TURNLOOP_DECL void pool_ring::recycle(uring_watch* w) noexcept
{
  if (w->fd_ >= 0)
  {
    uring_watch*& entry = watch_by_fd_[static_cast<std::size_t>(w->fd_)];
    if (entry == w)
      entry = nullptr;
    w->fd_ = -1;
  }
  if (w->prev_)
    w->prev_->next_ = w->next_;
  else if (live_ == w)
    live_ = w->next_;
  if (w->next_)
    w->next_->prev_ = w->prev_;
  w->prev_ = nullptr;
  w->next_ = free_;
  free_ = w;
}

TURNLOOP_DECL void pool_ring::top_up() noexcept
{
  if (lent_ <= reads_in_flight_ && lent_ < ring_limit_ && !reclaiming_)
    if (pooled_buffer* b = store_.take_free())
      lend(b);
}

TURNLOOP_DECL void pool_ring::submit_recv(uring_op& op, int fd,
    bool poll_first) noexcept
{
  op.reads_ = true;
  op.recv_fd_ = fd;
  op.recv_poll_first_ = poll_first;
  core_.acquire_shared_work();
  if (reclaiming_)
  {
    // It would take a buffer that is on its way back: held until then.
    op.held_next_ = held_;
    held_ = &op;
    return;
  }
  enter_recv(op);
}

TURNLOOP_DECL void pool_ring::enter_recv(uring_op& op) noexcept
{
  op.in_flight_ = true;
  ++in_flight_;
  ++reads_in_flight_;
  ring_->prepare_recv(op.recv_fd_, static_cast<unsigned>(buffer_size_),
      op.recv_poll_first_, reinterpret_cast<std::uint64_t>(&op),
      core_.runs_here());
}

TURNLOOP_DECL void pool_ring::reclaim() noexcept
{
  // More lent than receives in flight means one is in flight at least:
  // the reap that ends the last one takes the buffers back by itself.
  if (reclaiming_ || lent_ <= reads_in_flight_)
    return;
  // Every receive in flight is listed by its socket's watcher (those of a
  // socket closed or cancelled are being aborted already, and complete
  // anyway).
  reclaiming_ = true;
  const bool alone = core_.runs_here();
  for (uring_watch* w = live_; w; w = w->next_)
    for (uring_op* op = w->ops_; op; op = op->watch_next_)
      if (op->reads_ && op->in_flight_ && !op->aborted_ && !op->reclaimed_)
      {
        op->reclaimed_ = true;
        ring_->prepare_cancel(reinterpret_cast<std::uint64_t>(op), alone);
      }
}

TURNLOOP_DECL void pool_ring::settle(op_queue& ops) noexcept
{
  while (lent_)
  {
    auto* b = static_cast<pooled_buffer*>(ring_->buffer_by_id(
          ring_->withdraw()));
    b->lent = false;
    --lent_;
    // Counted as leased and released, so that the pool's waiters have
    // them first.
    store_.take_from_ring(b);
    buffer_store::release(b);
  }
  reclaiming_ = false;
  uring_op* held = nullptr; // oldest first
  while (uring_op* op = held_)
  {
    held_ = op->held_next_;
    op->held_next_ = held;
    held = op;
  }
  while (uring_op* op = held)
  {
    held = op->held_next_;
    op->held_next_ = nullptr;
    if (op->aborted_)
    {
      // Its completion tells operation_aborted, as a cancelled receive's.
      op->result_ = uring_result{-ECANCELED, 0};
      ops.push(op);
      continue;
    }
    top_up();
    enter_recv(*op);
  }
}

TURNLOOP_DECL void pool_ring::submit_send(uring_op& op, int fd,
    const void* data, std::size_t size) noexcept
{
  op.in_flight_ = true;
  op.reads_ = false;
  ++in_flight_;
  core_.acquire_shared_work();
  ring_->prepare_send(fd, data,
      static_cast<unsigned>(size < UINT_MAX ? size : UINT_MAX),
      reinterpret_cast<std::uint64_t>(&op), core_.runs_here());
}

TURNLOOP_DECL void pool_ring::abort(uring_op& op) noexcept
{
  if (op.aborted_)
    return;
  op.aborted_ = true;
  // Before its completion is reaped only; the cancellation is queued ahead
  // of anything submitted later, so it cannot reach an operation that
  // reuses this one's memory.
  if (op.in_flight_)
    ring_->prepare_cancel(reinterpret_cast<std::uint64_t>(&op),
        core_.runs_here());
}

TURNLOOP_DECL pooled_buffer* pool_ring::buffer_of(
    const uring_result& r) noexcept
{
  if ((r.flags & IORING_CQE_F_BUFFER) == 0)
    return nullptr;
  const unsigned id = r.flags >> IORING_CQE_BUFFER_SHIFT;
  auto* b = static_cast<pooled_buffer*>(ring_->buffer_by_id(id));
  b->lent = false;
  --lent_;
  store_.take_from_ring(b);
  return b;
}

TURNLOOP_DECL bool pool_ring::wants_buffer() const noexcept
{
  return lent_ < reads_in_flight_ && lent_ < ring_limit_ && !reclaiming_;
}

TURNLOOP_DECL void pool_ring::lend(pooled_buffer* b) noexcept
{
  if (b->ring_id == pooled_buffer::no_ring_id)
  {
    b->ring_id = static_cast<std::uint32_t>(ids_++);
    ring_->buffer_by_id(b->ring_id) = b;
  }
  b->lent = true;
  ++lent_;
  store_.lend_to_ring(b);
  ring_->provide(b->bytes(), static_cast<unsigned>(buffer_size_), b->ring_id);
}

TURNLOOP_DECL void pool_ring::reap(op_queue& ops) noexcept
{
  ring_->reap([&](std::uint64_t user_data, const uring_result& r)
      {
        if (!user_data)
          return; // a cancellation's own completion
        if (user_data == reactor_watch_tag)
        {
          watch_armed_ = false;
          reactor_ready_ = true;
          // A poll the kernel refuses (not its cancellation at shutdown)
          // leaves the waiting to epoll from now on.
          if (r.res < 0 && r.res != -ECANCELED)
            reactor_fd_ = -1;
          return;
        }
        auto* op = reinterpret_cast<uring_op*>(user_data);
        op->result_ = r;
        op->in_flight_ = false;
        --in_flight_;
        if (op->reads_)
        {
          --reads_in_flight_;
          if (r.res > 0)
            received_ = true;
          // The buffer is the operation's from now on, whatever becomes
          // of it.
          op->buffer_ = buffer_of(r);
        }
        ops.push(op);
      });
  // With no receive in the kernel, the free buffers still in the ring are
  // no read's: they go back (see the file comment).
  if (reads_in_flight_ == 0 && (lent_ != 0 || reclaiming_) && !closing_)
    settle(ops);
}

TURNLOOP_DECL bool pool_ring::before_wait(op_queue& ops,
    bool blocking) noexcept
{
  // The step's wait is the ring's when the loop runs on its own thread
  // and some socket uses the ring (its watcher is queued, between its
  // operations too); otherwise epoll's, as for a loop without a ring (a
  // ring no socket uses would make each of epoll's events cost two calls).
  // The poll of epoll's descriptor must then be in the kernel before the
  // wait: it is submitted with the turn's entries.
  const bool alone = core_.runs_here();
  waits_itself_ = reactor_fd_ >= 0 && live_ && alone;
  if (waits_itself_)
  {
    watch_reactor(alone);
    // What the kernel has posted is taken first. If there is some, or the
    // step is to block, the turn's entries wait for the next call that
    // enters the kernel anyway (the next step's, or this step's wait), so
    // that a turn costs one system call.
    op_queue reaped;
    reap(reaped);
    if (reaped.empty() && !blocking && ring_->needs_enter())
    {
      int error;
      ring_->submit(0, error, alone);
      reap(reaped);
      note_submitted();
    }
    const bool any = !reaped.empty();
    ops.push(reaped);
    return any;
  }

  // The turn's submissions, in one system call; it also lets the kernel
  // post what this thread's completions left for it.
  if (ring_->needs_enter())
  {
    int error;
    ring_->submit(0, error, alone);
  }
  if (!in_flight_ && !watch_armed_)
    return false;
  op_queue reaped;
  reap(reaped);
  if (reaped.empty() && blocking)
  {
    // Completions made on this thread are posted when the wait is
    // interrupted to run them; those of a thread that ran the loop before
    // signal the eventfd, which the reactor watches. On only for the wait,
    // and looked at again once on, so none is missed in between.
    ring_->signal_completions(true);
    signalling_ = true;
    reap(reaped);
  }
  const bool any = !reaped.empty();
  ops.push(reaped);
  return any;
}

TURNLOOP_DECL void pool_ring::wait(long usec, op_queue& ops) noexcept
{
  if (reactor_ready_)
    return;
  // Completions of this thread's operations are finished inside the wait;
  // those left to a thread that ran the loop before are posted by it, and
  // the wait ends for any completion posted, so the eventfd stays off.
  int error;
  if (!ring_->wait(usec, error, true))
  {
    // The ring cannot wait (it could a moment ago): epoll waits from now on,
    // and polls this step.
    reactor_fd_ = -1;
    reactor_ready_ = true;
    return;
  }
  reap(ops);
  note_submitted();
}

TURNLOOP_DECL bool pool_ring::reactor_ready() noexcept
{
  if (!reactor_ready_)
    return false;
  reactor_ready_ = false;
  // Queued now, submitted with the next step's entries: a one-shot poll
  // looks at the descriptor when it is submitted, after this step's epoll
  // run has taken what is ready now.
  if (reactor_fd_ >= 0)
    watch_reactor(core_.runs_here());
  // The ring's sockets stay registered with epoll as Asio made them, so
  // data arriving on one wakes epoll's descriptor too, and the poll fires,
  // although the ring has taken the data and epoll would find nothing for
  // it. When receives delivered data since the poll was last looked at,
  // the wake was most likely theirs: epoll is not run now. The poll just
  // queued decides: when it is submitted the kernel looks at what epoll
  // holds ready, drops what no longer is (the sockets the ring has read)
  // and fires at once if anything else is, and epoll runs in that step.
  // Never twice in a row unless the renewed poll was seen not to fire, so
  // that a busy ring cannot keep epoll's own sockets waiting.
  const bool defer = received_ && !deferred_ && reactor_fd_ >= 0;
  received_ = false;
  deferred_ = defer;
  if (defer)
    return false;
  return true;
}

TURNLOOP_DECL void pool_ring::note_submitted() noexcept
{
  // The renewed poll is in the kernel and did not fire when it was
  // submitted: epoll had nothing ready then, so the step that did not run
  // it lost nothing.
  if (deferred_ && watch_armed_ && !ring_->has_unsubmitted())
    deferred_ = false;
}

TURNLOOP_DECL void pool_ring::watch_reactor(bool alone) noexcept
{
  if (watch_armed_)
    return;
  watch_armed_ = true;
  ring_->prepare_poll(reactor_fd_, reactor_watch_tag, alone);
}

namespace {

// Asio's epoll_reactor keeps its descriptors private and offers no
// accessor. An explicit instantiation may name a private member (access is
// not checked there), so reactor_member<Tag, &epoll_reactor::m> hands
// Tag's friend function a pointer to it. Tag is in this unnamed namespace:
// in header-only mode each unit then instantiates its own specialisation.
template <typename Tag, typename Tag::type Member>
struct reactor_member
{
  friend typename Tag::type member_of(Tag) noexcept
  {
    return Member;
  }
};

struct epoll_fd_tag
{
  using type = int asio::detail::epoll_reactor::*;
  friend type member_of(epoll_fd_tag) noexcept;
};

struct timer_fd_tag
{
  using type = int asio::detail::epoll_reactor::*;
  friend type member_of(timer_fd_tag) noexcept;
};

template struct reactor_member<epoll_fd_tag,
    &asio::detail::epoll_reactor::epoll_fd_>;
template struct reactor_member<timer_fd_tag,
    &asio::detail::epoll_reactor::timer_fd_>;

} // namespace

TURNLOOP_DECL bool under_valgrind() noexcept
{
  // Valgrind runs one thread at a time and does not let another run while
  // one blocks in io_uring_enter (as it does for epoll_wait): a loop waiting
  // in its ring would stop every other thread. Its launcher preloads its
  // own libraries, which is how a program finds it is under it.
  const char* preload = std::getenv("LD_PRELOAD");
  return preload && std::strstr(preload, "vgpreload");
}

TURNLOOP_DECL int reactor_descriptor_of(asio::detail::epoll_reactor& reactor) noexcept
{
  // Without a timerfd (Asio's fallback when the kernel has none) the
  // reactor's timers need a timeout of their own: the ring does not wait.
  if (reactor.*member_of(timer_fd_tag()) < 0)
    return -1;
  return reactor.*member_of(epoll_fd_tag());
}

TURNLOOP_DECL void pool_ring::after_wait(op_queue& ops) noexcept
{
  if (signalling_)
  {
    ring_->signal_completions(false);
    signalling_ = false;
  }
  // Only what is posted: completions the kernel still holds for this
  // thread are posted by the next step's submission, which comes before
  // any blocking wait.
  if (in_flight_)
    reap(ops);
}

} // namespace detail
} // namespace turnloop

#endif // defined(TURNLOOP_HAS_IO_URING_PATH)

#endif // TURNLOOP_DETAIL_URING_IMPL_POOL_RING_IPP
