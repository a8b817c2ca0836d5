//
// turnloop/detail/blocking/blocking_job.hpp
//
// One blocking job, as the pool's threads and the service's delivery see it:
// an intrusive node with its state and a table of four functions, so the
// queue, the result ring and the slot table hold it without knowing the types
// of its function, its result or its handler. The typed body is
// detail/blocking_op.hpp.
//
// Who may touch what:
// - the function, the stop source and the result belong to the thread
//   running the job until it is pushed into the result ring;
// - the handler (with its work guard and cancellation slot) belongs to the
//   loop's thread from start to end;
// - prev_, next_ and state_ are guarded by the pool's queue mutex; the push
//   into the result ring and the loop's pop hand everything to the loop.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_BLOCKING_JOB_HPP
#define TURNLOOP_DETAIL_BLOCKING_BLOCKING_JOB_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/slot_table.hpp>

namespace turnloop {
namespace detail {

class blocking_job
{
public:
  enum class state : unsigned char
  {
    queued,  // waiting for a worker, or for its long thread to start
    running, // its function started (and may have returned since)
    aborted, // cancelled before it started: it never runs
    refused, // its long thread could not be created: it never runs
    no_memory // it could not be recorded (bad_alloc): it never runs
  };

  /// Runs the function, keeping what it returns or throws. Off the loop.
  void run() noexcept
  {
    functions_->run(this);
  }

  /// Frees the job and invokes its handler with the outcome. Loop thread.
  void complete()
  {
    functions_->complete(this);
  }

  /// Frees the job and destroys its handler without invoking it.
  void destroy() noexcept
  {
    functions_->destroy(this);
  }

  /// Asks a running function to stop, if it takes a turnloop::stop_token. Any
  /// thread, while the job is alive.
  void request_stop() noexcept
  {
    functions_->request_stop(this);
  }

  /// For holding a job in a std::unique_ptr: destroy() on release.
  struct deleter
  {
    void operator()(blocking_job* job) const noexcept
    {
      job->destroy();
    }
  };

  blocking_job* prev_ = nullptr;
  blocking_job* next_ = nullptr;
  state state_ = state::queued;
  bool long_ = false;
  bool staged_ = false; // in the pool's staged list (the loop's thread only)
  slot_id id_; // the service's slot, set before any other thread sees the job

protected:
  struct function_table
  {
    void (*run)(blocking_job*) noexcept;
    void (*complete)(blocking_job*);
    void (*destroy)(blocking_job*) noexcept;
    void (*request_stop)(blocking_job*) noexcept;
  };

  explicit blocking_job(const function_table& functions) noexcept
    : functions_(&functions)
  {
  }

  blocking_job(const blocking_job&) = delete;
  blocking_job& operator=(const blocking_job&) = delete;
  ~blocking_job() = default;

private:
  const function_table* functions_;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_BLOCKING_JOB_HPP
