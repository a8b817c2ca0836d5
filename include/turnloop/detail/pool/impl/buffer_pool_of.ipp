//
// turnloop/detail/pool/impl/buffer_pool_of.ipp
//

#ifndef TURNLOOP_DETAIL_POOL_IMPL_BUFFER_POOL_OF_IPP
#define TURNLOOP_DETAIL_POOL_IMPL_BUFFER_POOL_OF_IPP

#include <turnloop/detail/pool/buffer_pool_of.hpp>
#include <turnloop/buffer_pool.hpp>
#include <turnloop/loop.hpp>

namespace turnloop {
namespace detail {

TURNLOOP_DECL std::atomic<std::uint64_t>& pools_shut_down() noexcept
{
  static std::atomic<std::uint64_t> count{0};
  return count;
}

struct remembered_pool
{
  boost::asio::execution_context* context;
  buffer_pool* pool;
  std::uint64_t pools_shut_down;
  std::uint64_t loops_ended;
};

TURNLOOP_DECL buffer_pool* buffer_pool_of(
    boost::asio::execution_context& ctx)
{
  static thread_local remembered_pool remembered{};
  // A loop whose pool is remembered is alive: whoever could reuse its
  // address after it dies was allocated after its pool bumped the count,
  // and so (allocation being ordered) reads the new count here.
  // One remembered while its loop was being destroyed is forgotten once
  // the loop's services have gone (loops_ended, detail/loop_of.hpp).
  const std::uint64_t shut_down =
    pools_shut_down().load(std::memory_order_acquire);
  const std::uint64_t ended = loops_ended().load(std::memory_order_acquire);
  if (remembered.context == &ctx && remembered.pools_shut_down == shut_down
      && remembered.loops_ended == ended)
    return remembered.pool;
  loop* l = loop_of(ctx);
  if (!l)
    return nullptr;
  remembered = {&ctx, &boost::asio::use_service<buffer_pool>(*l), shut_down,
    ended};
  return remembered.pool;
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_POOL_IMPL_BUFFER_POOL_OF_IPP
