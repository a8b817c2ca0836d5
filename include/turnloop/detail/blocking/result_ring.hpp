//
// turnloop/detail/blocking/result_ring.hpp
//
// The ring through which finished blocking jobs reach the loop: one
// consumer (the loop's thread), producers that push one at a time (under
// the pool's results mutex), a capacity fixed at construction. Its slots
// are allocated then but not written, so only what has been used is
// resident.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_RESULT_RING_HPP
#define TURNLOOP_DETAIL_BLOCKING_RESULT_RING_HPP

#include <turnloop/detail/config.hpp>

#include <atomic>
#include <cstddef>
#include <memory>

namespace turnloop {
namespace detail {

template <typename T>
class result_ring
{
public:
  /// Room for @p capacity entries (at least one).
  explicit result_ring(std::size_t capacity)
    : size_(capacity + 1), // one slot stays empty: full and empty differ
      slots_(new T[size_])
  {
  }

  result_ring(const result_ring&) = delete;
  result_ring& operator=(const result_ring&) = delete;

  /// Appends @p value; false if the ring is full. One producer at a time.
  bool push(T value) noexcept
  {
    const std::size_t tail = tail_.load(std::memory_order_relaxed);
    const std::size_t next = tail + 1 == size_ ? 0 : tail + 1;
    if (next == head_.load(std::memory_order_acquire))
      return false;
    slots_[tail] = value;
    tail_.store(next, std::memory_order_release);
    return true;
  }

  /// Takes the oldest entry into @p value; false if the ring is empty. The
  /// consumer's thread only.
  bool pop(T& value) noexcept
  {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_.load(std::memory_order_acquire))
      return false;
    value = slots_[head];
    head_.store(head + 1 == size_ ? 0 : head + 1, std::memory_order_release);
    return true;
  }

  /// True if an entry waits. Any thread (a hint from another).
  bool nonempty() const noexcept
  {
    return head_.load(std::memory_order_acquire)
      != tail_.load(std::memory_order_acquire);
  }

private:
  const std::size_t size_;
  std::unique_ptr<T[]> slots_;
  alignas(64) std::atomic<std::size_t> head_{0}; // the consumer's
  alignas(64) std::atomic<std::size_t> tail_{0}; // the producers'
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_RESULT_RING_HPP
