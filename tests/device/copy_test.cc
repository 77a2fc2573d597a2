// Device::copy and Device::fill on every driver: the bytes they move, eager and recorded (MEMCPY
// and MEMSET nodes), the ranges they refuse before the driver sees them, and the failure rules
// they share with launches.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class CopyTest : public DeviceFixture {
 protected:
  // Makes `buffer` carry a failure the way a user meets one: a recording that wrote it is
  // abandoned.
  void fail_by_abandoned_recording(const Buffer& buffer, std::uint32_t n) {
    ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
    ASSERT_THAT(device_->begin_capture(stream()), IsOk());
    ASSERT_THAT(fill(buffer, 1, n), IsOk());
    ASSERT_THAT(device_->abort_capture(stream()), IsOk());
    ASSERT_TRUE(buffer.failure().has_value());
  }
};

TEST_F(CopyTest, CopiesAWholeBufferIntoTheStartOfAnother) {
  Buffer src = upload_u32(iota_u32(64, 100));
  Buffer dst = upload_u32(std::vector<std::uint32_t>(80, 0));
  ASSERT_THAT(device_->copy(dst, src, stream()), IsOk());
  std::vector<std::uint32_t> expected = iota_u32(64, 100);
  expected.resize(80, 0);
  EXPECT_THAT(read_u32(dst), ElementsAreArray(expected));
}

TEST_F(CopyTest, CopiesARangeBetweenOffsets) {
  Buffer src = upload_u32(iota_u32(16));
  Buffer dst = upload_u32(std::vector<std::uint32_t>(8, 9));
  ASSERT_THAT(device_->copy(dst, 2 * 4, src, 10 * 4, 3 * 4, stream()), IsOk());
  EXPECT_THAT(read_u32(dst), ElementsAre(9u, 9u, 10u, 11u, 12u, 9u, 9u, 9u));
  // Within one buffer, ranges that don't overlap.
  ASSERT_THAT(device_->copy(src, 0, src, 8 * 4, 8 * 4, stream()), IsOk());
  EXPECT_THAT(read_u32(src), ElementsAre(8u, 9u, 10u, 11u, 12u, 13u, 14u, 15u, 8u, 9u, 10u, 11u,
                                         12u, 13u, 14u, 15u));
}

TEST_F(CopyTest, RangesOutsideTheBuffersAndOverlapsAreInvalidArgument) {
  Buffer small = upload_u32({1, 2});
  Buffer big = upload_u32(iota_u32(8));
  EXPECT_THAT(device_->copy(small, big, stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("don't fit")));
  EXPECT_THAT(device_->copy(big, 0, small, 4, 8, stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("the source")));
  EXPECT_THAT(device_->copy(small, 4, big, 0, 8, stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("the destination")));
  EXPECT_THAT(device_->copy(big, 4, big, 0, 16, stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("overlap")));
  EXPECT_THAT(device_->copy(big, Buffer{}, stream()), StatusIs(Errc::invalid_argument));
  EXPECT_THAT(device_->fill(big, 28, 8, std::uint8_t{0}, stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("outside")));
  Result<Buffer> odd = device_->alloc(6, stream());
  ASSERT_THAT(odd, IsOk());
  EXPECT_THAT(device_->fill(*odd, std::uint32_t{1}, stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("4-byte")));
  // Nothing was written.
  EXPECT_THAT(read_u32(small), ElementsAre(1u, 2u));
  EXPECT_THAT(read_u32(big), ElementsAreArray(iota_u32(8)));
}

TEST_F(CopyTest, FillsBytesWordsAndARange) {
  Buffer buffer = upload_u32(iota_u32(8));
  ASSERT_THAT(device_->fill(buffer, std::uint8_t{0xab}, stream()), IsOk());
  EXPECT_THAT(read_u32(buffer), Each(0xababababu));
  ASSERT_THAT(device_->fill(buffer, std::uint32_t{0x3f800000u}, stream()), IsOk());
  EXPECT_THAT(read_u32(buffer), Each(0x3f800000u));
  ASSERT_THAT(device_->fill(buffer, 4, 8, std::uint8_t{0}, stream()), IsOk());
  EXPECT_THAT(read_u32(buffer), ElementsAre(0x3f800000u, 0u, 0u, 0x3f800000u, 0x3f800000u,
                                            0x3f800000u, 0x3f800000u, 0x3f800000u));
}

