//
// turnloop/detail/blocking/blocking_pool.hpp
//
// The threads of the blocking service and the two ways jobs travel between
// them and the loop: the bounded queue (loop to workers) and the result ring
// (workers to loop).
//
// - Bounded workers (config::blocking.threads) start on the first bounded
//   job and take jobs from one FIFO queue. A worker with nothing to do looks
//   out for a new job for a moment, then sleeps on a semaphore of its own
//   (a worker_wake: on Linux a futex, which never yields); at most one
//   worker at a time looks out, and it stops (and the next look-outs are skipped) when a
//   yield shows that another thread wanted its core. A submission wakes as
//   many sleepers as there are queued jobs that no "searching" worker
//   (looking out, or woken and on its way) will take, so no worker is woken
//   only to find the queue empty, each woken worker starts at once on a core
//   the scheduler picks, and no job waits for a look-out that is off its
//   core.
// - The loop hands over the jobs submitted while it delivers results in
//   batches (stage(), then flush()): one lock for several jobs.
// - A long job gets a thread of its own, created when the loop starts the
//   job and gone when it ends; it is never queued.
// - The places these bound (queue_capacity, long_threads_max) are ceilings
//   that any thread takes at submission (queue_places(), long_places()), so
//   a job submitted from another thread and still on its way to the loop
//   already holds its place. A worker gives a place back when it takes the
//   job; a long thread when it ends.
// - A finished job is pushed into the result ring (result_ring.hpp), a
//   single-consumer ring with room for max_undelivered jobs: the service
//   admits no more undelivered jobs than that, so a push cannot fail.
//   Producers push under results_mutex_, one at a time; the loop pops
//   without a lock.
// - close() ends it all: queued jobs never run, running ones are asked to
//   stop and waited for, and after it no thread touches a job, the loop or
//   the service. The pool is shared with the long threads, which may still be
//   on their way out when close() returns.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_BLOCKING_POOL_HPP
#define TURNLOOP_DETAIL_BLOCKING_BLOCKING_POOL_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/config.hpp>
#include <turnloop/detail/blocking/blocking_job.hpp>
#include <turnloop/detail/blocking/result_ring.hpp>
#include <turnloop/detail/blocking/worker_wake.hpp>
#include <turnloop/detail/ceiling.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace turnloop {
namespace detail {

class loop_core;
class turn_source;

class blocking_pool : public std::enable_shared_from_this<blocking_pool>
{
public:
  /// Allocates the result ring; starts no thread. @p source is signalled,
  /// through @p core, whenever a result is pushed.
  TURNLOOP_DECL blocking_pool(loop_core& core, turn_source& source,
      const config::blocking_config& cfg);

  TURNLOOP_DECL ~blocking_pool();

  blocking_pool(const blocking_pool&) = delete;
  blocking_pool& operator=(const blocking_pool&) = delete;

  /// @name The loop's side (the loop's thread only)
  /// @{

  /// Starts the bounded workers not running yet; false if none is running.
  TURNLOOP_DECL bool start_workers() noexcept;

  /// Queues a bounded job now. It holds one of queue_places().
  TURNLOOP_DECL void enqueue(blocking_job* job) noexcept;

  /// Keeps a bounded job for the next flush(). It holds one of
  /// queue_places().
  void stage(blocking_job* job) noexcept
  {
    job->staged_ = true;
    staged_.push_back(job);
    ++staged_count_;
  }

  /// Queues every staged job, under one lock, and wakes at most one worker.
  TURNLOOP_DECL void flush() noexcept;

  bool has_staged() const noexcept
  {
    return staged_count_ != 0;
  }

  std::size_t staged() const noexcept
  {
    return staged_count_;
  }

  /// Starts a thread for a long job, which holds one of long_places(). If
  /// the thread cannot be created, the job is refused: it goes straight into
  /// the ring, never having run.
  TURNLOOP_DECL void start_long(blocking_job* job) noexcept;

  /// Refuses a bounded job that no worker could be started for: it goes
  /// into the ring, never having run. Its queue place was given back.
  void refuse(blocking_job* job) noexcept
  {
    job->state_ = blocking_job::state::refused;
    push_result(job);
  }

  /// Cancels @p job: a job that has not started is aborted (and reaches the
  /// ring without running); one that has started is asked to stop, which
  /// changes nothing once it has returned.
  TURNLOOP_DECL void cancel(blocking_job* job) noexcept;

  /// The oldest result not yet taken, or nullptr.
  blocking_job* pop_result() noexcept
  {
    blocking_job* job = nullptr;
    results_.pop(job);
    return job;
  }

  bool results_pending() const noexcept
  {
    return results_.nonempty();
  }
  /// @}

  /// Queued jobs never run; running ones are asked to stop (turnloop::stop_token)
  /// and waited for, and their results are dropped. After it, no thread
  /// touches a job, the core or the source, and every job still belongs to
  /// the service.
  TURNLOOP_DECL void close() noexcept;

  /// Bounded jobs admitted and not yet taken by a worker (on their way to
  /// the loop, staged or queued): what queue_capacity bounds. Any thread.
  ceiling& queue_places() noexcept
  {
    return queue_places_;
  }

