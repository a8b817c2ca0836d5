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

struct remembered_pool
{
  boost::asio::execution_context* context;
  buffer_pool* pool;
  std::uint64_t loops_ended;
};

TURNLOOP_DECL buffer_pool* buffer_pool_of(
    boost::asio::execution_context& ctx)
{
  static thread_local remembered_pool remembered{};
  // A pool's memory goes only with its loop's services, in ~loop, which
  // bumps loops_ended (detail/loop_of.hpp) before they shut down and again
  // once they have gone: whoever could reuse the loop's address was
  // allocated after that, and so (allocation being ordered) reads the new
  // count here; one remembered while the loop was being destroyed is
  // forgotten at the second bump. A pool shut down while its loop lives (a
  // loop_group's teardown shuts every loop down before destroying any) is
  // still the one use_service would return, so it may stay remembered.
  const std::uint64_t ended = loops_ended().load(std::memory_order_acquire);
  if (remembered.context == &ctx && remembered.loops_ended == ended)
    return remembered.pool;
  loop* l = loop_of(ctx);
  if (!l)
    return nullptr;
  remembered = {&ctx, &boost::asio::use_service<buffer_pool>(*l), ended};
  return remembered.pool;
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_POOL_IMPL_BUFFER_POOL_OF_IPP
