//
// turnloop/detail/impl/loop_of.ipp
//

#ifndef TURNLOOP_DETAIL_IMPL_LOOP_OF_IPP
#define TURNLOOP_DETAIL_IMPL_LOOP_OF_IPP

#include <turnloop/detail/loop_of.hpp>
#include <turnloop/detail/engine/turn_reactor.hpp>
#include <turnloop/loop.hpp>

#include <typeinfo>

namespace turnloop {
namespace detail {

TURNLOOP_DECL std::atomic<std::uint64_t>& loops_ended() noexcept
{
  static std::atomic<std::uint64_t> count{0};
  return count;
}

struct remembered_loop
{
  boost::asio::execution_context* context;
  loop* found;
  std::uint64_t loops_ended;
};

TURNLOOP_DECL loop* loop_of(boost::asio::execution_context& ctx)
{
  static thread_local remembered_loop remembered{};
  // A remembered loop is alive while the count has not moved: a context
  // that could reuse its address once it is gone is constructed after the
  // count went up, and so (construction being ordered after that) this
  // thread then reads the new count.
  const std::uint64_t ended = loops_ended().load(std::memory_order_acquire);
  if (remembered.context == &ctx && remembered.loops_ended == ended)
    return remembered.found;

  // has_service first: use_service would create a reactor in a context
  // that has none (a thread_pool, say). The reactor's exact type, not a
  // dynamic_cast (which walked the class hierarchy comparing type names,
  // about 600 instructions a call): only a loop installs a turn_reactor,
  // and nothing derives from it.
  using boost::asio::detail::epoll_reactor;
  if (!boost::asio::has_service<epoll_reactor>(ctx))
    return nullptr;
  epoll_reactor& reactor = boost::asio::use_service<epoll_reactor>(ctx);
  if (typeid(reactor) != typeid(turn_reactor))
    return nullptr;
  loop* l = &static_cast<loop&>(ctx);
  remembered = {&ctx, l, ended};
  return l;
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_IMPL_LOOP_OF_IPP
