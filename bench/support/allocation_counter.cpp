//
// bench/support/allocation_counter.cpp
//
// Interposes glibc's allocation functions in the benchmark executable (the
// documented way to replace malloc) and forwards each to glibc's own
// implementation, counting on the way while counting is on. Counting is off
// by default and costs one relaxed load per call then, so timed runs are not
// slowed by it.
//

#include "allocation_counter.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>

#include <malloc.h>
#include <stdlib.h>

extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* p, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void* __libc_valloc(std::size_t size);
void* __libc_pvalloc(std::size_t size);
void __libc_free(void* p);
}

namespace {

std::atomic<bool> counting{false};
std::atomic<std::uint64_t> allocations{0};
std::atomic<std::uint64_t> frees{0};
std::atomic<std::int64_t> net_bytes{0};

void note_allocation(void* p) noexcept
{
  if (p && counting.load(std::memory_order_relaxed))
  {
    allocations.fetch_add(1, std::memory_order_relaxed);
    net_bytes.fetch_add(static_cast<std::int64_t>(malloc_usable_size(p)),
        std::memory_order_relaxed);
  }
}

void note_free(void* p) noexcept
{
  if (p && counting.load(std::memory_order_relaxed))
  {
    frees.fetch_add(1, std::memory_order_relaxed);
    net_bytes.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)),
        std::memory_order_relaxed);
  }
}

} // namespace

extern "C" void* malloc(std::size_t size) noexcept
{
  void* p = __libc_malloc(size);
  note_allocation(p);
  return p;
}

extern "C" void* calloc(std::size_t count, std::size_t size) noexcept
{
  void* p = __libc_calloc(count, size);
  note_allocation(p);
  return p;
}

extern "C" void* realloc(void* p, std::size_t size) noexcept
{
  // A realloc is a free of the old block and an allocation of the new one,
  // even when glibc grows the block in place.
  note_free(p);
  void* q = __libc_realloc(p, size);
  note_allocation(q);
  return q;
}

extern "C" void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept
{
  void* p = __libc_memalign(alignment, size);
  note_allocation(p);
  return p;
}

extern "C" void* memalign(std::size_t alignment, std::size_t size) noexcept
{
  void* p = __libc_memalign(alignment, size);
  note_allocation(p);
  return p;
}

extern "C" int posix_memalign(void** out, std::size_t alignment,
    std::size_t size) noexcept
{
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0)
    return EINVAL;
  void* p = __libc_memalign(alignment, size);
  if (!p)
    return ENOMEM;
  note_allocation(p);
  *out = p;
  return 0;
}

extern "C" void* valloc(std::size_t size) noexcept
{
  void* p = __libc_valloc(size);
  note_allocation(p);
  return p;
}

extern "C" void* pvalloc(std::size_t size) noexcept
{
  void* p = __libc_pvalloc(size);
  note_allocation(p);
  return p;
}

extern "C" void free(void* p) noexcept
{
  note_free(p);
  __libc_free(p);
}

namespace bench {

void start_counting_allocations() noexcept
{
  allocations.store(0, std::memory_order_relaxed);
  frees.store(0, std::memory_order_relaxed);
  net_bytes.store(0, std::memory_order_relaxed);
  counting.store(true, std::memory_order_seq_cst);
}

allocation_totals stop_counting_allocations() noexcept
{
  counting.store(false, std::memory_order_seq_cst);
  return {allocations.load(std::memory_order_relaxed),
    frees.load(std::memory_order_relaxed),
    net_bytes.load(std::memory_order_relaxed)};
}

} // namespace bench
