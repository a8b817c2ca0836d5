//
// turnloop/detail/engine/loop_core.hpp
//
// The turn engine behind turnloop::loop. doc/design.md explains the shape:
// the loop derives from io_context and runs *inside* io_context's
// implementation (Asio's scheduler, or on Windows its IOCP context). Its
// own handlers live in two queues (an unsynchronised one for the loop thread,
// a lock-free one for other threads) and are run in batches by one static
// scheduler operation, the "turn". What differs by platform is how the turn
// is queued and how a cross-thread post wakes the loop, each in a file of its
// own (TURNLOOP_HAS_IOCP_ENGINE, detail/platform.hpp):
// - impl/loop_core_reactor.ipp (POSIX): the reactor is Asio's with one
//   virtual function overridden (turn_reactor), which is how the loop knows
//   when it is about to block and so whom a cross-thread post must wake;
// - impl/loop_core_iocp.ipp (Windows): the turn is a packet on the I/O
//   completion port, and a cross-thread post that finds none queued posts
//   one, which is the wake (turn_iocp.hpp holds the loop's service there).
//

#ifndef TURNLOOP_DETAIL_ENGINE_LOOP_CORE_HPP
#define TURNLOOP_DETAIL_ENGINE_LOOP_CORE_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/config.hpp>
#include <turnloop/detail/ceiling.hpp>
#include <turnloop/detail/engine/node_cache.hpp>
#include <turnloop/detail/engine/op_list.hpp>
#include <turnloop/detail/engine/operation.hpp>
#include <turnloop/detail/engine/remote_queue.hpp>
#include <turnloop/detail/engine/turn_source.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(detail/operation.hpp)
#if !defined(TURNLOOP_HAS_IOCP_ENGINE)
# include TURNLOOP_ASIO_HEADER(detail/op_queue.hpp)
# include TURNLOOP_ASIO_HEADER(detail/scheduler.hpp)
#endif // !defined(TURNLOOP_HAS_IOCP_ENGINE)
#include TURNLOOP_ASIO_HEADER(io_context.hpp)

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <utility>

namespace turnloop {

struct loop_stats;

namespace detail {

#if !defined(TURNLOOP_HAS_IOCP_ENGINE)
class turn_reactor;
#endif // !defined(TURNLOOP_HAS_IOCP_ENGINE)

// The loop's owner word (loop_core::owner_thread_): the address of the owning
// thread's current_, with the low bit set for a transient owner
// (loop_core.ipp, acquire_owner).
inline constexpr std::uintptr_t transient_bit = 1;

inline const void* owner_tag(const void* thread, bool transient) noexcept
{
  return reinterpret_cast<const void*>(
      reinterpret_cast<std::uintptr_t>(thread) | (transient ? transient_bit : 0));
}

inline bool is_transient(const void* owner) noexcept
{
  return (reinterpret_cast<std::uintptr_t>(owner) & transient_bit) != 0;
}

class loop_core
{
public:
  TURNLOOP_DECL loop_core(asio::io_context& owner, const config& cfg);
  loop_core(const loop_core&) = delete;
  loop_core& operator=(const loop_core&) = delete;

  /// Installs the engine's service in the context: the reactor and the
  /// scheduler's task (POSIX), or the service that marks the context as a
  /// loop and gives its work back before the IOCP context shuts down
  /// (Windows). Called from the loop's constructor body, before any I/O
  /// object can exist.
  TURNLOOP_DECL void start();

  const config& get_config() const noexcept
  {
    return config_;
  }

  /// True on the thread that is running this loop.
  bool running_in_this_thread() const noexcept
  {
    return *this_thread_current() == this;
  }

  /// This thread's current_, through a call where that matters
  /// (TURNLOOP_THREAD_LOCAL_ACCESS).
  TURNLOOP_THREAD_LOCAL_ACCESS static loop_core** this_thread_current() noexcept
  {
    return &current_;
  }

