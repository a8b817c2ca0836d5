//
// turnloop/detail/engine/asio_config.hpp
//
// From Asio 1.34 (Boost 1.87), a context's scheduler and reactor read their
// settings from the context's config_service when they are built. The engine
// depends on some of them: one-thread mode (posts from the loop thread go to
// the scheduler's private queue), locking (other threads post to a loop and
// stop it), no spinning and no fixed waits (a loop blocks until there is work
// or a deadline). A loop built from a program's own service_maker gets the
// program's settings with those pinned; a program that asks for a pinned
// setting to be something else is refused, naming the setting.
//

#ifndef TURNLOOP_DETAIL_ENGINE_ASIO_CONFIG_HPP
#define TURNLOOP_DETAIL_ENGINE_ASIO_CONFIG_HPP

#include <turnloop/detail/config.hpp>

#if TURNLOOP_ASIO_VERSION >= 103400

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(config.hpp)
#include TURNLOOP_ASIO_HEADER(execution_context.hpp)

#include <cstddef>

namespace turnloop {
namespace detail {

/// What a program's service_maker brings to a loop. It is run once against a
/// private context, to see whether it makes a configuration: if it does, the
/// loop reads the program's settings from there (other services that maker
/// makes stay there); if it does not, it is run again on the loop itself, so
/// its services are the loop's, as with io_context.
class user_asio_config
{
public:
  /// Runs @p initial_services against a private context and checks the
  /// settings a loop pins.
  /// @throws system_error with turnloop::error::invalid_config,
  /// naming the first pinned setting given a value a loop cannot run with.
  TURNLOOP_DECL explicit user_asio_config(
      const asio::execution_context::service_maker& initial_services);

  user_asio_config(const user_asio_config&) = delete;
  user_asio_config& operator=(const user_asio_config&) = delete;

  /// True if the program's maker made a config_service.
  bool has_settings() const noexcept
  {
    return service_ != nullptr;
  }

  /// The program's value of @p section.@p key, or nullptr if it set none.
  const char* get_value(const char* section, const char* key, char* value,
      std::size_t value_len) const
  {
    return service_ ? service_->get_value(section, key, value, value_len)
      : nullptr;
  }

private:
  asio::execution_context context_;
  asio::config_service* service_ = nullptr;
};

/// The config_service of a loop built from a service_maker: the pinned
/// settings' values, and the program's (or nothing) for every other one.
class pinned_asio_config final : public asio::config_service
{
public:
  TURNLOOP_DECL pinned_asio_config(asio::execution_context& ctx,
      const user_asio_config* user);

  TURNLOOP_DECL const char* get_value(const char* section, const char* key,
      char* value, std::size_t value_len) const override;

private:
  const user_asio_config* user_;
};

/// Installs pinned_asio_config as a context's first service, then, if the
/// program's maker made no configuration, the program's services. @p user
/// (may be null) must outlive the context's services; @p initial_services
/// (null with @p user) the context's construction.
class pinned_asio_config_maker final
  : public asio::execution_context::service_maker
{
public:
  pinned_asio_config_maker(const user_asio_config* user,
      const service_maker* initial_services) noexcept
    : user_(user),
      initial_services_(initial_services)
  {
  }

  ~pinned_asio_config_maker() override = default;

  TURNLOOP_DECL void make(asio::execution_context& ctx) const override;

private:
  const user_asio_config* user_;
  const service_maker* initial_services_;
};

} // namespace detail
} // namespace turnloop

#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/detail/engine/impl/asio_config.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_ASIO_VERSION >= 103400

#endif // TURNLOOP_DETAIL_ENGINE_ASIO_CONFIG_HPP
