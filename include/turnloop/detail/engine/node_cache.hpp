//
// turnloop/detail/engine/node_cache.hpp
//
// Recycles the memory of queued-handler nodes, so a warm loop posts without
// calling the allocator, from its own thread or from others.
//
// A node of up to 512 bytes is rounded up to one of four size classes.
// - On the loop thread, a freed node goes onto the loop's free list for its
//   class (at most per_class nodes).
// - Beyond that, freed nodes gather into an outgoing batch; a full batch is
//   handed to other threads through one atomic slot per class, which holds a
//   short stack of batches (at most 16 KiB of nodes per class). A thread
//   that posts to the loop takes the whole stack with one exchange into a
//   thread-local cache. Only the loop pushes and takers take everything, so
//   the slot has no ABA problem; the number of batches lives in the slot
//   word's top bits, so the loop never reads a node a taker may own. If the
//   slot is full, the batch is freed.
// Every list is capped: a loop's caches hold at most 2 x per_class nodes plus
// 16 KiB per class, and a posting thread at most 16 KiB per class.
//

#ifndef TURNLOOP_DETAIL_ENGINE_NODE_CACHE_HPP
#define TURNLOOP_DETAIL_ENGINE_NODE_CACHE_HPP

#include <turnloop/detail/config.hpp>

#if defined(_WIN32)
# include <turnloop/detail/asio.hpp>
// Winsock's headers before windows.h, as Asio includes them: windows.h
// first would bring in the old winsock.h.
# include TURNLOOP_ASIO_HEADER(detail/socket_types.hpp)
#endif // defined(_WIN32)

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

namespace turnloop {
namespace detail {

struct free_node
{
  free_node* next;
  free_node* next_batch; // in the first node of a handed-back batch
};

inline void free_list(free_node* n) noexcept
{
  while (n)
  {
    free_node* next = n->next;
    ::operator delete(static_cast<void*>(n));
    n = next;
  }
}

inline void free_batches(free_node* batch) noexcept
{
  while (batch)
  {
    free_node* next = batch->next_batch;
    free_list(batch);
    batch = next;
  }
}

// Nodes a posting thread took from loops' batches; at most one batch per
// class, since a batch is only taken when the list is empty.
struct thread_node_cache
{
  static constexpr std::size_t classes = 4;
  free_node* heads[classes] = {};

  ~thread_node_cache()
  {
    for (free_node* head : heads)
      free_list(head);
  }
};

#if defined(_WIN32)
// Windows: the cache is on the heap, found through a fiber-local slot whose
// callback frees it when the thread (or fiber) ends. Not a thread_local with
// a destructor: MinGW-w64's GCC 12 has no native TLS, and its emulated TLS
// frees a thread's variables before their destructors run at thread exit
// (a winpthreads key destructor each, emutls's first), so ~thread_node_cache
// read freed memory, which other threads' allocations had reused: a garbage
// pointer, or a cycle, in the lists it freed. The callback is given the
// cache's address, not read from thread-local storage.
inline void NTAPI free_thread_node_cache(void* cache) noexcept
{
  delete static_cast<thread_node_cache*>(cache);
}

inline DWORD thread_node_cache_slot() noexcept
{
  static const DWORD slot = ::FlsAlloc(&free_thread_node_cache);
  return slot;
}

/// This thread's cache, or null if Windows gives it none (no slot left, or
/// no memory): the thread then allocates without one.
inline thread_node_cache* this_thread_node_cache() noexcept
{
  const DWORD slot = thread_node_cache_slot();
  if (slot == FLS_OUT_OF_INDEXES)
    return nullptr;
  if (void* cache = ::FlsGetValue(slot))
    return static_cast<thread_node_cache*>(cache);
  thread_node_cache* cache = new (std::nothrow) thread_node_cache;
  if (cache && !::FlsSetValue(slot, cache))
  {
    delete cache;
    return nullptr;
  }
  return cache;
}
#else // defined(_WIN32)
/// This thread's cache, through a call where that matters
/// (TURNLOOP_THREAD_LOCAL_ACCESS: a coroutine that posts, moves to another
/// thread and posts again must use that thread's cache).
TURNLOOP_THREAD_LOCAL_ACCESS inline thread_node_cache* this_thread_node_cache() noexcept
{
  static thread_local thread_node_cache cache;
  return &cache;
}
#endif // defined(_WIN32)

class node_cache
{
public:
  static constexpr std::size_t smallest = 64;
  static constexpr std::size_t classes = thread_node_cache::classes;
  // 64, 128, 256, 512 bytes
  static constexpr std::size_t largest = smallest << (classes - 1);
  static constexpr unsigned per_class = 32;

  node_cache() noexcept = default;
  node_cache(const node_cache&) = delete;
  node_cache& operator=(const node_cache&) = delete;

  ~node_cache()
  {
    for (std::size_t c = 0; c < classes; ++c)
    {
      free_list(heads_[c]);
      free_list(outgoing_[c]);
      free_batches(top_of(returned_[c].exchange(0, std::memory_order_acquire)));
    }
  }

