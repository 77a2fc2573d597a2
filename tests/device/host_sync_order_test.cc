// A host synchronisation orders streams, as in CUDA, on every driver (docs/capture-lifecycle.md,
// "Buffers on several streams"): once Device::sync(a) (or a read, which waits for its stream) has
// returned, every operation enqueued on `a` before it has finished, and with them everything `a`
// was ordered after; any stream may then use what they used. Work enqueued after the sync is not
// covered, and a sync that was refused orders nothing.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

using HostSyncOrderTest = WithSideStream<DeviceFixture>;

TEST_F(HostSyncOrderTest, ASyncOrdersEveryStreamAfterTheSyncedStreamsWork) {
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(fill(x, 5, 64), IsOk());
  ASSERT_THAT(device_->sync(stream()), IsOk());
  EXPECT_THAT(read_u32(x, *side_), Each(5u));          // a read after the write
  ASSERT_THAT(add_one(x, x, 64, *side_), IsOk());      // a write after every use
  EXPECT_THAT(read_u32(x, *side_), Each(6u));
  EXPECT_THAT(read_u32(x), Each(6u));  // handed back to its stream
}

TEST_F(HostSyncOrderTest, WorkEnqueuedAfterTheSyncIsNotCovered) {
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(device_->sync(stream()), IsOk());
  ASSERT_THAT(fill(x, 5, 64), IsOk());
  EXPECT_THAT(device_->read(x, *side_),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("last written on another stream of this device (stream 0"),
                             HasSubstr("nothing orders this stream (stream 1)"))));
}

TEST_F(HostSyncOrderTest, AReadWaitsForItsStreamAndSoOrdersIt) {
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(iota_u32(64));
  ASSERT_THAT(fill(x, 5, 64), IsOk());
  EXPECT_THAT(read_u32(y), ElementsAreArray(iota_u32(64)));  // waits for stream 0
  Buffer out = upload_u32(std::vector<std::uint32_t>(64, 0), *side_);
  ASSERT_THAT(add_one(x, out, 64, *side_), IsOk());
  EXPECT_THAT(read_u32(out, *side_), Each(6u));
}

// What the synced stream was ordered after (by an event) has finished too.
TEST_F(HostSyncOrderTest, ASyncCompletesWhatTheStreamWasOrderedAfter) {
  Result<Stream*> third = device_->create_stream();
  ASSERT_THAT(third, IsOk());
  Buffer x = upload_u32(iota_u32(64), **third);
  ASSERT_THAT(device_->fill(x, std::uint32_t{8}, **third), IsOk());
  Event e = new_event();
  ASSERT_THAT(device_->record_event(e, **third), IsOk());
  ASSERT_THAT(device_->wait(stream(), e), IsOk());
  ASSERT_THAT(device_->sync(stream()), IsOk());
  EXPECT_THAT(read_u32(x, *side_), Each(8u));
}

// A sync refused (another recording in global mode forbids waiting) waited for nothing.
TEST_F(HostSyncOrderTest, ARefusedSyncOrdersNothing) {
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(fill(x, 5, 64), IsOk());
  ASSERT_THAT(device_->prepare_capture(*side_), IsOk());
  ASSERT_THAT(device_->begin_capture(*side_), IsOk());
  EXPECT_THAT(device_->sync(stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("global mode")));
  ASSERT_THAT(device_->abort_capture(*side_), IsOk());
  EXPECT_THAT(device_->read(x, *side_),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       HasSubstr("nothing orders this stream (stream 1)")));
}

}  // namespace
}  // namespace graphcap::testing
