//
// turnloop/detail/operation_unit.hpp
//
// One unit of the loop's config::max_operations ceiling, held by an
// operation from its admission until its completion is delivered (or it is
// destroyed without running), and released exactly once.
//

#ifndef TURNLOOP_DETAIL_OPERATION_UNIT_HPP
#define TURNLOOP_DETAIL_OPERATION_UNIT_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/ceiling.hpp>

#include <utility>

namespace turnloop {
namespace detail {

class operation_unit
{
public:
  operation_unit() noexcept = default;

  /// Adopts a unit already taken from @p c with try_acquire().
  explicit operation_unit(ceiling& c) noexcept
    : ceiling_(&c)
  {
  }

  operation_unit(operation_unit&& other) noexcept
    : ceiling_(std::exchange(other.ceiling_, nullptr))
  {
  }

  operation_unit& operator=(operation_unit&& other) noexcept
  {
    if (this != &other)
    {
      reset();
      ceiling_ = std::exchange(other.ceiling_, nullptr);
    }
    return *this;
  }

  ~operation_unit()
  {
    reset();
  }

  /// Releases the unit now, e.g. before the completion handler runs, so
  /// that the handler can start the next operation.
  void reset() noexcept
  {
    if (ceiling_)
      std::exchange(ceiling_, nullptr)->release();
  }

private:
  ceiling* ceiling_ = nullptr;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_OPERATION_UNIT_HPP
