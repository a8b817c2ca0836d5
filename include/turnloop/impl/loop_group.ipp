//
// turnloop/impl/loop_group.ipp
//

#ifndef TURNLOOP_IMPL_LOOP_GROUP_IPP
#define TURNLOOP_IMPL_LOOP_GROUP_IPP

#include <turnloop/loop_group.hpp>
#include <turnloop/detail/group/add_stats.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(error.hpp)

#include <string>
#include <thread>

namespace turnloop {
namespace detail {

// Destroys the loops of a group together. A handler or coroutine pending on
// one loop may own an I/O object or a tracked executor of another (a
// coroutine that moved there holds both), so destroying the loops one after
// another would let the later ones reach into the earlier ones' freed
// services. Instead every loop's services are shut down first (which
// destroys their pending operations), then every loop's queues are drained
// until none has anything left, and only then is any loop destroyed: by
// that time no user object that could reach another loop is left.
inline void destroy_together(std::vector<std::unique_ptr<loop>>& loops) noexcept
{
  for (auto& l : loops)
    shut_down(*l);
  for (bool again = true; again;)
  {
    again = false;
    for (auto& l : loops)
      again = core_of(*l).drain() || again;
  }
  while (!loops.empty())
    loops.pop_back();
}

} // namespace detail

TURNLOOP_DECL std::size_t loop_group::default_size() noexcept
{
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

TURNLOOP_DECL loop_group::loop_group(std::size_t size, const config& cfg)
{
  if (size == 0 || size > max_size)
    throw system_error(make_error_code(error::invalid_config),
        "turnloop::loop_group: size must be 1 .. " + std::to_string(max_size)
          + ", not " + std::to_string(size));
  cfg.validate();
  loops_.reserve(size);
  for (std::size_t i = 0; i < size; ++i)
    loops_.push_back(std::make_unique<turnloop::loop>(cfg));
}

TURNLOOP_DECL loop_group::loop_group(const config& cfg)
  : loop_group(default_size(), cfg)
{
}

TURNLOOP_DECL loop_group::~loop_group()
{
  threads_.stop();
  threads_.join_quietly();
  detail::destroy_together(loops_);
}

TURNLOOP_DECL turnloop::loop& loop_group::loop(std::size_t index)
{
  if (index >= loops_.size())
    throw system_error(
        make_error_code(asio::error::invalid_argument),
        "turnloop::loop_group::loop: index " + std::to_string(index)
          + " is out of range (size " + std::to_string(loops_.size()) + ")");
  return *loops_[index];
}

TURNLOOP_DECL loop_group::executor_type loop_group::next_executor() noexcept
{
  const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed);
  return loops_[i % loops_.size()]->get_executor();
}

TURNLOOP_DECL loop_group::count_type loop_group::run()
{
  threads_.start();
  return threads_.join();
}

TURNLOOP_DECL void loop_group::start()
{
  threads_.start();
}

TURNLOOP_DECL loop_group::count_type loop_group::join()
{
  return threads_.join();
}

TURNLOOP_DECL void loop_group::stop()
{
  threads_.stop();
}

TURNLOOP_DECL bool loop_group::stopped() const
{
  return threads_.stopped();
}

TURNLOOP_DECL void loop_group::restart()
{
  threads_.restart();
}

TURNLOOP_DECL group_stats loop_group::stats()
{
  group_stats s;
  s.loops.resize(loops_.size());
  threads_.on_each_loop([&](std::size_t i) { s.loops[i] = loops_[i]->stats(); });
  for (const loop_stats& each : s.loops)
    detail::add_stats(s.total, each);
  return s;
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_LOOP_GROUP_IPP
