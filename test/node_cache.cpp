//
// test/node_cache.cpp
//
// The handler-node cache: reuse on the loop thread, hand-back of batches to
// posting threads, and every list capped.
//

#include <turnloop/detail/engine/node_cache.hpp>

#define BOOST_TEST_MODULE node_cache
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <set>
#include <thread>
#include <vector>

#include "support.hpp"

// Counts live heap blocks in this test program.
namespace {
std::atomic<long> live_blocks{0};
}

void* operator new(std::size_t n)
{
  ++live_blocks;
  if (void* p = std::malloc(n ? n : 1))
    return p;
  throw std::bad_alloc();
}

void operator delete(void* p) noexcept
{
  if (p)
  {
    --live_blocks;
    std::free(p);
  }
}

void operator delete(void* p, std::size_t) noexcept
{
  ::operator delete(p);
}

using turnloop::detail::node_cache;

BOOST_AUTO_TEST_CASE(sizes_round_up_to_four_classes)
{
  BOOST_TEST(node_cache::rounded(1) == 64u);
  BOOST_TEST(node_cache::rounded(64) == 64u);
  BOOST_TEST(node_cache::rounded(65) == 128u);
  BOOST_TEST(node_cache::rounded(300) == 512u);
  BOOST_TEST(node_cache::rounded(513) == 513u);
}

BOOST_AUTO_TEST_CASE(a_freed_node_is_reused_first_on_the_loop_thread)
{
  node_cache cache;
  void* a = cache.allocate<48>();
  void* b = cache.allocate<48>();
  cache.deallocate<48>(a);
  cache.deallocate<48>(b);
  BOOST_TEST(cache.allocate<48>() == b); // most recently freed first
  BOOST_TEST(cache.allocate<48>() == a);
  cache.deallocate<48>(a);
  cache.deallocate<48>(b);
}

BOOST_AUTO_TEST_CASE(warm_reuse_allocates_nothing)
{
  node_cache cache;
  std::vector<void*> nodes;
  for (int i = 0; i < 16; ++i)
    nodes.push_back(cache.allocate<100>());
  for (void* p : nodes)
    cache.deallocate<100>(p);
  const long before = live_blocks.load();
  for (int round = 0; round < 100; ++round)
  {
    nodes.clear();
    for (int i = 0; i < 16; ++i)
      nodes.push_back(cache.allocate<100>());
    for (void* p : nodes)
      cache.deallocate<100>(p);
  }
  BOOST_TEST(live_blocks.load() == before);
}

BOOST_AUTO_TEST_CASE(nodes_freed_beyond_the_cap_go_back_to_posting_threads,
    * test::threads_label())
{
  node_cache cache;
  const unsigned n = 2 * node_cache::per_class; // fills the cache, then a batch
  std::vector<void*> nodes;
  for (unsigned i = 0; i < n; ++i)
    nodes.push_back(cache.allocate<64>());
  const std::set<void*> freed(nodes.begin(), nodes.end());
  for (void* p : nodes)
    cache.deallocate<64>(p);

  // Another thread posting to this loop gets the handed-back batch.
  std::vector<void*> taken;
  std::thread poster([&] {
    for (unsigned i = 0; i < node_cache::per_class; ++i)
      taken.push_back(cache.allocate_elsewhere<64>());
    for (void* p : taken)
      node_cache::deallocate_elsewhere(p);
  });
  poster.join();
  unsigned recycled = 0;
  for (void* p : taken)
    recycled += freed.count(p);
  BOOST_TEST(recycled == node_cache::per_class);
}

BOOST_AUTO_TEST_CASE(the_hand_back_slot_is_bounded)
{
  // Free far more nodes than any cap allows: what the caches keep is bounded
  // (2 x per_class on the loop side plus 16 KiB in the slot), the rest is
  // returned to the heap.
  const long before = live_blocks.load();
  {
    node_cache cache;
    std::vector<void*> nodes;
    for (int i = 0; i < 10000; ++i)
      nodes.push_back(cache.allocate<64>());
    for (void* p : nodes)
      cache.deallocate<64>(p);
    const long kept = live_blocks.load() - before;
    const long bound = 2 * node_cache::per_class + (16 * 1024) / 64
      + node_cache::per_class;
    BOOST_TEST(kept <= bound);
    BOOST_TEST(kept >= long(node_cache::per_class));
  }
  BOOST_TEST(live_blocks.load() == before); // the destructor frees all
}
