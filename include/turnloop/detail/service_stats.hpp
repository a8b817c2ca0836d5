//
// turnloop/detail/service_stats.hpp
//
// What loop::stats() asks of the services built on the loop. The services'
// public headers include loop.hpp, and in header-only mode loop.hpp brings in
// loop.ipp: declared there, these would not yet be visible to loop.ipp when a
// service's header is the first one included. Declared here, ahead of the
// loop, they always are; their bodies stay with their services.
//

#ifndef TURNLOOP_DETAIL_SERVICE_STATS_HPP
#define TURNLOOP_DETAIL_SERVICE_STATS_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/blocking_stats.hpp>
#include <turnloop/buffer_pool_stats.hpp>
#include <turnloop/handle_stats.hpp>

namespace turnloop {

class loop;

// Declared, with their documentation, in turnloop/accept.hpp and
// turnloop/blocking.hpp.
TURNLOOP_DECL handle_stats handle_statistics(loop& l);
TURNLOOP_DECL blocking_stats blocking_statistics(loop& l);

namespace detail {

/// The counters of @p l's buffer pool, or those of a pool not yet used if
/// nothing has created it (asking does not create it). Any thread that may
/// call loop::stats().
TURNLOOP_DECL buffer_pool_stats pool_statistics(loop& l) noexcept;

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_SERVICE_STATS_HPP
