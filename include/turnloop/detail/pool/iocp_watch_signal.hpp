//
// turnloop/detail/pool/iocp_watch_signal.hpp
//
// The signal that ends a pooled read's watch (buffer_waiter::watch) on the
// IOCP engine. The watch is an async_wait(wait_error), which Asio's IOCP
// socket service queues on its select reactor as an except_op; but the
// canceller it emplaces in the operation's slot cancels, for wait_error,
// the reactor's read_op queue (win_iocp_socket_service_base::async_wait,
// Asio 1.81 to 1.38 at least), so emitting asio::cancellation_signal left
// the watch pending: a unit of the loop's work until the socket closed, so
// run() did not return, and one more watch for every wait. This signal's
// slot keeps what Asio emplaces in storage of its own, whose address is the
// key Asio gave the operation, and emit() cancels that key in the
// except_op queue.
//

#ifndef TURNLOOP_DETAIL_POOL_IOCP_WATCH_SIGNAL_HPP
#define TURNLOOP_DETAIL_POOL_IOCP_WATCH_SIGNAL_HPP

#include <turnloop/detail/config.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(cancellation_type.hpp)
#include TURNLOOP_ASIO_HEADER(detail/select_reactor.hpp)

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace turnloop {
namespace detail {

class iocp_watch_signal
{
public:
  /// A slot of Asio's CancellationSlot kind, for the one operation that
  /// emplaces its canceller in it.
  class slot_type
  {
  public:
    explicit slot_type(iocp_watch_signal* s) noexcept
      : signal_(s)
    {
    }

    template <typename Canceller, typename... Args>
    Canceller& emplace(Args&&... args)
    {
      static_assert(sizeof(Canceller) <= storage_size
          && alignof(Canceller) <= alignof(std::max_align_t),
          "the canceller fits the signal's storage");
      clear();
      Canceller* c = ::new (static_cast<void*>(signal_->storage_))
        Canceller(std::forward<Args>(args)...);
      signal_->canceller_ = c;
      signal_->destroy_ = [](void* p) noexcept {
        static_cast<Canceller*>(p)->~Canceller();
      };
      return *c;
    }

    template <typename Canceller>
    auto& assign(Canceller&& c)
    {
      using type = std::decay_t<Canceller>;
      return emplace<type>(std::forward<Canceller>(c));
    }

    void clear() noexcept
    {
      signal_->destroy();
    }

    bool is_connected() const noexcept
    {
      return signal_ != nullptr;
    }

    bool has_handler() const noexcept
    {
      return signal_ && signal_->canceller_;
    }

  private:
    iocp_watch_signal* signal_;
  };

  iocp_watch_signal() noexcept = default;
  iocp_watch_signal(const iocp_watch_signal&) = delete;
  iocp_watch_signal& operator=(const iocp_watch_signal&) = delete;

  ~iocp_watch_signal()
  {
    destroy();
  }

  slot_type slot() noexcept
  {
    return slot_type(this);
  }

  /// The socket whose watch this is: emit() cancels in its except_op queue.
  void watch(asio::detail::select_reactor& reactor, asio::detail::socket_type s,
      asio::detail::select_reactor::per_descriptor_data& data) noexcept
  {
    reactor_ = &reactor;
    socket_ = s;
    data_ = &data;
  }

  /// Ends the watch (any cancellation type but none): it completes later
  /// with operation_aborted.
  void emit(asio::cancellation_type_t type) noexcept
  {
    if (type == asio::cancellation_type::none || !canceller_ || !reactor_)
      return;
    reactor_->cancel_ops_by_key(socket_, *data_,
        asio::detail::select_reactor::except_op, canceller_);
  }

private:
  static constexpr std::size_t storage_size = 256;

  void destroy() noexcept
  {
    if (canceller_)
      destroy_(std::exchange(canceller_, nullptr));
  }

  alignas(std::max_align_t) unsigned char storage_[storage_size];
  void* canceller_ = nullptr;
  void (*destroy_)(void*) noexcept = nullptr;
  asio::detail::select_reactor* reactor_ = nullptr;
  asio::detail::socket_type socket_ = asio::detail::invalid_socket;
  asio::detail::select_reactor::per_descriptor_data* data_ = nullptr;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_POOL_IOCP_WATCH_SIGNAL_HPP
