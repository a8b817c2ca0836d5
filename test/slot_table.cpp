//
// test/slot_table.cpp
//
// Paged generational slot table: growth by page only at new high-water
// marks, reuse after release without allocating, stale ids detected, the
// ceiling refused.
//

#include <turnloop/detail/slot_table.hpp>

#include <turnloop/detail/ceiling.hpp>

#define BOOST_TEST_MODULE slot_table
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "counting_allocator.hpp"
#include "support.hpp"

using turnloop::detail::slot_id;
using turnloop::detail::slot_table;

BOOST_AUTO_TEST_CASE(the_counting_allocator_counts)
{
  const long before = test::allocations.load();
  test::allocate_once();
  BOOST_TEST(test::allocations.load() > before);
}

BOOST_AUTO_TEST_CASE(a_large_ceiling_costs_nothing_until_used)
{
  const long before = test::allocations.load();
  slot_table<std::string> table(std::size_t(1) << 24);
  BOOST_TEST(test::allocations.load() == before);
  BOOST_TEST(table.pages() == 0u);
  BOOST_TEST(table.find(slot_id{123456, 1}) == nullptr); // no page needed
  BOOST_TEST(test::allocations.load() == before);
}

BOOST_AUTO_TEST_CASE(pages_are_added_only_at_new_high_water_marks)
{
  slot_table<int> table(1000);
  turnloop::error_code ec;
  std::vector<slot_id> ids;
  for (int i = 0; i < 64; ++i)
    ids.push_back(table.emplace(ec, i));
  BOOST_TEST(table.pages() == 1u);
  ids.push_back(table.emplace(ec, 64));
  BOOST_TEST(table.pages() == 2u);
  BOOST_TEST(table.high_water() == 65u);

  // Release and refill below the high-water mark: no new page.
  for (int i = 0; i < 30; ++i)
    BOOST_TEST(table.erase(ids[i]));
  for (int i = 0; i < 30; ++i)
    table.emplace(ec, i);
  BOOST_TEST(table.pages() == 2u);
  BOOST_TEST(table.high_water() == 65u);
  BOOST_TEST(table.size() == 65u);
}

BOOST_AUTO_TEST_CASE(reuse_after_release_allocates_nothing)
{
  slot_table<std::uint64_t> table(128);
  turnloop::error_code ec;
  std::vector<slot_id> ids;
  for (int i = 0; i < 100; ++i)
    ids.push_back(table.emplace(ec, i));
  for (slot_id id : ids)
    table.erase(id);
  const long before = test::allocations.load();
  for (int round = 0; round < 50; ++round)
  {
    ids.clear();
    for (int i = 0; i < 100; ++i)
      ids.push_back(table.emplace(ec, i));
    for (slot_id id : ids)
      table.erase(id);
  }
  BOOST_TEST(test::allocations.load() == before);
}

BOOST_AUTO_TEST_CASE(the_most_recently_freed_slot_is_reused_first)
{
  slot_table<int> table(8);
  turnloop::error_code ec;
  const slot_id a = table.emplace(ec, 1);
  const slot_id b = table.emplace(ec, 2);
  table.erase(a);
  table.erase(b);
  BOOST_TEST(table.emplace(ec, 3).index == b.index);
  BOOST_TEST(table.emplace(ec, 4).index == a.index);
}

BOOST_AUTO_TEST_CASE(a_stale_id_is_detected)
{
  slot_table<int> table(8);
  turnloop::error_code ec;
  const slot_id old = table.emplace(ec, 1);
  BOOST_TEST(*table.find(old) == 1);
  BOOST_TEST(table.erase(old));
  BOOST_TEST(table.find(old) == nullptr);
  BOOST_TEST(!table.erase(old));

  const slot_id reused = table.emplace(ec, 2);
  BOOST_TEST(reused.index == old.index);
  BOOST_TEST(reused.generation != old.generation);
  BOOST_TEST(table.find(old) == nullptr);   // the old id does not see the new value
  BOOST_TEST(*table.find(reused) == 2);
  BOOST_TEST(!slot_id{});
}

BOOST_AUTO_TEST_CASE(the_ceiling_is_refused_with_resource_limit)
{
  slot_table<int> table(3);
  turnloop::error_code ec;
  for (int i = 0; i < 3; ++i)
  {
    table.emplace(ec, i);
    BOOST_TEST(!ec);
  }
  const slot_id refused = table.emplace(ec, 99);
  BOOST_TEST(ec == turnloop::error::resource_limit);
  BOOST_TEST(!refused);
  BOOST_TEST(table.size() == 3u);
  BOOST_TEST(table.refusals() == 1u);
}

BOOST_AUTO_TEST_CASE(slots_never_move_when_the_table_grows)
{
  slot_table<int> table(100000);
  turnloop::error_code ec;
  const slot_id first = table.emplace(ec, 7);
  int* address = table.find(first);
  for (int i = 0; i < 10000; ++i)
    table.emplace(ec, i);
  BOOST_TEST(table.find(first) == address);
  BOOST_TEST(*address == 7);
}

BOOST_AUTO_TEST_CASE(live_values_are_destroyed_with_the_table)
{
  auto shared = std::make_shared<int>(0);
  {
    slot_table<std::shared_ptr<int>> table(10);
    turnloop::error_code ec;
    table.emplace(ec, shared);
    table.emplace(ec, shared);
    const slot_id gone = table.emplace(ec, shared);
    table.erase(gone);
    BOOST_TEST(shared.use_count() == 3);
  }
  BOOST_TEST(shared.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(a_ceiling_counts_use_high_water_and_refusals,
    * test::threads_label())
{
  turnloop::detail::ceiling c(100);
  std::vector<std::thread> threads;
  std::atomic<int> acquired{0};
  for (int t = 0; t < 4; ++t)
  {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i)
        if (c.try_acquire())
          ++acquired;
    });
  }
  for (auto& t : threads)
    t.join();
  BOOST_TEST(acquired.load() == 100);
  BOOST_TEST(c.in_use() == 100u);
  BOOST_TEST(c.high_water() == 100u);
  BOOST_TEST(c.refusals() == 3900u);
  c.release(40);
  BOOST_TEST(c.in_use() == 60u);
  BOOST_TEST(c.try_acquire(40));
  BOOST_TEST(!c.try_acquire());
}
