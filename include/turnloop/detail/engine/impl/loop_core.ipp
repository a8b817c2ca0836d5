//
// turnloop/detail/engine/impl/loop_core.ipp
//
// The turn engine. Invariants kept here:
// - local_ is non-empty only while turn_op_ is queued in the scheduler or a
//   visit is on the stack that will re-queue it; so a local post needs no
//   lock and no atomic.
// - turn_op_ is in the scheduler's queue at most once (in_queue_), and only
//   the owning thread queues it or reads in_queue_.
// - turn_op_ carries one unit of scheduler work while queued, which covers
//   every handler in local_. Cross-thread posts are covered by one unit held
//   while remote_pending_ is non-zero. Tracked executors made on the loop
//   thread are covered by one unit held while local_work_ is non-zero.
//

#ifndef TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_IPP
#define TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_IPP

#include <turnloop/detail/engine/loop_core.hpp>
#include <turnloop/detail/engine/turn_reactor.hpp>
#include <turnloop/detail/uring/pool_ring.hpp>
#include <turnloop/loop_stats.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(detail/call_stack.hpp)
#include TURNLOOP_ASIO_HEADER(detail/scheduler_thread_info.hpp)
#include TURNLOOP_ASIO_HEADER(detail/thread_context.hpp)
#include TURNLOOP_ASIO_HEADER(multiple_exceptions.hpp)

#include <algorithm>
#include <cstdint>
#include <memory>
#include <thread>

