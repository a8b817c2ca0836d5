//
// turnloop/stop_token.hpp
//
// turnloop::stop_token, what async_blocking passes to a job that asks to be
// told it should stop: std::stop_token wherever the standard library has it
// (libstdc++, libc++ 17 and later, MSVC), and where it has not (libc++ 16:
// no <stop_token>), a token of turnloop's own with the same stop_requested()
// and stop_possible(), but no std::stop_callback to register: a job there
// polls. The one place that knows which.
//

#ifndef TURNLOOP_STOP_TOKEN_HPP
#define TURNLOOP_STOP_TOKEN_HPP

#include <version>

#if defined(__cpp_lib_jthread)
# include <stop_token>
# define TURNLOOP_HAS_STD_STOP_TOKEN 1
#else // defined(__cpp_lib_jthread)
# include <atomic>
# include <memory>
#endif // defined(__cpp_lib_jthread)

namespace turnloop {

#if defined(TURNLOOP_HAS_STD_STOP_TOKEN)

/// The stop token a blocking job may take: std::stop_token.
using stop_token = std::stop_token;

namespace detail {
using stop_source = std::stop_source;
} // namespace detail

#else // defined(TURNLOOP_HAS_STD_STOP_TOKEN)

namespace detail {
class stop_source;
} // namespace detail

/// The stop token a blocking job may take, where the standard library has
/// no std::stop_token: a view of its job's stop request. Cheap to copy; any
/// thread.
class stop_token
{
public:
  /// A token that no request can reach.
  stop_token() noexcept = default;

  /// True once the job has been asked to stop.
  bool stop_requested() const noexcept
  {
    return state_ && state_->load(std::memory_order_acquire);
  }

  /// True if a stop can still be requested (or has been).
  bool stop_possible() const noexcept
  {
    return state_ != nullptr;
  }

private:
  friend class detail::stop_source;

  explicit stop_token(std::shared_ptr<const std::atomic<bool>> state) noexcept
    : state_(std::move(state))
  {
  }

  std::shared_ptr<const std::atomic<bool>> state_;
};

namespace detail {

/// What requests the stop: the part of std::stop_source the blocking
/// service uses.
class stop_source
{
public:
  stop_source()
    : state_(std::make_shared<std::atomic<bool>>(false))
  {
  }

  stop_token get_token() const noexcept
  {
    return stop_token(state_);
  }

  bool request_stop() noexcept
  {
    return !state_->exchange(true, std::memory_order_acq_rel);
  }

private:
  std::shared_ptr<std::atomic<bool>> state_;
};

} // namespace detail

#endif // defined(TURNLOOP_HAS_STD_STOP_TOKEN)

} // namespace turnloop

#endif // TURNLOOP_STOP_TOKEN_HPP
