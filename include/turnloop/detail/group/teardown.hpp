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

#include <memory>
#include <vector>

namespace turnloop {
namespace detail {

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
} // namespace turnloop

#endif // TURNLOOP_DETAIL_GROUP_TEARDOWN_HPP
