//
// turnloop/detail/slot_table.hpp
//
// Paged, generational storage for per-operation state: the one place where
// the loop's services keep what they track (blocking jobs, pooled reads,
// lease waits). The capacity is a ceiling, not a preallocation:
// - storage is pages of 64 slots that never move (a pointer to a slot stays
//   valid while the slot is in use), allocated only when the number of live
//   slots first passes a new page boundary;
// - the page directory grows on demand too, so a table with a ceiling of
//   16 M slots that never holds more than 10 costs one page;
// - a freed slot is reused (most recently freed first) without allocating;
// - ids carry a generation, so an id kept after its slot was freed (and
//   perhaps reused) is detected as stale;
// - at the ceiling, emplace refuses (turnloop::error::resource_limit).
// Not thread-safe: the owning service serialises access (normally by using
// it only on the loop's thread).
//

#ifndef TURNLOOP_DETAIL_SLOT_TABLE_HPP
#define TURNLOOP_DETAIL_SLOT_TABLE_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/error.hpp>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace turnloop {
namespace detail {

/// Identifies a slot: its index and the generation it had when filled.
struct slot_id
{
  std::uint32_t index = 0;
  std::uint32_t generation = 0; // 0 is never issued, so slot_id{} is "none"

  friend bool operator==(slot_id a, slot_id b) noexcept
  {
    return a.index == b.index && a.generation == b.generation;
  }

  explicit operator bool() const noexcept
  {
    return generation != 0;
  }
};

template <typename T>
class slot_table
{
public:
  static constexpr std::size_t page_size = 64;

  /// @param ceiling the most slots ever live at once (>= 1, < 2^32).
  explicit slot_table(std::size_t ceiling) noexcept
    : ceiling_(ceiling)
  {
    assert(ceiling >= 1 && ceiling < (std::size_t(1) << 32));
  }

  slot_table(const slot_table&) = delete;
  slot_table& operator=(const slot_table&) = delete;

  ~slot_table()
  {
    for (std::size_t i = 0; i < next_unused_; ++i)
    {
      slot& s = slot_at(static_cast<std::uint32_t>(i));
      if (s.live)
        s.value()->~T();
    }
  }

  /// Fills a free slot with T(args...). Sets @p ec to resource_limit, and
  /// returns slot_id{}, if the ceiling is reached.
  /// @throws std::bad_alloc if a new page cannot be allocated, or what T's
  /// constructor throws (the slot is then left free).
  template <typename... Args>
  slot_id emplace(error_code& ec, Args&&... args)
  {
    if (live_ == ceiling_)
    {
      ++refusals_;
      ec = make_error_code(error::resource_limit);
      return slot_id{};
    }
    std::uint32_t index;
    if (free_head_ != none)
      index = free_head_;
    else
    {
      index = static_cast<std::uint32_t>(next_unused_);
      if (index % page_size == 0 && index / page_size == pages_.size())
        pages_.push_back(std::make_unique<page>());
    }
    slot& s = slot_at(index);
    ::new (static_cast<void*>(s.storage)) T(std::forward<Args>(args)...);
    if (index == free_head_)
      free_head_ = s.next_free;
    else
      ++next_unused_;
    s.live = true;
    if (++s.generation == 0)
      s.generation = 1; // 0 means "none"
    if (++live_ > high_water_)
      high_water_ = live_;
    ec.clear();
    return slot_id{index, s.generation};
  }

  /// The value in slot @p id, or nullptr if the id is stale or was never
  /// issued. Allocates nothing.
  T* find(slot_id id) noexcept
  {
    if (id.index >= next_unused_)
      return nullptr;
    slot& s = slot_at(id.index);
    return (s.live && s.generation == id.generation) ? s.value() : nullptr;
  }

  /// Destroys the value in @p id and frees the slot; false if stale.
  bool erase(slot_id id) noexcept
  {
    T* value = find(id);
    if (!value)
      return false;
    slot& s = slot_at(id.index);
    value->~T();
    s.live = false;
    s.next_free = free_head_;
    free_head_ = id.index;
    --live_;
    return true;
  }

  std::size_t size() const noexcept { return live_; }
  std::size_t high_water() const noexcept { return high_water_; }
  std::size_t ceiling() const noexcept { return ceiling_; }
  std::size_t pages() const noexcept { return pages_.size(); }
  std::size_t refusals() const noexcept { return refusals_; }

private:
  static constexpr std::uint32_t none = 0xffffffffu;

  struct slot
  {
    alignas(T) unsigned char storage[sizeof(T)];
    std::uint32_t generation = 0;
    std::uint32_t next_free = none;
    bool live = false;

    T* value() noexcept
    {
      return std::launder(reinterpret_cast<T*>(storage));
    }
  };

  struct page
  {
    slot slots[page_size];
  };

  slot& slot_at(std::uint32_t index) noexcept
  {
    return pages_[index / page_size]->slots[index % page_size];
  }

  std::vector<std::unique_ptr<page>> pages_;
  std::size_t ceiling_;
  std::size_t next_unused_ = 0; // slots below this have been used at least once
  std::uint32_t free_head_ = none;
  std::size_t live_ = 0;
  std::size_t high_water_ = 0;
  std::size_t refusals_ = 0;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_SLOT_TABLE_HPP
