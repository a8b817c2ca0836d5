//
// turnloop/detail/engine/impl/asio_config.ipp
//

#ifndef TURNLOOP_DETAIL_ENGINE_IMPL_ASIO_CONFIG_IPP
#define TURNLOOP_DETAIL_ENGINE_IMPL_ASIO_CONFIG_IPP

#include <turnloop/detail/engine/asio_config.hpp>

#if TURNLOOP_ASIO_VERSION >= 103400

#include <turnloop/error.hpp>

#include <turnloop/detail/asio.hpp>

#include <cstring>
#include <stdexcept>
#include <string>

namespace turnloop {
namespace detail {

struct pinned_setting
{
  const char* section;
  const char* key;
  const char* value;
  // Why a program may not choose another value, or nullptr if any value is
  // accepted and replaced (the concurrency hint, as loop(int) ignores it).
  const char* reason;
};

inline constexpr const char* locking_reason =
  "must be 1: other threads post to a loop and stop it";
inline constexpr const char* spin_reason = "must be 0: a loop never spins";
inline constexpr const char* wait_reason =
  "must be -1: a loop waits until there is work or a deadline";
inline constexpr const char* continuation_reason =
  "must be 1: the loop's turn and the completions it makes go to the "
  "scheduler's private queue, in io_context(1)'s order";

inline constexpr pinned_setting pinned_settings[] = {
  {"scheduler", "concurrency_hint", "1", nullptr},
  {"scheduler", "locking", "1", locking_reason},
  {"scheduler", "locking_spin_count", "0", spin_reason},
  {"scheduler", "task_usec", "-1", wait_reason},
  {"scheduler", "wait_usec", "-1", wait_reason},
  // Read from Asio 1.38.2 on (before, one-thread mode implied it).
  {"scheduler", "assume_continuation", "1", continuation_reason},
  {"reactor", "registration_locking", "1", locking_reason},
  {"reactor", "registration_locking_spin_count", "0", spin_reason},
  {"reactor", "io_locking", "1", locking_reason},
  {"reactor", "io_locking_spin_count", "0", spin_reason},
};

inline const pinned_setting* find_pinned(const char* section, const char* key) noexcept
{
  for (const pinned_setting& s : pinned_settings)
    if (std::strcmp(s.section, section) == 0 && std::strcmp(s.key, key) == 0)
      return &s;
  return nullptr;
}

[[noreturn]] inline void refuse_setting(const pinned_setting& s, const std::string& what)
{
  throw system_error(make_error_code(error::invalid_config),
      "turnloop::loop: Asio setting " + std::string(s.section) + "."
      + s.key + " " + what);
}

TURNLOOP_DECL user_asio_config::user_asio_config(
    const asio::execution_context::service_maker& initial_services)
  : context_(initial_services)
{
  if (!asio::has_service<asio::config_service>(context_))
    return;
  service_ = &asio::use_service<asio::config_service>(context_);
  const asio::config settings(context_);
  for (const pinned_setting& s : pinned_settings)
  {
    if (!s.reason)
      continue;
    const long long pinned = std::strtoll(s.value, nullptr, 10);
    long long chosen;
    try
    {
      chosen = settings.get(s.section, s.key, pinned);
    }
    catch (const std::out_of_range&)
    {
      refuse_setting(s, "is out of range; it " + std::string(s.reason));
    }
    if (chosen != pinned)
      refuse_setting(s, "is " + std::to_string(chosen) + ", " + s.reason);
  }
}

TURNLOOP_DECL pinned_asio_config::pinned_asio_config(
    asio::execution_context& ctx, const user_asio_config* user)
  : config_service(ctx),
    user_(user)
{
}

TURNLOOP_DECL const char* pinned_asio_config::get_value(const char* section,
    const char* key, char* value, std::size_t value_len) const
{
  if (const pinned_setting* s = find_pinned(section, key))
    return s->value;
  return user_ ? user_->get_value(section, key, value, value_len) : nullptr;
}

TURNLOOP_DECL void pinned_asio_config_maker::make(
    asio::execution_context& ctx) const
{
  const bool settings = user_ && user_->has_settings();
  asio::make_service<pinned_asio_config>(ctx, settings ? user_ : nullptr);
  if (initial_services_ && !settings)
    initial_services_->make(ctx);
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_ASIO_VERSION >= 103400

#endif // TURNLOOP_DETAIL_ENGINE_IMPL_ASIO_CONFIG_IPP
