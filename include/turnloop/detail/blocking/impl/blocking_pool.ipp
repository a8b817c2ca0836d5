//
// turnloop/detail/blocking/impl/blocking_pool.ipp
//
// Invariants kept here:
// - A job's state_ changes only under queue_mutex_ (queued to running by the
//   thread that runs it, queued to aborted by the loop), or on the loop's
//   thread before anyone else sees the job (refused).
// - Every job reaches the ring exactly once (run, aborted or refused)
//   unless close() came first; then it stays with the service.
// - Once results_closed_ is set, no thread pushes a result, and long threads
//   (which the service does not join) no longer signal the loop.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_POOL_IPP
#define TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_POOL_IPP

#include <turnloop/detail/blocking/blocking_pool.hpp>
#include <turnloop/detail/blocking/detached_thread.hpp>
#include <turnloop/detail/engine/loop_core.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(detail/signal_blocker.hpp)

#include <algorithm>
#include <cassert>

namespace turnloop {
namespace detail {

// The pool's threads start with every signal blocked, as Asio's own threads
// do, so that a process signal reaches a thread that expects it. Asio's
// blocker does what POSIX threads need, and nothing where threads have no
// signal mask (Windows).
class blocking_pool::signals_blocked
{
public:
  signals_blocked() noexcept = default;
  signals_blocked(const signals_blocked&) = delete;
  signals_blocked& operator=(const signals_blocked&) = delete;

private:
  asio::detail::signal_blocker blocker_;
};

TURNLOOP_DECL blocking_pool::blocking_pool(loop_core& core,
    turn_source& source, const config::blocking_config& cfg)
  : core_(core),
    source_(source),
    wanted_threads_(cfg.threads),
    results_(cfg.max_undelivered),
    queue_places_(cfg.queue_capacity),
    long_places_(cfg.long_threads_max)
{
  workers_.reserve(wanted_threads_);
}

TURNLOOP_DECL blocking_pool::~blocking_pool()
{
  assert(closed_ && workers_.empty());
}

TURNLOOP_DECL bool blocking_pool::start_workers() noexcept
{
  // A worker that cannot be created now is tried again at the next bounded
  // submission; meanwhile the pool runs with those it has.
  if (workers_.size() < wanted_threads_)
  {
    signals_blocked blocked;
    try
    {
      while (workers_.size() < wanted_threads_)
      {
        worker* w = workers_.emplace_back(std::make_unique<worker>()).get();
        try
        {
          w->thread = std::thread([this, w] { work(*w); });
        }
        catch (...)
        {
          workers_.pop_back();
          throw;
        }
      }
    }
    catch (...)
    {
    }
    threads_.store(workers_.size(), std::memory_order_relaxed);
  }
  return !workers_.empty();
}

TURNLOOP_DECL blocking_pool::worker* blocking_pool::take_sleeper() noexcept
{
  worker* w = sleepers_;
  if (w)
  {
    sleepers_ = w->next_sleeper;
    ++searching_;
  }
  return w;
}

TURNLOOP_DECL blocking_pool::worker*
blocking_pool::sleepers_for_new_jobs() noexcept
{
  // As many workers as there are jobs without one that will take them: a
  // worker searching takes one, and a look-out that has not come back from
  // a yield for core_lost_after is off its core, maybe for a whole time
  // slice of another thread, so the jobs do not wait for it. Each woken
  // worker runs on a core of its own choosing at once, rather than after
  // the one that woke it.
  std::size_t takers = searching_
    - (looking_out_ && lookout_stalled() ? 1 : 0);
  const std::size_t jobs = queued_.load(std::memory_order_relaxed);
  worker* woken = nullptr;
  while (takers < jobs && sleepers_)
  {
    worker* w = take_sleeper();
    w->next_sleeper = woken;
    woken = w;
    ++takers;
  }
  return woken;
}

TURNLOOP_DECL void blocking_pool::wake(worker* woken) noexcept
{
  while (woken)
  {
    worker* next = woken->next_sleeper;
    woken->wake.release();
    woken = next;
  }
}

TURNLOOP_DECL bool blocking_pool::lookout_stalled() const noexcept
{
  const auto beat = std::chrono::steady_clock::duration(
      lookout_beat_.load(std::memory_order_relaxed));
  return std::chrono::steady_clock::now().time_since_epoch() - beat
    > core_lost_after;
}

TURNLOOP_DECL void blocking_pool::enqueue(blocking_job* job) noexcept
{
  worker* woken = nullptr;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    queue_.push_back(job);
    queued_.fetch_add(1, std::memory_order_relaxed);
    woken = sleepers_for_new_jobs();
  }
  wake(woken);
}

TURNLOOP_DECL void blocking_pool::flush() noexcept
{
  if (staged_count_ == 0)
    return;
  for (blocking_job* job = staged_.head; job; job = job->next_)
    job->staged_ = false;
  worker* woken = nullptr;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    queue_.splice_back(staged_);
    queued_.fetch_add(staged_count_, std::memory_order_relaxed);
    woken = sleepers_for_new_jobs();
  }
  staged_count_ = 0;
  wake(woken);
}

