//
// turnloop/detail/accept/impl/handle_service.ipp
//
// Invariants kept here:
// - a record exists exactly while its operation holds a unit of
//   max_operations, so the table (sized by max_operations) never refuses;
// - a parked record (waiting, backoff, ready) is in exactly one list, and a
//   running one in none;
// - a handle is counted in the ceiling exactly while a handle_unit or a
//   granted record holds it; while an accept is in line, a released handle
//   is passed to it, never back to the ceiling;
// - a ready record has exactly one resume_handler posted for it;
// - nothing that can call user code (a handler, a handle release) runs
//   with the mutex held. Emitting a cancellation signal only reaches the
//   reactor, which queues the cancelled operation, and posting only queues,
//   so those may.
//

#ifndef TURNLOOP_DETAIL_ACCEPT_IMPL_HANDLE_SERVICE_IPP
#define TURNLOOP_DETAIL_ACCEPT_IMPL_HANDLE_SERVICE_IPP

#include <turnloop/detail/accept/handle_service.hpp>
#include <turnloop/detail/loop_of.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(error.hpp)
#include TURNLOOP_ASIO_HEADER(io_context.hpp)
#include TURNLOOP_ASIO_HEADER(post.hpp)

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <mutex>

namespace turnloop {
namespace detail {

TURNLOOP_DECL void release_handle(handle_anchor* anchor) noexcept
{
  bool last;
  {
    std::lock_guard<std::mutex> lock(anchor->mutex);
    // After its shutdown the service still gives handles back to the
    // ceiling, which lives until the loop's core does; once the service is
    // destroyed there is nothing left to give them back to.
    if (anchor->service)
      anchor->service->release_locked();
    last = --anchor->refs == 0;
  }
  if (last)
    delete anchor;
}

// The size of a spare block: room for Asio's operation holding a
// resume_handler (about 64 bytes on 64-bit targets, on every supported
// Asio). A larger request, never seen, would be allocated normally.
constexpr std::size_t resume_memory_size = 256;

// Hands Asio the block a resume handler carries, once; anything else (no
// block, or a request it cannot hold) comes from the heap.
template <typename T>
class handle_service::resume_allocator
{
public:
  using value_type = T;

  resume_allocator(handle_service* service, void* block) noexcept
    : service_(service),
      block_(block)
  {
  }

  template <typename U>
  resume_allocator(const resume_allocator<U>& other) noexcept
    : service_(other.service_),
      block_(other.block_)
  {
  }

  T* allocate(std::size_t n)
  {
    if (fits(n))
      return static_cast<T*>(block_);
    return std::allocator<T>().allocate(n);
  }

  void deallocate(T* p, std::size_t n) noexcept
  {
    if (p && p == block_)
      service_->give_back_resume_memory(block_);
    else
      std::allocator<T>().deallocate(p, n);
  }

  friend bool operator==(const resume_allocator& a,
      const resume_allocator& b) noexcept
  {
    return a.block_ == b.block_;
  }

  friend bool operator!=(const resume_allocator& a,
      const resume_allocator& b) noexcept
  {
    return a.block_ != b.block_;
  }

private:
  template <typename> friend class resume_allocator;

  bool fits(std::size_t n) const noexcept
  {
    return block_ && n <= resume_memory_size / sizeof(T)
      && alignof(T) <= alignof(std::max_align_t);
  }

  handle_service* service_;
  void* block_;
};

class handle_service::resume_handler
{
public:
  using allocator_type = resume_allocator<void>;

  resume_handler(handle_service& service, slot_id id,
      void* memory = nullptr) noexcept
    : service_(&service),
      id_(id),
      memory_(memory)
  {
  }

  /// Asio allocates the handler's operation with this: in the block
  /// reserved for it, which Asio gives back before it calls the handler.
  allocator_type get_allocator() const noexcept
  {
    return allocator_type(service_, memory_);
  }