  /// True where execute() may run a handler inline rather than queue it: on
  /// the loop's thread, and on the IOCP engine not once stop() is called
  /// (the packets queued ahead of io_context's stop packet still complete,
  /// and their handlers must wait for the next run, as on POSIX; each such
  /// completion is counted, so that run() does not report it as run).
  bool runs_inline_here() noexcept
  {
    if constexpr (has_iocp_engine)
    {
      if (stop_requested_.load(std::memory_order_relaxed)
          && running_in_this_thread())
      {
        if (active_visits_ == 0)
          ++deferred_completions_;
        return false;
      }
    }
    return running_in_this_thread();
  }

  /// True on the thread that runs this loop through loop::run() or poll()
  /// (not one that holds it for one operation while io_context::run()
  /// drives it, possibly beside other threads): the owner word is this
  /// thread's tag without the transient bit. In the class: a pooled read
  /// and a lease write ask it on every operation.
  bool runs_here() const noexcept
  {
    loop_core** current = this_thread_current();
    return *current == this
      && owner_thread_.load(std::memory_order_relaxed)
        == owner_tag(current, false);
  }

  /// True once the loop's destruction has begun (on the destroying thread,
  /// in the destructors of what it destroys): nothing is accepted any more.
  /// A post is then dropped, and a service's submission with it: the
  /// handler is destroyed unrun, as every other pending one is.
  bool being_destroyed() const noexcept
  {
    return stage_.load(std::memory_order_acquire) != stage::running;
  }

  /// Queues @p f (never runs it inline).
  template <typename Function, typename Allocator>
  void post(Function&& f, const Allocator& a);

  /// Queues @p op, a node its owner has built already, for a later turn: no
  /// allocation, so it cannot fail. Loop thread only. A loop that is being
  /// destroyed destroys it instead.
  void requeue(operation* op) noexcept
  {
    if (stage_.load(std::memory_order_acquire) != stage::running)
      op->destroy(nullptr);
    else
      post_local(op);
  }

  /// Queues @p f unless it comes from another thread and post_capacity
  /// cross-thread posts are already queued; then leaves @p f untouched and
  /// returns resource_limit.
  template <typename Function>
  error_code try_post(Function&& f);

  /// Work counting for tracked executors. A unit taken on the loop thread is
  /// "local": a plain counter, no atomic read-modify-write. Returns whether
  /// the unit is local; pass that back to release_work.
  bool acquire_work() noexcept
  {
    if (running_in_this_thread())
    {
      if (local_work_++ == 0)
        scheduler_.work_started();
      return true;
    }
    acquire_shared_work();
    return false;
  }

  /// A unit that any thread may release (io_context-style, atomic).
  void acquire_shared_work() noexcept
  {
    scheduler_.work_started();
#if defined(TURNLOOP_HAS_IOCP_ENGINE)
    // Counted, so that give_back_work can return the units still held
    // (turn_iocp.hpp); one taken after that is given back at once.
    if (shared_units_.fetch_add(1, std::memory_order_acq_rel)
        & shared_units_returned)
      scheduler_.work_finished();
#endif // defined(TURNLOOP_HAS_IOCP_ENGINE)
  }

  void release_work(bool local) noexcept
  {
#if defined(TURNLOOP_HAS_IOCP_ENGINE)
    if (!local)
    {
      // Unless give_back_work has returned it already, with every unit
      // still held then.
      if (!(shared_units_.fetch_sub(1, std::memory_order_acq_rel)
            & shared_units_returned))
        scheduler_.work_finished();
      return;
    }
#endif // defined(TURNLOOP_HAS_IOCP_ENGINE)
    if (stage_.load(std::memory_order_acquire) >= stage::work_returned)
      [[unlikely]]
      return; // the loop's own units it has had back (give_back_work)
    if (!local)
      scheduler_.work_finished();
    else if (running_in_this_thread())
    {
      if (--local_work_ == 0)
        scheduler_.work_finished();
    }
    else
      release_local_work_from_other_thread();
  }

  /// Registers @p source; its run_ready() is called in turns after it is
  /// signalled. Any thread. A source stays registered until remove_source.
  TURNLOOP_DECL void add_source(turn_source& source) noexcept;

  /// Unregisters @p source. Must not run concurrently with the loop (a
  /// service calls it from its shutdown(), during ~loop).
  TURNLOOP_DECL void remove_source(turn_source& source) noexcept;

