// VirtualRange on the fake driver (src/graphcap/memory/virtual_range.h): growth at the end of what
// is mapped, a granule a piece, undone whole when a step fails; views that keep their part mapped
// and come back through a drop queue; the tail given back, to the granule, when no view uses it
// and no window holds it; the device's memory exactly what is mapped; close giving everything
// back.
#include <graphcap/memory/virtual_range.h>

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/memory/drop_queue.h>
#include <graphcap/memory/slice_pool.h>

#include "fake/fake_fixture.h"
#include "matchers.h"

namespace graphcap::memory {
namespace {

constexpr std::size_t kG = std::size_t{2} << 20;

// Where views go when their last handle does: a drop queue whose stream has passed everything.
class QueueOwner final : public SliceOwner {
 public:
  explicit QueueOwner(DropQueue& queue) : queue_(&queue) {}
  void drop(const Slice&, std::uint64_t) noexcept override {}
  void drop_to(const Slice& slice, std::uint64_t last_use,
               std::shared_ptr<SliceHome> home) noexcept override {
    queue_->drop(slice, last_use, std::move(home));
  }

 private:
  DropQueue* queue_;
};

class VirtualRangeTest : public fake::unit::FakeDriverTest {
 protected:
  void SetUp() override {
    FakeDriverTest::SetUp();
    device_ = std::make_unique<SlicePool>(fake_, SliceKind::device);
    host_ = std::make_unique<SlicePool>(fake_, SliceKind::pinned_host);
    queue_ = std::make_unique<DropQueue>(fake_, stream_, *device_, *host_);
    owner_ = std::make_shared<QueueOwner>(*queue_);
    free_before_ = free_memory();
    Result<std::size_t> granularity = VirtualRange::granularity(fake_, 0);
    ASSERT_THAT(granularity, IsOk());
    ASSERT_EQ(*granularity, kG);
    Result<std::shared_ptr<VirtualRange>> range = VirtualRange::reserve(fake_, 0, 16 * kG, kG);
    ASSERT_THAT(range, IsOk());
    range_ = std::move(*range);
  }
  void TearDown() override {
    range_->close();  // everything back, whatever a view still in the queue holds
    range_.reset();
    EXPECT_EQ(free_memory(), free_before_);
    queue_.reset();
    owner_.reset();
    host_.reset();
    device_.reset();
    FakeDriverTest::TearDown();
  }
  std::size_t free_memory() {
    std::size_t free = 0, total = 0;
    EXPECT_EQ(fake_.cuMemGetInfo(&free, &total), CUDA_SUCCESS);
    return free;
  }
  std::size_t held() { return free_before_ - free_memory(); }

