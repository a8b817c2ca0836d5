//
// turnloop/detail/accept/handle_unit.hpp
//
// One unit of the loop's config::max_handles ceiling, owned by whatever holds
// the handle (an accept in progress, then the accepted socket) and given back
// exactly once, when that owner lets go of it.
//
// A handle may be released on any thread, and even after its loop is gone:
// it points at a small anchor that the loop's handle service and every
// handle it issued share, not at the loop. The anchor's mutex serialises a
// release with the service; once the service is destroyed the anchor says
// so, a release then does nothing, and the last one out frees the anchor.
//

#ifndef TURNLOOP_DETAIL_ACCEPT_HANDLE_UNIT_HPP
#define TURNLOOP_DETAIL_ACCEPT_HANDLE_UNIT_HPP

#include <turnloop/detail/config.hpp>

#include <cstddef>
#include <mutex>
#include <utility>

namespace turnloop {
namespace detail {

class handle_service;

/// Shared by a loop's handle service and the handles it issued.
struct handle_anchor
{
  /// Guards this anchor and all of the service's state.
  std::mutex mutex;

  /// The service, or nullptr once it has been destroyed.
  handle_service* service;

  /// One for the service while it exists, one per handle it issued.
  std::size_t refs = 1;

  explicit handle_anchor(handle_service* s) noexcept
    : service(s)
  {
  }
};

/// Gives a handle back: to the accept first in line for one, or else to the
/// loop's ceiling; nothing, once the loop is gone. Any thread.
TURNLOOP_DECL void release_handle(handle_anchor* anchor) noexcept;

class handle_unit
{
public:
  handle_unit() noexcept = default;

  handle_unit(handle_unit&& other) noexcept
    : anchor_(std::exchange(other.anchor_, nullptr))
  {
  }

  handle_unit& operator=(handle_unit&& other) noexcept
  {
    if (this != &other)
    {
      reset();
      anchor_ = std::exchange(other.anchor_, nullptr);
    }
    return *this;
  }

  ~handle_unit()
  {
    reset();
  }

  /// Gives the handle back now (see release_handle).
  void reset() noexcept
  {
    if (anchor_)
      release_handle(std::exchange(anchor_, nullptr));
  }

  explicit operator bool() const noexcept
  {
    return anchor_ != nullptr;
  }

private:
  friend class handle_service;

  // Adopts a handle the service has counted (and referenced the anchor for).
  explicit handle_unit(handle_anchor* anchor) noexcept
    : anchor_(anchor)
  {
  }

  handle_anchor* anchor_ = nullptr;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ACCEPT_HANDLE_UNIT_HPP
