//
// turnloop/buffer_lease.hpp
//
// turnloop::buffer_lease: a buffer taken from a loop's buffer_pool, held for
// as long as the lease lives. doc/buffer_pool.md has the whole story.
//

#ifndef TURNLOOP_BUFFER_LEASE_HPP
#define TURNLOOP_BUFFER_LEASE_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/pool/buffer_store.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(buffer.hpp)

#include <cstddef>
#include <utility>

namespace turnloop {

/// A buffer leased from a loop's buffer_pool. Move-only; the buffer goes back
/// to the pool when the lease is destroyed, reset, or assigned another lease.
///
/// A lease can outlive the turn that produced it: move it into a write's
/// handler, another coroutine or another thread, and the buffer stays yours
/// until the lease lets go.
///
/// Where the buffer goes when the lease lets go:
/// - on the loop's thread, straight back to the pool, where the oldest
///   operation waiting for a buffer gets it (delivered in a turn);
/// - on another thread, onto a lock-free stack the loop takes back in its
///   next turn (a release never blocks and never allocates);
/// - after the loop has been destroyed, nowhere: its memory is freed. A
///   lease stays valid, and its bytes usable, for as long as it lives,
///   whatever happens to its loop.
///
/// Thread safety: one lease is one object, like a std::vector. Releasing
/// on another thread must not race with the loop's destructor, the same rule
/// as for posting to the loop from another thread.
class buffer_lease
{
public:
  /// An empty lease: no buffer, size() and capacity() are 0.
  buffer_lease() noexcept = default;

  buffer_lease(buffer_lease&& other) noexcept
    : buffer_(std::exchange(other.buffer_, nullptr)),
      size_(std::exchange(other.size_, 0))
  {
  }

  /// Returns the buffer held, if any, then takes @p other's.
  buffer_lease& operator=(buffer_lease&& other) noexcept
  {
    if (this != &other)
    {
      reset();
      buffer_ = std::exchange(other.buffer_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  buffer_lease(const buffer_lease&) = delete;
  buffer_lease& operator=(const buffer_lease&) = delete;

  /// Returns the buffer to its pool.
  ~buffer_lease()
  {
    reset();
  }

  /// True if the lease holds a buffer.
  explicit operator bool() const noexcept
  {
    return buffer_ != nullptr;
  }

  /// The bytes filled: what a pooled read delivered, or what resize() set.
  std::size_t size() const noexcept
  {
    return size_;
  }

  /// The buffer's size (config::pooled_buffer_size), or 0 if empty.
  std::size_t capacity() const noexcept
  {
    return buffer_ ? buffer_->store->buffer_size() : 0;
  }

  /// Sets the filled size, e.g. after writing into storage().
  /// @throws std::length_error if @p n > capacity().
  TURNLOOP_DECL void resize(std::size_t n);

  /// The filled bytes, [0, size()): pass them to a write as they are.
  ///
  /// Take the view before moving the lease into the write's handler:
  /// function arguments are evaluated in no fixed order, so
  /// `async_write(s, lease.data(), [l = std::move(lease)] ...)` may see an
  /// empty lease.
  asio::mutable_buffer data() noexcept
  {
    return asio::mutable_buffer(bytes(), size_);
  }

  asio::const_buffer data() const noexcept
  {
    return asio::const_buffer(bytes(), size_);
  }

  /// The whole buffer, [0, capacity()), to fill before resize().
  asio::mutable_buffer storage() noexcept
  {
    return asio::mutable_buffer(bytes(), capacity());
  }

  /// Returns the buffer to its pool now; the lease becomes empty.
  void reset() noexcept
  {
    if (buffer_)
    {
      detail::buffer_store::release(std::exchange(buffer_, nullptr));
      size_ = 0;
    }
  }

private:
  friend class buffer_pool;

  explicit buffer_lease(detail::pooled_buffer* b, std::size_t size = 0) noexcept
    : buffer_(b),
      size_(size)
  {
  }

  unsigned char* bytes() const noexcept
  {
    return buffer_ ? buffer_->bytes() : nullptr;
  }

  detail::pooled_buffer* buffer_ = nullptr;
  std::size_t size_ = 0;
};

} // namespace turnloop

#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/impl/buffer_lease.ipp>
// A lease gives its buffer back through the pool, whose header brings the
// code that does it.
# include <turnloop/buffer_pool.hpp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_BUFFER_LEASE_HPP