  /// Marks @p source ready and wakes the loop if it is parked (queues its
  /// turn, on the IOCP engine). Any thread.
  void signal(turn_source& source) noexcept
  {
    if (!source.signalled_.load(std::memory_order_acquire)
        && !source.signalled_.exchange(true, std::memory_order_acq_rel))
    {
      sources_signalled_.fetch_add(1, std::memory_order_seq_cst);
      notify();
    }
  }

#if !defined(TURNLOOP_HAS_IOCP_ENGINE)
  /// The loop's reactor, which serves its I/O objects; the loop's thread
  /// (or any thread, for what Asio lets any thread do with a reactor).
  turn_reactor& reactor() noexcept
  {
    return *reactor_;
  }
#endif // !defined(TURNLOOP_HAS_IOCP_ENGINE)

  /// The loop-wide ceilings of config::max_operations and config::max_handles,
  /// shared by every service that tracks operations or handles.
  ceiling& operations() noexcept
  {
    return operations_;
  }

  ceiling& handles() noexcept
  {
    return handles_;
  }

  /// A handler run inline by execute() threw: keep the exception until the
  /// current handler returns, as io_context does.
  TURNLOOP_DECL void capture_exception() noexcept;

  /// True while an exception captured by capture_exception() waits for the
  /// running visit to rethrow it. A turn source stops delivering then, so
  /// that one exception leaves run() at a time (loop thread).
  bool exception_pending() const noexcept
  {
    return static_cast<bool>(pending_exception_);
  }

  // Driving. Each is called by the matching loop member.
  std::size_t run()
  {
    // io_context::run()'s body, and the handlers it ran.
    run_scope scope(*this);
    const progress before = progress_now();
    error_code ec;
    const std::size_t ops = scheduler_.run(ec);
    asio::detail::throw_error(ec);
    return handlers_since(ops, before);
  }
  TURNLOOP_DECL std::size_t run_one();
  TURNLOOP_DECL std::size_t poll();
  TURNLOOP_DECL std::size_t poll_one();
  template <typename Clock, typename Duration>
  std::size_t run_until(const std::chrono::time_point<Clock, Duration>& t);
  template <typename Clock, typename Duration>
  std::size_t run_one_until(const std::chrono::time_point<Clock, Duration>& t);
  TURNLOOP_DECL void stop();
  TURNLOOP_DECL void restart();

  TURNLOOP_DECL void fill_stats(loop_stats& s) const noexcept;

  /// Destruction, in the order ~loop needs: begin_shutdown before the
  /// services shut down, drain after, services_destroyed after destroy().
  /// On the IOCP engine the drain comes first as well, with give_back_work,
  /// from the engine's service (turn_iocp), whose shutdown comes last before
  /// the IOCP context's: that waits until every unit of work is given back.
  TURNLOOP_DECL void begin_shutdown() noexcept;
  TURNLOOP_DECL bool drain() noexcept; // true if it destroyed anything
#if defined(TURNLOOP_HAS_IOCP_ENGINE)
  TURNLOOP_DECL void give_back_work() noexcept;
#endif // defined(TURNLOOP_HAS_IOCP_ENGINE)
  TURNLOOP_DECL void services_destroyed() noexcept;

private:
#if !defined(TURNLOOP_HAS_IOCP_ENGINE)
  friend class turn_reactor;
#endif // !defined(TURNLOOP_HAS_IOCP_ENGINE)
  class turn_operation;
  class visit_scope;

  // Counters from which a run() call works out how many handlers it ran.
  struct progress
  {
    std::uint64_t visits;
    std::uint64_t handlers;
    std::uint64_t io;
    std::uint64_t deferred;
  };

  // Makes the calling thread the loop's owner for one run()/poll() call, or
  // throws already_running if another thread owns it. A call from inside one
  // of the loop's own handlers is a nested run: the visit that called it is
  // suspended so its remaining handlers can run in the nested call.
  class run_scope
  {
  public:
    TURNLOOP_DECL explicit run_scope(loop_core& core);
    TURNLOOP_DECL ~run_scope();
    run_scope(const run_scope&) = delete;
    run_scope& operator=(const run_scope&) = delete;

