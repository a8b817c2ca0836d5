//
// turnloop/detail/blocking/blocking_service.hpp
//
// The loop's side of blocking jobs: admission against the ceilings, the
// credit every admitted job holds until its completion is delivered, the
// delivery itself (a turn source, so results reach handlers inside the loop's
// turn and within its budget), cancellation, and the end of it all when the
// loop is destroyed. The threads are in detail/blocking_pool.hpp.
//
// The credit is a unit of undelivered_, whose ceiling is max_undelivered:
// taken at submission, given back when the completion is delivered (not when
// the worker finishes). The result ring has room for max_undelivered jobs,
// so a result always finds room in it.
//
// Admission is decided at the call, on whichever thread makes it: the
// credit, the job's place (queue_capacity or long_threads_max) and one of the
// loop's max_operations are atomic ceilings, taken together or not at all.
// So however long the loop does not turn, the jobs submitted from other
// threads and still on their way to it are bounded by the ceilings. Such a
// job is built on the submitting thread and posted to the loop, which
// records and starts it; a refusal made there is posted to the loop as a
// refusable post (loop::try_post, bounded by config::post_capacity), and if
// even that is full the call throws resource_limit. The rest runs on the
// loop's thread.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_BLOCKING_SERVICE_HPP
#define TURNLOOP_DETAIL_BLOCKING_BLOCKING_SERVICE_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/blocking_stats.hpp>
#include <turnloop/detail/blocking/blocking_job.hpp>
#include <turnloop/detail/blocking/blocking_pool.hpp>
#include <turnloop/detail/ceiling.hpp>
#include <turnloop/detail/slot_table.hpp>
#include <turnloop/detail/engine/turn_source.hpp>
#include <turnloop/detail/loop_access.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(cancellation_type.hpp)
#include TURNLOOP_ASIO_HEADER(execution_context.hpp)

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

namespace turnloop {
namespace detail {

class blocking_service final
  : public asio::execution_context::service,
    public turn_source
{
public:
  static inline asio::execution_context::id id;

  /// @p owner must be a turnloop::loop. Creates the result ring; starts no
  /// thread. Defined with blocking.hpp (impl/blocking.ipp), which has the
  /// whole loop.
  TURNLOOP_DECL explicit blocking_service(
      asio::execution_context& owner);

  TURNLOOP_DECL ~blocking_service();

  /// Admits and starts a job, or posts resource_limit to @p handler. Any
  /// thread: off the loop's thread an admitted job is posted to the loop to
  /// be started, and a refusal is posted within config::post_capacity.
  /// @throws system_error (resource_limit) if a submission
  /// from another thread is refused while post_capacity refusals are
  /// already queued; what allocating the job throws.
  template <typename Handler, typename Function, typename IoExecutor>
  void submit(bool long_job, const IoExecutor& io_ex, Handler&& handler,
      Function&& function);

  /// Call on the loop's thread, or while the loop is not running.
  TURNLOOP_DECL void fill_stats(blocking_stats& s) const noexcept;

private:
  // Installed in a handler's cancellation slot; the id makes one that
  // outlives its job harmless.
  class cancellation
  {
  public:
    cancellation(blocking_service& service, slot_id id) noexcept
      : service_(service),
        id_(id)
    {
    }

    void operator()(asio::cancellation_type type) noexcept
    {
      if (type != asio::cancellation_type::none)
        service_.cancel(id_);
    }

  private:
    blocking_service& service_;
    slot_id id_;
  };

  using owned_job = std::unique_ptr<blocking_job, blocking_job::deleter>;

  // An admitted job on its way from another thread to the loop. Destroyed
  // without reaching it (the post could not be made, or the loop is
  // destroyed first), it gives back what admission took.
  class forwarded_job
  {
  public:
    forwarded_job(blocking_service& service, blocking_job* job,
        bool long_job) noexcept
      : service_(&service),
        job_(job),
        long_job_(long_job)
    {
    }

    forwarded_job(forwarded_job&& other) noexcept
      : service_(other.service_),
        job_(std::exchange(other.job_, nullptr)),
        long_job_(other.long_job_)
    {
    }

    forwarded_job& operator=(forwarded_job&&) = delete;

    ~forwarded_job()
    {
      if (job_)
        service_->abandon(job_, long_job_);
    }

    blocking_job* release() noexcept
    {
      return std::exchange(job_, nullptr);
    }

  private:
    blocking_service* service_;
    blocking_job* job_;
    bool long_job_;
  };

  // Jobs staged during a delivery go to the workers each time this many
  // have gathered, and the rest at its end: one lock for several, yet the
  // workers start before a long delivery ends.
  static constexpr std::size_t stage_max = 8;

  TURNLOOP_DECL void shutdown() override;
  TURNLOOP_DECL std::size_t run_ready(std::size_t budget) override;

  /// Takes a credit, a place in the job's class and an operation of the
  /// loop, or none of them: then returns resource_limit. Any thread; on the
  /// loop's thread (@p on_loop) it also starts the bounded workers.
  TURNLOOP_DECL error_code admit(bool long_job,
      bool on_loop) noexcept;

  /// Gives back what admit() took, for a job that could not be built or
  /// recorded. Any thread.
  TURNLOOP_DECL void unadmit(bool long_job) noexcept;

  /// Records an admitted job and starts it: the rest of a submission, on
  /// the loop's thread. Throws what recording it throws; @p from_elsewhere
  /// (a job forwarded from another thread, whose caller is gone) it ends
  /// the job with no_memory instead.
  template <typename Op>
  void adopt(Op* op, bool long_job, bool from_elsewhere);

  /// Puts an admitted job in its slot; cannot be refused (admit() checked).
  /// Throws std::bad_alloc if the slot table needs a page it cannot get;
  /// the job is then still the caller's.
  TURNLOOP_DECL slot_id hold(blocking_job* job);

  /// Ends an admitted job that was never recorded, with what its state
  /// says (no_memory), in this turn.
  TURNLOOP_DECL void end_unrecorded(blocking_job* job, bool long_job);

  /// Destroys a forwarded job that never reached the loop.
  TURNLOOP_DECL void abandon(blocking_job* job, bool long_job) noexcept;

  /// Hands a held job to the pool.
  TURNLOOP_DECL void start(blocking_job* job, bool long_job) noexcept;

  TURNLOOP_DECL void deliver(blocking_job* job);
  TURNLOOP_DECL void cancel(slot_id id) noexcept;

  loop& loop_;
  loop_core& core_;
  const config::blocking_config& config_;
  std::shared_ptr<blocking_pool> pool_;
  std::optional<slot_table<owned_job>> jobs_;
  bool holds_work_ = false; // a unit of the loop's work while jobs_ is not empty
  bool delivering_ = false; // in run_ready: bounded jobs are staged
  bool closed_ = false;
  bool in_turns_ = false;   // a turn source of the loop (from the first start)

  // Admission, any thread.
  ceiling undelivered_;
  std::atomic<std::uint64_t> admitted_{0};
  std::atomic<std::uint64_t> refused_threads_{0}; // by the OS; the ceiling
                                                  // counts its own
  std::atomic<std::uint64_t> refused_operations_{0};

  // The loop's thread.
  std::uint64_t delivered_ = 0;
  std::uint64_t aborted_ = 0;
};

} // namespace detail
} // namespace turnloop

#include <turnloop/detail/blocking/impl/blocking_service.hpp>
#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/detail/blocking/impl/blocking_service.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_DETAIL_BLOCKING_BLOCKING_SERVICE_HPP