  /// Long jobs admitted whose thread has not ended: what long_threads_max
  /// bounds. Any thread.
  ceiling& long_places() noexcept
  {
    return long_places_;
  }

  /// @name Statistics: readable from any thread
  /// @{
  std::size_t threads() const noexcept
  {
    return threads_.load(std::memory_order_relaxed);
  }

  std::size_t busy() const noexcept
  {
    return busy_.load(std::memory_order_relaxed);
  }

  /// @}

private:
  // An intrusive FIFO of jobs through their prev_/next_ links.
  struct job_list
  {
    blocking_job* head = nullptr;
    blocking_job* tail = nullptr;

    void push_back(blocking_job* job) noexcept
    {
      job->prev_ = tail;
      job->next_ = nullptr;
      (tail ? tail->next_ : head) = job;
      tail = job;
    }

    blocking_job* pop_front() noexcept
    {
      blocking_job* job = head;
      if (job)
        erase(job);
      return job;
    }

    void erase(blocking_job* job) noexcept
    {
      (job->prev_ ? job->prev_->next_ : head) = job->next_;
      (job->next_ ? job->next_->prev_ : tail) = job->prev_;
      job->prev_ = job->next_ = nullptr;
    }

    void splice_back(job_list& other) noexcept
    {
      if (!other.head)
        return;
      other.head->prev_ = tail;
      (tail ? tail->next_ : head) = other.head;
      tail = other.tail;
      other.head = other.tail = nullptr;
    }
  };

  struct worker
  {
    std::thread thread;
    worker_wake wake;
    worker* next_sleeper = nullptr;
    // The job it runs; cleared before the job is pushed (so before the loop
    // can free it), so close() never sees a job that is gone.
    std::atomic<blocking_job*> current{nullptr};
  };

  class signals_blocked;

  // How long an idle worker looks out for a new job before it sleeps; a
  // yield slower than core_lost_after means another thread took the core
  // (a bare sched_yield takes about a microsecond), and after each such
  // look-out up to max_spins_skipped idle workers sleep without one.
  static constexpr std::chrono::microseconds spin_time{50};
  static constexpr std::chrono::microseconds core_lost_after{10};
  static constexpr std::size_t max_spins_skipped = 64;

  TURNLOOP_DECL bool may_look_out() noexcept;
  TURNLOOP_DECL void after_look_out(bool contended) noexcept;
  TURNLOOP_DECL bool look_out(
      std::chrono::steady_clock::time_point now) noexcept;
  TURNLOOP_DECL worker* sleepers_for_new_jobs() noexcept;
  TURNLOOP_DECL static void wake(worker* woken) noexcept;
  TURNLOOP_DECL bool lookout_stalled() const noexcept;

  TURNLOOP_DECL worker* take_sleeper() noexcept;
  TURNLOOP_DECL void work(worker& self) noexcept;
  TURNLOOP_DECL void run_long(blocking_job* job) noexcept;
  TURNLOOP_DECL void push_result(blocking_job* job) noexcept;

  loop_core& core_;
  turn_source& source_;
  const std::size_t wanted_threads_;

  // The loop's thread only (and close()).
  std::vector<std::unique_ptr<worker>> workers_;
  job_list staged_;
  std::size_t staged_count_ = 0;

  // Loop to workers. The counts written under the lock share its cache
  // line; they are read without it by admission and statistics.
  alignas(64) std::mutex queue_mutex_;
  std::atomic<std::size_t> queued_{0};
  std::atomic<std::size_t> busy_{0};
  job_list queue_;              // bounded jobs not started
  job_list running_long_;       // long jobs whose function is running
  worker* sleepers_ = nullptr;  // most recent first
  std::size_t searching_ = 0;   // looking out, or woken and not yet back
  bool looking_out_ = false;
  std::size_t spin_penalty_ = 0;  // look-outs skipped after the last lost one
  std::size_t spins_to_skip_ = 0; // of those, still to skip
  bool closed_ = false;

  // When the look-out last checked the queue (steady_clock ticks); written
  // by it alone, on its own line so the loop's writes do not slow it.
  alignas(64) std::atomic<std::chrono::steady_clock::rep> lookout_beat_{0};

  // Workers to loop. Capacity max_undelivered; producers push one at a time
  // under results_mutex_; one consumer (the loop).
  alignas(64) std::mutex results_mutex_;
  bool results_closed_ = false;
  std::condition_variable long_done_; // close() waits here for long threads
  result_ring<blocking_job*> results_;

  // Taken at submission, by any thread.
  alignas(64) ceiling queue_places_;
  ceiling long_places_;

  // Written by the loop alone, or rarely.
  alignas(64) std::atomic<std::size_t> threads_{0};
  std::atomic<std::size_t> long_threads_{0}; // started; close() waits for 0
};

} // namespace detail
} // namespace turnloop

#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/detail/blocking/impl/blocking_pool.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_DETAIL_BLOCKING_BLOCKING_POOL_HPP
