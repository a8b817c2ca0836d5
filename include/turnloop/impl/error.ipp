//
// turnloop/impl/error.ipp
//

#ifndef TURNLOOP_IMPL_ERROR_IPP
#define TURNLOOP_IMPL_ERROR_IPP

#include <turnloop/error.hpp>

#include <string>

namespace turnloop {
namespace detail {

class error_category_impl final : public error_category_base
{
public:
  // With Boost.System, a fixed id makes codes from this category compare
  // equal across shared libraries that each hold their own instance.
  constexpr error_category_impl() noexcept
    : error_category_base(0x7475726e6c6f6f70ULL) // "turnloop"
  {
  }

  const char* name() const noexcept override
  {
    return "turnloop";
  }

  std::string message(int ev) const override
  {
    switch (static_cast<error>(ev))
    {
    case error::resource_limit:
      return "a configured turnloop ceiling was reached";
    case error::invalid_config:
      return "invalid turnloop configuration";
    case error::already_running:
      return "the loop is already being run by another thread";
    }
    return "unknown turnloop error";
  }
};

} // namespace detail

TURNLOOP_DECL const error_category_type& error_category() noexcept
{
  static const detail::error_category_impl instance;
  return instance;
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_ERROR_IPP
