//
// turnloop/detail/ceiling_unit.hpp
//
// One unit taken from a detail::ceiling that is shared (held through a
// std::shared_ptr), owned by whatever it counts and given back exactly once,
// when that owner lets go of it, on whichever thread. The shared ownership
// keeps the ceiling alive as long as any unit of it is held, so a unit may
// outlive the object that handed it out.
//

#ifndef TURNLOOP_DETAIL_CEILING_UNIT_HPP
#define TURNLOOP_DETAIL_CEILING_UNIT_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/ceiling.hpp>

#include <memory>
#include <utility>

namespace turnloop {
namespace detail {

class ceiling_unit
{
public:
  ceiling_unit() noexcept = default;

  /// Takes one unit of @p from; an empty unit if @p from is at its limit.
  static ceiling_unit take(std::shared_ptr<ceiling> from) noexcept
  {
    ceiling_unit unit;
    if (from && from->try_acquire())
      unit.ceiling_ = std::move(from);
    return unit;
  }

  ceiling_unit(ceiling_unit&& other) noexcept = default;

  ceiling_unit& operator=(ceiling_unit&& other) noexcept
  {
    if (this != &other)
    {
      reset();
      ceiling_ = std::move(other.ceiling_);
    }
    return *this;
  }

  ~ceiling_unit()
  {
    reset();
  }

  /// Gives the unit back now.
  void reset() noexcept
  {
    if (ceiling_)
    {
      ceiling_->release();
      ceiling_.reset();
    }
  }

  explicit operator bool() const noexcept
  {
    return ceiling_ != nullptr;
  }

private:
  std::shared_ptr<ceiling> ceiling_;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_CEILING_UNIT_HPP