  std::unique_ptr<SlicePool> device_;
  std::unique_ptr<SlicePool> host_;
  std::unique_ptr<DropQueue> queue_;
  std::shared_ptr<QueueOwner> owner_;
  std::shared_ptr<VirtualRange> range_;
  std::size_t free_before_ = 0;
};

TEST_F(VirtualRangeTest, GrowsAtTheEndAPieceAGranuleAndKeepsEveryAddress) {
  ASSERT_THAT(range_->grow_to(100), IsOk());
  EXPECT_EQ(range_->stats().mapped, kG) << "whole granules";
  EXPECT_EQ(held(), kG);
  std::shared_ptr<Allocation> first = range_->view(owner_, 0, 4096);
  ASSERT_THAT(range_->grow_to(3 * kG + 1), IsOk());
  EXPECT_EQ(range_->stats().mapped, 4 * kG);
  EXPECT_EQ(range_->stats().pieces, 4u) << "three new pieces, a granule each";
  EXPECT_EQ(fake_.live_handles().memory_handles, 4u);
  EXPECT_EQ(first->slice().device_ptr(), range_->base()) << "nothing moved";
  // The bytes across the seam of the two pieces are one range to the device.
  std::vector<std::byte> bytes(2 * 4096, std::byte{7});
  EXPECT_TRUE(fake_.write_device(range_->base() + kG - 4096, bytes));
  EXPECT_THAT(range_->grow_to(17 * kG), StatusIs(Errc::out_of_memory, CUDA_SUCCESS,
                                                HasSubstr("reserved addresses is full")));
  EXPECT_EQ(range_->stats().growths, 2u);
}

TEST_F(VirtualRangeTest, AFailedGrowthHoldsNothingMore) {
  for (const char* entry : {"cuMemCreate", "cuMemMap", "cuMemSetAccess"}) {
    SCOPED_TRACE(entry);
    fake_.fail_call(entry, CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_THAT(range_->grow_to(kG), StatusIs(Errc::out_of_memory, CUDA_ERROR_OUT_OF_MEMORY,
                                              HasSubstr(entry)));
    EXPECT_EQ(range_->stats().mapped, 0u);
    EXPECT_EQ(held(), 0u);
    const fake::LiveHandles live = fake_.live_handles();
    EXPECT_EQ(live.memory_handles, 0u);
    EXPECT_EQ(live.mappings, 0u);
  }
  ASSERT_THAT(range_->grow_to(kG), IsOk()) << "and the next growth works";
}

// Every step of a growth of several granules can fail: what the growth made before it is undone.
TEST_F(VirtualRangeTest, AGrowthOfSeveralGranulesThatFailsPartWayHoldsNothingMore) {
  ASSERT_THAT(range_->grow_to(kG), IsOk());
  for (const char* entry : {"cuMemCreate", "cuMemMap"}) {
    for (int nth = 1; nth <= 3; ++nth) {
      SCOPED_TRACE(std::string(entry) + " #" + std::to_string(nth));
      fake_.fail_call(entry, CUDA_ERROR_OUT_OF_MEMORY, nth);
      EXPECT_THAT(range_->grow_to(4 * kG), StatusIs(Errc::out_of_memory,
                                                    CUDA_ERROR_OUT_OF_MEMORY, HasSubstr(entry)));
      EXPECT_EQ(range_->stats().mapped, kG);
      EXPECT_EQ(held(), kG);
      const fake::LiveHandles live = fake_.live_handles();
      EXPECT_EQ(live.memory_handles, 1u);
      EXPECT_EQ(live.mappings, 1u);
    }
  }
  ASSERT_THAT(range_->grow_to(4 * kG), IsOk()) << "and the next growth works";
  EXPECT_EQ(held(), 4 * kG);
}

// The largest view first, then a smaller one, and the largest goes: what the smaller one does
// not use is given back to the granule (a growth mapped as one piece could only go whole).
TEST_F(VirtualRangeTest, TheTailBeyondTheRemainingViewsGoesBackToTheGranuleInAnyOrder) {
  ASSERT_THAT(range_->grow_to(2 * kG + kG / 2), IsOk());
  std::shared_ptr<Allocation> large = range_->view(owner_, 0, 2 * kG + kG / 2);
  ASSERT_THAT(range_->grow_to(kG / 2), IsOk());
  std::shared_ptr<Allocation> small = range_->view(owner_, 0, kG / 2);
  EXPECT_EQ(range_->stats().mapped, 3 * kG);
  large.reset();  // its last use is behind the queue: back at once
  EXPECT_EQ(range_->stats().mapped, kG);
  EXPECT_EQ(held(), kG);
  EXPECT_EQ(range_->stats().shrinks, 1u) << "one shrink gave back both granules";
  small.reset();
  EXPECT_EQ(held(), 0u);
}

TEST_F(VirtualRangeTest, TheTailGoesBackOnceNoViewUsesItAndNoWindowHoldsIt) {
  ASSERT_THAT(range_->grow_to(kG), IsOk());
  ASSERT_THAT(range_->grow_to(3 * kG), IsOk());
  std::shared_ptr<Allocation> low = range_->view(owner_, 0, 4096);
  std::shared_ptr<Allocation> high = range_->view(owner_, 2 * kG, 4096);
  range_->hold(3 * kG);
  EXPECT_EQ(range_->stats().used, 2 * kG + 4096);
  high->used_at(queue_->next_use());
  const std::uint64_t last = queue_->next_use();
  high.reset();  // into the queue: the stream has not passed its use yet
  EXPECT_EQ(range_->stats().mapped, 3 * kG);
  queue_->passed(last);
  EXPECT_EQ(range_->stats().mapped, 3 * kG) << "held by the window";
  range_->hold(0);
  EXPECT_EQ(range_->stats().mapped, kG) << "the piece past the last view goes";
  EXPECT_EQ(held(), kG);
  EXPECT_EQ(range_->stats().shrinks, 1u);
  low.reset();
  EXPECT_EQ(range_->stats().mapped, 0u);
  EXPECT_EQ(held(), 0u);
}

TEST_F(VirtualRangeTest, AViewBeyondWhatIsMappedIsRefusedAndOneWithinKeepsItMapped) {
  ASSERT_THAT(range_->grow_to(kG), IsOk());
  EXPECT_EQ(range_->view_if_mapped(owner_, kG - 4096, 8192), nullptr);
  std::shared_ptr<Allocation> view = range_->view_if_mapped(owner_, kG / 2, 4096);
  ASSERT_NE(view, nullptr);
  range_->hold(0);
  EXPECT_EQ(range_->stats().mapped, kG) << "the view keeps its granule";
}

TEST_F(VirtualRangeTest, AFailedUnmapKeepsThePieceForTheNextShrink) {
  ASSERT_THAT(range_->grow_to(2 * kG), IsOk());
  fake_.fail_call("cuMemUnmap", CUDA_ERROR_INVALID_VALUE);
  range_->hold(0);
  EXPECT_EQ(range_->stats().mapped, 2 * kG) << "still mapped, still held";
  range_->hold(0);  // the next shrink
  EXPECT_EQ(range_->stats().mapped, 0u);
  EXPECT_EQ(held(), 0u);
}

TEST_F(VirtualRangeTest, CloseGivesEverythingBackAndLeavesTheRangeInert) {
  ASSERT_THAT(range_->grow_to(3 * kG), IsOk());
  std::shared_ptr<Allocation> view = range_->view(owner_, 0, 4096);
  range_->close();
  EXPECT_EQ(held(), 0u);
  EXPECT_EQ(fake_.live_handles().address_ranges, 0u);
  EXPECT_THAT(range_->grow_to(kG), StatusIs(Errc::graph_state));
  view.reset();  // comes back to a closed range: nothing happens
  EXPECT_EQ(range_->stats().mapped, 0u);
}

}  // namespace
}  // namespace graphcap::memory
