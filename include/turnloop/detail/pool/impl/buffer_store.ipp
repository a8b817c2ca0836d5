//
// turnloop/detail/pool/impl/buffer_store.ipp
//

#ifndef TURNLOOP_DETAIL_POOL_IMPL_BUFFER_STORE_IPP
#define TURNLOOP_DETAIL_POOL_IMPL_BUFFER_STORE_IPP

#include <turnloop/detail/pool/buffer_store.hpp>
#include <turnloop/detail/engine/loop_core.hpp>

#include <new>

namespace turnloop {
namespace detail {

inline void free_buffer(pooled_buffer* b) noexcept
{
  b->~pooled_buffer();
  ::operator delete(static_cast<void*>(b));
}

TURNLOOP_DECL buffer_store::buffer_store(std::size_t ceiling,
    std::size_t buffer_size, loop_core& core, buffer_pool& pool) noexcept
  : ceiling_(ceiling),
    buffer_size_(buffer_size),
    core_(core),
    pool_(pool)
{
}

TURNLOOP_DECL pooled_buffer* buffer_store::take()
{
  pooled_buffer* b = free_;
  if (b)
    free_ = b->next;
  else if (minted_ < ceiling_)
  {
    // Not zeroed: a pooled buffer costs resident memory only once used.
    void* p = ::operator new(sizeof(pooled_buffer) + buffer_size_);
    b = ::new (p) pooled_buffer{nullptr, this};
    ++minted_;
  }
  else
    return nullptr;
  b->next = nullptr;
  if (++leased_ > leased_high_water_)
    leased_high_water_ = leased_;
  return b;
}

TURNLOOP_DECL void buffer_store::put(pooled_buffer* chain) noexcept
{
  pooled_buffer* last = chain;
  --leased_;
  while (last->next)
  {
    last = last->next;
    --leased_;
  }
  last->next = free_;
  free_ = chain;
}

TURNLOOP_DECL std::size_t buffer_store::leased() const noexcept
{
  // Only the loop takes buffers off the returned stack, and this runs on the
  // loop's thread (or while no thread runs the loop), so the chain cannot
  // change under the walk except by pushes in front of it.
  std::size_t returned = 0;
  for (const pooled_buffer* b = returned_.load(std::memory_order_acquire); b;
      b = b->next)
    ++returned;
  return leased_ - returned;
}

TURNLOOP_DECL void buffer_store::close() noexcept
{
  references_.store(leased_ + 1, std::memory_order_relaxed);
  open_.store(false, std::memory_order_release);
}

TURNLOOP_DECL void buffer_store::discard(pooled_buffer* b) noexcept
{
  free_buffer(b);
  drop_reference();
}

TURNLOOP_DECL void buffer_store::detach() noexcept
{
  // Released on other threads before the loop closed: leased until now.
  for (pooled_buffer* b = take_returned(); b;)
  {
    pooled_buffer* next = b->next;
    discard(b);
    b = next;
  }
  for (pooled_buffer* b = std::exchange(free_, nullptr); b;)
  {
    pooled_buffer* next = b->next;
    free_buffer(b);
    b = next;
  }
  drop_reference();
}

TURNLOOP_DECL void buffer_store::drop_reference() noexcept
{
  if (references_.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete this;
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_POOL_IMPL_BUFFER_STORE_IPP
