//
// turnloop/detail/ceiling.hpp
//
// A counted ceiling: how many of something are in use, the most ever in use,
// and how many requests were refused because the ceiling was reached. Any
// thread may acquire and release; a refusal changes nothing but the count of
// refusals.
//

#ifndef TURNLOOP_DETAIL_CEILING_HPP
#define TURNLOOP_DETAIL_CEILING_HPP

#include <turnloop/detail/config.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace turnloop {
namespace detail {

class ceiling
{
public:
  explicit ceiling(std::size_t limit) noexcept
    : limit_(limit)
  {
  }

  ceiling(const ceiling&) = delete;
  ceiling& operator=(const ceiling&) = delete;

  /// Takes @p n units if that stays within the limit.
  bool try_acquire(std::size_t n = 1) noexcept
  {
    std::size_t used = used_.load(std::memory_order_relaxed);
    do
    {
      if (n > limit_ - used)
      {
        refusals_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
    } while (!used_.compare_exchange_weak(used, used + n,
          std::memory_order_acq_rel, std::memory_order_relaxed));
    std::size_t high = high_water_.load(std::memory_order_relaxed);
    while (used + n > high && !high_water_.compare_exchange_weak(high,
          used + n, std::memory_order_relaxed))
    {
    }
    return true;
  }

  void release(std::size_t n = 1) noexcept
  {
    used_.fetch_sub(n, std::memory_order_acq_rel);
  }

  std::size_t limit() const noexcept { return limit_; }
  std::size_t in_use() const noexcept
  {
    return used_.load(std::memory_order_relaxed);
  }
  std::size_t high_water() const noexcept
  {
    return high_water_.load(std::memory_order_relaxed);
  }
  std::uint64_t refusals() const noexcept
  {
    return refusals_.load(std::memory_order_relaxed);
  }

private:
  const std::size_t limit_;
  std::atomic<std::size_t> used_{0};
  std::atomic<std::size_t> high_water_{0};
  std::atomic<std::uint64_t> refusals_{0};
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_CEILING_HPP
