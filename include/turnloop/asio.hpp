//
// turnloop/asio.hpp
//
// The whole of the Asio turnloop is built for: <boost/asio.hpp>, or
// <asio.hpp> with TURNLOOP_STANDALONE_ASIO, and its C++20 awaitable
// operators (experimental/awaitable_operators.hpp). For code written once
// for both flavours, which then spells Asio `turnloop::asio` (a namespace
// alias) and its error code `turnloop::error_code`, as turnloop itself does.
//

#ifndef TURNLOOP_ASIO_HPP
#define TURNLOOP_ASIO_HPP

#include <turnloop/detail/asio.hpp>

#include TURNLOOP_ASIO_WHOLE
#include TURNLOOP_ASIO_HEADER(experimental/awaitable_operators.hpp)

#endif // TURNLOOP_ASIO_HPP
