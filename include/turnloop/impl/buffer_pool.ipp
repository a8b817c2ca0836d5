//
// turnloop/impl/buffer_pool.ipp
//
// Invariants kept here (all on the loop's thread):
// - a waiter is in the waiting list only while every buffer is minted and
//   leased: a buffer that comes back goes to the oldest waiter before the
//   free list, so no request can overtake one that waits;
// - a waiter's record lives from the start of its wait until its completion
//   is delivered in run_ready (or it is destroyed at shutdown), so a buffer
//   granted to it is counted as leased from the grant;
// - every waiter holds one of the loop's operation units.
//

#ifndef TURNLOOP_IMPL_BUFFER_POOL_IPP
#define TURNLOOP_IMPL_BUFFER_POOL_IPP

#include <turnloop/buffer_pool.hpp>
#include <turnloop/detail/uring/pool_ring.hpp>
#include <turnloop/detail/pool/descriptor_read.hpp>
#include <turnloop/detail/loop_of.hpp>
#include <turnloop/detail/service_stats.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(error.hpp)

namespace turnloop {

namespace detail {

inline loop& checked_loop(asio::execution_context& ctx)
{
  if (loop* l = loop_of(ctx))
    return *l;
  throw system_error(
      asio::error::operation_not_supported,
      "turnloop::buffer_pool needs a turnloop::loop");
}

// detail/pool/buffer_pool_of.hpp's function: the pool is the loop's service,
// which takes the whole pool and the whole loop.
struct remembered_pool
{
  asio::execution_context* context;
  buffer_pool* pool;
  std::uint64_t loops_ended;
};

// buffer_pool_of's lookup, when the pool remembered is not @p ctx's: out of
// line, so that the remembered case, every pooled read and lease write on
// the same loop, needs no stack frame.
TURNLOOP_NOINLINE inline buffer_pool* remember_pool_of(
    asio::execution_context& ctx, remembered_pool& remembered,
    std::uint64_t ended)
{
  loop* l = loop_of(ctx);
  if (!l)
    return nullptr;
  remembered = {&ctx, &asio::use_service<buffer_pool>(*l), ended};
  return remembered.pool;
}

TURNLOOP_DECL buffer_pool* buffer_pool_of(
    asio::execution_context& ctx)
{
  static thread_local remembered_pool remembered{};
  // A pool's memory goes only with its loop's services, in ~loop, which
  // bumps loops_ended (detail/loop_of.hpp) before they shut down and again
  // once they have gone: whoever could reuse the loop's address was
  // allocated after that, and so (allocation being ordered) reads the new
  // count here; one remembered while the loop was being destroyed is
  // forgotten at the second bump. A pool shut down while its loop lives (a
  // loop_group's teardown shuts every loop down before destroying any) is
  // still the one use_service would return, so it may stay remembered.
  const std::uint64_t ended = loops_ended().load(std::memory_order_acquire);
  if (remembered.context == &ctx && remembered.loops_ended == ended)
    return remembered.pool;
  return remember_pool_of(ctx, remembered, ended);
}

} // namespace detail

TURNLOOP_DECL buffer_pool::buffer_pool(asio::execution_context& ctx)
  : asio::execution_context::service(ctx),
    loop_(detail::checked_loop(ctx)),
    core_(detail::core_of(loop_)),
    capacity_(core_.get_config().pooled_buffers),
    buffer_size_(core_.get_config().pooled_buffer_size),
    store_(new detail::buffer_store(capacity_, buffer_size_, core_, *this)),
    waiters_(core_.get_config().max_operations)
{
  // Nothing outside the pool may know of it yet: when two threads create
  // the pool at once, Asio destroys the loser without shutting it down, and
  // maybe while the loop runs. The pool joins the loop's turns at its first
  // use, on the loop's thread (see take()).
}

TURNLOOP_DECL buffer_pool::~buffer_pool()
{
  // A pool that lost the race to be created (see the constructor) was never
  // shut down.
  shutdown();
}

TURNLOOP_DECL void buffer_pool::shutdown()
{
  if (!store_)
    return;
  if (in_turns_)
    core_.remove_source(*this);
  // The ring's operations are cancelled and reaped, and its buffers taken
  // back, while the store is still open.
  if (ring_)
    std::exchange(ring_, nullptr)->destroy();
  // Closed first, so that a lease released while the waiters' handlers are
  // destroyed (a coroutine frame that held one) frees its buffer at once.
  store_->close();
  destroy_waiters();
  std::exchange(store_, nullptr)->detach();
}

TURNLOOP_DECL void buffer_pool::destroy_waiters() noexcept
{
  // Destroying a handler may release leases but starts nothing, so the
  // lists only shrink; take each head afresh.
  for (;;)
  {
    const detail::slot_id id = wait_head_ ? wait_head_ : ready_head_;
    if (!id)
      return;
    detail::buffer_waiter& w = *waiters_.find(id);
    if (w.waiting)
      unlink_waiting(w);
    else
    {
      ready_head_ = w.next;
      if (!ready_head_)
        ready_tail_ = detail::slot_id();
    }
    if (w.slot.is_connected())
      w.slot.clear();
    detail::buffer_wait_op* op = w.op;
    if (w.buffer)
      store_->discard(w.buffer);
    waiters_.erase(id);
    op->destroy();
  }
}

TURNLOOP_DECL bool buffer_pool::admit(detail::operation_unit& unit,
    error_code& ec) noexcept
{
  if (capacity_ == 0 || !core_.operations().try_acquire())
  {
    refusals_.fetch_add(1, std::memory_order_relaxed);
    ec = make_error_code(error::resource_limit);
    return false;
  }
  unit = detail::operation_unit(core_.operations());
  ec.clear();
  return true;
}

TURNLOOP_DECL buffer_lease buffer_pool::try_lease()
{
  error_code ec;
  buffer_lease lease = try_lease(ec);
  if (ec)
    throw system_error(ec, "turnloop::buffer_pool::try_lease");
  return lease;
}

TURNLOOP_DECL buffer_lease buffer_pool::try_lease(
    error_code& ec)
{
  if (core_.being_destroyed())
  {
    // The pool is shutting down with the loop, or has (store_ is gone).
    ec = asio::error::shut_down;
    return buffer_lease();
  }
  detail::pooled_buffer* b = take();
  if (!b)
  {
    refusals_.fetch_add(1, std::memory_order_relaxed);
    ec = make_error_code(error::resource_limit);
    return buffer_lease();
  }
  ec.clear();
  return buffer_lease(b);
}

TURNLOOP_DECL detail::pooled_buffer* buffer_pool::take()
{
  // Every path to a lease or a wait comes here first, so from here on the
  // pool may signal itself.
  if (!in_turns_)
  {
    core_.add_source(*this);
    in_turns_ = true;
  }
  take_back_returned();
  detail::pooled_buffer* b = store_->take();
  // At the ceiling: buffers that reads left in the ring are asked back.
  if (!b && ring_)
    ring_->reclaim();
  return b;
}

TURNLOOP_DECL void buffer_pool::give_back(detail::pooled_buffer* b) noexcept
{
  if (wait_head_)
  {
    const detail::slot_id id = wait_head_;
    detail::buffer_waiter& w = *waiters_.find(id);
    unlink_waiting(w);
    make_ready(id, w, error_code(), b);
  }
  else if (ring_ && ring_->wants_buffer())
    ring_->lend(b);
  else
  {
    b->next = nullptr;
    store_->put(b);
  }
}

TURNLOOP_DECL detail::pool_ring* buffer_pool::choose_ring_for_sockets(
    error_code& ec) noexcept
{
  ec.clear();
  const io_path wanted = core_.get_config().pooled_io;
  if (wanted == io_path::epoll || capacity_ == 0)
  {
    path_ = io_path::epoll;
    return nullptr;
  }
  ring_ = detail::pool_ring::create(core_, *store_, capacity_, buffer_size_,
      ring_error_);
  if (ring_)
  {
    path_ = io_path::io_uring;
    ring_error_ = 0;
    return ring_;
  }
  // Required means never epoll: the operation fails with the reason (the
  // constructor's check passed, so this is what the system is short of
  // now: descriptors, memory), and the next one tries again.
  if (wanted == io_path::io_uring)
  {
    ec.assign(ring_error_, asio::error::get_system_category());
    return nullptr;
  }
  path_ = io_path::epoll;
  return nullptr;
}

TURNLOOP_DECL void buffer_pool::take_back_returned() noexcept
{
  detail::pooled_buffer* chain = store_->take_returned();
  while (chain && (wait_head_ || (ring_ && ring_->wants_buffer())))
  {
    detail::pooled_buffer* b = chain;
    chain = chain->next;
    give_back(b);
  }
  if (chain)
    store_->put(chain);
}

TURNLOOP_DECL void buffer_pool::returned_elsewhere() noexcept
{
  core_.signal(*this);
}

// buffer_store's, here because a buffer released while the store is open
// goes to the pool.
TURNLOOP_DECL void detail::buffer_store::release(detail::pooled_buffer* b) noexcept
{
  buffer_store& s = *b->store;
  if (!s.open_.load(std::memory_order_acquire))
  {
    s.discard(b);
    return;
  }
  if (s.core_.running_in_this_thread())
  {
    s.pool_.give_back(b);
    return;
  }
  detail::pooled_buffer* head = s.returned_.load(std::memory_order_relaxed);
  do
    b->next = head;
  while (!s.returned_.compare_exchange_weak(head, b,
        std::memory_order_release, std::memory_order_relaxed));
  s.pool_.returned_elsewhere();
}

TURNLOOP_DECL void buffer_pool::link_waiting(detail::slot_id id,
    detail::buffer_waiter& w) noexcept
{
  w.waiting = true;
  w.prev = wait_tail_;
  w.next = detail::slot_id();
  if (wait_tail_)
    waiters_.find(wait_tail_)->next = id;
  else
    wait_head_ = id;
  wait_tail_ = id;
  ++waiting_;
}

TURNLOOP_DECL void buffer_pool::unlink_waiting(
    detail::buffer_waiter& w) noexcept
{
  if (w.prev)
    waiters_.find(w.prev)->next = w.next;
  else
    wait_head_ = w.next;
  if (w.next)
    waiters_.find(w.next)->prev = w.prev;
  else
    wait_tail_ = w.prev;
  w.prev = w.next = detail::slot_id();
  w.waiting = false;
  --waiting_;
}

TURNLOOP_DECL void buffer_pool::make_ready(detail::slot_id id,
    detail::buffer_waiter& w, const error_code& ec,
    detail::pooled_buffer* b) noexcept
{
  w.result = ec;
  w.buffer = b;
  if (w.watched)
  {
    // The watch completes later (Asio posts it) and finds the record no
    // longer waiting, or gone.
    w.watched = false;
    std::exchange(w.watch, nullptr)->emit(asio::cancellation_type::all);
  }
  w.next = detail::slot_id();
  if (ready_tail_)
    waiters_.find(ready_tail_)->next = id;
  else
    ready_head_ = id;
  ready_tail_ = id;
  core_.signal(*this);
}

TURNLOOP_DECL void buffer_pool::end_wait(detail::slot_id id,
    const error_code& ec) noexcept
{
  detail::buffer_waiter* w = waiters_.find(id);
  if (!w || !w->waiting)
    return;
  unlink_waiting(*w);
  make_ready(id, *w, ec, nullptr);
}

TURNLOOP_DECL void buffer_pool::on_watch(detail::slot_id id,
    error_code ec) noexcept
{
  detail::buffer_waiter* w = waiters_.find(id);
  if (!w || !w->waiting)
    return;
  w->watched = false;
  w->watch = nullptr; // its handler frees it once this returns
  if (!ec)
  {
    // The stream reports an error, a hang-up or urgent data. What a read
    // would return can be told without a buffer unless data is waiting.
    switch (detail::probe_unread(w->descriptor, ec))
    {
    case detail::unread::data:
      return; // keeps waiting for a buffer, now unwatched (re-arming would
              // fire again at once)
    case detail::unread::nothing:
      ec = asio::error::would_block; // back to waiting for data
      break;
    case detail::unread::end:
      break;
    }
  }
  unlink_waiting(*w);
  make_ready(id, *w, ec, nullptr);
}

TURNLOOP_DECL std::size_t buffer_pool::run_ready(std::size_t budget)
{
  take_back_returned();

  // Signals again if ready records remain: at the budget, or when a
  // handler throws.
  struct resignal
  {
    buffer_pool& pool;
    ~resignal()
    {
      if (pool.ready_head_)
        pool.core_.signal(pool);
    }
  } guard{*this};

  std::size_t ran = 0;
  while (ran < budget && ready_head_ && !core_.exception_pending())
  {
    const detail::slot_id id = ready_head_;
    detail::buffer_waiter& w = *waiters_.find(id);
    ready_head_ = w.next;
    if (!ready_head_)
      ready_tail_ = detail::slot_id();
    if (w.slot.is_connected())
      w.slot.clear();
    detail::buffer_wait_op* op = w.op;
    const error_code ec = w.result;
    buffer_lease lease(w.buffer);
    // Erasing releases an async_lease's operation unit before its handler
    // runs, so the handler can start the next one.
    waiters_.erase(id);
    ++ran;
    op->complete(ec, std::move(lease));
  }
  return ran;
}

TURNLOOP_DECL buffer_pool_stats buffer_pool::stats() const noexcept
{
  buffer_pool_stats s;
  s.buffer_size = buffer_size_;
  s.capacity = capacity_;
  if (store_)
  {
    s.minted = store_->minted();
    s.leased = store_->leased();
    s.leased_high_water = store_->leased_high_water();
  }
  s.waiting = waiting_;
  s.waits = waits_;
  s.refusals = refusals_.load(std::memory_order_relaxed);
  s.path = path_;
  s.io_uring_error = ring_error_;
  if (store_)
    s.in_ring = store_->in_ring();
  if (ring_)
  {
    s.io_uring_enters = ring_->enters();
    s.io_uring_waits = ring_->reactor_descriptor() >= 0;
  }
  return s;
}

TURNLOOP_DECL buffer_pool_stats detail::pool_statistics(loop& l) noexcept
{
  if (asio::has_service<buffer_pool>(l))
    return asio::use_service<buffer_pool>(l).stats();
  buffer_pool_stats s;
  s.capacity = l.get_config().pooled_buffers;
  s.buffer_size = l.get_config().pooled_buffer_size;
  return s;
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_BUFFER_POOL_IPP
