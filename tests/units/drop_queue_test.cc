// DropQueue on the fake driver: a dropped slice goes back to its pool exactly when the stream has
// passed its last use, learnt from a sync or from a fence event (src/graphcap/memory/drop_queue.h).
#include <graphcap/memory/drop_queue.h>

#include <atomic>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/memory/slice_pool.h>

#include "fake/fake_fixture.h"
#include "matchers.h"

namespace graphcap::memory {
namespace {

class DropQueueTest : public fake::unit::FakeDriverTest {
 protected:
  void TearDown() override {
    queue_.reset();
    host_.reset();
    device_.reset();
    FakeDriverTest::TearDown();
  }
  void SetUp() override {
    FakeDriverTest::SetUp();
    device_ = std::make_unique<SlicePool>(fake_, SliceKind::device);
    host_ = std::make_unique<SlicePool>(fake_, SliceKind::pinned_host);
    queue_ = std::make_unique<DropQueue>(fake_, stream_, *device_, *host_);
  }
  Slice take(std::size_t bytes) {
    Result<Slice> slice = device_->acquire(bytes, true);
    EXPECT_TRUE(slice.has_value());
    return slice.has_value() ? *slice : Slice{};
  }

  std::unique_ptr<SlicePool> device_;
  std::unique_ptr<SlicePool> host_;
  std::unique_ptr<DropQueue> queue_;
};

TEST_F(DropQueueTest, ASliceReturnsOnlyOnceTheStreamPassedItsLastUse) {
  const Slice slice = take(512);
  const std::uint64_t first = queue_->next_use();
  const std::uint64_t last = queue_->next_use();
  queue_->drop(slice, last);
  EXPECT_EQ(queue_->pending(), 1u);
  queue_->passed(first);  // not far enough
  EXPECT_EQ(queue_->pending(), 1u);
  EXPECT_EQ(device_->stats().free_slices, 0u);
  queue_->passed(last);
  EXPECT_EQ(queue_->pending(), 0u);
  EXPECT_EQ(device_->stats().free_slices, 1u);
}

TEST_F(DropQueueTest, ASliceDroppedAfterASyncIsReusableAtOnce) {
  const Slice slice = take(512);
  const std::uint64_t use = queue_->next_use();
  queue_->passed(use);
  queue_->drop(slice, use);
  EXPECT_EQ(queue_->pending(), 0u);
  EXPECT_EQ(device_->stats().free_slices, 1u);
  EXPECT_EQ(fake_.call_count("cuEventRecord"), 0u) << "no fence needed";
}

TEST_F(DropQueueTest, FlushFencesWaitingDropsAndReleasesThemWhenTheFenceCompletes) {
  fake_.set_device_paused(true);  // queued work stays unfinished until run_pending
  const Slice slice = take(512);
  queue_->drop(slice, queue_->next_use());
  queue_->flush(true);
  EXPECT_EQ(fake_.call_count("cuEventRecord"), 1u);
  EXPECT_EQ(queue_->pending(), 1u) << "the fence has not completed";
  fake_.run_pending();
  queue_->flush(true);
  EXPECT_EQ(queue_->pending(), 0u);
  EXPECT_EQ(device_->stats().free_slices, 1u);
  fake_.set_device_paused(false);
}

TEST_F(DropQueueTest, FlushWithoutQueriesFencesButNeverQueries) {
  const Slice slice = take(512);
  queue_->drop(slice, queue_->next_use());
  queue_->flush(false);  // a query now would invalidate a recording elsewhere
  EXPECT_EQ(fake_.call_count("cuEventQuery"), 0u);
  EXPECT_EQ(fake_.call_count("cuEventRecord"), 1u) << "recording a fence is not a query";
  EXPECT_EQ(queue_->pending(), 1u);
  ASSERT_THAT(queue_->drain(), IsOk());
  EXPECT_EQ(queue_->pending(), 0u);
}

TEST_F(DropQueueTest, DrainWaitsForEverythingDroppedAndReleasesIt) {
  const Slice a = take(512);
  const Slice b = take(4096);
  queue_->drop(a, queue_->next_use());
  queue_->drop(b, queue_->next_use());
  ASSERT_THAT(queue_->drain(), IsOk());
  EXPECT_EQ(queue_->pending(), 0u);
  EXPECT_EQ(device_->stats().free_slices, 2u);
}

TEST_F(DropQueueTest, AFailedFenceKeepsTheSlicesPendingRatherThanReleasingThemEarly) {
  const Slice slice = take(512);
  queue_->drop(slice, queue_->next_use());
  fake_.fail_always("cuEventRecord", CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_THAT(queue_->drain(), StatusIs(Errc::driver, CUDA_ERROR_LAUNCH_FAILED));
  EXPECT_EQ(queue_->pending(), 1u) << "released only once the stream is known to have passed";
  fake_.clear_faults();
  ASSERT_THAT(queue_->drain(), IsOk());
  EXPECT_EQ(queue_->pending(), 0u);
}

// The signal the device polls its streams' queues by (DeviceCore::collect_deferred): raised by a
// drop left waiting and by a flush that leaves drops waiting, and not by one that empties the
// queue, so a close with no drops anywhere polls no stream.
TEST_F(DropQueueTest, SaysWhenItHoldsDropsSoTheDevicePollsOnlyThen) {
  std::atomic<bool> waiting{false};
  DropQueue queue(fake_, stream_, *device_, *host_, &waiting);
  fake_.set_device_paused(true);
  const std::uint64_t use = queue.next_use();
  queue.drop(take(512), use);
  EXPECT_TRUE(waiting.exchange(false)) << "a drop waits for its fence";
  queue.flush(true);
  EXPECT_TRUE(waiting.exchange(false)) << "the fence has not completed: still waiting";
  queue.flush(false);
  EXPECT_TRUE(waiting.exchange(false)) << "a flush that may not query leaves it waiting";
  queue.flush_later();
  EXPECT_TRUE(waiting.exchange(false)) << "a flush held back (its stream records) says so again";
  EXPECT_EQ(queue.pending(), 1u);
  fake_.run_pending();
  queue.flush(true);
  EXPECT_EQ(queue.pending(), 0u);
  EXPECT_FALSE(waiting.load()) << "nothing left to poll for";
  queue.drop(take(512), use);  // its last use already passed: released at once
  EXPECT_FALSE(waiting.load());
  EXPECT_EQ(queue.pending(), 0u);
  fake_.set_device_paused(false);
}

}  // namespace
}  // namespace graphcap::memory
