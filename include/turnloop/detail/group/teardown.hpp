//
// turnloop/detail/group/teardown.hpp
//
// Destroys the loops of a group together. A handler or coroutine pending on
// one loop may own an I/O object or a tracked executor of another (a
// coroutine that moved there holds both), so destroying the loops one after
// another would let the later ones reach into the earlier ones' freed
// services. Instead every loop's services are shut down first (which
// destroys their pending operations), then every loop's queues are drained
// until none has anything left, and only then is any loop destroyed: by
// that time no user object that could reach another loop is left.
//

#ifndef TURNLOOP_DETAIL_GROUP_TEARDOWN_HPP
#define TURNLOOP_DETAIL_GROUP_TEARDOWN_HPP

#include <turnloop/loop.hpp>

#include <boost/asio/execution_context.hpp>

#include <memory>
#include <vector>

namespace turnloop {
namespace detail {

// execution_context::shutdown() is protected; a pointer to it taken in a
// derived class may be applied to any execution_context. ~loop calls it
// again later, which finds every service already shut down.
struct context_shutdown : boost::asio::execution_context
{
  static void shutdown_services(boost::asio::execution_context& c)
  {
    (c.*(&context_shutdown::shutdown))();
  }
};

inline void destroy_together(std::vector<std::unique_ptr<loop>>& loops) noexcept
{
  for (auto& l : loops)
  {
    core_of(*l).begin_shutdown();
    context_shutdown::shutdown_services(*l);
  }
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
} // namespace turnloop

#endif // TURNLOOP_DETAIL_GROUP_TEARDOWN_HPP
