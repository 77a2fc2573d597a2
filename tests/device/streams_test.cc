// Events and buffers on several streams of one device, on every driver: the rule of
// docs/capture-lifecycle.md ("Buffers on several streams"): a stream may use a buffer once it is
// ordered, through an event, after the buffer's last use on another stream; what can't be proven
// ordered is refused with invalid_argument saying how to order it.
#include <cstdint>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

using StreamsTest = WithSideStream<DeviceFixture>;

TEST_F(StreamsTest, ABufferUsedOnItsStreamIsRefusedOnAnotherUntilOrdered) {
  Buffer x = upload_u32(iota_u32(256));
  Buffer y = upload_u32(std::vector<std::uint32_t>(256, 0), *side_);
  EXPECT_THAT(add_one(x, y, 256, *side_),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       AllOf(HasSubstr("another stream"), HasSubstr("Device::record"),
                             HasSubstr("Device::wait"))));
  EXPECT_THAT(device_->read(x, *side_), StatusIs(Errc::invalid_argument));
  EXPECT_THAT(device_->copy(y, x, *side_), StatusIs(Errc::invalid_argument));
  Event after_upload = new_event();
  ASSERT_THAT(device_->record_event(after_upload, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, after_upload), IsOk());
  ASSERT_THAT(add_one(x, y, 256, *side_), IsOk());
  EXPECT_THAT(read_u32(y, *side_), ElementsAreArray(iota_u32(256, 1)));
}

TEST_F(StreamsTest, AnEventRecordedBeforeTheLastUseDoesNotOrderIt) {
  Buffer x = upload_u32(iota_u32(16));
  Event early = new_event();
  ASSERT_THAT(device_->record_event(early, stream()), IsOk());
  ASSERT_THAT(fill(x, 3, 16), IsOk());  // a use after the record
  ASSERT_THAT(device_->wait(*side_, early), IsOk());
  EXPECT_THAT(device_->read(x, *side_), StatusIs(Errc::invalid_argument));
}

TEST_F(StreamsTest, ALentBufferIsHandedBackToItsStream) {
  Buffer x = upload_u32(iota_u32(64));
  Event e = new_event();
  ASSERT_THAT(device_->record_event(e, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, e), IsOk());
  // Written on the side stream...
  ASSERT_THAT(device_->fill(x, std::uint32_t{42}, *side_), IsOk());
  // ...then its own stream uses it with no event of the user's: graphcap made the owner wait
  // for the side stream's use, so the owner sees the bytes.
  EXPECT_THAT(read_u32(x), Each(42u));
  ASSERT_THAT(add_one(x, x, 64), IsOk());
  // The side stream is not ordered after the owner's later use (until a sync of the owner).
  EXPECT_THAT(device_->read(x, *side_), StatusIs(Errc::invalid_argument));
  EXPECT_THAT(read_u32(x), Each(43u));
}

TEST_F(StreamsTest, OrderIsTransitiveThroughAThirdStream) {
  Result<Stream*> third = device_->create_stream();
  ASSERT_THAT(third, IsOk());
  Buffer x = upload_u32(iota_u32(16));
  Event first = new_event();
  Event second = new_event();
  ASSERT_THAT(device_->record_event(first, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, first), IsOk());
  ASSERT_THAT(device_->record_event(second, *side_), IsOk());
  ASSERT_THAT(device_->wait(**third, second), IsOk());
  EXPECT_THAT(read_u32(x, **third), ElementsAreArray(iota_u32(16)));
}

TEST_F(StreamsTest, AFreshAllocationBelongsToItsStreamUntilOrdered) {
  Result<Buffer> fresh = device_->alloc(64, stream());
  ASSERT_THAT(fresh, IsOk());
  EXPECT_THAT(device_->fill(*fresh, std::uint8_t{1}, *side_), StatusIs(Errc::invalid_argument));
}

TEST_F(StreamsTest, EmptyAndNeverRecordedEvents) {
  Event empty;
  EXPECT_THAT(device_->record_event(empty, stream()), StatusIs(Errc::invalid_argument));
  EXPECT_THAT(device_->wait(stream(), empty), StatusIs(Errc::invalid_argument));
  // Waiting on an event never recorded orders nothing (CUDA: no dependency) and succeeds.
  Event never = new_event();
  ASSERT_THAT(device_->wait(*side_, never), IsOk());
  Buffer x = upload_u32({1});
  EXPECT_THAT(device_->read(x, *side_), StatusIs(Errc::invalid_argument));
  EXPECT_NE(never.native_handle(), nullptr);
  EXPECT_EQ(empty.native_handle(), nullptr);
}

TEST_F(StreamsTest, ARecordingRefusesToWaitOnAnEventRecordedOutsideIt) {
  Event outside = new_event();
  ASSERT_THAT(device_->record_event(outside, *side_), IsOk());
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  EXPECT_THAT(device_->wait(stream(), outside),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("outside the recording")));
  // Refused before the driver saw it: the recording is intact.
  Result<Graph> graph = device_->end_capture(stream());
  EXPECT_THAT(graph, IsOk());
}

TEST_F(StreamsTest, AnEventMayOutliveItsDevice) {
  Event e = new_event();
  ASSERT_THAT(device_->record_event(e, stream()), IsOk());
  device_.reset();  // destroys the driver's event with everything else
  EXPECT_NE(e.native_handle(), nullptr);
}  // ~Event: nothing left to destroy (the fake's teardown counts handles)

// A wait recorded into a graph orders the graph's nodes, not the streams' eager work:
// after it, an eager read of a buffer the other stream wrote eagerly is still unordered.
TEST_F(StreamsTest, AWaitRecordedIntoAGraphDoesNotOrderEagerWork) {
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(fill(x, 5, 64), IsOk());  // an eager write on stream 0
  Event fork = new_event();
  Event join = new_event();
  ASSERT_THAT(device_->prepare_capture(*side_), IsOk());
  ASSERT_THAT(device_->begin_capture(*side_), IsOk());
  ASSERT_THAT(device_->record_event(fork, *side_), IsOk());
  ASSERT_THAT(device_->wait(stream(), fork), IsOk());  // stream 0 forks into side's recording
  ASSERT_THAT(device_->record_event(join, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, join), IsOk());    // recorded, not eager
  Result<Graph> graph = device_->end_capture(*side_);
  ASSERT_THAT(graph, IsOk());
  EXPECT_THAT(device_->read(x, *side_),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("nothing orders")));
  // Ordered eagerly, it reads.
  Event eager = new_event();
  ASSERT_THAT(device_->record_event(eager, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side_, eager), IsOk());
  Result<std::vector<std::byte>> bytes = device_->read(x, *side_);
  ASSERT_THAT(bytes, IsOk());
  EXPECT_THAT(to_u32(*bytes), Each(5u));
}

}  // namespace
}  // namespace graphcap::testing
