//
// turnloop/impl/loop.ipp
//

#ifndef TURNLOOP_IMPL_LOOP_IPP
#define TURNLOOP_IMPL_LOOP_IPP

#include <turnloop/loop.hpp>
#include <turnloop/detail/loop_of.hpp>
#include <turnloop/detail/service_stats.hpp>

// The services' bodies, for header-only mode: a header of theirs may be the
// one being included, and then these bring nothing new.
#include <turnloop/accept.hpp>
#include <turnloop/blocking.hpp>
#include <turnloop/buffer_pool.hpp>

namespace turnloop {

// detail/loop_of.hpp's functions: the cast from a context to its loop needs
// the whole loop.
namespace detail {

TURNLOOP_DECL std::atomic<std::uint64_t>& loops_ended() noexcept
{
  static std::atomic<std::uint64_t> count{0};
  return count;
}

struct remembered_loop
{
  asio::execution_context* context;
  loop* found;
  std::uint64_t loops_ended;
};

TURNLOOP_DECL loop* loop_of(asio::execution_context& ctx)
{
  static thread_local remembered_loop remembered{};
  // A remembered loop is alive while the count has not moved: a context
  // that could reuse its address once it is gone is constructed after the
  // count went up, and so (construction being ordered after that) this
  // thread then reads the new count.
  const std::uint64_t ended = loops_ended().load(std::memory_order_acquire);
  if (remembered.context == &ctx && remembered.loops_ended == ended)
    return remembered.found;

  if (!is_loop(ctx))
    return nullptr;
  loop* l = &static_cast<loop&>(ctx);
  remembered = {&ctx, l, ended};
  return l;
}

} // namespace detail

TURNLOOP_DECL loop::loop()
  : loop(config())
{
}

TURNLOOP_DECL loop::loop(int)
  : loop(config())
{
}

// Asio's scheduler without its own thread and in one-thread mode, so posts
// made while it runs go to a thread-private queue. Locking stays on: other
// threads still post through it (doc/design.md). Up to Asio 1.32 that is
// io_context(1). From 1.34 it is the loop's own configuration, with nothing
// of the program's: io_context(1) is not enough on 1.34.0, whose config
// reader turns the hint "1" into 0 (doc/design.md, "Asio versions").
#if TURNLOOP_ASIO_VERSION >= 103400
TURNLOOP_DECL loop::loop(const config& cfg)
  : loop(user_asio_config_ptr(), nullptr, cfg)
{
}
#else // TURNLOOP_ASIO_VERSION >= 103400
TURNLOOP_DECL loop::loop(const config& cfg)
  : asio::io_context(1),
    core_(*this, cfg)
{
  core_.start();
}
#endif // TURNLOOP_ASIO_VERSION >= 103400

#if TURNLOOP_ASIO_VERSION >= 103400

TURNLOOP_DECL loop::loop(
    const asio::execution_context::service_maker& initial_services,
    const config& cfg)
  : loop(std::make_unique<detail::user_asio_config>(initial_services),
      &initial_services, cfg)
{
}

TURNLOOP_DECL loop::loop(user_asio_config_ptr user,
    const asio::execution_context::service_maker* initial_services,
    const config& cfg)
  : asio::io_context(
      detail::pinned_asio_config_maker(user.get(), initial_services)),
    user_asio_config_(std::move(user)),
    core_(*this, cfg)
{
  core_.start();
}

#endif // TURNLOOP_ASIO_VERSION >= 103400

TURNLOOP_DECL loop::~loop()
{
  // Threads that remember this loop (or its pool) forget it: before
  // anything goes, and again once its services have gone, for what a
  // destructor run in between remembered.
  detail::loops_ended().fetch_add(1, std::memory_order_release);
  // Pending operations hold executors that call back into core_, and
  // destroying a suspended coroutine posts its frames back to its executor:
  // so shut every service down and drain while core_ is alive.
  detail::shut_down(*this);
  core_.drain();
  destroy();
  core_.services_destroyed();
  detail::loops_ended().fetch_add(1, std::memory_order_release);
}

TURNLOOP_DECL loop::count_type loop::run_one()
{
  return core_.run_one();
}

TURNLOOP_DECL loop::count_type loop::poll()
{
  return core_.poll();
}

TURNLOOP_DECL loop::count_type loop::poll_one()
{
  return core_.poll_one();
}

TURNLOOP_DECL void loop::stop()
{
  core_.stop();
}

TURNLOOP_DECL bool loop::stopped() const
{
  return io_context::stopped();
}

TURNLOOP_DECL void loop::restart()
{
  core_.restart();
}

TURNLOOP_DECL loop_stats loop::stats() const noexcept
{
  loop_stats s;
  core_.fill_stats(s);
  const config& c = core_.get_config();
  loop& self = const_cast<loop&>(*this);

  s.pool = detail::pool_statistics(self);
  s.pooled_buffers = {c.pooled_buffers, s.pool.leased,
    s.pool.leased_high_water, s.pool.refusals};

  s.accepts = handle_statistics(self);
  s.blocking = blocking_statistics(self);
  s.blocking_queue = {c.blocking.queue_capacity, s.blocking.queued,
    s.blocking.queued_high_water, s.blocking.refused_queue};
  s.blocking_long_threads = {c.blocking.long_threads_max,
    s.blocking.long_threads, s.blocking.long_threads_high_water,
    s.blocking.refused_threads};
  s.blocking_undelivered = {c.blocking.max_undelivered, s.blocking.undelivered,
    s.blocking.undelivered_high_water, s.blocking.refused_undelivered};
  return s;
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_LOOP_IPP
