//
// turnloop/detail/blocking/impl/blocking_service.ipp
//
// Invariants kept here (loop thread):
// - jobs_ holds every admitted job until its completion is delivered: its
//   size is the number of undelivered jobs, and is never above
//   max_undelivered, the capacity of the result ring.
// - Each admitted job also holds one of the loop's operations
//   (core_.operations()) until then.
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

TURNLOOP_DECL blocking_service::blocking_service(
    boost::asio::execution_context& owner)
  : boost::asio::execution_context::service(owner),
    loop_(static_cast<loop&>(owner)),
    core_(core_of(loop_)),
    config_(loop_.get_config().blocking),
    pool_(std::make_shared<blocking_pool>(core_, *this, config_)),
    jobs_(std::in_place, config_.max_undelivered)
{
  core_.add_source(*this);
}

TURNLOOP_DECL blocking_service::~blocking_service()
{
  assert(closed_);
}

TURNLOOP_DECL boost::system::error_code blocking_service::admit(
    bool long_job) noexcept
{
  // Checked at submission, so a refused job never runs, and an admitted one
  // always has room in the result ring.
  std::uint64_t* refusals = nullptr;
  if (jobs_->size() >= jobs_->ceiling())
    refusals = &refused_undelivered_;
  else if (long_job)
  {
    if (pool_->long_threads() >= config_.long_threads_max)
      refusals = &refused_threads_;
  }
  else if (pool_->queued() >= config_.queue_capacity)
    refusals = &refused_queue_;
  else if (!pool_->start_workers())
    refusals = &refused_threads_;
  if (!refusals && !core_.operations().try_acquire())
    refusals = &refused_operations_;

  if (refusals)
  {
    ++*refusals;
    return make_error_code(error::resource_limit);
  }
  ++admitted_;
  return {};
}

TURNLOOP_DECL void blocking_service::unadmit() noexcept
{
  core_.operations().release();
  --admitted_;
}

TURNLOOP_DECL slot_id blocking_service::hold(blocking_job* job)
{
  boost::system::error_code ec;
  const slot_id id = jobs_->emplace(ec, owned_job(job));
  assert(!ec && "admit() checked the credit");
  job->id_ = id;
  return id;
}

TURNLOOP_DECL void blocking_service::start(blocking_job* job,
    bool long_job) noexcept
{
  if (!holds_work_)
  {
    core_.acquire_work();
    holds_work_ = true;
  }
  if (long_job)
    pool_->start_long(job);
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
  while (n < budget)
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
  core_.operations().release();
  ++delivered_;
  if (job->state_ == blocking_job::state::aborted)
    ++aborted_;
  else if (job->state_ == blocking_job::state::refused)
    ++refused_threads_;

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
  closed_ = true;
  pool_->close();
  core_.operations().release(jobs_->size());
  jobs_.reset();
  if (holds_work_)
  {
    holds_work_ = false;
    core_.release_work(true);
  }
  core_.remove_source(*this);
}

TURNLOOP_DECL void blocking_service::fill_stats(
    blocking_stats& s) const noexcept
{
  s.threads = pool_->threads();
  s.busy = pool_->busy();
  s.queued = pool_->queued();
  s.queued_high_water = pool_->queued_high_water();
  s.long_threads = pool_->long_threads();
  s.long_threads_high_water = pool_->long_threads_high_water();
  if (jobs_)
  {
    s.undelivered = jobs_->size();
    s.undelivered_high_water = jobs_->high_water();
  }
  s.admitted = admitted_;
  s.delivered = delivered_;
  s.aborted = aborted_;
  s.refused_undelivered = refused_undelivered_;
  s.refused_queue = refused_queue_;
  s.refused_threads = refused_threads_;
  s.refused_operations = refused_operations_;
  s.refused = refused_undelivered_ + refused_queue_ + refused_threads_
    + refused_operations_;
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_SERVICE_IPP
