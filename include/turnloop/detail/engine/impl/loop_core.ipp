//
// turnloop/detail/engine/impl/loop_core.ipp
//
// The turn engine, the part both engines share; each engine's own part is
// in loop_core_reactor.ipp (POSIX) or loop_core_iocp.ipp (Windows),
// included at the end. Invariants kept here:
// - local_ is non-empty only while turn_op_ is queued in the scheduler or a
//   visit is on the stack that will re-queue it; so a local post needs no
//   lock and no atomic.
// - turn_op_ carries one unit of scheduler work while queued, which covers
//   every handler in local_. Cross-thread posts are covered by one unit held
//   while remote_.pending() is non-zero. Tracked executors made on the loop
//   thread are covered by one unit held while local_work_ is non-zero.
//

#ifndef TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_IPP
#define TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_IPP

#include <turnloop/detail/engine/loop_core.hpp>
#include <turnloop/loop_stats.hpp>

#include <turnloop/detail/asio.hpp>
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
    // io_context's own implementation (use_service is specialised for it):
    // on Windows use_service<scheduler> would make a second one, with a
    // thread of its own.
    scheduler_(asio::use_service<asio::detail::io_context_impl>(owner)),
    config_(validated_config(cfg)),
    visit_limit_(cfg.events_per_turn),
    operations_(cfg.max_operations),
    handles_(cfg.max_handles)
{
}

// --- ownership ---------------------------------------------------------------
//
// owner_thread_ holds owner_tag(): the address of the owning thread's current_
// (unique per thread), with the low bit set for a transient owner: one that
// holds the loop for a single scheduler operation while the loop is driven
// through io_context::run(). Transient holds are short, so a thread that needs
// the loop waits them out; a run() owner is another matter (already_running).

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
    if (suspended_visits_ != 0)
      core.visit_ended(true);
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
    core_.nested_.deferred += end.deferred - start_.deferred;
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
  if (!turn_queued() && active_visits_ == 0)
    enqueue_turn();
}

TURNLOOP_DECL void loop_core::post_remote(operation* op,
    bool counted) noexcept
{
  // Count before publishing, so the loop can never retire a post it has not
  // seen counted.
  if (!counted && remote_.pending().fetch_add(1, std::memory_order_seq_cst) == 0)
    scheduler_.work_started();
  remote_.push(op);
  notify();
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
  const std::size_t queued = remote_.pending().fetch_sub(taken,
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
    core.visit_started();
    ++core.active_visits_;
    ++core.visits_;
  }

  // Runs on normal exit and when a handler throws: whatever is left is
  // re-queued behind the reactor, so nothing accepted is lost.
  ~visit_scope()
  {
    --core_.active_visits_;
    if (core_.active_visits_ == 0)
      core_.visit_ended(false);
  }

  visit_scope(const visit_scope&) = delete;
  visit_scope& operator=(const visit_scope&) = delete;

private:
  loop_core& core_;
};

TURNLOOP_DECL void loop_core::turn_operation::do_complete(void* owner,
    asio::detail::operation* base, const error_code&, std::size_t)
{
  loop_core& core = static_cast<turn_operation*>(base)->core_;
  if (!owner)
  {
    // The scheduler is shutting down and destroys its queue (on the IOCP
    // context, once for each packet it finds).
    core.turn_taken();
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

  // A visit runs at most limit handlers, then the loop goes back to the
  // reactor, so I/O waits at most a turn's budget of them: limit is
  // events_per_turn, or less under a limit_scope, which only lowers it.
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
    if (remote_.pending().load(std::memory_order_relaxed) != 0)
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
      ran += run_sources(limit - ran);
      if (ran >= limit || stop_requested_.load(std::memory_order_relaxed))
        return;
    }

    // Back to the reactor, too, when a turn found nothing to run (a
    // cross-thread post still being pushed is picked up later). Here ran is
    // below limit, so no test of the budget is needed.
    if (ran == ran_before)
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

// --- driving -------------------------------------------------------------------

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
  fill_engine_stats(s);
  s.wakes = wakes_.load(std::memory_order_relaxed);
  s.local_queued = local_.size();
  s.local_queued_high_water = local_high_water_;
  s.posts_queued = remote_.pending().load(std::memory_order_relaxed);
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
#if !defined(TURNLOOP_HAS_IOCP_ENGINE)
  reactor_ = nullptr;
#endif // !defined(TURNLOOP_HAS_IOCP_ENGINE)
}

} // namespace detail
} // namespace turnloop

#if defined(TURNLOOP_HAS_IOCP_ENGINE)
# include <turnloop/detail/engine/impl/loop_core_iocp.ipp>
#else // defined(TURNLOOP_HAS_IOCP_ENGINE)
# include <turnloop/detail/engine/impl/loop_core_reactor.ipp>
#endif // defined(TURNLOOP_HAS_IOCP_ENGINE)

#endif // TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_IPP
