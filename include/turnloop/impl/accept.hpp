//
// turnloop/impl/accept.hpp
//

#ifndef TURNLOOP_IMPL_ACCEPT_HPP
#define TURNLOOP_IMPL_ACCEPT_HPP

namespace turnloop {

template <typename Protocol, typename Executor,
    asio::completion_token_for<void(error_code,
      accepted_socket<Protocol, Executor>)> AcceptToken>
  requires detail::accepts_streams<Protocol, Executor>
auto async_accept(asio::basic_socket_acceptor<Protocol, Executor>& acceptor,
    AcceptToken&& token)
  -> decltype(asio::async_initiate<AcceptToken,
      void(error_code, accepted_socket<Protocol, Executor>)>(
        std::declval<detail::initiate_accept<Protocol, Executor>>(), token))
{
  return asio::async_initiate<AcceptToken,
    void(error_code, accepted_socket<Protocol, Executor>)>(
      detail::initiate_accept<Protocol, Executor>(acceptor,
        acceptor.get_executor()), token);
}

template <typename Protocol, typename Executor,
    asio::completion_token_for<void(error_code,
      accepted_socket<Protocol, Executor>)> AcceptToken>
  requires detail::accepts_streams<Protocol, Executor>
auto async_accept(asio::basic_socket_acceptor<Protocol, Executor>& acceptor,
    const std::type_identity_t<Executor>& peer_executor, AcceptToken&& token)
  -> decltype(asio::async_initiate<AcceptToken,
      void(error_code, accepted_socket<Protocol, Executor>)>(
        std::declval<detail::initiate_accept<Protocol, Executor>>(), token))
{
  return asio::async_initiate<AcceptToken,
    void(error_code, accepted_socket<Protocol, Executor>)>(
      detail::initiate_accept<Protocol, Executor>(acceptor, peer_executor),
      token);
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_ACCEPT_HPP