  /// The size actually allocated for a request of @p bytes: every node of a
  /// class has the class's size, so any of them can be reused for another.
  static constexpr std::size_t rounded(std::size_t bytes) noexcept
  {
    std::size_t size = smallest;
    while (size < bytes && size < largest)
      size <<= 1;
    return bytes > largest ? bytes : size;
  }

  /// Loop thread only.
  template <std::size_t Bytes>
  void* allocate()
  {
    if constexpr (Bytes <= largest)
    {
      constexpr std::size_t c = class_of(Bytes);
      if (free_node* n = heads_[c])
      {
        heads_[c] = n->next;
        --counts_[c];
        return n;
      }
    }
    return ::operator new(rounded(Bytes));
  }

  /// Any thread but the loop's: from this thread's cache, refilled with a
  /// batch the loop handed back.
  template <std::size_t Bytes>
  void* allocate_elsewhere()
  {
    if constexpr (Bytes <= largest)
    {
      constexpr std::size_t c = class_of(Bytes);
      thread_node_cache* cache = this_thread_node_cache();
      if (!cache) [[unlikely]]
        return ::operator new(rounded(Bytes));
      thread_node_cache& t = *cache;
      // Loaded before the exchange: posters that find the slot empty,
      // which is every post while the loop falls behind, leave its cache
      // line shared instead of taking it from each other.
      if (!t.heads[c] && returned_[c].load(std::memory_order_relaxed) != 0)
      {
        // Take every batch in the slot, chained into one list.
        free_node* batch = top_of(returned_[c].exchange(0,
            std::memory_order_acquire));
        while (batch)
        {
          free_node* next_batch = batch->next_batch;
          free_node* last = batch;
          while (last->next)
            last = last->next;
          last->next = t.heads[c];
          t.heads[c] = batch;
          batch = next_batch;
        }
      }
      if (free_node* n = t.heads[c])
      {
        t.heads[c] = n->next;
        return n;
      }
    }
    return ::operator new(rounded(Bytes));
  }

  /// Loop thread only.
  template <std::size_t Bytes>
  void deallocate(void* p) noexcept
  {
    if constexpr (Bytes <= largest)
    {
      constexpr std::size_t c = class_of(Bytes);
      if (counts_[c] < per_class)
      {
        heads_[c] = ::new (p) free_node{heads_[c], nullptr};
        ++counts_[c];
        return;
      }
      outgoing_[c] = ::new (p) free_node{outgoing_[c], nullptr};
      if (++outgoing_counts_[c] == per_class)
      {
        hand_back(c, outgoing_[c]);
        outgoing_[c] = nullptr;
        outgoing_counts_[c] = 0;
      }
      return;
    }
    ::operator delete(p);
  }

  /// Off the loop thread (e.g. when a handler is destroyed elsewhere).
  static void deallocate_elsewhere(void* p) noexcept
  {
    ::operator delete(p);
  }

private:
  // A slot word: the top batch's address in the low 48 bits (user-space
  // addresses on x86-64 and AArch64 Linux), the number of batches above.
  static constexpr unsigned depth_shift = 48;
  static_assert(sizeof(void*) == 8, "the slot packs a count into a pointer");

  static free_node* top_of(std::uintptr_t word) noexcept
  {
    return reinterpret_cast<free_node*>(
        word & ((std::uintptr_t(1) << depth_shift) - 1));
  }

  // Pushes a full batch onto the class's slot, or frees it if the slot
  // already holds its byte budget. Only the loop pushes, and takers empty
  // the slot with one exchange, so a failed CAS only means "taken".
  void hand_back(std::size_t c, free_node* batch) noexcept
  {
    const std::uintptr_t max_depth =
      (16 * 1024) / (per_class * (smallest << c)) + 1;
    std::uintptr_t word = returned_[c].load(std::memory_order_relaxed);
    for (;;)
    {
      const std::uintptr_t depth = word >> depth_shift;
      if (depth >= max_depth)
      {
        free_list(batch);
        return;
      }
      batch->next_batch = top_of(word);
      const std::uintptr_t pushed = reinterpret_cast<std::uintptr_t>(batch)
        | ((depth + 1) << depth_shift);
      if (returned_[c].compare_exchange_weak(word, pushed,
            std::memory_order_release, std::memory_order_relaxed))
        return;
    }
  }

  static constexpr std::size_t class_of(std::size_t bytes) noexcept
  {
    std::size_t c = 0;
    for (std::size_t size = smallest; size < bytes; size <<= 1)
      ++c;
    return c;
  }

  free_node* heads_[classes] = {};
  unsigned counts_[classes] = {};
  free_node* outgoing_[classes] = {};
  unsigned outgoing_counts_[classes] = {};
  alignas(64) std::atomic<std::uintptr_t> returned_[classes] = {};
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ENGINE_NODE_CACHE_HPP
