//
// turnloop/impl/read_pooled.hpp
//

#ifndef TURNLOOP_IMPL_READ_POOLED_HPP
#define TURNLOOP_IMPL_READ_POOLED_HPP

#include <type_traits>
#include <utility>

namespace turnloop {
namespace detail {

template <typename Stream>
class initiate_read_pooled
{
public:
  using executor_type = typename Stream::executor_type;

  explicit initiate_read_pooled(Stream& stream) noexcept
    : stream_(stream)
  {
  }

  executor_type get_executor() const noexcept
  {
    return stream_.get_executor();
  }

  template <typename Handler>
  void operator()(Handler&& handler) const
  {
    using handler_type = std::decay_t<Handler>;
    read_pooled_op<Stream, handler_type>::start(stream_,
        handler_type(std::forward<Handler>(handler)));
  }

private:
  Stream& stream_;
};

} // namespace detail

template <typename Stream, typename CompletionToken>
  requires detail::pollable_stream<Stream>
auto async_read_pooled(Stream& stream, CompletionToken&& token)
{
  return boost::asio::async_initiate<CompletionToken,
    void(boost::system::error_code, buffer_lease)>(
        detail::initiate_read_pooled<Stream>(stream), token);
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_READ_POOLED_HPP
