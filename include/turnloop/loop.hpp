//
// turnloop/loop.hpp
//
// turnloop::loop: a turn-loop execution context that stock Asio code runs on
// unchanged. Replace `asio::io_context ctx;` with `turnloop::loop ctx;`.
//

#ifndef TURNLOOP_LOOP_HPP
#define TURNLOOP_LOOP_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/config.hpp>
#include <turnloop/error.hpp>
#include <turnloop/loop_stats.hpp>
#include <turnloop/detail/engine/asio_config.hpp>
#include <turnloop/detail/engine/loop_core.hpp>
#include <turnloop/detail/loop_access.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(execution.hpp)
#include TURNLOOP_ASIO_HEADER(io_context.hpp)
#include TURNLOOP_ASIO_HEADER(strand.hpp)

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace turnloop {

/// An Asio execution context that runs handlers in turns on one thread.
///
/// A loop *is* an io_context (it derives from one), so it binds to code that
/// takes `asio::io_context&`, and stock I/O objects (sockets, timers,
/// signal sets, resolvers, descriptors) run on it in the loop's own thread.
/// Its own executor_type queues handlers without locks on the loop thread and
/// lock-free from other threads.
///
/// Thread safety: post, dispatch, defer, execute, stop and stopped may be
/// called from any thread. The run family is for one thread at a time: a
/// second thread calling it while the loop runs gets a system_error with
/// turnloop::error::already_running.
///
/// Calling run(), poll(), stop(), restart() or get_executor() through an
/// `io_context&` reaches io_context's members, which are not virtual. That is
/// supported and correct, but slower: handlers queued on the loop's executor
/// are then run by the scheduler in batches, a stop() takes effect at the end
/// of the current batch, and io_context::get_executor() posts go through the
/// scheduler's own queue (not FIFO with the loop's queue).
class loop : public asio::io_context
{
public:
  template <typename Allocator, std::uintptr_t Bits>
  class basic_executor_type;

  template <typename Allocator, std::uintptr_t Bits>
  friend class basic_executor_type;

  /// The loop's executor.
  using executor_type = basic_executor_type<std::allocator<void>, 0>;

  using count_type = std::size_t;

  /// Constructs a loop with the default configuration.
  TURNLOOP_DECL loop();

  /// Constructs a loop; io_context's concurrency hint is accepted for source
  /// compatibility and ignored, since a loop is always run by one thread.
  TURNLOOP_DECL explicit loop(int concurrency_hint);

  /// Constructs a loop with @p cfg.
  /// @throws system_error with turnloop::error::invalid_config
  /// (its what() names the field) if a field is out of range.
  TURNLOOP_DECL explicit loop(const config& cfg);

#if TURNLOOP_ASIO_VERSION >= 103400
  /// Constructs a loop whose Asio settings come from @p initial_services,
  /// as io_context's constructor of the same form (Asio 1.34 and later), for
  /// example `asio::config_from_string("reactor.preallocated_io_objects=64")`.
  ///
  /// The settings the loop depends on are pinned: scheduler.concurrency_hint
  /// is 1 whatever is given (a loop is run by one thread); scheduler.locking,
  /// reactor.registration_locking and reactor.io_locking are 1, every
  /// *_spin_count is 0, scheduler.task_usec and scheduler.wait_usec are -1.
  /// @p initial_services is first run against a private context. If it
  /// makes a configuration (config_from_string, config_from_env, ...), the
  /// loop reads the program's settings from there, and other services that
  /// maker makes stay there: make those on the loop once it is built. If it
  /// makes none, it is run again on the loop, whose services they then are,
  /// as with io_context.
  /// @throws system_error with turnloop::error::invalid_config
  /// naming the Asio setting, if @p initial_services gives a pinned setting
  /// another value (or naming the field, if @p cfg is out of range).
  TURNLOOP_DECL explicit loop(
      const asio::execution_context::service_maker& initial_services,
      const config& cfg = config());
#endif // TURNLOOP_ASIO_VERSION >= 103400

#if TURNLOOP_ASIO_VERSION >= 103600
  /// Constructs a loop whose services Asio allocates with @p a, as
  /// io_context's constructor of the same form (Asio 1.36 and later).
  template <typename Allocator>
  loop(std::allocator_arg_t, const Allocator& a, const config& cfg = config());

  /// As the constructor above; io_context's concurrency hint is accepted for
  /// source compatibility and ignored, as by loop(int).
  template <typename Allocator>
  loop(std::allocator_arg_t, const Allocator& a, int concurrency_hint);

  /// Constructs a loop from @p initial_services (see the constructor above)
  /// whose services Asio allocates with @p a.
  template <typename Allocator>
  loop(std::allocator_arg_t, const Allocator& a,
      const asio::execution_context::service_maker& initial_services,
      const config& cfg = config());
#endif // TURNLOOP_ASIO_VERSION >= 103600

  /// Destroys every queued handler, pending operation and suspended
  /// coroutine without running it, then the services. Must not run
  /// concurrently with run(), or with anything another thread does to the
  /// loop or its objects (posts, submissions, releasing leases, destroying
  /// sockets or accepted_sockets): finish with those threads first. What
  /// the destroyed handlers' own destructors do (destroy the sockets,
  /// timers, leases and accepted_sockets they own, post) is allowed; a post
  /// made then is dropped. doc/design.md, "Destroying a loop".
  TURNLOOP_DECL ~loop();

  loop(const loop&) = delete;
  loop& operator=(const loop&) = delete;

  /// The loop's executor.
  executor_type get_executor() noexcept;

  /// Runs handlers until the loop runs out of work or is stopped.
  /// @returns the number of handlers run.
  /// @throws whatever a handler throws (run() may then be called again), or
  /// system_error(already_running) if another thread is running the loop.
  count_type run();

  /// Runs at most one handler, blocking until one is ready.
  TURNLOOP_DECL count_type run_one();

  /// Runs handlers until @p rel_time has passed, work runs out, or stop().
  template <typename Rep, typename Period>
  count_type run_for(const std::chrono::duration<Rep, Period>& rel_time);

  /// Runs handlers until @p abs_time, work runs out, or stop().
  template <typename Clock, typename Duration>
  count_type run_until(const std::chrono::time_point<Clock, Duration>& abs_time);

  /// Runs at most one handler, waiting at most @p rel_time.
  template <typename Rep, typename Period>
  count_type run_one_for(const std::chrono::duration<Rep, Period>& rel_time);

  /// Runs at most one handler, waiting at most until @p abs_time.
  template <typename Clock, typename Duration>
  count_type run_one_until(
      const std::chrono::time_point<Clock, Duration>& abs_time);

  /// Runs the handlers that are ready, without blocking.
  TURNLOOP_DECL count_type poll();

  /// Runs at most one ready handler, without blocking.
  TURNLOOP_DECL count_type poll_one();

  /// Makes run() return as soon as the running handler returns; later calls
  /// return at once until restart(). Any thread; wakes a blocked loop.
  TURNLOOP_DECL void stop();

  /// True after stop(), or after run() ran out of work.
  TURNLOOP_DECL bool stopped() const;

  /// Clears stopped() so run() can be called again.
  TURNLOOP_DECL void restart();

  /// Queues @p f like post(), unless the call comes from another thread and
  /// config::post_capacity cross-thread posts are already queued: then @p f
  /// is left untouched (an rvalue is not moved from) and resource_limit is
  /// returned.
  /// On the loop's own thread it always succeeds. Any thread.
  template <typename Function>
  error_code try_post(Function&& f);

  /// The configuration the loop was built with.
  const config& get_config() const noexcept
  {
    return core_.get_config();
  }

  /// A snapshot of the loop's counters. Call it on the loop's thread, or
  /// while the loop is not running.
  TURNLOOP_DECL loop_stats stats() const noexcept;

private:
  friend detail::loop_core& detail::core_of(loop& l) noexcept;
  friend void detail::shut_down(loop& l) noexcept;

#if TURNLOOP_ASIO_VERSION >= 103400
  using user_asio_config_ptr = std::unique_ptr<detail::user_asio_config>;

  TURNLOOP_DECL loop(user_asio_config_ptr user,
      const asio::execution_context::service_maker* initial_services,
      const config& cfg);

# if TURNLOOP_ASIO_VERSION >= 103600
  template <typename Allocator>
  loop(std::allocator_arg_t, const Allocator& a, user_asio_config_ptr user,
      const asio::execution_context::service_maker* initial_services,
      const config& cfg);
# endif // TURNLOOP_ASIO_VERSION >= 103600

  // The program's Asio configuration, which the loop's config_service reads
  // while services are made; null for a loop built without a service_maker
  // (its config_service then answers for the pinned settings alone).
  user_asio_config_ptr user_asio_config_;
#endif // TURNLOOP_ASIO_VERSION >= 103400

  detail::loop_core core_;
};

inline detail::loop_core& detail::core_of(loop& l) noexcept
{
  return l.core_;
}

inline void detail::shut_down(loop& l) noexcept
{
  l.core_.begin_shutdown();
  l.shutdown();
}

/// The executor of a turnloop::loop. Cheap to copy; a tracked copy made on
/// the loop's thread costs no atomic operation.
template <typename Allocator, std::uintptr_t Bits>
class loop::basic_executor_type : private Allocator
{
  // Runtime bits, kept in the low bits of the loop pointer.
  static constexpr std::uintptr_t blocking_never = 1;
  static constexpr std::uintptr_t relationship_continuation = 2;
  static constexpr std::uintptr_t local_work = 4; // this copy's unit is local
  static constexpr std::uintptr_t runtime_bits = 7;

  // Type-level bit, as in io_context: tracked and untracked are distinct types.
  static constexpr std::uintptr_t outstanding_work_tracked = 1;
  static constexpr bool tracked = (Bits & outstanding_work_tracked) != 0;

public:
  basic_executor_type(const basic_executor_type& other) noexcept
    : Allocator(static_cast<const Allocator&>(other)),
      target_(other.target_ & ~local_work)
  {
    acquire();
  }

  basic_executor_type(basic_executor_type&& other) noexcept
    : Allocator(static_cast<Allocator&&>(other)),
      target_(other.target_)
  {
    if constexpr (tracked)
      other.target_ = 0;
  }

  ~basic_executor_type()
  {
    release();
  }

  basic_executor_type& operator=(const basic_executor_type& other) noexcept
  {
    if (this != &other)
    {
      release();
      static_cast<Allocator&>(*this) = static_cast<const Allocator&>(other);
      target_ = other.target_ & ~local_work;
      acquire();
    }
    return *this;
  }

  basic_executor_type& operator=(basic_executor_type&& other) noexcept
  {
    if (this != &other)
    {
      release();
      static_cast<Allocator&>(*this) = static_cast<Allocator&&>(other);
      target_ = other.target_;
      if constexpr (tracked)
        other.target_ = 0;
    }
    return *this;
  }

  /// @name Properties (through asio::require, prefer and query)
  /// @{
  constexpr basic_executor_type require(
      asio::execution::blocking_t::possibly_t) const
  {
    return basic_executor_type(context_ptr(), *this, bits() & ~blocking_never);
  }

  constexpr basic_executor_type require(
      asio::execution::blocking_t::never_t) const
  {
    return basic_executor_type(context_ptr(), *this, bits() | blocking_never);
  }

  constexpr basic_executor_type require(
      asio::execution::relationship_t::fork_t) const
  {
    return basic_executor_type(context_ptr(), *this,
        bits() & ~relationship_continuation);
  }

  constexpr basic_executor_type require(
      asio::execution::relationship_t::continuation_t) const
  {
    return basic_executor_type(context_ptr(), *this,
        bits() | relationship_continuation);
  }

  constexpr basic_executor_type<Allocator, Bits | outstanding_work_tracked>
  require(asio::execution::outstanding_work_t::tracked_t) const
  {
    return basic_executor_type<Allocator, Bits | outstanding_work_tracked>(
        context_ptr(), *this, bits());
  }

  constexpr basic_executor_type<Allocator, Bits & ~outstanding_work_tracked>
  require(asio::execution::outstanding_work_t::untracked_t) const
  {
    return basic_executor_type<Allocator, Bits & ~outstanding_work_tracked>(
        context_ptr(), *this, bits());
  }

  template <typename OtherAllocator>
  constexpr basic_executor_type<OtherAllocator, Bits>
  require(asio::execution::allocator_t<OtherAllocator> a) const
  {
    return basic_executor_type<OtherAllocator, Bits>(
        context_ptr(), a.value(), bits());
  }

  constexpr basic_executor_type<std::allocator<void>, Bits>
  require(asio::execution::allocator_t<void>) const
  {
    return basic_executor_type<std::allocator<void>, Bits>(
        context_ptr(), std::allocator<void>(), bits());
  }

  static constexpr asio::execution::mapping_t query(
      asio::execution::mapping_t) noexcept
  {
    return asio::execution::mapping.thread;
  }

#if TURNLOOP_ASIO_VERSION >= 103800
  /// An exception thrown by a handler run inline is captured and rethrown
  /// by run() once the running handler returns (as io_context's, Asio 1.38).
  static constexpr asio::execution::inline_exception_handling_t query(
      asio::execution::inline_exception_handling_t) noexcept
  {
    return asio::execution::inline_exception_handling.capture;
  }
#endif // TURNLOOP_ASIO_VERSION >= 103800

  loop& query(asio::execution::context_t) const noexcept
  {
    return *context_ptr();
  }

  constexpr asio::execution::blocking_t query(
      asio::execution::blocking_t) const noexcept
  {
    return (bits() & blocking_never)
      ? asio::execution::blocking_t(
          asio::execution::blocking.never)
      : asio::execution::blocking_t(
          asio::execution::blocking.possibly);
  }

  constexpr asio::execution::relationship_t query(
      asio::execution::relationship_t) const noexcept
  {
    return (bits() & relationship_continuation)
      ? asio::execution::relationship_t(
          asio::execution::relationship.continuation)
      : asio::execution::relationship_t(
          asio::execution::relationship.fork);
  }

  static constexpr asio::execution::outstanding_work_t query(
      asio::execution::outstanding_work_t) noexcept
  {
    return tracked
      ? asio::execution::outstanding_work_t(
          asio::execution::outstanding_work.tracked)
      : asio::execution::outstanding_work_t(
          asio::execution::outstanding_work.untracked);
  }

  template <typename OtherAllocator>
  constexpr Allocator query(
      asio::execution::allocator_t<OtherAllocator>) const noexcept
  {
    return static_cast<const Allocator&>(*this);
  }

  constexpr Allocator query(
      asio::execution::allocator_t<void>) const noexcept
  {
    return static_cast<const Allocator&>(*this);
  }
  /// @}

  /// True if the calling thread is running the loop.
  bool running_in_this_thread() const noexcept
  {
    return context_ptr()->core_.running_in_this_thread();
  }

  /// Two executors are equal if they refer to the same loop, with the same
  /// blocking and relationship properties and equal allocators, as
  /// io_context's executors compare.
  friend bool operator==(const basic_executor_type& a,
      const basic_executor_type& b) noexcept
  {
    return a.context_ptr() == b.context_ptr() && a.properties() == b.properties()
      && static_cast<const Allocator&>(a) == static_cast<const Allocator&>(b);
  }

  friend bool operator!=(const basic_executor_type& a,
      const basic_executor_type& b) noexcept
  {
    return !(a == b);
  }

  /// io_context's executor type with the same allocator and work tracking.
  using io_context_executor_type = asio::io_context::basic_executor_type<
      Allocator,
      tracked ? asio::detail::io_context_bits::outstanding_work_tracked : 0>;

  /// @name Comparisons with io_context's executors
  /// For code that holds an io_context::executor_type taken from a loop (an
  /// I/O object typed on it, say) and compares it with the loop's: equal, as
  /// io_context's own compare, when both refer to the same context with the
  /// same blocking and relationship properties and equal allocators.
  /// @{
  template <std::uintptr_t OtherBits>
  friend bool operator==(const basic_executor_type& a,
      const asio::io_context::basic_executor_type<Allocator, OtherBits>& b)
    noexcept
  {
    return a.same_as(b);
  }

  template <std::uintptr_t OtherBits>
  friend bool operator==(
      const asio::io_context::basic_executor_type<Allocator, OtherBits>& a,
      const basic_executor_type& b) noexcept
  {
    return b.same_as(a);
  }

  template <std::uintptr_t OtherBits>
  friend bool operator!=(const basic_executor_type& a,
      const asio::io_context::basic_executor_type<Allocator, OtherBits>& b)
    noexcept
  {
    return !a.same_as(b);
  }

  template <std::uintptr_t OtherBits>
  friend bool operator!=(
      const asio::io_context::basic_executor_type<Allocator, OtherBits>& a,
      const basic_executor_type& b) noexcept
  {
    return !b.same_as(a);
  }
  /// @}

  /// The loop's io_context executor (the base class's), with this executor's
  /// allocator, work tracking, blocking and relationship properties; for code
  /// that spells `io_context::executor_type`. It runs handlers through the
  /// scheduler's own queue, not the loop's: see doc/compatibility.md. A
  /// tracked conversion takes its own unit of work. Not on a moved-from
  /// tracked executor.
  operator io_context_executor_type() const noexcept
  {
    namespace execution = asio::execution;
    auto base = asio::require(
        static_cast<asio::io_context&>(*context_ptr()).get_executor(),
        execution::allocator(static_cast<const Allocator&>(*this)));
    io_context_executor_type ex = [&] {
      if constexpr (tracked)
        return asio::require(base, execution::outstanding_work.tracked);
      else
        return base;
    }();
    if (bits() & blocking_never)
      ex = asio::require(ex, execution::blocking.never);
    if (bits() & relationship_continuation)
      ex = asio::require(ex, execution::relationship.continuation);
    return ex;
  }

  /// Runs @p f inline if blocking.possibly is in force and the calling thread
  /// runs the loop (an exception it throws is rethrown by run() once the
  /// current handler returns, as with io_context); otherwise queues it.
  template <typename Function>
  void execute(Function&& f) const;

  /// @name Networking TS members, for asio::executor and older code
  /// @{
  loop& context() const noexcept
  {
    return *context_ptr();
  }

  void on_work_started() const noexcept
  {
    context_ptr()->core_.acquire_shared_work();
  }

  void on_work_finished() const noexcept
  {
    context_ptr()->core_.release_work(false);
  }

  template <typename Function, typename OtherAllocator>
  void dispatch(Function&& f, const OtherAllocator& a) const;

  template <typename Function, typename OtherAllocator>
  void post(Function&& f, const OtherAllocator& a) const;

  template <typename Function, typename OtherAllocator>
  void defer(Function&& f, const OtherAllocator& a) const;
  /// @}

private:
  friend class loop;
  template <typename, std::uintptr_t>
  friend class basic_executor_type;

  constexpr basic_executor_type(loop* l, const Allocator& a,
      std::uintptr_t runtime) noexcept
    : Allocator(a),
      target_(reinterpret_cast<std::uintptr_t>(l)
          | (runtime & (blocking_never | relationship_continuation)))
  {
    acquire();
  }

  loop* context_ptr() const noexcept
  {
    return reinterpret_cast<loop*>(target_ & ~runtime_bits);
  }

  constexpr std::uintptr_t bits() const noexcept
  {
    return target_ & runtime_bits;
  }

  // The bits that are properties (not which unit of work this copy holds).
  constexpr std::uintptr_t properties() const noexcept
  {
    return target_ & (blocking_never | relationship_continuation);
  }

  template <typename IoContextExecutor>
  bool same_as(const IoContextExecutor& other) const noexcept
  {
    namespace execution = asio::execution;
    const std::uintptr_t other_properties =
      (asio::query(other, execution::blocking)
          == execution::blocking.never ? blocking_never : 0)
      | (asio::query(other, execution::relationship)
          == execution::relationship.continuation
        ? relationship_continuation : 0);
    return &static_cast<asio::io_context&>(*context_ptr())
        == &other.context()
      && properties() == other_properties
      && static_cast<const Allocator&>(*this)
        == asio::query(other, execution::allocator);
  }

  void acquire() noexcept
  {
    if constexpr (tracked)
      if (loop* l = context_ptr())
        if (l->core_.acquire_work())
          target_ |= local_work;
  }

  // target_ is set by every constructor; GCC 12 at -O1 loses track of it
  // through a moved std::optional of a work guard (detail/config.hpp).
  TURNLOOP_MAYBE_UNINITIALIZED_BEGIN
  void release() noexcept
  {
    if constexpr (tracked)
      if (loop* l = context_ptr())
        l->core_.release_work((target_ & local_work) != 0);
  }
  TURNLOOP_MAYBE_UNINITIALIZED_END

  std::uintptr_t target_;
};

/// @name Strands of the loop's executor compared with strands spelled on
/// io_context's executor (`strand<io_context::executor_type>` made from a
/// loop): as strands of one type compare, equal if one was made from the
/// other (they share a queue). Without these, the comparison would not
/// compile: each type's own operator converts the other side.
/// @{
template <typename Allocator, std::uintptr_t Bits>
bool operator==(const asio::strand<loop::basic_executor_type<Allocator, Bits>>& a,
    const asio::strand<typename loop::basic_executor_type<Allocator,
      Bits>::io_context_executor_type>& b) noexcept
{
  using io_context_strand = asio::strand<
    typename loop::basic_executor_type<Allocator, Bits>::io_context_executor_type>;
  return b == io_context_strand(a);
}

template <typename Allocator, std::uintptr_t Bits>
bool operator==(const asio::strand<typename loop::basic_executor_type<
      Allocator, Bits>::io_context_executor_type>& a,
    const asio::strand<loop::basic_executor_type<Allocator, Bits>>& b) noexcept
{
  return b == a;
}

template <typename Allocator, std::uintptr_t Bits>
bool operator!=(const asio::strand<loop::basic_executor_type<Allocator, Bits>>& a,
    const asio::strand<typename loop::basic_executor_type<Allocator,
      Bits>::io_context_executor_type>& b) noexcept
{
  return !(a == b);
}

template <typename Allocator, std::uintptr_t Bits>
bool operator!=(const asio::strand<typename loop::basic_executor_type<
      Allocator, Bits>::io_context_executor_type>& a,
    const asio::strand<loop::basic_executor_type<Allocator, Bits>>& b) noexcept
{
  return !(b == a);
}
/// @}

} // namespace turnloop

#include <turnloop/detail/io_context_work_guard.hpp>
#include <turnloop/detail/loop_handler_work.hpp>
#include <turnloop/impl/loop.hpp>
#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/impl/loop.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_LOOP_HPP
