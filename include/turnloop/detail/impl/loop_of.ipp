//
// turnloop/detail/impl/loop_of.ipp
//

#ifndef TURNLOOP_DETAIL_IMPL_LOOP_OF_IPP
#define TURNLOOP_DETAIL_IMPL_LOOP_OF_IPP

#include <turnloop/detail/loop_of.hpp>
#include <turnloop/detail/engine/turn_reactor.hpp>
#include <turnloop/loop.hpp>

namespace turnloop {
namespace detail {

TURNLOOP_DECL loop* loop_of(boost::asio::execution_context& ctx)
{
  // has_service first: use_service would create a reactor in a context
  // that has none (a thread_pool, say).
  using boost::asio::detail::epoll_reactor;
  if (!boost::asio::has_service<epoll_reactor>(ctx))
    return nullptr;
  if (!dynamic_cast<turn_reactor*>(
        &boost::asio::use_service<epoll_reactor>(ctx)))
    return nullptr;
  return &static_cast<loop&>(ctx);
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_IMPL_LOOP_OF_IPP
