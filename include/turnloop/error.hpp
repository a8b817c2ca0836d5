//
// turnloop/error.hpp
//
// turnloop's error codes, in a category named "turnloop" of the error_code
// in use (boost::system's, or std's with standalone Asio).
//

#ifndef TURNLOOP_ERROR_HPP
#define TURNLOOP_ERROR_HPP

#include <turnloop/detail/config.hpp>

#include <system_error>
#include <type_traits>

namespace turnloop {

/// Errors reported by turnloop.
enum class error
{
  /// A configured ceiling was reached; the submission was refused and
  /// nothing was queued.
  resource_limit = 1,

  /// A turnloop::config field is out of range; the message names the field.
  invalid_config,

  /// run() (or run_one, poll, ...) was called on a thread while another
  /// thread is running the same loop. A loop is run by one thread at a time.
  already_running
};

/// The category of turnloop::error. Its name is "turnloop".
TURNLOOP_DECL const error_category_type& error_category() noexcept;

/// Makes an error_code in the turnloop category.
inline error_code make_error_code(error e) noexcept
{
  return error_code(static_cast<int>(e), error_category());
}

} // namespace turnloop

TURNLOOP_ASIO_ERROR_CODE_ENUM(turnloop::error)

namespace std {

template <>
struct is_error_code_enum<turnloop::error> : std::true_type
{
};

} // namespace std

#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/impl/error.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_ERROR_HPP