TURNLOOP_DECL void blocking_pool::start_long(blocking_job* job) noexcept
{
  job->long_ = true;
  long_threads_.fetch_add(1, std::memory_order_relaxed);
  try
  {
    signals_blocked blocked;
    start_detached_thread([self = shared_from_this(), job] {
      self->run_long(job);
    });
  }
  catch (...)
  {
    long_threads_.fetch_sub(1, std::memory_order_relaxed);
    long_places_.release();
    job->state_ = blocking_job::state::refused;
    push_result(job);
  }
}

TURNLOOP_DECL void blocking_pool::cancel(blocking_job* job) noexcept
{
  if (job->staged_)
  {
    staged_.erase(job);
    --staged_count_;
    queue_places_.release();
    job->staged_ = false;
    job->state_ = blocking_job::state::aborted;
    push_result(job);
    return;
  }
  bool started;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    started = job->state_ != blocking_job::state::queued;
    if (!started)
    {
      job->state_ = blocking_job::state::aborted;
      if (job->long_)
        return; // its thread, about to start, delivers it without running it
      queue_.erase(job);
      queued_.fetch_sub(1, std::memory_order_relaxed);
      queue_places_.release();
    }
  }
  // Outside the lock, which workers need: the job lives until the loop
  // delivers it, and this is the loop's thread.
  if (started)
    job->request_stop(); // only the function can stop; after it, a no-op
  else
    push_result(job);
}

TURNLOOP_DECL void blocking_pool::push_result(blocking_job* job) noexcept
{
  {
    std::lock_guard<std::mutex> lock(results_mutex_);
    if (results_closed_)
      return;
    // The service admits at most max_undelivered jobs that are not
    // delivered yet, and the ring has room for that many: a full ring is a
    // broken invariant, not a refusal path.
    [[maybe_unused]] const bool pushed = results_.push(job);
    assert(pushed && "blocking result ring full: the credit count is wrong");
  }
  // Outside the lock: this thread is the loop's, or a bounded worker, which
  // close() joins before the service goes.
  core_.signal(source_);
}

TURNLOOP_DECL bool blocking_pool::may_look_out() noexcept
{
  if (spins_to_skip_ == 0)
    return true;
  --spins_to_skip_;
  return false;
}

TURNLOOP_DECL void blocking_pool::after_look_out(bool contended) noexcept
{
  // Each look-out that lost the core doubles the number skipped after it,
  // up to max_spins_skipped; one that did not starts again at none.
  spin_penalty_ = contended
    ? std::min<std::size_t>(spin_penalty_ * 2 + 1, max_spins_skipped) : 0;
  spins_to_skip_ = spin_penalty_;
}

TURNLOOP_DECL bool blocking_pool::look_out(
    std::chrono::steady_clock::time_point now) noexcept
{
  // A yield that returns late gave the core to another thread that wanted
  // it: the machine is busy, and time spent here is taken from the loop or
  // its neighbours, so the worker stops and sleeps.
  const auto until = now + spin_time;
  for (;;)
  {
    if (queued_.load(std::memory_order_relaxed) != 0 || now >= until)
      return false;
    std::this_thread::yield();
    const auto before = now;
    now = std::chrono::steady_clock::now();
    lookout_beat_.store(now.time_since_epoch().count(),
        std::memory_order_relaxed);
    if (now - before > core_lost_after)
      return true;
  }
}