  private:
    loop_core& core_;
    loop_core* previous_ = nullptr;
    bool acquired_ = false;
    unsigned suspended_visits_ = 0;
    progress start_{}; // of a nested call, to set its progress aside
  };

  // Ownership for the length of one scheduler operation, used when the loop
  // is driven through its io_context base (io_context::run()), where no
  // run_scope exists. owns() is false if a run() owns the loop, or, unless
  // @p wait, if another transient owner holds it.
  class transient_owner
  {
  public:
    TURNLOOP_DECL transient_owner(loop_core& core, bool wait) noexcept;
    TURNLOOP_DECL ~transient_owner();
    transient_owner(const transient_owner&) = delete;
    transient_owner& operator=(const transient_owner&) = delete;

    bool owns() const noexcept
    {
      return owns_;
    }

    /// True if this scope took the loop for itself (the loop is driven
    /// through its io_context base), not inside a run() of the loop's own.
    bool transient() const noexcept
    {
      return acquired_;
    }

  private:
    loop_core& core_;
    loop_core* previous_ = nullptr;
    bool owns_ = false;
    bool acquired_ = false;
  };

  // Caps the handlers one visit may run (run_one and poll_one need 1).
  class limit_scope
  {
  public:
    limit_scope(loop_core& core, std::size_t limit) noexcept
      : core_(core),
        previous_(core.visit_limit_)
    {
      core.visit_limit_ = limit < previous_ ? limit : previous_;
    }

    ~limit_scope()
    {
      core_.visit_limit_ = previous_;
    }

    limit_scope(const limit_scope&) = delete;
    limit_scope& operator=(const limit_scope&) = delete;

  private:
    loop_core& core_;
    std::size_t previous_;
  };

  // work_returned: the IOCP engine has given the context back the units
  // the loop held (give_back_work); units taken elsewhere still count.
  enum class stage : int { running, shutting_down, work_returned, destroyed };

  TURNLOOP_DECL bool acquire_owner(bool transient, bool wait) noexcept;
  TURNLOOP_DECL void post_local(operation* op) noexcept;
  TURNLOOP_DECL void post_remote(operation* op, bool reserved) noexcept;
  TURNLOOP_DECL void release_local_work_from_other_thread() noexcept;
  TURNLOOP_DECL void reconcile_released_work() noexcept;
  TURNLOOP_DECL void visit();
  [[noreturn]] TURNLOOP_DECL void rethrow_pending_exception();
  TURNLOOP_DECL void retire_remote(std::size_t taken) noexcept;
  TURNLOOP_DECL bool has_work() const noexcept;
  TURNLOOP_DECL std::size_t run_sources(std::size_t budget);

  // The engine's part (impl/loop_core_reactor.ipp, impl/loop_core_iocp.ipp):
  // - turn_queued(): the turn is in the scheduler's queue (loop thread);
  // - enqueue_turn(): queues it (the loop thread; on the IOCP engine, any
  //   thread, and only if no other thread just did);
  // - enqueue_turn_for_nested_run(): queues it where a run() nested in one
  //   of the loop's handlers finds it;
  // - turn_taken(): the context's shutdown destroyed the queued turn;
  // - visit_started(): a visit took the turn;
  // - visit_ended(): the outermost visit is over, or suspended by a run()
  //   nested in one of its handlers: queue the turn again if work is left;
  // - notify(): something was queued for the loop from another thread, or
  //   a source signalled: wake it if it waits;
  // - fill_engine_stats(): the counters only one engine keeps.
  TURNLOOP_DECL void enqueue_turn() noexcept;
  TURNLOOP_DECL void enqueue_turn_for_nested_run() noexcept;
  TURNLOOP_DECL void notify() noexcept;
  TURNLOOP_DECL void fill_engine_stats(loop_stats& s) const noexcept;
  TURNLOOP_DECL void visit_started() noexcept;
  TURNLOOP_DECL void visit_ended(bool for_nested_run) noexcept;
#if defined(TURNLOOP_HAS_IOCP_ENGINE)
  // The turn's state (turn_state_): no packet and no visit; its packet is
  // in the completion port (or about to be); a visit runs, and looks for
  // work when it ends.
  enum turn_state : unsigned char { turn_idle, turn_in_port, turn_visiting };

