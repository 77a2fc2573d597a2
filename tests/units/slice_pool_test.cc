// SlicePool on the fake driver: what it serves from its free lists, when it calls the driver, and
// what it refuses while a capture window is open (src/graphcap/memory/slice_pool.h).
#include <graphcap/memory/slice_pool.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake/fake_fixture.h"
#include "matchers.h"

namespace graphcap::memory {
namespace {

class SlicePoolTest : public fake::unit::FakeDriverTest {
 protected:
  std::size_t allocs() const { return fake_.call_count("cuMemAlloc"); }
};

TEST_F(SlicePoolTest, AReleasedSliceServesTheNextRequestOfItsSizeClassWithoutADriverCall) {
  SlicePool pool(fake_, SliceKind::device);
  Result<Slice> first = pool.acquire(1000, true);
  ASSERT_TRUE(first.has_value());
  EXPECT_GE(first->capacity, 1000u);
  EXPECT_EQ(allocs(), 1u);
  const Slice kept = *first;
  pool.release(kept);
  Result<Slice> again = pool.acquire(900, true);  // same size class
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->address, kept.address);
  EXPECT_EQ(allocs(), 1u) << "served from the free list";
  pool.release(*again);
  EXPECT_EQ(pool.stats().free_slices, 1u);
  EXPECT_EQ(pool.stats().driver_allocations, 1u);
}

TEST_F(SlicePoolTest, ZeroBytesIsInvalidArgument) {
  SlicePool pool(fake_, SliceKind::device);
  EXPECT_THAT(pool.acquire(0, true), StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                                              HasSubstr("must be positive")));
  EXPECT_EQ(allocs(), 0u);
}

TEST_F(SlicePoolTest, PrimingRetainsEverySliceUntilItEndsThenTheRecordingReusesThem) {
  SlicePool pool(fake_, SliceKind::device);
  pool.arm();
  ASSERT_TRUE(pool.priming());
  // The warm-up: a transient buffer released before the next is taken still counts twice, so
  // the pool grows to the run's distinct working set, not its momentary peak.
  Result<Slice> a = pool.acquire(4096, true);
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->persistent);
  pool.release(*a);
  Result<Slice> b = pool.acquire(4096, true);
  ASSERT_TRUE(b.has_value());
  EXPECT_NE(b->address, a->address) << "a slice released while priming is retained";
  pool.release(*b);
  EXPECT_EQ(pool.stats().retained_slices, 2u);
  EXPECT_EQ(allocs(), 2u);

  pool.end_priming();
  pool.set_recording(true);
  EXPECT_EQ(pool.stats().retained_slices, 0u);
  EXPECT_EQ(pool.stats().free_slices, 2u);
  Result<Slice> c = pool.acquire(4096, true);
  Result<Slice> d = pool.acquire(4096, true);
  ASSERT_TRUE(c.has_value());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(allocs(), 2u) << "the recording is served from what priming kept";
  // A third is more than the warm-up used: out of memory, and still no driver call.
  EXPECT_THAT(pool.acquire(4096, true),
              StatusIs(Errc::out_of_memory, CUDA_SUCCESS, HasSubstr("inside the recording")));
  EXPECT_EQ(allocs(), 2u);
  pool.set_recording(false);
  pool.release(*c);
  pool.release(*d);
  pool.disarm();
}

TEST_F(SlicePoolTest, MayNotAllocateServesFreeSlicesOnlyAndIsOutOfMemoryOtherwise) {
  SlicePool pool(fake_, SliceKind::device);
  Result<Slice> cached = pool.acquire(256, true);
  ASSERT_TRUE(cached.has_value());
  pool.release(*cached);
  Result<Slice> served = pool.acquire(256, false);
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(served->address, cached->address);
  EXPECT_THAT(pool.acquire(256, false),
              StatusIs(Errc::out_of_memory, CUDA_SUCCESS, HasSubstr("global mode")));
  EXPECT_EQ(allocs(), 1u);
  pool.release(*served);
}

TEST_F(SlicePoolTest, OutOfMemoryGivesCachedSlicesBackAndRetriesOnce) {
  SlicePool pool(fake_, SliceKind::device);
  Result<Slice> cached = pool.acquire(1 << 20, true);
  ASSERT_TRUE(cached.has_value());
  pool.release(*cached);
  fake_.fail_call("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY);
  Result<Slice> other = pool.acquire(64, true);  // another size class: needs the driver
  ASSERT_TRUE(other.has_value()) << "the retry after trimming succeeds";
  EXPECT_EQ(fake_.call_count("cuMemFree"), 1u) << "the cached slice went back first";
  EXPECT_EQ(pool.stats().free_slices, 0u);
  pool.release(*other);
}

TEST_F(SlicePoolTest, ADriverFailureNamesTheEntryPointAndTheError) {
  SlicePool pool(fake_, SliceKind::pinned_host);
  fake_.fail_call("cuMemAllocHost", CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_THAT(pool.acquire(64, true),
              StatusIs(Errc::out_of_memory, CUDA_ERROR_OUT_OF_MEMORY, HasSubstr("cuMemAllocHost")));
  EXPECT_EQ(pool.stats().live_slices, 0u);
}

TEST_F(SlicePoolTest, FreeAllReturnsEverySliceHandedOutOrNot) {
  const fake::LiveHandles before = fake_.live_handles();
  {
    SlicePool pool(fake_, SliceKind::device);
    Result<Slice> out = pool.acquire(128, true);
    Result<Slice> free = pool.acquire(8192, true);
    ASSERT_TRUE(out.has_value());
    ASSERT_TRUE(free.has_value());
    pool.release(*free);
    EXPECT_EQ(pool.stats().live_slices, 2u);
    pool.free_all();
    EXPECT_EQ(pool.stats().live_slices, 0u);
    EXPECT_EQ(pool.stats().reserved_bytes, 0u);
  }
  EXPECT_EQ(fake_.live_handles(), before);
  EXPECT_EQ(fake_.call_count("cuMemFree"), 2u);
}

}  // namespace
}  // namespace graphcap::memory
