//
// read_pooled_epoll.cpp
//
// read_pooled.cpp's cases on the epoll path (config::pooled_io = epoll).
//

#define BOOST_TEST_MODULE read_pooled_epoll
#define TURNLOOP_TEST_POOLED_IO epoll
#include "read_pooled.cpp"