  bool turn_queued() const noexcept
  {
    return turn_state_.load(std::memory_order_relaxed) == turn_in_port;
  }

  void turn_taken() noexcept
  {
    turn_state_.store(turn_idle, std::memory_order_relaxed);
  }

  TURNLOOP_DECL bool has_work_for_a_visit() const noexcept;
#else // defined(TURNLOOP_HAS_IOCP_ENGINE)
  enum park_state : int { awake, parked, notified };

  bool turn_queued() const noexcept
  {
    return in_queue_;
  }

  void turn_taken() noexcept
  {
    in_queue_ = false;
  }

  // The blocking step's parts (turn_reactor::run_blocking, their one
  // caller): inline in either build, so the step is one frame.
  inline bool prepare_to_park(long& usec) noexcept;

  /// Every reactor step counts itself (loop_stats::reactor_runs): the poll
  /// (turn_reactor::run) and the blocking step (prepare_to_park).
  void count_reactor_run() noexcept
  {
    ++reactor_runs_;
  }

  /// After every reactor step: whatever other threads posted, released or
  /// signalled while it ran is taken. Relaxed loads: a poster that still
  /// reads "parked" only makes one spare wake, and before blocking again
  /// prepare_to_park re-checks with a sequentially consistent handshake.
  /// In the class, so that the usual step, with nothing arrived, costs
  /// three loads and no call.
  void after_reactor_run(bool parked_here) noexcept
  {
    if (parked_here)
      park_state_.store(awake, std::memory_order_relaxed);
    if (arrivals_pending()) [[unlikely]]
      take_arrivals();
  }

  /// True if another thread has posted, released work or signalled a
  /// service since arrivals were last taken. Atomics only: the caller may
  /// not own the loop. remote_.pending() is counted before a post is
  /// pushed, so it covers pushes still in progress. Relaxed after a reactor
  /// step; sequentially consistent in the park handshake. The three words
  /// in one test, an or of the loads: the usual run finds all zero.
  bool arrivals_pending(
      std::memory_order order = std::memory_order_relaxed) const noexcept
  {
    const std::size_t posted = remote_.pending().load(order);
    const auto released =
      static_cast<std::size_t>(remote_released_work_.load(order));
    const std::size_t signalled = sources_signalled_.load(order);
    return (posted | released | signalled) != 0;
  }

# if defined(TURNLOOP_HEADER_ONLY)
  TURNLOOP_DECL void take_arrivals() noexcept; // inline: noinline would clash
# else // defined(TURNLOOP_HEADER_ONLY)
  TURNLOOP_NOINLINE void take_arrivals() noexcept;
# endif // defined(TURNLOOP_HEADER_ONLY)
  inline bool completes_io_here() const noexcept;
  inline void complete_io(asio::detail::op_queue<
      asio::detail::scheduler_operation>& ready);
#endif // defined(TURNLOOP_HAS_IOCP_ENGINE)
  // What this thread's run()/poll() calls have done, less what calls nested
  // in their handlers did: as in io_context, a nested call's handlers count
  // for it alone.
  progress progress_now() const noexcept
  {
    return {visits_ - nested_.visits, handlers_run_ - nested_.handlers,
      io_completions_ - nested_.io,
      deferred_completions_ - nested_.deferred};
  }

  // The scheduler counts a visit as one operation and does not see I/O
  // completed in the reactor step; report handlers instead. An operation
  // whose handler was queued, not run, is not one.
  std::size_t handlers_since(std::size_t scheduler_ops,
      const progress& before) const noexcept
  {
    const progress now = progress_now();
    const std::uint64_t visits = now.visits - before.visits
      + (now.deferred - before.deferred);
    const std::uint64_t others = scheduler_ops > visits
      ? scheduler_ops - visits : 0;
    return static_cast<std::size_t>(others + (now.handlers - before.handlers)
        + (now.io - before.io));
  }

  // The thread that runs a loop, and the loop it runs.
  static inline thread_local loop_core* current_ = nullptr;

  asio::io_context& owner_;
  // io_context's implementation: Asio's scheduler, or its IOCP context.
  asio::detail::io_context_impl& scheduler_;
#if !defined(TURNLOOP_HAS_IOCP_ENGINE)
  turn_reactor* reactor_ = nullptr;
#endif // !defined(TURNLOOP_HAS_IOCP_ENGINE)
  const config config_;

