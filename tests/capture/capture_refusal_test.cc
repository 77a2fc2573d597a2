// Recordings graphcap must refuse, on every driver: an allocation the pool can't serve inside the
// window, a memory node recorded behind the pools' back, and a launch that reads a failed buffer.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class CaptureRefusalTest : public DeviceFixture {
 protected:
  CUstreamCaptureStatus driver_capture_status() {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    EXPECT_EQ(driver_->api().cuStreamIsCapturing(stream().native_handle(), &status), CUDA_SUCCESS);
    return status;
  }

  // A clean capture-and-replay afterwards proves the stream is usable and re-capturable.
  void expect_stream_captures_again() {
    Buffer x = upload_u32({1, 2, 3});
    ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
    ASSERT_THAT(add_one(x, x, 3), IsOk());
    ASSERT_THAT(device_->begin_capture(stream()), IsOk());
    ASSERT_THAT(add_one(x, x, 3), IsOk());
    Result<Graph> graph = device_->end_capture(stream());
    ASSERT_THAT(graph, IsOk());
    ASSERT_THAT(graph->replay(), IsOk());
    EXPECT_THAT(read_u32(x), ElementsAreArray({3u, 4u, 5u}));
  }
};

TEST_F(CaptureRefusalTest, AllocationOfAnUnseenSizeInsideTheWindowIsRefused) {
  Buffer x = upload_u32(iota_u32(16));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 16), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 16), IsOk());
  // The warm-up never allocated 12345 bytes: the pool can't serve it and must not call the driver.
  EXPECT_THAT(device_->alloc(12345, stream()),
              StatusIs(Errc::out_of_memory, CUDA_SUCCESS, HasSubstr("allocation of 12345 bytes")));
  EXPECT_EQ(driver_capture_status(), CU_STREAM_CAPTURE_STATUS_ACTIVE)  // not invalidated
      << "the refused allocation must not have reached the driver";
  Result<Graph> graph = device_->end_capture(stream());
  EXPECT_THAT(graph, StatusIs(Errc::doomed, CUDA_SUCCESS,
                              AllOf(HasSubstr("allocation of 12345 bytes"), HasSubstr("end_capture"))));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_EQ(driver_capture_status(), CU_STREAM_CAPTURE_STATUS_NONE);
  // x was written by a recorded launch that will never run: it carries the refusal.
  EXPECT_THAT(device_->read(x, stream()), StatusIs(Errc::doomed));
  ASSERT_THAT(device_->write(x, to_bytes(iota_u32(16)), stream()), IsOk());  // a full write clears
  EXPECT_THAT(read_u32(x), ElementsAreArray(iota_u32(16)));
  expect_stream_captures_again();
}

TEST_F(CaptureRefusalTest, RecordingWithMemoryNodesIsRefusedWithTheirCount) {
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  // Something allocates through the driver on the capturing stream, around graphcap's pools.
  CUdeviceptr rogue = 0;
  ASSERT_EQ(driver_->api().cuMemAllocAsync(&rogue, 4096, stream().native_handle()), CUDA_SUCCESS);
  ASSERT_EQ(driver_->api().cuMemFreeAsync(rogue, stream().native_handle()), CUDA_SUCCESS);
  Result<Graph> graph = device_->end_capture(stream());
  EXPECT_THAT(graph, StatusIs(Errc::graph_state, CUDA_SUCCESS,
                              AllOf(HasSubstr("2 memory node(s)"), HasSubstr("1 MEM_ALLOC"),
                                    HasSubstr("1 MEM_FREE"))));
  EXPECT_EQ(driver_capture_status(), CU_STREAM_CAPTURE_STATUS_NONE);
  if (fake::FakeDriver* f = fake()) {
    EXPECT_EQ(f->live_handles().graphs, 0u) << "the intermediate graph must be destroyed";
    EXPECT_EQ(f->live_handles().execs, 0u);
  }
  expect_stream_captures_again();
}

// A re-recording into a graph is offered to its executable before any census of the new graph;
// memory nodes still never reach it: the update refuses other node types (here at the
// same node count), and the census that follows refuses the recording. The graph is unchanged.
TEST_F(CaptureRefusalTest, ReRecordingWithMemoryNodesIntoAGraphIsRefusedAndLeavesItUnchanged) {
  Buffer x = upload_u32({1, 2, 3});
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  for (int i = 0; i < 3; ++i) ASSERT_THAT(add_one(x, x, 3), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  for (int i = 0; i < 3; ++i) ASSERT_THAT(add_one(x, x, 3), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  const CUgraphExec exec = graph->native_handle();

  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 3), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 3), IsOk());
  CUdeviceptr rogue = 0;
  ASSERT_EQ(driver_->api().cuMemAllocAsync(&rogue, 4096, stream().native_handle()), CUDA_SUCCESS);
  ASSERT_EQ(driver_->api().cuMemFreeAsync(rogue, stream().native_handle()), CUDA_SUCCESS);
  EXPECT_THAT(device_->end_capture(stream(), *graph),
              StatusIs(Errc::graph_state, CUDA_SUCCESS,
                       AllOf(HasSubstr("2 memory node(s)"), HasSubstr("1 MEM_ALLOC"))));
  EXPECT_EQ(driver_capture_status(), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(graph->native_handle(), exec);
  EXPECT_FALSE(graph->report().rerecorded);
  // x carries the refusal (the recording wrote it); a full write clears it, and the graph still
  // replays its three launches.
  ASSERT_THAT(device_->write(x, to_bytes(std::vector<std::uint32_t>{1, 2, 3}), stream()), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray({4u, 5u, 6u}));
  expect_stream_captures_again();
}

TEST_F(CaptureRefusalTest, LaunchReadingAFailedBufferDoomsTheRecording) {
  // Make `poisoned` carry an error without fault injection: a refused recording claims it.
  Buffer poisoned = upload_u32(iota_u32(32));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(fill(poisoned, 7, 32), IsOk());
  ASSERT_THAT(device_->alloc(99999, stream()), StatusIs(Errc::out_of_memory));
  Result<Graph> first = device_->end_capture(stream());
  ASSERT_THAT(first, StatusIs(Errc::doomed));
  const Error original = *poisoned.failure();

  Buffer out = upload_u32(std::vector<std::uint32_t>(32, 1));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  EXPECT_THAT(add_one(poisoned, out, 32),
              StatusIs(Errc::failed_buffer, CUDA_SUCCESS, HasSubstr(original.message())));
  Result<Graph> second = device_->end_capture(stream());
  EXPECT_THAT(second, StatusIs(Errc::doomed, CUDA_SUCCESS, HasSubstr(original.message())));
  EXPECT_EQ(driver_capture_status(), CU_STREAM_CAPTURE_STATUS_NONE) << "driver capture closed";
  // What the recording would have written carries the refusal, not stale bytes.
  Result<std::vector<std::byte>> read = device_->read(out, stream());
  EXPECT_THAT(read, StatusIs(Errc::doomed));
  ASSERT_THAT(device_->write(poisoned, to_bytes(iota_u32(32)), stream()), IsOk());
  ASSERT_THAT(device_->write(out, to_bytes(iota_u32(32)), stream()), IsOk());
  expect_stream_captures_again();
}

}  // namespace
}  // namespace graphcap::testing
