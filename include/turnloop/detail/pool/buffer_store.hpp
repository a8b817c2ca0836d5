//
// turnloop/detail/pool/buffer_store.hpp
//
// The memory of a buffer pool: the buffers themselves, minted on demand up
// to the ceiling and kept for reuse, and the counts of how many exist and
// how many are leased. It is separate from the pool service because a lease
// may outlive the loop: when the pool shuts down with leases outstanding,
// the store stays alive, owned by those leases, and the last one to let go
// deletes it.
//
// Threads: everything but release() belongs to the loop's thread. release()
// is for any thread; a release on another thread goes onto a lock-free
// stack that the loop takes back in a turn.
//

#ifndef TURNLOOP_DETAIL_POOL_BUFFER_STORE_HPP
#define TURNLOOP_DETAIL_POOL_BUFFER_STORE_HPP

#include <turnloop/detail/config.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace turnloop {

// Declared only: the store holds a reference to its pool; the one call into
// it (release) is defined in impl/buffer_pool.ipp.
class buffer_pool;

namespace detail {

class buffer_store;
class loop_core;

/// One pooled buffer: this header, then the buffer's bytes.
struct alignas(std::max_align_t) pooled_buffer
{
  static constexpr std::uint32_t no_ring_id = 0xffffffff;

  pooled_buffer* next; // in the free list, the returned stack, or a chain
  buffer_store* store;
  std::uint32_t ring_id = no_ring_id; // its id in the io_uring buffer ring
  bool lent = false;                  // lent to the kernel's buffer ring

  unsigned char* bytes() noexcept
  {
    return reinterpret_cast<unsigned char*>(this + 1);
  }
};

static_assert(sizeof(pooled_buffer) % alignof(std::max_align_t) == 0,
    "a buffer's bytes start suitably aligned for any type");

class buffer_store
{
public:
  /// Not yet shut down; no buffer minted.
  TURNLOOP_DECL buffer_store(std::size_t ceiling, std::size_t buffer_size,
      loop_core& core, buffer_pool& pool) noexcept;

  buffer_store(const buffer_store&) = delete;
  buffer_store& operator=(const buffer_store&) = delete;

  std::size_t buffer_size() const noexcept
  {
    return buffer_size_;
  }

  std::size_t minted() const noexcept
  {
    return minted_;
  }

  /// Buffers held by leases: counted out by take(), back in by put(), and
  /// not counting those released on other threads and not yet taken back.
  TURNLOOP_DECL std::size_t leased() const noexcept;

  std::size_t leased_high_water() const noexcept
  {
    return leased_high_water_;
  }

  /// Loop thread: true if a buffer can be taken without minting one.
  bool has_free() const noexcept
  {
    return free_ || returned_.load(std::memory_order_relaxed);
  }

  /// Loop thread: the most recently returned free buffer, else a new one if
  /// the ceiling allows, counted as leased; nullptr at the ceiling.
  /// @throws std::bad_alloc if a new buffer cannot be allocated.
  TURNLOOP_DECL pooled_buffer* take();

  /// Loop thread: the most recently returned free buffer, counted as
  /// leased; nullptr if none is free (never a new one).
  pooled_buffer* take_free() noexcept
  {
    pooled_buffer* b = free_;
    if (!b)
      return nullptr;
    free_ = b->next;
    b->next = nullptr;
    if (++leased_ > leased_high_water_)
      leased_high_water_ = leased_;
    return b;
  }

  /// Loop thread: puts @p chain (linked by next, the first one most
  /// recently used) on top of the free list, so it is reused first.
  TURNLOOP_DECL void put(pooled_buffer* chain) noexcept;

  /// Loop thread: buffers lent to the kernel's buffer ring (io_uring), free
  /// but out of reach of take(). @p b, taken, is lent; a buffer the kernel
  /// hands back with data is leased again; one the ring gives back unused
  /// goes to the free list.
  void lend_to_ring(pooled_buffer*) noexcept
  {
    --leased_;
    ++in_ring_;
  }

  void take_from_ring(pooled_buffer*) noexcept
  {
    --in_ring_;
    if (++leased_ > leased_high_water_)
      leased_high_water_ = leased_;
  }

  void return_from_ring(pooled_buffer* b) noexcept
  {
    --in_ring_;
    b->next = free_;
    free_ = b;
  }

  /// Loop thread: buffers lent to the kernel's ring now.
  std::size_t in_ring() const noexcept
  {
    return in_ring_;
  }

  /// Loop thread: the buffers released on other threads since the last
  /// call, most recent first (still counted as leased), or nullptr.
  pooled_buffer* take_returned() noexcept
  {
    if (!returned_.load(std::memory_order_relaxed))
      return nullptr;
    return returned_.exchange(nullptr, std::memory_order_acquire);
  }

  /// Returns the buffer of a lease that lets go. Any thread; see the file
  /// comment, and buffer_lease for what a release after shutdown does.
  /// Defined with the pool (impl/buffer_pool.ipp), which it calls.
  TURNLOOP_DECL static void release(pooled_buffer* b) noexcept;

  /// The pool is shutting down: from now on a release frees its buffer and
  /// the store lives until the last outstanding buffer is released.
  TURNLOOP_DECL void close() noexcept;

  /// After close(): frees @p b, a leased buffer the pool itself held (one
  /// granted to an operation that is destroyed instead of run).
  TURNLOOP_DECL void discard(pooled_buffer* b) noexcept;

  /// After close(): the pool lets go. Frees every buffer not leased, and the
  /// store itself if no lease remains.
  TURNLOOP_DECL void detach() noexcept;

private:
  ~buffer_store() = default;

  TURNLOOP_DECL void drop_reference() noexcept;

  const std::size_t ceiling_;
  const std::size_t buffer_size_;
  loop_core& core_;
  buffer_pool& pool_;

  // Loop thread.
  pooled_buffer* free_ = nullptr;
  std::size_t minted_ = 0;
  std::size_t leased_ = 0;
  std::size_t leased_high_water_ = 0;
  std::size_t in_ring_ = 0;

  // Any thread.
  std::atomic<pooled_buffer*> returned_{nullptr};
  std::atomic<bool> open_{true};

  // After close(): the leased buffers still out, plus one for the pool.
  std::atomic<std::size_t> references_{0};
};

} // namespace detail
} // namespace turnloop

// The bodies need buffer_pool: header-only builds get them from
// turnloop/buffer_pool.hpp.

#endif // TURNLOOP_DETAIL_POOL_BUFFER_STORE_HPP
