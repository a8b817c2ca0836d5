//
// turnloop/detail/engine/impl/loop_core_reactor.ipp
//
// The POSIX engine (every platform but Windows: TURNLOOP_HAS_IOCP_ENGINE
// undefined, detail/platform.hpp): the turn is an operation in Asio's
// scheduler, queued by the loop's thread alone; the loop blocks in its
// reactor (turn_reactor), where a cross-thread post wakes it with the
// reactor's interrupt, and completes the I/O the reactor finds ready in the
// reactor step. Included by loop_core.ipp.
//
// Invariants kept here:
// - turn_op_ is in the scheduler's queue at most once (in_queue_), and only
//   the owning thread queues it or reads in_queue_.
//

#ifndef TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_REACTOR_IPP
#define TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_REACTOR_IPP

#include <turnloop/detail/engine/loop_core.hpp>
#include <turnloop/detail/engine/turn_reactor.hpp>
#include <turnloop/detail/uring/pool_ring.hpp>
#include <turnloop/loop_stats.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(detail/call_stack.hpp)
#include TURNLOOP_ASIO_HEADER(detail/scheduler_thread_info.hpp)
#include TURNLOOP_ASIO_HEADER(detail/thread_context.hpp)

#include <cassert>
#include <typeinfo>

namespace turnloop {
namespace detail {

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

// --- queuing the turn, waking the loop ---------------------------------------------

TURNLOOP_DECL void loop_core::notify() noexcept
{
  // Only a parked loop needs a syscall; a running one finds the post at its
  // next turn or reactor poll. The "parked" store in prepare_to_park and the
  // increment of remote_.pending() (or remote_released_work_) before this call
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

TURNLOOP_DECL void loop_core::enqueue_turn_for_nested_run() noexcept
{
  // The scheduler's shared queue: the nested call cannot see this thread's
  // private one.
  in_queue_ = true;
  scheduler_.do_dispatch(&turn_op_);
}

TURNLOOP_DECL void loop_core::visit_started() noexcept
{
  in_queue_ = false;
}

TURNLOOP_DECL void loop_core::visit_ended(bool for_nested_run) noexcept
{
  // Whatever is left is re-queued behind the reactor. A suspended visit's
  // handlers must be reachable by the nested call, which cannot see this
  // thread's private scheduler queue.
  if (in_queue_ || !has_work())
    return;
  if (for_nested_run)
    enqueue_turn_for_nested_run();
  else
    enqueue_turn();
}

TURNLOOP_DECL void loop_core::fill_engine_stats(loop_stats& s) const noexcept
{
  s.reactor_runs = reactor_runs_;
  s.epoll_waits = reactor_runs_ - epoll_skips_;
  s.os_waits = parks_;
}

// --- the reactor step ------------------------------------------------------------
//
// The scheduler runs the reactor on one thread at a time, so the park
// handshake needs no loop ownership; only the loop-side bookkeeping after the
// poll does. (When the loop is driven through io_context::run() on several
// threads, the thread polling the reactor may not be the one running a turn.)

inline bool loop_core::prepare_to_park(long& usec) noexcept
{
  // Only for a step the scheduler would let block (usec is not zero):
  // turn_reactor::run takes a poll apart.
  assert(usec != 0);
  count_reactor_run();
  park_state_.store(parked, std::memory_order_seq_cst);
  if (arrivals_pending(std::memory_order_seq_cst)) [[unlikely]]
  {
    park_state_.store(awake, std::memory_order_relaxed);
    usec = 0;
    return false;
  }
  ++parks_;
  return true;
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

inline bool loop_core::completes_io_here() const noexcept
{
  // Only on the loop's own thread, outside a visit, and not for run_one()
  // or poll_one(), which must run exactly one handler.
  return running_in_this_thread() && active_visits_ == 0 && visit_limit_ > 1;
}

inline void loop_core::complete_io(
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
  // A timeout of zero: the scheduler has operations queued, or only polls.
  // The loop does not park, and what the reactor finds ready is queued
  // behind them, as io_context does. Every step of the benchmark's
  // ping-pong (one loop, both ends) is one: the speculative write queues
  // its completion.
  if (usec != 0)
  {
    run_blocking(usec, ops);
    return;
  }
  // Before the wait, so that the wait is the last call (a jump, no frame):
  // - the interrupt flag is cleared: what an interrupt up to now announced
  //   is in the scheduler's queue, which runs before its next look at it;
  //   one during the poll stays set, and the next blocking step queues what
  //   it finds instead of completing it (the safe side);
  // - what other threads posted, released or signalled is taken: a poll
  //   does not wait, and what arrives during it is taken by the next step,
  //   which, if it would block, looks under the park handshake first.
  loop_core& core = core_;
  core.count_reactor_run();
  interrupted_.store(false, std::memory_order_relaxed);
  if (core.arrivals_pending()) [[unlikely]]
  {
    poll_after_arrivals(ops);
    return;
  }
  wait(0, ops);
}

TURNLOOP_DECL void turn_reactor::poll_after_arrivals(
    asio::detail::op_queue<asio::detail::scheduler_operation>& ops)
{
  core_.take_arrivals();
  wait(0, ops);
}

TURNLOOP_DECL void turn_reactor::run_blocking(long usec,
    asio::detail::op_queue<
      asio::detail::scheduler_operation>& ops)
{
  // io_context appends what the reactor returns behind the operations
  // already queued, so ready operations may complete here only when nothing
  // is: the scheduler's timeout is not zero, so its queue was empty; an
  // interrupt since the last run means another thread queued something
  // after the scheduler looked, and `ops` holds what this thread queued
  // (the loop's turn, after a cross-thread post). prepare_to_park may still
  // turn the wait into a poll (a cross-thread post has arrived).
  const bool parked_here = core_.prepare_to_park(usec);
  if (!core_.completes_io_here())
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

// --- recognising a loop -----------------------------------------------------------

TURNLOOP_DECL bool is_loop(asio::execution_context& ctx) noexcept
{
  // has_service first: use_service would create a reactor in a context
  // that has none (a thread_pool, say). The reactor's exact type, not a
  // dynamic_cast (which walked the class hierarchy comparing type names,
  // about 600 instructions a call): only a loop installs a turn_reactor,
  // and nothing derives from it.
  if (!asio::has_service<reactor_task>(ctx))
    return false;
  reactor_task& reactor = asio::use_service<reactor_task>(ctx);
  return typeid(reactor) == typeid(turn_reactor);
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_REACTOR_IPP
