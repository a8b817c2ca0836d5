//
// turnloop/detail/blocking/blocking_traits.hpp
//
// What a blocking job's function returns, and the completion signature that
// follows from it.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_BLOCKING_TRAITS_HPP
#define TURNLOOP_DETAIL_BLOCKING_BLOCKING_TRAITS_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/stop_token.hpp>

#include <turnloop/detail/asio.hpp>

#include <exception>
#include <type_traits>

namespace turnloop {
namespace detail {

/// True if the job's function is called with a turnloop::stop_token.
template <typename Function>
inline constexpr bool takes_stop_token =
  std::is_invocable_v<std::decay_t<Function>, turnloop::stop_token>;

template <typename Function, bool = takes_stop_token<Function>>
struct blocking_invoke_result
{
  using type = std::invoke_result_t<std::decay_t<Function>, turnloop::stop_token>;
};

template <typename Function>
struct blocking_invoke_result<Function, false>
{
  using type = std::invoke_result_t<std::decay_t<Function>>;
};

template <typename Function>
using blocking_result_t =
  std::decay_t<typename blocking_invoke_result<Function>::type>;

template <typename Result>
struct blocking_signature
{
  using type = void(error_code, std::exception_ptr, Result);
};

template <>
struct blocking_signature<void>
{
  using type = void(error_code, std::exception_ptr);
};

/// Checks a job's function at the call, with messages a user can act on.
template <typename Function>
constexpr void check_blocking_function() noexcept
{
  using function_type = std::decay_t<Function>;
  static_assert(std::is_invocable_v<function_type>
      || std::is_invocable_v<function_type, turnloop::stop_token>,
      "a blocking job's function must be callable with no argument or "
      "with a turnloop::stop_token");
  static_assert(std::is_move_constructible_v<function_type>,
      "a blocking job's function must be move-constructible");
  using result_type = blocking_result_t<Function>;
  static_assert(std::is_void_v<result_type>
      || (std::is_default_constructible_v<result_type>
        && std::is_move_constructible_v<result_type>),
      "a blocking job's result must be default- and move-constructible: a "
      "refused, aborted or throwing job completes with a value-initialised "
      "one (return a std::optional otherwise)");
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_BLOCKING_TRAITS_HPP
