//
// test/counting_allocator.hpp
//
// A global allocator that counts, for the cases that prove a warm path
// allocates nothing, and fails on demand, for the cases that prove an
// allocation failure loses nothing. It defines the replacement functions,
// so a test module includes it in exactly one file.
//
// operator new is counted always. Asio takes handler memory from
// aligned_alloc, which a replaced operator new never sees, so the C
// allocation functions are interposed too, forwarding to glibc's own;
// except under the sanitizers, which own malloc themselves, and on Windows,
// whose C library cannot be interposed (there only operator new is counted;
// the Windows test build has Asio take handler memory from operator new,
// test/Jamfile).
//

#ifndef TURNLOOP_TEST_COUNTING_ALLOCATOR_HPP
#define TURNLOOP_TEST_COUNTING_ALLOCATOR_HPP

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace test {

/// Allocations made by the process so far, on every thread.
inline std::atomic<long> allocations{0};

/// One allocation the counter must see: a call of operator new itself,
/// which, unlike a new-expression, a compiler may not elide (clang does
/// elide `delete new int`).
inline void allocate_once()
{
  ::operator delete(::operator new(sizeof(int)));
}

/// While not 0, operator new throws std::bad_alloc, on any thread, for every
/// request of at least this many bytes: it aims at one allocation site by
/// its size (a pooled buffer of an unusual size, say).
inline std::atomic<std::size_t> fail_from_bytes{0};

/// operator new throws std::bad_alloc for the next so many requests made on
/// the calling thread.
inline thread_local long fail_next_on_this_thread = 0;

/// True if a request for @p n bytes is to fail now (and counts it).
inline bool fails_now(std::size_t n) noexcept
{
  if (fail_next_on_this_thread > 0)
  {
    --fail_next_on_this_thread;
    return true;
  }
  const std::size_t from = fail_from_bytes.load(std::memory_order_relaxed);
  return from != 0 && n >= from;
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) \
  && !defined(_WIN32)
# define TURNLOOP_TEST_COUNTS_MALLOC 1
/// True where malloc and its relatives are counted as well.
inline constexpr bool counts_malloc = true;
#else // !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) ...
inline constexpr bool counts_malloc = false;
#endif // !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) ...

} // namespace test

void* operator new(std::size_t n)
{
  test::allocations.fetch_add(1, std::memory_order_relaxed);
  if (test::fails_now(n))
    throw std::bad_alloc();
  if (void* p = std::malloc(n ? n : 1))
    return p;
  throw std::bad_alloc();
}

void* operator new(std::size_t n, const std::nothrow_t&) noexcept
{
  test::allocations.fetch_add(1, std::memory_order_relaxed);
  if (test::fails_now(n))
    return nullptr;
  return std::malloc(n ? n : 1);
}

void operator delete(void* p) noexcept
{
  std::free(p);
}

void operator delete(void* p, const std::nothrow_t&) noexcept
{
  std::free(p);
}

void operator delete(void* p, std::size_t) noexcept
{
  std::free(p);
}

#if defined(TURNLOOP_TEST_COUNTS_MALLOC)
extern "C" {

void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);

void* malloc(std::size_t n) noexcept
{
  test::allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}

void* calloc(std::size_t count, std::size_t n) noexcept
{
  test::allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(count, n);
}

void* realloc(void* p, std::size_t n) noexcept
{
  test::allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}

void* aligned_alloc(std::size_t alignment, std::size_t n) noexcept
{
  test::allocations.fetch_add(1, std::memory_order_relaxed);
  // Asio's handler memory: fails as operator new does, per thread.
  if (test::fail_next_on_this_thread > 0)
  {
    --test::fail_next_on_this_thread;
    return nullptr;
  }
  return __libc_memalign(alignment, n);
}

void* memalign(std::size_t alignment, std::size_t n) noexcept
{
  test::allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(alignment, n);
}

int posix_memalign(void** out, std::size_t alignment, std::size_t n) noexcept
{
  test::allocations.fetch_add(1, std::memory_order_relaxed);
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0)
    return EINVAL;
  void* p = __libc_memalign(alignment, n);
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}

void free(void* p) noexcept
{
  __libc_free(p);
}

} // extern "C"
#endif // defined(TURNLOOP_TEST_COUNTS_MALLOC)

#endif // TURNLOOP_TEST_COUNTING_ALLOCATOR_HPP