TEST_F(CopyTest, RecordedCopyAndFillAreMemcpyAndMemsetNodesThatRunOnReplay) {
  Buffer src = upload_u32(iota_u32(64));
  Buffer dst = upload_u32(std::vector<std::uint32_t>(64, 0));
  Buffer zeroed = upload_u32(std::vector<std::uint32_t>(64, 5));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(device_->copy(dst, src, stream()), IsOk());
  ASSERT_THAT(device_->fill(zeroed, std::uint32_t{0}, stream()), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().node_count, 2u);
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_MEMCPY), 1u);
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_MEMSET), 1u);
  // Recorded, not run.
  EXPECT_THAT(read_u32(dst), Each(0u));
  EXPECT_THAT(read_u32(zeroed), Each(5u));
  ASSERT_THAT(device_->write(src, to_bytes(iota_u32(64, 1000)), stream()), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(dst), ElementsAreArray(iota_u32(64, 1000)));
  EXPECT_THAT(read_u32(zeroed), Each(0u));
}

TEST_F(CopyTest, AFailedSourceRefusesTheCopyAndTheDestinationCarriesIt) {
  Buffer src = upload_u32(iota_u32(16));
  Buffer dst = upload_u32(std::vector<std::uint32_t>(16, 7));
  fail_by_abandoned_recording(src, 16);
  EXPECT_THAT(device_->copy(dst, src, stream()),
              StatusIs(Errc::failed_buffer, CUDA_SUCCESS, HasSubstr("the source carries")));
  EXPECT_THAT(device_->read(dst, stream()), StatusIs(Errc::failed_buffer));
  // An eager fill of the whole source produces it again; then the copy goes through and the
  // whole destination is produced too.
  ASSERT_THAT(device_->fill(src, std::uint32_t{4}, stream()), IsOk());
  EXPECT_FALSE(src.failure().has_value());
  ASSERT_THAT(device_->copy(dst, src, stream()), IsOk());
  EXPECT_THAT(read_u32(dst), Each(4u));
}

TEST_F(CopyTest, APartialCopyOrFillDoesNotClearAFailure) {
  Buffer src = upload_u32(iota_u32(16));
  Buffer dst = upload_u32(iota_u32(16));
  fail_by_abandoned_recording(dst, 16);
  ASSERT_THAT(device_->copy(dst, 0, src, 0, 8 * 4, stream()), IsOk());
  EXPECT_TRUE(dst.failure().has_value());
  ASSERT_THAT(device_->fill(dst, 0, 60, std::uint8_t{0}, stream()), IsOk());
  EXPECT_TRUE(dst.failure().has_value());
  ASSERT_THAT(device_->fill(dst, std::uint8_t{0}, stream()), IsOk());
  EXPECT_FALSE(dst.failure().has_value());
}

TEST_F(CopyTest, ARecordedWholeFillClearsNothingUntilItsGraphReplays) {
  Buffer dst = upload_u32(iota_u32(16));
  fail_by_abandoned_recording(dst, 16);
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(device_->fill(dst, std::uint32_t{3}, stream()), IsOk());
  EXPECT_TRUE(dst.failure().has_value());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_TRUE(dst.failure().has_value());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(dst), Each(3u));
}

TEST_F(CopyTest, RecordedCopiesAndFillsAreClaimedWhenTheRecordingIsRefused) {
  Buffer src = upload_u32(iota_u32(16));
  Buffer copied = upload_u32(iota_u32(16));
  Buffer filled = upload_u32(iota_u32(16));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(device_->copy(copied, 0, src, 0, 4, stream()), IsOk());
  ASSERT_THAT(device_->fill(filled, std::uint8_t{1}, stream()), IsOk());
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
  EXPECT_THAT(device_->read(copied, stream()), StatusIs(Errc::doomed, CUDA_SUCCESS,
                                                        HasSubstr("abandoned")));
  EXPECT_THAT(device_->read(filled, stream()), StatusIs(Errc::doomed));
  EXPECT_THAT(read_u32(src), ElementsAreArray(iota_u32(16)));  // only read: not claimed
}

TEST_F(CopyTest, ARecordedCopyFromAFailedSourceDoomsTheRecording) {
  Buffer src = upload_u32(iota_u32(16));
  Buffer dst = upload_u32(iota_u32(16));
  fail_by_abandoned_recording(src, 16);
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  EXPECT_THAT(device_->copy(dst, src, stream()), StatusIs(Errc::failed_buffer));
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::doomed, CUDA_SUCCESS, HasSubstr("the source carries")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_THAT(device_->read(dst, stream()), StatusIs(Errc::doomed));
}

}  // namespace
}  // namespace graphcap::testing
