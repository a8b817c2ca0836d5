//
// turnloop/detail/blocking/blocking_service.hpp
//
// The loop's side of blocking jobs: admission against the ceilings, the
// credit every admitted job holds until its completion is delivered, the
// delivery itself (a turn source, so results reach handlers inside the loop's
// turn and within its budget), cancellation, and the end of it all when the
// loop is destroyed. The threads are in detail/blocking_pool.hpp.
//
// The credit is the job's slot in a slot_table whose ceiling is
// max_undelivered: taken at submission, given back when the completion is
// delivered (not when the worker finishes). The result ring has room for
// max_undelivered jobs, so a result always finds room in it.
//
// Everything here runs on the loop's thread: a submission from another
// thread is first posted to the loop.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_BLOCKING_SERVICE_HPP
#define TURNLOOP_DETAIL_BLOCKING_BLOCKING_SERVICE_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/blocking_stats.hpp>
#include <turnloop/detail/blocking/blocking_job.hpp>
#include <turnloop/detail/blocking/blocking_pool.hpp>
#include <turnloop/detail/slot_table.hpp>
#include <turnloop/detail/engine/turn_source.hpp>
#include <turnloop/loop.hpp>

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/execution_context.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace turnloop {
namespace detail {

class blocking_service final
  : public boost::asio::execution_context::service,
    public turn_source
{
public:
  static inline boost::asio::execution_context::id id;

  /// @p owner must be a turnloop::loop. Creates the result ring; starts no
  /// thread.
  TURNLOOP_DECL explicit blocking_service(
      boost::asio::execution_context& owner);

  TURNLOOP_DECL ~blocking_service();

  /// Admits and starts a job, or posts resource_limit to @p handler. Any
  /// thread (off the loop's thread it is posted to the loop first).
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

    void operator()(boost::asio::cancellation_type type) noexcept
    {
      if (type != boost::asio::cancellation_type::none)
        service_.cancel(id_);
    }

  private:
    blocking_service& service_;
    slot_id id_;
  };

  using owned_job = std::unique_ptr<blocking_job, blocking_job::deleter>;

  // Jobs staged during a delivery go to the workers each time this many
  // have gathered, and the rest at its end: one lock for several, yet the
  // workers start before a long delivery ends.
  static constexpr std::size_t stage_max = 8;

  TURNLOOP_DECL void shutdown() override;
  TURNLOOP_DECL std::size_t run_ready(std::size_t budget) override;

  /// Takes a credit, a place in the job's class and an operation of the
  /// loop, or none of them: then returns resource_limit.
  TURNLOOP_DECL boost::system::error_code admit(bool long_job) noexcept;

  /// Gives back what admit() took, for a job that could not be built.
  TURNLOOP_DECL void unadmit() noexcept;

  /// Puts an admitted job in its slot; cannot be refused (admit() checked).
  TURNLOOP_DECL slot_id hold(blocking_job* job);

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

  std::uint64_t admitted_ = 0;
  std::uint64_t delivered_ = 0;
  std::uint64_t aborted_ = 0;
  std::uint64_t refused_undelivered_ = 0;
  std::uint64_t refused_queue_ = 0;
  std::uint64_t refused_threads_ = 0;
  std::uint64_t refused_operations_ = 0;
};

} // namespace detail
} // namespace turnloop

#include <turnloop/detail/blocking/impl/blocking_service.hpp>
#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/detail/blocking/impl/blocking_service.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_DETAIL_BLOCKING_BLOCKING_SERVICE_HPP