namespace turnloop {
namespace detail {

inline const config& validated_config(const config& c)
{
  c.validate();
  return c;
}

TURNLOOP_DECL loop_core::loop_core(asio::io_context& owner,
    const config& cfg)
  : owner_(owner),
    scheduler_(asio::use_service<asio::detail::scheduler>(owner)),
    config_(validated_config(cfg)),
    visit_limit_(cfg.events_per_turn),
    operations_(cfg.max_operations),
    handles_(cfg.max_handles)
{
}

TURNLOOP_DECL void loop_core::start()
{
  // io_uring required: refused at construction, not at the first read.
  if (config_.pooled_io == io_path::io_uring)
  {
    int error = 0;
    if (!pool_ring::probe(error))
    {
      throw system_error(error_code(error,
            asio::error::get_system_category()),
          "turnloop::loop: config::pooled_io is io_path::io_uring, and no "
          "io_uring with a buffer ring can be set up here");
    }
  }

  // The reactor must be ours before anything asks for "the reactor", and the
  // scheduler must have it as its task from the start, so that an idle loop
  // always blocks in epoll_wait (where a post can wake it) and never on the
  // scheduler's condition variable.
  // make_service registers it under its task's key (turn_reactor inherits
  // reactor_task::id) and, from Asio 1.36, allocates it through the
  // context's allocator.
  reactor_ = &asio::make_service<turn_reactor>(owner_, *this);
  reactor_->init_task();
}

// --- ownership ---------------------------------------------------------------
//
// owner_thread_ holds the address of the owning thread's current_ (unique per
// thread), with the low bit set for a transient owner: one that holds the
// loop for a single scheduler operation while the loop is driven through
// io_context::run(). Transient holds are short, so a thread that needs the
// loop waits them out; a run() owner is another matter (already_running).

inline constexpr std::uintptr_t transient_bit = 1;

inline const void* owner_tag(const void* thread, bool transient) noexcept
{
  return reinterpret_cast<const void*>(
      reinterpret_cast<std::uintptr_t>(thread) | (transient ? transient_bit : 0));
}

inline bool is_transient(const void* owner) noexcept
{
  return (reinterpret_cast<std::uintptr_t>(owner) & transient_bit) != 0;
}

TURNLOOP_DECL bool loop_core::runs_here() const noexcept
{
  return running_in_this_thread()
    && owner_thread_.load(std::memory_order_relaxed)
      == owner_tag(this_thread_current(), false);
}

TURNLOOP_DECL bool loop_core::acquire_owner(bool transient, bool wait) noexcept
{
  const void* me = owner_tag(this_thread_current(), transient);
  for (;;)
  {
    const void* expected = nullptr;
    if (owner_thread_.compare_exchange_weak(expected, me,
          std::memory_order_acq_rel, std::memory_order_relaxed))
      return true;
    if (expected && (!wait || !is_transient(expected)))
      return false;
    std::this_thread::yield();
  }
}

TURNLOOP_DECL loop_core::run_scope::run_scope(loop_core& core)
  : core_(core)
{
  if (core.running_in_this_thread())
  {
    start_ = core.progress_now();
    suspended_visits_ = core.active_visits_;
    core.active_visits_ = 0;
    // The suspended visit's remaining handlers must be reachable by the
    // nested call, which cannot see this thread's private scheduler queue.
    if (suspended_visits_ != 0 && !core.in_queue_ && core.has_work())
    {
      core.in_queue_ = true;
      core.scheduler_.do_dispatch(&core.turn_op_);
    }
    return;
  }

  if (!core.acquire_owner(false, true))
  {
    throw system_error(make_error_code(error::already_running),
        "turnloop::loop::run");
  }
  previous_ = current_;
  current_ = &core;
  acquired_ = true;
  core.reconcile_released_work();
}

TURNLOOP_DECL loop_core::run_scope::~run_scope()
{
  if (acquired_)
  {
    current_ = previous_;
    core_.owner_thread_.store(nullptr, std::memory_order_release);
  }
  else
  {
    core_.active_visits_ = suspended_visits_;
    const progress end = core_.progress_now();
    core_.nested_.visits += end.visits - start_.visits;
    core_.nested_.handlers += end.handlers - start_.handlers;
    core_.nested_.io += end.io - start_.io;
  }
}

TURNLOOP_DECL loop_core::transient_owner::transient_owner(
    loop_core& core, bool wait) noexcept
  : core_(core)
{
  if (core.running_in_this_thread())
  {
    owns_ = true;
    return;
  }
  if (core.acquire_owner(true, wait))
  {
    previous_ = current_;
    current_ = &core;
    owns_ = acquired_ = true;
  }
}

TURNLOOP_DECL loop_core::transient_owner::~transient_owner()
{
  if (acquired_)
  {
    current_ = previous_;
    core_.owner_thread_.store(nullptr, std::memory_order_release);
  }
}

// --- posting -----------------------------------------------------------------

TURNLOOP_DECL void loop_core::post_local(operation* op) noexcept
{
  local_.push_back(op);
  if (local_.size() > local_high_water_)
    local_high_water_ = local_.size();
  if (!in_queue_ && active_visits_ == 0)
    enqueue_turn();
}

TURNLOOP_DECL void loop_core::post_remote(operation* op,
    bool counted) noexcept
{
  // Count before publishing, so the loop can never retire a post it has not
  // seen counted.
  if (!counted && remote_pending_.fetch_add(1, std::memory_order_seq_cst) == 0)
    scheduler_.work_started();
  remote_.push(op);
  notify();
}

TURNLOOP_DECL void loop_core::notify() noexcept
{
  // Only a parked loop needs a syscall; a running one finds the post at its
  // next turn or reactor poll. The "parked" store in prepare_to_park and the
  // increment of remote_pending_ (or remote_released_work_) before this call
  // are sequentially consistent, so either the loop sees the count before it
  // blocks or this load sees parked.
  if (park_state_.load(std::memory_order_seq_cst) != parked)
    return;
  // Nobody runs a loop that is being destroyed, and its reactor may be gone.
  if (stage_.load(std::memory_order_acquire) != stage::running)
    return;
  int expected = parked;
  if (park_state_.compare_exchange_strong(expected, notified,
        std::memory_order_seq_cst))
  {
    wakes_.fetch_add(1, std::memory_order_relaxed);
    reactor_->interrupt();
  }
}

TURNLOOP_DECL void loop_core::enqueue_turn() noexcept
{
  // Inside the scheduler on its own thread this lands on the thread-private
  // queue: no lock, no atomic, until the current operation returns.
  in_queue_ = true;
  scheduler_.post_immediate_completion(&turn_op_, false);
}

// --- work counting -------------------------------------------------------------

TURNLOOP_DECL void loop_core::release_local_work_from_other_thread() noexcept
{
  remote_released_work_.fetch_add(1, std::memory_order_seq_cst);
  notify();
}

TURNLOOP_DECL void loop_core::reconcile_released_work() noexcept
{
  if (remote_released_work_.load(std::memory_order_relaxed) == 0)
    return;
  const long released = remote_released_work_.exchange(0,
      std::memory_order_acq_rel);
  if (released == 0)
    return;
  local_work_ -= released;
  if (local_work_ == 0)
    scheduler_.work_finished();
}

TURNLOOP_DECL void loop_core::retire_remote(std::size_t taken) noexcept
{
  if (taken == 0)
    return;
  // The count only falls here, so its value just before each retirement is
  // where every peak is: the high-water mark is exact without producers
  // having to touch it.
  const std::size_t queued = remote_pending_.fetch_sub(taken,
      std::memory_order_acq_rel);
  if (queued > remote_high_water_)
    remote_high_water_ = queued;
  if (queued == taken)
    scheduler_.work_finished();
}

TURNLOOP_DECL void loop_core::capture_exception() noexcept
{
  if (active_visits_ != 0)
  {
    // Rethrown by the visit as soon as the running handler returns.
    if (!pending_exception_)
      pending_exception_ = std::current_exception();
    else
      pending_exception_ = std::make_exception_ptr(
          asio::multiple_exceptions(pending_exception_));
  }
  else
    scheduler_.capture_current_exception();
}

// --- the turn ------------------------------------------------------------------

class loop_core::visit_scope
{
public:
  explicit visit_scope(loop_core& core) noexcept
    : core_(core)
  {
    core.in_queue_ = false;
    ++core.active_visits_;
    ++core.visits_;
  }