  void operator()() const
  {
    // Driven through io_context::run() by a thread that does not own the
    // loop, this would race the loop's turns: go through one of them (its
    // block is free again by now, so not in it).
    if (!service_->core_.running_in_this_thread())
      return asio::post(service_->loop_.get_executor(),
          resume_handler(*service_, id_));
    service_->resume(id_);
  }

private:
  handle_service* service_;
  slot_id id_;
  void* memory_;
};

TURNLOOP_DECL handle_service::handle_service(
    asio::execution_context& ctx)
  : execution_context_service_base<handle_service>(ctx),
    loop_(static_cast<loop&>(ctx)),
    core_(core_of(loop_)),
    handles_(core_.handles()),
    operations_(core_.operations()),
    records_(core_.get_config().max_operations),
    backoff_timer_(loop_.get_executor()),
    anchor_(new handle_anchor(this))
{
}

TURNLOOP_DECL handle_service::~handle_service()
{
  // Every block is back: a record gives its own back when it goes, and Asio
  // gives back those of handlers it destroyed when the scheduler shut down.
  while (void* block = spares_)
  {
    spares_ = *static_cast<void**>(block);
    ::operator delete(block);
  }

  bool last;
  {
    std::lock_guard<std::mutex> lock(anchor_->mutex);
    anchor_->service = nullptr;
    last = --anchor_->refs == 0;
  }
  if (last)
    delete anchor_;
}

TURNLOOP_DECL handle_service* handle_service::of(
    asio::execution_context& ctx)
{
  if (!loop_of(ctx))
    return nullptr;
  return &asio::use_service<handle_service>(ctx);
}

TURNLOOP_DECL void handle_service::shutdown()
{
  {
    std::lock_guard<std::mutex> lock(anchor_->mutex);
    shut_down_ = true;
  }

  // Parked operations are destroyed here, one at a time without the lock,
  // since destroying a handler can release handles. Running ones are in the
  // reactor, and resume handlers in the scheduler, which destroy them when
  // they shut down after this service.
  for (;;)
  {
    parked_accept* op = nullptr;
    {
      std::lock_guard<std::mutex> lock(anchor_->mutex);
      list* l = waiting_.head ? &waiting_ : backoff_.head ? &backoff_
        : ready_.head ? &ready_ : nullptr;
      if (!l)
        break;
      const slot_id id = l->head;
      accept_record& r = *records_.find(id);
      unlink(*l, id);
      op = r.parked;
      if (r.granted)
        handles_.release();
      if (r.resume_memory)
        give_back_resume_memory(std::exchange(r.resume_memory, nullptr));
      records_.erase(id);
      operations_.release();
    }
    if (op)
      op->destroy();
  }
}

TURNLOOP_DECL handle_service::admission handle_service::admit()
{
  admission a;
  std::lock_guard<std::mutex> lock(anchor_->mutex);
  if (shut_down_)
  {
    a.refused = asio::error::operation_aborted;
    return a;
  }
  if (!operations_.try_acquire())
  {
    ++refused_;
    a.refused = make_error_code(error::resource_limit);
    return a;
  }
  error_code ec;
  try
  {
    a.id = records_.emplace(ec);
  }
  catch (...)
  {
    operations_.release();
    throw;
  }
  assert(!ec);
  if (!waiting_.head && take_handle_locked())
    a.handle = issue_locked();
  return a;
}

TURNLOOP_DECL handle_service::parking handle_service::wait(slot_id id,
    parked_accept* op, bool slot_connected)
{
  std::lock_guard<std::mutex> lock(anchor_->mutex);
  accept_record& r = *records_.find(id);
  r.parked = op;
  if (!waiting_.head && take_handle_locked())
  {
    r.granted = true;
    make_ready_locked(id, r, {});
  }
  else
  {
    r.where = accept_record::state::waiting;
    push_back(waiting_, id);
    ++waits_;
  }
  return park_locked(r, slot_connected);
}

TURNLOOP_DECL handle_service::parking handle_service::back_off(slot_id id,
    parked_accept* op, bool slot_connected)
{
  std::lock_guard<std::mutex> lock(anchor_->mutex);
  accept_record& r = *records_.find(id);
  r.parked = op;
  r.where = accept_record::state::backoff;
  push_back(backoff_, id);
  ++backoffs_;
  if (!backoff_armed_)
  {
    // One timer for every accept backing off: running out of descriptors
    // is the process's condition, not one acceptor's.
    struct expired
    {
      handle_service* service;

      void operator()(const error_code& ec) const
      {
        if (!ec)
          service->backoff_expired();
      }
    };
    backoff_timer_.expires_after(backoff_delay_);
    backoff_timer_.async_wait(expired{this});
    backoff_armed_ = true;
    backoff_delay_ = std::min(backoff_delay_ * 2, longest_backoff);
  }
  return park_locked(r, slot_connected);
}

TURNLOOP_DECL asio::cancellation_slot handle_service::proxy(
    slot_id id)
{
  std::lock_guard<std::mutex> lock(anchor_->mutex);
  accept_record& r = *records_.find(id);
  r.proxied = true;
  return r.accept.slot();
}

TURNLOOP_DECL bool handle_service::complete(slot_id id, bool accepted)
{
  std::lock_guard<std::mutex> lock(anchor_->mutex);
  accept_record& r = *records_.find(id);
  if (r.watched)
    r.watch.emit(asio::cancellation_type::terminal);
  const bool proxied = r.proxied;
  if (r.resume_memory)
    give_back_resume_memory(std::exchange(r.resume_memory, nullptr));
  records_.erase(id);
  operations_.release();
  if (accepted)
    backoff_delay_ = first_backoff;
  return proxied;
}

TURNLOOP_DECL void handle_service::cancel(slot_id id,
    asio::cancellation_type_t type)
{
  std::lock_guard<std::mutex> lock(anchor_->mutex);
  accept_record* r = records_.find(id);
  if (!r)
    return;
  const error_code aborted =
    asio::error::operation_aborted;
  switch (r->where)
  {
  case accept_record::state::waiting:
    unlink(waiting_, id);
    make_ready_locked(id, *r, aborted);
    break;
  case accept_record::state::backoff:
    leave_backoff_locked(id);
    make_ready_locked(id, *r, aborted);
    break;
  case accept_record::state::ready:
    // A handle granted, or a retry due, that the operation has not taken up.
    if (!r->result)
      r->result = aborted;
    break;
  case accept_record::state::running:
    r->accept.emit(type);
    break;
  }
}

TURNLOOP_DECL bool handle_service::watching(slot_id id)
{
  std::lock_guard<std::mutex> lock(anchor_->mutex);
  const accept_record* r = records_.find(id);
  return r && r->watched;
}

TURNLOOP_DECL void handle_service::watch_ended(slot_id id,
    const error_code& reason)
{
  std::lock_guard<std::mutex> lock(anchor_->mutex);
  accept_record* r = records_.find(id);
  if (!r)
    return; // the operation completed, and ended its watch itself
  r->watched = false;
  switch (r->where)
  {
  case accept_record::state::waiting:
    unlink(waiting_, id);
    make_ready_locked(id, *r, reason);
    break;
  case accept_record::state::backoff:
    leave_backoff_locked(id);
    make_ready_locked(id, *r, reason);
    break;
  case accept_record::state::ready:
    if (!r->result)
      r->result = reason;
    break;
  case accept_record::state::running:
    // The acceptor was cancelled after this operation was given a handle
    // but before it called accept (which then missed it, and may be waiting
    // for a connection that is not coming): cancel that accept. If it has
    // already taken a connection this does nothing, as a cancel() made just
    // after a stock async_accept. Any other error, the kernel accept
    // reports itself.
    if (reason == asio::error::operation_aborted)
      r->accept.emit(asio::cancellation_type::terminal);
    break;
  }
}

TURNLOOP_DECL void handle_service::fill_stats(handle_stats& s)
{
  std::lock_guard<std::mutex> lock(anchor_->mutex);
  s.accepts_pending = records_.size();
  s.accepts_waiting = waiting_.size;
  s.accept_waits = waits_;
  s.accepts_refused = refused_;
  s.accept_backoffs = backoffs_;
}

TURNLOOP_DECL void handle_service::resume(slot_id id)
{
  parked_accept* op;
  error_code result;
  handle_unit granted;
  asio::cancellation_slot slot;
  {
    std::lock_guard<std::mutex> lock(anchor_->mutex);
    accept_record& r = *records_.find(id);
    unlink(ready_, id);
    r.where = accept_record::state::running;
    op = r.parked;
    r.parked = nullptr;
    result = r.result;
    if (r.granted)
    {
      r.granted = false;
      granted = issue_locked();
    }
    // A parked operation is watched, and its kernel accept cancelled
    // through the record.
    slot = r.accept.slot();
  }
  op->resume(result, std::move(granted), slot);
}

TURNLOOP_DECL void handle_service::release_locked()
{
  if (shut_down_ || !waiting_.head)
    return handles_.release();
  const slot_id id = waiting_.head;
  accept_record& r = *records_.find(id);
  unlink(waiting_, id);
  r.granted = true;
  make_ready_locked(id, r, {});
}

TURNLOOP_DECL handle_unit handle_service::issue_locked() noexcept
{
  ++anchor_->refs;
  return handle_unit(anchor_);
}

TURNLOOP_DECL bool handle_service::take_handle_locked() noexcept
{
  // Looking first keeps an accept that will wait from counting as a
  // refusal of the ceiling: waiting is not being refused.
  return handles_.in_use() < handles_.limit() && handles_.try_acquire();
}

TURNLOOP_DECL handle_service::parking handle_service::park_locked(
    accept_record& r, bool slot_connected)
{
  parking p;
  if (!r.watched)
  {
    r.watched = true;
    p.start_watch = true;
    p.watch_slot = r.watch.slot();
  }
  if (slot_connected && !r.proxied)
  {
    r.proxied = true;
    p.install_canceller = true;
  }
  return p;
}

TURNLOOP_DECL void handle_service::make_ready_locked(slot_id id,
    accept_record& r, const error_code& result)
{
  r.where = accept_record::state::ready;
  r.result = result;
  push_back(ready_, id);
  // Through the scheduler's own queue (not the loop's), behind what the
  // reactor has queued: see the file comment of handle_service.hpp.
  // In the block reserved when it was parked: this allocates nothing, and
  // cannot fail (it is reached from a handle's noexcept release).
  asio::post(
      static_cast<asio::io_context&>(loop_).get_executor(),
      resume_handler(*this, id, std::exchange(r.resume_memory, nullptr)));
}

TURNLOOP_DECL void handle_service::reserve_resume(slot_id id)
{
  std::lock_guard<std::mutex> lock(anchor_->mutex);
  accept_record& r = *records_.find(id);
  if (!r.resume_memory)
    r.resume_memory = take_resume_memory();
}

TURNLOOP_DECL void* handle_service::take_resume_memory()
{
  {
    std::lock_guard<std::mutex> lock(spares_mutex_);
    if (void* block = spares_)
    {
      spares_ = *static_cast<void**>(block);
      return block;
    }
  }
  return ::operator new(resume_memory_size);
}

TURNLOOP_DECL void handle_service::give_back_resume_memory(
    void* block) noexcept
{
  std::lock_guard<std::mutex> lock(spares_mutex_);
  *static_cast<void**>(block) = spares_;
  spares_ = block;
}

TURNLOOP_DECL void handle_service::leave_backoff_locked(slot_id id)
{
  unlink(backoff_, id);
  if (!backoff_.head && backoff_armed_)
  {
    // Nothing left to retry: an armed timer would keep run() from
    // returning for nothing.
    backoff_timer_.cancel();
    backoff_armed_ = false;
  }
}

TURNLOOP_DECL void handle_service::backoff_expired()
{
  std::lock_guard<std::mutex> lock(anchor_->mutex);
  backoff_armed_ = false;
  while (const slot_id id = backoff_.head)
  {
    accept_record& r = *records_.find(id);
    unlink(backoff_, id);
    make_ready_locked(id, r, {});
  }
}

TURNLOOP_DECL void handle_service::push_back(list& l, slot_id id) noexcept
{
  accept_record& r = *records_.find(id);
  r.prev = l.tail;
  r.next = slot_id{};
  if (l.tail)
    records_.find(l.tail)->next = id;
  else
    l.head = id;
  l.tail = id;
  ++l.size;
}

TURNLOOP_DECL void handle_service::unlink(list& l, slot_id id) noexcept
{
  accept_record& r = *records_.find(id);
  if (r.prev)
    records_.find(r.prev)->next = r.next;
  else
    l.head = r.next;
  if (r.next)
    records_.find(r.next)->prev = r.prev;
  else
    l.tail = r.prev;
  r.prev = r.next = slot_id{};
  --l.size;
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ACCEPT_IMPL_HANDLE_SERVICE_IPP
