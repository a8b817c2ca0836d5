//
// turnloop/detail/engine/impl/loop_core_iocp.ipp
//
// The Windows engine (TURNLOOP_HAS_IOCP_ENGINE, detail/platform.hpp): the
// turn is a packet on Asio's I/O completion port (post_immediate_completion:
// a unit of work and a PostQueuedCompletionStatus), posted at most once per
// visit. There is no reactor to extend: I/O, timers (Asio's timer thread)
// and the select thread Asio starts for some waits complete through the
// port, one packet each, and their handlers run inline through the loop's
// execute(). A cross-thread post that finds no turn queued posts one; that
// packet is the wake. Included by loop_core.ipp.
//
// Invariants kept here:
// - turn_state_ becomes turn_in_port only by a read-modify-write of
//   whoever then posts the turn's packet, so at most one packet is in the
//   port. A visit sets turn_visiting; no other thread posts the turn then,
//   and the visit's end (visit_ended) looks for work after it goes idle.
// - After give_back_work the loop holds no unit of the context's work.
//

#ifndef TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_IOCP_IPP
#define TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_IOCP_IPP

#include <turnloop/detail/engine/loop_core.hpp>
#include <turnloop/detail/engine/turn_iocp.hpp>
#include <turnloop/loop_stats.hpp>

#include <turnloop/detail/asio.hpp>

#include <atomic>

namespace turnloop {
namespace detail {

TURNLOOP_DECL void loop_core::start()
{
  // Right after io_context's implementation, so that its shutdown is the
  // last before the implementation's (turn_iocp.hpp). make_service
  // allocates it, from Asio 1.36, through the context's allocator.
  asio::make_service<turn_iocp>(owner_, *this);
}

TURNLOOP_DECL void turn_iocp::shutdown()
{
  core_.drain();
  core_.give_back_work();
}

// --- queuing the turn, waking the loop ---------------------------------------------

TURNLOOP_DECL void loop_core::enqueue_turn() noexcept
{
  // The load keeps a post to a loop whose turn is queued, or which is in a
  // visit, from writing the state's cache line. It is sequentially
  // consistent, as is what each poster counted before it (remote_.pending(),
  // remote_released_work_, sources_signalled_) and visit_ended's store of
  // turn_idle: so a poster that still reads turn_visiting is seen by the
  // visit's last look for work, and one that reads turn_idle posts the
  // turn itself. The loop's own thread posts it from turn_visiting too: a
  // run() nested in a handler waits for it in the port.
  const bool here = running_in_this_thread();
  unsigned char state = turn_state_.load(std::memory_order_seq_cst);
  for (;;)
  {
    if (state == turn_in_port || (state == turn_visiting && !here))
      return;
    if (turn_state_.compare_exchange_weak(state, turn_in_port,
          std::memory_order_acq_rel, std::memory_order_seq_cst))
      break;
  }
  // A wake: another thread's packet for a loop some thread runs. Before
  // run() the packet only waits in the port, as a post waits in the queue
  // on POSIX.
  if (!here && owner_thread_.load(std::memory_order_relaxed))
    wakes_.fetch_add(1, std::memory_order_relaxed);
  scheduler_.post_immediate_completion(&turn_op_, false);
}

TURNLOOP_DECL void loop_core::enqueue_turn_for_nested_run() noexcept
{
  // The completion port has no thread-private queue to avoid.
  enqueue_turn();
}

TURNLOOP_DECL void loop_core::visit_started() noexcept
{
  turn_state_.store(turn_visiting, std::memory_order_seq_cst);
}

TURNLOOP_DECL bool loop_core::has_work_for_a_visit() const noexcept
{
  // Work released on other threads is reconciled by a visit: a release
  // that the running visit did not see needs one more.
  return has_work()
    || remote_released_work_.load(std::memory_order_relaxed) != 0;
}

TURNLOOP_DECL void loop_core::visit_ended(bool) noexcept
{
  // With work left the loop posts its own turn: that is not a wake. Without,
  // it goes idle and looks once more: a poster that read turn_visiting
  // before the store left its work where this look finds it.
  if (has_work_for_a_visit())
  {
    enqueue_turn();
    return;
  }
  unsigned char state = turn_visiting;
  turn_state_.compare_exchange_strong(state, turn_idle,
      std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (has_work_for_a_visit())
    enqueue_turn();
}

TURNLOOP_DECL void loop_core::notify() noexcept
{
  // Nobody runs a loop that is being destroyed, and the port's shutdown
  // consumes what is in it.
  if (stage_.load(std::memory_order_acquire) != stage::running)
    return;
  enqueue_turn();
}

TURNLOOP_DECL void loop_core::fill_engine_stats(loop_stats& s) const noexcept
{
  // No reactor: the loop waits in the port's GetQueuedCompletionStatus,
  // inside Asio, where it does not count its waits.
  s.reactor_runs = 0;
  s.epoll_waits = 0;
  s.os_waits = 0;
}

// --- destruction ---------------------------------------------------------------

TURNLOOP_DECL void loop_core::give_back_work() noexcept
{
  // After this, no unit the loop holds for others is taken or given back:
  // what the context's shutdown destroys next releases only the units it
  // took directly (release_work).
  stage_.store(stage::work_returned, std::memory_order_release);
  // One unit covers every tracked executor made on the loop thread, those
  // released elsewhere and not reconciled included.
  remote_released_work_.store(0, std::memory_order_relaxed);
  if (local_work_ > 0)
  {
    local_work_ = 0;
    scheduler_.work_finished();
  }
  // One unit covers the cross-thread posts, which drain() has destroyed.
  if (remote_.pending().exchange(0, std::memory_order_acq_rel) != 0)
    scheduler_.work_finished();
  // The units taken elsewhere, which objects outside this loop may still
  // hold: a coroutine spawned here from another thread that has moved to
  // another loop of a group, its work guard with it. The context's shutdown
  // would wait for them, and so for that other loop's shutdown, which may
  // be waiting in its turn for this one's (loop_group's destroy_together
  // shuts the loops down one after another): given back now, and their
  // later releases do nothing (release_work).
  const std::uint64_t held = shared_units_.fetch_or(shared_units_returned,
      std::memory_order_acq_rel);
  if (!(held & shared_units_returned))
    for (std::uint64_t n = held; n != 0; --n)
      scheduler_.work_finished();
}

// --- recognising a loop -----------------------------------------------------------

TURNLOOP_DECL bool is_loop(asio::execution_context& ctx) noexcept
{
  return asio::has_service<turn_iocp>(ctx);
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_IOCP_IPP