  // Loop-thread state: touched only by the thread that owns the loop.
  op_list local_;
  node_cache node_cache_;
  long local_work_ = 0;
#if !defined(TURNLOOP_HAS_IOCP_ENGINE)
  bool in_queue_ = false;          // turn_op_ is in the scheduler's queue
#endif // !defined(TURNLOOP_HAS_IOCP_ENGINE)
  unsigned active_visits_ = 0;     // visits on the stack, not suspended
  std::size_t visit_limit_;
  std::exception_ptr pending_exception_;
  std::uint64_t handlers_run_ = 0;
  std::uint64_t io_completions_ = 0;
  // Operations of the context that ran but queued their handler (IOCP
  // engine, after stop(): runs_inline_here).
  std::uint64_t deferred_completions_ = 0;
  std::uint64_t turns_ = 0;
  std::uint64_t visits_ = 0;
#if !defined(TURNLOOP_HAS_IOCP_ENGINE)
  std::uint64_t reactor_runs_ = 0;
  std::uint64_t epoll_skips_ = 0; // reactor steps with no epoll_wait
  std::uint64_t parks_ = 0;
#endif // !defined(TURNLOOP_HAS_IOCP_ENGINE)
  progress nested_{};              // done by nested run()/poll() calls
  std::size_t local_high_water_ = 0;
  std::size_t remote_high_water_ = 0; // sampled by the loop, see retire_remote

  // Cross-thread state.
  // Written by every cross-thread post: the queue's head and its count,
  // which share a cache line.
  remote_queue remote_;
  // Read on every post and turn, written rarely: a line of their own, so
  // posters' writes above do not evict them.
  alignas(64) std::atomic<long> remote_released_work_{0};
#if defined(TURNLOOP_HAS_IOCP_ENGINE)
  // Whoever sets turn_in_port posts the packet, so there is at most one;
  // while a visit runs (turn_visiting) nobody posts it from another thread.
  std::atomic<unsigned char> turn_state_{turn_idle};
  // The units taken through acquire_shared_work (tracked executors made off
  // the loop thread included) and not yet released, with
  // shared_units_returned set once give_back_work has returned them.
  static constexpr std::uint64_t shared_units_returned =
    std::uint64_t(1) << 62;
  std::atomic<std::uint64_t> shared_units_{0};
#else // defined(TURNLOOP_HAS_IOCP_ENGINE)
  std::atomic<int> park_state_{awake};
#endif // defined(TURNLOOP_HAS_IOCP_ENGINE)
  std::atomic<const void*> owner_thread_{nullptr};
  std::atomic<bool> stop_requested_{false};
  std::atomic<stage> stage_{stage::running};
  std::atomic<std::uint64_t> wakes_{0};
  std::atomic<std::uint64_t> refused_posts_{0};
  std::atomic<turn_source*> sources_{nullptr};
  std::atomic<unsigned> sources_signalled_{0};
  ceiling operations_;
  ceiling handles_;

  // Asio's operation: a scheduler_operation, or on Windows an OVERLAPPED
  // (win_iocp_operation), posted as it is again and again without a reset.
  class turn_operation final
    : public asio::detail::operation
  {
  public:
    explicit turn_operation(loop_core& core) noexcept
      : asio::detail::operation(&turn_operation::do_complete),
        core_(core)
    {
    }

  private:
    TURNLOOP_DECL static void do_complete(void* owner,
        asio::detail::operation* base, const error_code&,
        std::size_t);

    loop_core& core_;
  };

  turn_operation turn_op_{*this};
};

/// True if @p ctx is a turnloop::loop: it holds the engine's service (the
/// turn_reactor, or on Windows turn_iocp), which only a loop installs.
TURNLOOP_DECL bool is_loop(asio::execution_context& ctx) noexcept;

} // namespace detail
} // namespace turnloop

#include <turnloop/detail/engine/impl/loop_core.hpp>
#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/detail/engine/impl/loop_core.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_DETAIL_ENGINE_LOOP_CORE_HPP
