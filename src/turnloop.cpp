//
// src/turnloop.cpp
//
// The one compiled unit of turnloop.
//

#include <turnloop/src.hpp>
