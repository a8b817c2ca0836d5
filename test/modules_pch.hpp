//
// test/modules_pch.hpp
//
// What every test module includes, precompiled once per build (b2's
// cpp-pch): turnloop and the tests' Asio. It saves each module the parse
// of both (about a quarter of its compile). Each module still includes what
// it needs itself; Boost.Test stays out, since BOOST_TEST_MODULE, which each
// module defines first, changes what its header declares.
//

#include <turnloop.hpp>

#include "asio.hpp"