TURNLOOP_DECL void blocking_pool::work(worker& self) noexcept
{
  std::unique_lock<std::mutex> lock(queue_mutex_);
  bool spun = false;
  for (;;)
  {
    if (closed_)
      return;
    blocking_job* job = queue_.pop_front();
    if (!job && !spun && searching_ == 0 && may_look_out())
    {
      // One worker at a time looks out for the next job for a moment
      // before sleeping: a loop that submits as results come back then
      // costs no wake on either side.
      spun = true;
      ++searching_;
      looking_out_ = true;
      const auto now = std::chrono::steady_clock::now();
      lookout_beat_.store(now.time_since_epoch().count(),
          std::memory_order_relaxed);
      lock.unlock();
      const bool contended = look_out(now);
      lock.lock();
      looking_out_ = false;
      --searching_;
      after_look_out(contended);
      continue;
    }
    spun = false;
    if (!job)
    {
      self.next_sleeper = sleepers_;
      sleepers_ = &self;
      lock.unlock();
      self.wake.acquire();
      lock.lock();
      --searching_; // counted by whoever woke this worker
      continue;
    }
    queued_.fetch_sub(1, std::memory_order_relaxed);
    queue_places_.release();
    busy_.fetch_add(1, std::memory_order_relaxed);
    job->state_ = blocking_job::state::running;
    self.current.store(job, std::memory_order_relaxed);
    worker* next = queue_.head && searching_ == 0 ? take_sleeper() : nullptr;
    lock.unlock();
    if (next)
      next->wake.release();

    job->run();
    self.current.store(nullptr, std::memory_order_release);
    push_result(job);
    lock.lock();
    busy_.fetch_sub(1, std::memory_order_relaxed);
  }
}

TURNLOOP_DECL void blocking_pool::run_long(blocking_job* job) noexcept
{
  std::unique_lock<std::mutex> lock(queue_mutex_);
  const bool start = !closed_ && job->state_ == blocking_job::state::queued;
  if (start)
  {
    job->state_ = blocking_job::state::running;
    running_long_.push_back(job);
    lock.unlock();
    job->run();
    lock.lock();
    running_long_.erase(job);
  }
  lock.unlock();

  // Under results_mutex_ to the end: once close() has set results_closed_,
  // the loop and the service may be gone.
  std::lock_guard<std::mutex> results_lock(results_mutex_);
  if (!results_closed_)
  {
    [[maybe_unused]] const bool pushed = results_.push(job);
    assert(pushed && "blocking result ring full: the credit count is wrong");
    core_.signal(source_);
  }
  long_places_.release();
  if (long_threads_.fetch_sub(1, std::memory_order_relaxed) == 1
      && results_closed_)
    long_done_.notify_all();
}

TURNLOOP_DECL void blocking_pool::close() noexcept
{
  std::vector<std::unique_ptr<worker>> workers;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    closed_ = true;
    queue_places_.release(queued_.load(std::memory_order_relaxed)
        + staged_count_);
    queue_ = job_list();
    staged_ = job_list();
    staged_count_ = 0;
    queued_.store(0, std::memory_order_relaxed);
    // The loop no longer runs, so nothing frees a job now, and a job seen
    // here has not been pushed yet (current is cleared before the push, and
    // a long job leaves running_long_ before it). A stop callback a job
    // registered runs here.
    for (const std::unique_ptr<worker>& w : workers_)
      if (blocking_job* job = w->current.load(std::memory_order_acquire))
        job->request_stop();
    for (blocking_job* job = running_long_.head; job; job = job->next_)
      job->request_stop();
    workers.swap(workers_);
    while (worker* w = take_sleeper())
      w->wake.release();
  }
  {
    std::lock_guard<std::mutex> lock(results_mutex_);
    results_closed_ = true;
  }
  for (std::unique_ptr<worker>& w : workers)
    w->thread.join();
  std::unique_lock<std::mutex> lock(results_mutex_);
  long_done_.wait(lock, [this] {
    return long_threads_.load(std::memory_order_relaxed) == 0;
  });
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_POOL_IPP
