//
// turnloop/detail/group/connection_counts.hpp
//
// The live connections a group_acceptor has dealt to each loop of its group:
// one detail::ceiling (with no limit: it counts, the accepting loop's
// max_handles caps) per loop. An accept takes a unit of its loop's count
// when it starts, the accepted socket holds it, and destroying the socket
// gives it back from whichever thread does so, so the counts say how many
// of the acceptor's connections (and pending accepts) each loop holds now.
// Shared by the acceptor and every unit, since sockets outlive acceptors.
//

#ifndef TURNLOOP_DETAIL_GROUP_CONNECTION_COUNTS_HPP
#define TURNLOOP_DETAIL_GROUP_CONNECTION_COUNTS_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/ceiling.hpp>
#include <turnloop/detail/ceiling_unit.hpp>

#include <cstddef>
#include <limits>
#include <memory>

namespace turnloop {
namespace detail {

class connection_counts
{
public:
  static std::shared_ptr<connection_counts> make(std::size_t loops)
  {
    return std::shared_ptr<connection_counts>(new connection_counts(loops));
  }

  std::size_t size() const noexcept
  {
    return size_;
  }

  /// Loop @p index's count of live connections.
  std::size_t live(std::size_t index) const noexcept
  {
    return counts_[index].count.in_use();
  }

  /// A unit of loop @p index's count, sharing ownership of this. Never
  /// empty: the counts have no limit.
  static ceiling_unit take(const std::shared_ptr<connection_counts>& self,
      std::size_t index) noexcept
  {
    return ceiling_unit::take(
        std::shared_ptr<ceiling>(self, &self->counts_[index].count));
  }

private:
  // Each count on a cache line of its own: they are updated from the
  // threads of different loops.
  struct alignas(64) padded
  {
    ceiling count{std::numeric_limits<std::size_t>::max()};
  };

  explicit connection_counts(std::size_t loops)
    : size_(loops),
      counts_(new padded[loops])
  {
  }

  std::size_t size_;
  std::unique_ptr<padded[]> counts_;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_GROUP_CONNECTION_COUNTS_HPP