  // Runs on normal exit and when a handler throws: whatever is left is
  // re-queued behind the reactor, so nothing accepted is lost.
  ~visit_scope()
  {
    --core_.active_visits_;
    if (core_.active_visits_ == 0 && !core_.in_queue_ && core_.has_work())
      core_.enqueue_turn();
  }

  visit_scope(const visit_scope&) = delete;
  visit_scope& operator=(const visit_scope&) = delete;

private:
  loop_core& core_;
};

TURNLOOP_DECL void loop_core::turn_operation::do_complete(void* owner,
    scheduler_operation* base, const error_code&, std::size_t)
{
  loop_core& core = static_cast<turn_operation*>(base)->core_;
  if (!owner)
  {
    // The scheduler is shutting down and destroys its queue.
    core.in_queue_ = false;
    return;
  }

  transient_owner owner_scope(core, true);
  if (!owner_scope.owns())
  {
    // This thread runs the io_context base while another thread runs the
    // loop. Give the turn back to the scheduler for the owner, and report.
    core.scheduler_.post_immediate_completion(base, false);
    throw system_error(make_error_code(error::already_running),
        "turnloop::loop: io_context::run() on a second thread");
  }
  if (owner_scope.transient())
  {
    // Driven through the io_context base: its run_one() and poll_one() end
    // after one scheduler operation, which must then be one handler, as on
    // io_context; run() and poll() take the turn again for the next one.
    limit_scope one(core, 1);
    core.visit();
  }
  else
    core.visit();
}

TURNLOOP_DECL void loop_core::visit()
{
  visit_scope scope(*this);
  reconcile_released_work();

  if (stop_requested_.load(std::memory_order_relaxed))
  {
    // loop::stop() stops the scheduler before it sets the flag, so a flag
    // with a running scheduler is left over from a stop that io_context's
    // restart() (which cannot clear it) has since undone.
    if (owner_.io_context::stopped())
      return;
    stop_requested_.store(false, std::memory_order_relaxed);
  }

  const std::size_t limit = visit_limit_;
  const std::size_t per_turn = config_.events_per_turn;
  std::size_t ran = 0;
  for (;;)
  {
    ++turns_;
    const std::size_t ran_before = ran;

    // Cross-thread posts that have arrived join the loop's own queue behind
    // the handlers already there (at most a turn's budget of them), so one
    // FIFO is run and a nested run() sees the same order. Once in local_ they
    // are covered by the turn's unit of work and stop counting as queued.
    if (remote_pending_.load(std::memory_order_relaxed) != 0)
    {
      std::size_t taken = 0;
      while (taken < per_turn)
      {
        operation* op = remote_.pop();
        if (!op)
          break;
        local_.push_back(op);
        ++taken;
      }
      if (local_.size() > local_high_water_)
        local_high_water_ = local_.size();
      retire_remote(taken);
    }

    // Only the handlers that were ready when this turn began: what they post
    // runs in a later turn.
    for (std::size_t ready = local_.size(); ready != 0; --ready)
    {
      operation* op = local_.pop_front();
      if (!op)
        break; // a nested run() took it
      ++handlers_run_;
      op->complete(&node_cache_);
      if (pending_exception_) [[unlikely]]
        rethrow_pending_exception();
      if (++ran >= limit || stop_requested_.load(std::memory_order_relaxed))
        return;
    }

    // Services' completions (turn sources), within the same budget.
    if (sources_signalled_.load(std::memory_order_relaxed) != 0)
    {
      ran += run_sources(std::min(per_turn, limit - ran));
      if (ran >= limit || stop_requested_.load(std::memory_order_relaxed))
        return;
    }

    // Back to the reactor when this visit has used a turn's budget, so I/O
    // waits at most events_per_turn handlers; or when a turn found nothing
    // to run (a cross-thread post still being pushed is picked up later).
    if (ran >= per_turn || ran == ran_before)
      return;
  }
}

TURNLOOP_DECL void loop_core::rethrow_pending_exception()
{
  std::exception_ptr e = std::move(pending_exception_);
  pending_exception_ = nullptr;
  std::rethrow_exception(e);
}

TURNLOOP_DECL bool loop_core::has_work() const noexcept
{
  return !local_.empty() || remote_.maybe_nonempty()
    || sources_signalled_.load(std::memory_order_relaxed) != 0;
}

TURNLOOP_DECL std::size_t loop_core::run_sources(std::size_t budget)
{
  std::size_t ran = 0;
  for (turn_source* s = sources_.load(std::memory_order_acquire);
      s && ran < budget; s = s->next_source_)
  {
    if (!s->signalled_.load(std::memory_order_relaxed)
        || !s->signalled_.exchange(false, std::memory_order_acq_rel))
      continue;
    sources_signalled_.fetch_sub(1, std::memory_order_relaxed);
    const std::size_t n = s->run_ready(budget - ran);
    handlers_run_ += n;
    ran += n;
    if (pending_exception_) [[unlikely]]
      rethrow_pending_exception();
  }
  return ran;
}

TURNLOOP_DECL void loop_core::add_source(turn_source& source) noexcept
{
  turn_source* head = sources_.load(std::memory_order_relaxed);
  do
    source.next_source_ = head;
  while (!sources_.compare_exchange_weak(head, &source,
        std::memory_order_release, std::memory_order_relaxed));
}

TURNLOOP_DECL void loop_core::remove_source(turn_source& source) noexcept
{
  // Not concurrent with the loop or with add_source (see the declaration).
  turn_source* head = sources_.load(std::memory_order_relaxed);
  if (head == &source)
    sources_.store(source.next_source_, std::memory_order_relaxed);
  else
  {
    for (turn_source* s = head; s; s = s->next_source_)
    {
      if (s->next_source_ == &source)
      {
        s->next_source_ = source.next_source_;
        break;
      }
    }
  }
  if (source.signalled_.exchange(false, std::memory_order_relaxed))
    sources_signalled_.fetch_sub(1, std::memory_order_relaxed);
}

TURNLOOP_DECL bool loop_core::cross_thread_pending() const noexcept
{
  // Atomics only: the caller may not own the loop. remote_pending_ is
  // counted before a post is pushed, so it covers pushes still in progress.
  return remote_pending_.load(std::memory_order_seq_cst) != 0
    || remote_released_work_.load(std::memory_order_seq_cst) != 0
    || sources_signalled_.load(std::memory_order_seq_cst) != 0;
}

// --- the reactor step ------------------------------------------------------------
//
// The scheduler runs the reactor on one thread at a time, so the park
// handshake needs no loop ownership; only the loop-side bookkeeping after the
// poll does. (When the loop is driven through io_context::run() on several
// threads, the thread polling the reactor may not be the one running a turn.)

TURNLOOP_DECL bool loop_core::prepare_to_park(long& usec) noexcept
{
  ++reactor_runs_;
  if (usec == 0)
    return false;
  park_state_.store(parked, std::memory_order_seq_cst);
  if (cross_thread_pending())
  {
    park_state_.store(awake, std::memory_order_relaxed);
    usec = 0;
    return false;
  }
  ++parks_;
  return true;
}

TURNLOOP_DECL void loop_core::after_reactor_run(bool parked_here) noexcept
{
  // Relaxed is enough: a poster that still reads "parked" only makes one
  // spare wake, and before blocking again prepare_to_park re-checks with a
  // sequentially consistent handshake.
  if (parked_here)
    park_state_.store(awake, std::memory_order_relaxed);
  if (remote_pending_.load(std::memory_order_relaxed) != 0
      || remote_released_work_.load(std::memory_order_relaxed) != 0
      || sources_signalled_.load(std::memory_order_relaxed) != 0) [[unlikely]]
    take_arrivals();
}

TURNLOOP_DECL void loop_core::take_arrivals() noexcept
{
  // Apart from after_reactor_run (and never inlined into it), so that the
  // usual run, with nothing arrived, costs a few loads and no stack frame.
  transient_owner owner(*this, false);
  if (!owner.owns())
    return; // the owner's visit, when it ends, takes what has arrived
  reconcile_released_work();
  if (!in_queue_ && active_visits_ == 0 && has_work())
    enqueue_turn();
}

// The epoll result Asio's scheduler hands to a completed reactor operation
// lives in a protected member; a pointer to it, taken through a derived
// class, may be applied to any operation.
struct task_result_access : asio::detail::scheduler_operation
{
  static unsigned of(const scheduler_operation& op) noexcept
  {
    return op.*(&task_result_access::task_result_);
  }
};

TURNLOOP_DECL bool loop_core::completes_io_here() const noexcept
{
  // Only on the loop's own thread, outside a visit, and not for run_one()
  // or poll_one(), which must run exactly one handler.
  return running_in_this_thread() && active_visits_ == 0 && visit_limit_ > 1;
}

TURNLOOP_DECL void loop_core::complete_io(
    asio::detail::op_queue<asio::detail::scheduler_operation>& ready)
{
  // The I/O step of the turn: the operations the reactor found ready
  // (sockets, timers) complete here, when there are no more than a turn's
  // budget of them, instead of each taking a round trip through the
  // scheduler's locked queue.
  //
  // Only operations the reactor returned: each carries a unit of work the
  // scheduler has already counted (or none, for a descriptor with nothing
  // completed, which compensates itself), so a handler releasing other work
  // can never take the scheduler's count to zero under it. Operations queued
  // while this runs (the loop's turn, speculative completions) wait in the
  // scheduler's private queue as usual.
  using asio::detail::scheduler_thread_info;
  auto* this_thread = static_cast<scheduler_thread_info*>(
      asio::detail::call_stack<asio::detail::thread_context,
        asio::detail::thread_info_base>::contains(&scheduler_));
  if (!this_thread)
    return;

  // Each completed operation consumes one unit of work, as the scheduler's
  // own work_cleanup does after it completes one; a post made by the handler
  // is still in private_outstanding_work and takes that unit over.
  struct consume_work
  {
    asio::detail::scheduler& scheduler;
    scheduler_thread_info& thread;
    ~consume_work()
    {
      if (thread.private_outstanding_work > 0)
        --thread.private_outstanding_work;
      else
        scheduler.work_finished();
    }
  };

  // All or none: when more are ready than a turn's budget, every one goes
  // through the scheduler's queue. Cutting the batch would queue the rest
  // behind what the completed handlers queued, which on a scheduler not in
  // one-thread mode goes straight to its shared queue, out of io_context's
  // order (Asio 1.34, in Boost 1.87, drops io_context(1)'s hint).
  // One ready operation (a timer chain, a ping-pong) is never too many.
  using asio::detail::op_queue_access;
  if (ready.front() && op_queue_access::next(ready.front()))
  {
    std::size_t count = 0;
    for (auto* op = ready.front(); op && count <= config_.events_per_turn;
        op = op_queue_access::next(op))
      ++count;
    if (count > config_.events_per_turn)
      return;
  }

  static const error_code no_error;
  for (;;)
  {
    asio::detail::scheduler_operation* op = ready.front();
    if (!op || stop_requested_.load(std::memory_order_relaxed))
      return;
    ready.pop();
    const unsigned result = task_result_access::of(*op);
    ++io_completions_;
    {
      consume_work cleanup{scheduler_, *this_thread};
      op->complete(&scheduler_, no_error, result);
    }
    this_thread->rethrow_pending_exception();
  }
}

TURNLOOP_DECL void turn_reactor::run(long usec,
    asio::detail::op_queue<
      asio::detail::scheduler_operation>& ops)
{
  // io_context appends what the reactor returns behind the operations
  // already queued, so ready operations may complete here only when nothing
  // is: the scheduler passes a zero timeout whenever its queue is not empty
  // (or it only polls), an interrupt since the last run means another thread
  // queued something after the scheduler looked, and `ops` holds what this
  // thread queued (the loop's turn, after a cross-thread post). The flag is
  // cleared once this run has looked at it, not before the wait, so an
  // interrupt between the scheduler's look and the wait is not lost.
  const bool nothing_queued = usec != 0;
  const bool parked_here = core_.prepare_to_park(usec);
  if (!nothing_queued || !core_.completes_io_here())
  {
    wait(usec, ops);
    interrupted_.store(false, std::memory_order_relaxed);
    core_.after_reactor_run(parked_here);
    return;
  }

  asio::detail::op_queue<asio::detail::scheduler_operation> ready;
  wait(usec, ready);
  core_.after_reactor_run(parked_here);
  // Read before it is cleared: the usual run was not interrupted, and a
  // plain load costs no locked instruction.
  const bool interrupted = interrupted_.load(std::memory_order_acquire)
    && interrupted_.exchange(false, std::memory_order_acquire);
  if (interrupted || !ops.empty())
  {
    ops.push(ready);
    return;
  }
  // What a throwing handler or a stop() leaves is handed to the scheduler,
  // ahead of what the completed handlers queued (`ops` is empty when they
  // start; as on io_context, where every returned operation is queued before
  // any of them runs) and of the next reactor run, as epoll_reactor requires.
  // A catch, not a guard object: the usual run, every one completed, then
  // costs no destructor call.
  try
  {
    core_.complete_io(ready);
  }
  catch (...)
  {
    hand_over(ready, ops);
    throw;
  }
  if (!ready.empty())
    hand_over(ready, ops);
}

TURNLOOP_DECL void turn_reactor::hand_over(reactor_hook::op_queue& ready,
    reactor_hook::op_queue& ops) noexcept
{
  reactor_hook::op_queue queued_since;
  queued_since.push(ops);
  ops.push(ready);
  ops.push(queued_since);
}

TURNLOOP_DECL void turn_reactor::wait_with_hook(long usec,
    reactor_hook::op_queue& ops)
{
  // Completions the hook hands over now must not wait behind a blocking
  // wait; the loop is then not parked, and a spare wake costs nothing.
  // With them in hand, the epoll poll may wait for the next step: every
  // other step polls at least, so epoll's sockets and timers wait one step
  // at most, and a turn of the ring's I/O costs one system call, not two.
  const bool ring_ready = hook_->before_wait(ops, usec != 0);
  if (hook_->waits_itself())
  {
    // The ring watches epoll's descriptor: its wait is the step's one
    // blocking call, and epoll is polled only when it has events.
    if (!ring_ready && usec != 0)
      hook_->wait(usec, ops);
    if (hook_->reactor_ready())
      reactor_task::run(0, ops);
    else
      ++core_.epoll_skips_;
    return;
  }
  if (ring_ready && polled_last_)
  {
    polled_last_ = false;
    ++core_.epoll_skips_;
    return;
  }
  polled_last_ = true;
  reactor_task::run(ring_ready ? 0 : usec, ops);
  hook_->after_wait(ops);
}

TURNLOOP_DECL void turn_reactor::interrupt()
{
  interrupted_.store(true, std::memory_order_release);
  reactor_task::interrupt();
}

// --- driving -------------------------------------------------------------------

TURNLOOP_DECL std::size_t loop_core::handlers_since(std::size_t scheduler_ops,
    const progress& before) const noexcept
{
  // The scheduler counts a visit as one operation and does not see I/O
  // completed in the reactor step; report handlers instead.
  const progress now = progress_now();
  const std::uint64_t visits = now.visits - before.visits;
  const std::uint64_t others = scheduler_ops > visits ? scheduler_ops - visits : 0;
  return static_cast<std::size_t>(others + (now.handlers - before.handlers)
      + (now.io - before.io));
}

TURNLOOP_DECL std::size_t loop_core::run()
{
  run_scope scope(*this);
  const progress before = progress_now();
  return handlers_since(owner_.io_context::run(), before);
}

TURNLOOP_DECL std::size_t loop_core::run_one()
{
  run_scope scope(*this);
  limit_scope limit(*this, 1);
  for (;;)
  {
    const progress before = progress_now();
    const std::size_t ops = owner_.io_context::run_one();
    if (ops == 0)
      return 0;
    if (handlers_since(ops, before) != 0)
      return 1;
  }
}

TURNLOOP_DECL std::size_t loop_core::poll()
{
  run_scope scope(*this);
  const progress before = progress_now();
  return handlers_since(owner_.io_context::poll(), before);
}

TURNLOOP_DECL std::size_t loop_core::poll_one()
{
  run_scope scope(*this);
  limit_scope limit(*this, 1);
  for (;;)
  {
    const progress before = progress_now();
    const std::size_t ops = owner_.io_context::poll_one();
    if (ops == 0)
      return 0;
    if (handlers_since(ops, before) != 0)
      return 1;
  }
}

TURNLOOP_DECL void loop_core::stop()
{
  // Scheduler first: a visit that sees the flag while the scheduler runs
  // knows the flag is stale (see visit()).
  owner_.io_context::stop();
  stop_requested_.store(true, std::memory_order_relaxed);
}

TURNLOOP_DECL void loop_core::restart()
{
  stop_requested_.store(false, std::memory_order_relaxed);
  owner_.io_context::restart();
}

// --- statistics ----------------------------------------------------------------

TURNLOOP_DECL void loop_core::fill_stats(loop_stats& s) const noexcept
{
  s.handlers_run = handlers_run_;
  s.io_completions = io_completions_;
  s.turns = turns_;
  s.reactor_runs = reactor_runs_;
  s.epoll_waits = reactor_runs_ - epoll_skips_;
  s.os_waits = parks_;
  s.wakes = wakes_.load(std::memory_order_relaxed);
  s.local_queued = local_.size();
  s.local_queued_high_water = local_high_water_;
  s.posts_queued = remote_pending_.load(std::memory_order_relaxed);
  s.posts_queued_high_water = remote_high_water_ > s.posts_queued
    ? remote_high_water_ : s.posts_queued;
  s.posts_refused = refused_posts_.load(std::memory_order_relaxed);
  s.posts = {config_.post_capacity, s.posts_queued, s.posts_queued_high_water,
    s.posts_refused};
  s.handles = {handles_.limit(), handles_.in_use(), handles_.high_water(),
    handles_.refusals()};
  s.operations = {operations_.limit(), operations_.in_use(),
    operations_.high_water(), operations_.refusals()};
}

// --- destruction ---------------------------------------------------------------

TURNLOOP_DECL void loop_core::begin_shutdown() noexcept
{
  stage_.store(stage::shutting_down, std::memory_order_release);
}

TURNLOOP_DECL bool loop_core::drain() noexcept
{
  // Destroying a handler can release more (a coroutine frame destroys the
  // frames it awaited), but nothing is queued after begin_shutdown(), so one
  // pass over each queue empties it. (A loop_group drains its loops again
  // while any pass destroyed something: a handler on one loop can post to
  // another.)
  bool destroyed = false;
  while (operation* op = local_.pop_front())
  {
    op->destroy(&node_cache_);
    destroyed = true;
  }
  while (operation* op = remote_.pop())
  {
    op->destroy(&node_cache_);
    destroyed = true;
  }
  return destroyed;
}

TURNLOOP_DECL void loop_core::services_destroyed() noexcept
{
  stage_.store(stage::destroyed, std::memory_order_release);
  reactor_ = nullptr;
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_IPP
