//
// turnloop/detail/blocking/impl/blocking_service.ipp
//
// Invariants kept here:
// - Every admitted job holds a unit of undelivered_ (so there are never more
//   than max_undelivered, the capacity of the result ring), a place in its
//   class (the pool's queue_places() or long_places()) until a worker takes
//   it or its thread ends, and one of the loop's operations
//   (core_.operations()), from admission until its completion is delivered.
//   Any thread takes them; what gives them back runs on the loop's thread,
//   except the places, which the pool gives back.
// - jobs_ (loop thread) holds every admitted job that has reached the loop
//   until its completion is delivered; jobs forwarded from other threads
//   and not yet there hold their credits all the same.
// - holds_work_ is true exactly while jobs_ is not empty, so run() keeps
//   running until the last completion is delivered.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_SERVICE_IPP
#define TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_SERVICE_IPP

#include <turnloop/detail/blocking/blocking_service.hpp>
#include <turnloop/detail/engine/loop_core.hpp>

#include <cassert>

namespace turnloop {
namespace detail {

TURNLOOP_DECL blocking_service::~blocking_service()
{
  // A service never shut down: the loser of two threads that made it at
  // once, or one made during the loop's destruction, after the services
  // had shut down (a destructor's first submission).
  shutdown();
}

TURNLOOP_DECL error_code blocking_service::admit(
    bool long_job, bool on_loop) noexcept
{
  // Checked at submission, so a refused job never runs, and an admitted one
  // always has room in the result ring. Each ceiling counts its own
  // refusals; what one took is given back when a later one refuses.
  const error_code refused =
    make_error_code(error::resource_limit);
  if (!undelivered_.try_acquire())
    return refused;
  ceiling& places = long_job ? pool_->long_places() : pool_->queue_places();
  if (!places.try_acquire())
  {
    undelivered_.release();
    return refused;
  }
  // Off the loop's thread, the workers are started when the job reaches it
  // (see adopt); if none can be, the job is then refused in a turn.
  if (on_loop && !long_job && !pool_->start_workers())
  {
    refused_threads_.fetch_add(1, std::memory_order_relaxed);
    places.release();
    undelivered_.release();
    return refused;
  }
  if (!core_.operations().try_acquire())
  {
    refused_operations_.fetch_add(1, std::memory_order_relaxed);
    places.release();
    undelivered_.release();
    return refused;
  }
  admitted_.fetch_add(1, std::memory_order_relaxed);
  return {};
}

TURNLOOP_DECL void blocking_service::unadmit(bool long_job) noexcept
{
  core_.operations().release();
  (long_job ? pool_->long_places() : pool_->queue_places()).release();
  undelivered_.release();
  admitted_.fetch_sub(1, std::memory_order_relaxed);
}

TURNLOOP_DECL slot_id blocking_service::hold(blocking_job* job)
{
  // Filled after the slot exists, so a failed emplace leaves the job alone.
  error_code ec;
  const slot_id id = jobs_->emplace(ec);
  assert(!ec && "admit() checked the credit");
  jobs_->find(id)->reset(job);
  job->id_ = id;
  return id;
}

TURNLOOP_DECL void blocking_service::end_unrecorded(blocking_job* job,
    bool long_job)
{
  // What deliver() gives back, for a job that never got a slot; its place
  // too, since it never reached the pool.
  (long_job ? pool_->long_places() : pool_->queue_places()).release();
  undelivered_.release();
  core_.operations().release();
  ++delivered_;
  job->complete();
}

TURNLOOP_DECL void blocking_service::abandon(blocking_job* job,
    bool long_job) noexcept
{
  // Once the service is closed its counts no longer matter.
  if (!closed_)
    unadmit(long_job);
  job->destroy();
}

TURNLOOP_DECL void blocking_service::start(blocking_job* job,
    bool long_job) noexcept
{
  if (!holds_work_)
  {
    core_.acquire_work();
    holds_work_ = true;
  }
  if (!in_turns_)
  {
    // Results are delivered in the loop's turns from now on.
    core_.add_source(*this);
    in_turns_ = true;
  }
  if (long_job)
    pool_->start_long(job);
  else if (!pool_->start_workers())
  {
    // Only for a job admitted off the loop's thread: the loop's own
    // submissions found a worker at admission.
    refused_threads_.fetch_add(1, std::memory_order_relaxed);
    pool_->queue_places().release();
    pool_->refuse(job);
  }
  else if (!delivering_)
    pool_->enqueue(job);
  else
  {
    // Submitted by a completion handler: handed over with others, a few at
    // a time, the rest at the end of the delivery. The signal lets a nested
    // run() inside a handler take them too (its turn calls run_ready, which
    // flushes on its way out).
    if (!pool_->has_staged())
      core_.signal(*this);
    pool_->stage(job);
    if (pool_->staged() == stage_max)
      pool_->flush();
  }
}

TURNLOOP_DECL std::size_t blocking_service::run_ready(std::size_t budget)
{
  // On the way out, also when a handler throws: jobs the handlers submitted
  // go to the workers, and results left beyond the budget wait for the next
  // turn.
  struct end_of_delivery
  {
    blocking_service& service;
    bool was_delivering;

    ~end_of_delivery()
    {
      service.delivering_ = was_delivering;
      service.pool_->flush();
      if (service.pool_->results_pending())
        service.core_.signal(service);
    }
  } guard{*this, delivering_};
  delivering_ = true;

  std::size_t n = 0;
  while (n < budget && !core_.exception_pending())
  {
    blocking_job* job = pool_->pop_result();
    if (!job)
      break;
    ++n;
    deliver(job);
  }
  return n;
}

TURNLOOP_DECL void blocking_service::deliver(blocking_job* job)
{
  // The credit goes back before the handler runs, so a handler may submit
  // again at once; the loop's work goes after it, so run() cannot stop
  // between the two.
  owned_job* slot = jobs_->find(job->id_);
  assert(slot && slot->get() == job);
  (void)slot->release();
  jobs_->erase(job->id_);
  undelivered_.release();
  core_.operations().release();
  ++delivered_;
  if (job->state_ == blocking_job::state::aborted)
    ++aborted_;
  else if (job->state_ == blocking_job::state::refused && job->long_)
    refused_threads_.fetch_add(1, std::memory_order_relaxed);

  struct release_work
  {
    blocking_service& service;

    ~release_work()
    {
      if (service.holds_work_ && service.jobs_->size() == 0)
      {
        service.holds_work_ = false;
        service.core_.release_work(true);
      }
    }
  } guard{*this};
  job->complete();
}

TURNLOOP_DECL void blocking_service::cancel(slot_id id) noexcept
{
  if (closed_)
    return;
  if (owned_job* slot = jobs_->find(id))
    pool_->cancel(slot->get());
}

TURNLOOP_DECL void blocking_service::shutdown()
{
  // After close() no thread runs a job or touches this service; what is
  // left undelivered (queued, finished or in the ring) is destroyed here
  // with its handler, which is never invoked.
  if (closed_)
    return;
  closed_ = true;
  pool_->close();
  core_.operations().release(jobs_->size());
  undelivered_.release(jobs_->size());
  jobs_.reset();
  if (holds_work_)
  {
    holds_work_ = false;
    core_.release_work(true);
  }
  if (in_turns_)
    core_.remove_source(*this);
}

TURNLOOP_DECL void blocking_service::fill_stats(
    blocking_stats& s) const noexcept
{
  s.threads = pool_->threads();
  s.busy = pool_->busy();
  const ceiling& queue = pool_->queue_places();
  const ceiling& long_threads = pool_->long_places();
  s.queued = queue.in_use();
  s.queued_high_water = queue.high_water();
  s.long_threads = long_threads.in_use();
  s.long_threads_high_water = long_threads.high_water();
  s.undelivered = undelivered_.in_use();
  s.undelivered_high_water = undelivered_.high_water();
  s.admitted = admitted_.load(std::memory_order_relaxed);
  s.delivered = delivered_;
  s.aborted = aborted_;
  s.refused_undelivered = undelivered_.refusals();
  s.refused_queue = queue.refusals();
  s.refused_threads = long_threads.refusals()
    + refused_threads_.load(std::memory_order_relaxed);
  s.refused_operations = refused_operations_.load(std::memory_order_relaxed);
  s.refused = s.refused_undelivered + s.refused_queue + s.refused_threads
    + s.refused_operations;
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_SERVICE_IPP
