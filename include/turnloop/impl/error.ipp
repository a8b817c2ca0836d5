//
// turnloop/impl/error.ipp
//

#ifndef TURNLOOP_IMPL_ERROR_IPP
#define TURNLOOP_IMPL_ERROR_IPP

#include <turnloop/error.hpp>

namespace turnloop {
namespace detail {

class error_category_impl final : public boost::system::error_category
{
public:
  // A fixed id makes codes from this category compare equal across shared
  // libraries that each hold their own instance.
  constexpr error_category_impl() noexcept
    : boost::system::error_category(0x7475726e6c6f6f70ULL) // "turnloop"
  {
  }

  const char* name() const noexcept override
  {
    return "turnloop";
  }

  std::string message(int ev) const override
  {
    return message(ev, nullptr, 0);
  }

  const char* message(int ev, char*, std::size_t) const noexcept override
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

TURNLOOP_DECL const boost::system::error_category& error_category() noexcept
{
  static const detail::error_category_impl instance;
  return instance;
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_ERROR_IPP
