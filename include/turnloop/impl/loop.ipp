//
// turnloop/impl/loop.ipp
//

#ifndef TURNLOOP_IMPL_LOOP_IPP
#define TURNLOOP_IMPL_LOOP_IPP

#include <turnloop/loop.hpp>
#include <turnloop/accept.hpp>
#include <turnloop/blocking.hpp>
#include <turnloop/buffer_pool.hpp>

#include <boost/asio/version.hpp>
#if BOOST_ASIO_VERSION >= 103400
# include <boost/asio/config.hpp>
#endif // BOOST_ASIO_VERSION >= 103400

namespace turnloop {

TURNLOOP_DECL loop::loop()
  : loop(config())
{
}

TURNLOOP_DECL loop::loop(int)
  : loop(config())
{
}

// io_context(1): Asio's scheduler without its own thread and in one-thread
// mode, so posts made while it runs go to a thread-private queue. Locking
// stays on: other threads still post through it (doc/design.md).
TURNLOOP_DECL loop::loop(const config& cfg)
  : boost::asio::io_context(1),
    core_(*this, cfg)
{
  core_.start();
}

#if BOOST_ASIO_VERSION >= 103400

namespace detail {

// What io_context(1) makes (its one-thread configuration), then the caller's
// services.
class one_thread_then final
  : public boost::asio::execution_context::service_maker
{
public:
  explicit one_thread_then(const service_maker& then) noexcept
    : then_(then)
  {
  }

  void make(boost::asio::execution_context& ctx) const override
  {
    boost::asio::config_from_concurrency_hint(1).make(ctx);
    then_.make(ctx);
  }

private:
  const service_maker& then_;
};

} // namespace detail

TURNLOOP_DECL loop::loop(
    const boost::asio::execution_context::service_maker& initial_services)
  : boost::asio::io_context(detail::one_thread_then(initial_services)),
    core_(*this, config())
{
  core_.start();
}

#endif // BOOST_ASIO_VERSION >= 103400

TURNLOOP_DECL loop::~loop()
{
  // Pending operations hold executors that call back into core_, and
  // destroying a suspended coroutine posts its frames back to its executor:
  // so shut every service down and drain while core_ is alive.
  core_.begin_shutdown();
  shutdown();
  core_.drain();
  destroy();
  core_.services_destroyed();
}

TURNLOOP_DECL loop::count_type loop::run()
{
  return core_.run();
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

  s.pool.capacity = c.pooled_buffers;
  s.pool.buffer_size = c.pooled_buffer_size;
  if (boost::asio::has_service<buffer_pool>(self))
    s.pool = boost::asio::use_service<buffer_pool>(self).stats();
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
