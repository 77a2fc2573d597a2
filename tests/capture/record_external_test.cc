// Device::record_external on every driver: work graphcap does not issue (here a raw cuLaunchKernel
// on Stream::native_handle(), as cuBLAS or NCCL would enqueue) declares its buffers, and gets a
// launch's bookkeeping: checked inputs, pinned while recorded, claimed on refusal, marked on
// failure.
#include <cstdint>
#include <optional>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class RecordExternalTest : public DeviceFixture {
 protected:
  // dst = src + 1, launched straight through the driver on the device's stream.
  CUresult raw_add_one(const Buffer& src, const Buffer& dst, std::uint32_t n) {
    CUdeviceptr in = src.native_handle();
    CUdeviceptr out = dst.native_handle();
    void* params[] = {&in, &out, &n};
    const LaunchDims dims = dims_for(n);
    return driver_->api().cuLaunchKernel(add_one_.native_handle(), dims.grid.x, 1, 1,
                                         dims.block.x, 1, 1, 0, stream().native_handle(), params,
                                         nullptr);
  }
};

TEST_F(RecordExternalTest, EagerExternalWorkProducesItsDeclaredOutput) {
  Buffer in = upload_u32(iota_u32(64));
  Buffer out = upload_u32(std::vector<std::uint32_t>(64, 0));
  ASSERT_THAT(device_->record_external(stream(), {Arg::in(in), Arg::out(out)}), IsOk());
  ASSERT_EQ(raw_add_one(in, out, 64), CUDA_SUCCESS);
  EXPECT_THAT(read_u32(out), ElementsAreArray(iota_u32(64, 1)));
}

TEST_F(RecordExternalTest, AnInputCarryingAFailureIsRefusedAndItsOutputsCarryIt) {
  Buffer in = upload_u32(iota_u32(8));
  Buffer out = upload_u32(iota_u32(8));
  // A failed write leaves `in` carrying the failure.
  ASSERT_THAT(device_->record_external(stream(), {Arg::out(in)},
                                       Error(Errc::driver, "cublasSgemm: CUBLAS_STATUS_EXECUTION_FAILED")),
              StatusIs(Errc::driver, CUDA_SUCCESS, HasSubstr("CUBLAS_STATUS_EXECUTION_FAILED")));
  ASSERT_TRUE(in.failure().has_value());
  EXPECT_THAT(device_->record_external(stream(), {Arg::in(in), Arg::out(out)}),
              StatusIs(Errc::failed_buffer, CUDA_SUCCESS, HasSubstr("buffer 0 carries an error")));
  ASSERT_TRUE(out.failure().has_value());
  EXPECT_THAT(out.failure()->message(), HasSubstr("CUBLAS_STATUS_EXECUTION_FAILED"));
  EXPECT_THAT(device_->read(out, stream()), StatusIs(Errc::failed_buffer));
}

TEST_F(RecordExternalTest, ValuesAndForeignBuffersAreInvalidArgument) {
  Buffer out = upload_u32(iota_u32(8));
  const std::uint32_t n = 8;
  EXPECT_THAT(device_->record_external(stream(), {Arg::out(out), Arg::value(n)}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("argument 1 is a value")));
  Result<Stream*> other = device_->create_stream();
  ASSERT_THAT(other, IsOk());
  EXPECT_THAT(device_->record_external(**other, {Arg::out(out)}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("record_external")));
  EXPECT_FALSE(out.failure().has_value()) << "a refused declaration marks nothing";
}

TEST_F(RecordExternalTest, RecordedExternalWorkReplaysAndItsBuffersStayPinned) {
  Buffer in = upload_u32(iota_u32(256));
  Buffer out = upload_u32(std::vector<std::uint32_t>(256, 0));
  // The step: an intermediate the external work writes, dropped at the end of the step.
  auto step = [&]() -> Result<void> {
    Result<Buffer> scratch = device_->alloc(256 * sizeof(std::uint32_t), stream());
    if (!scratch) return scratch.error();
    if (Result<void> ok = device_->record_external(stream(), {Arg::in(in), Arg::out(*scratch)});
        !ok) {
      return ok;
    }
    EXPECT_EQ(raw_add_one(in, *scratch, 256), CUDA_SUCCESS);
    if (Result<void> ok = device_->record_external(stream(), {Arg::in(*scratch), Arg::out(out)});
        !ok) {
      return ok;
    }
    EXPECT_EQ(raw_add_one(*scratch, out, 256), CUDA_SUCCESS);
    return {};
  };
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(step(), IsOk());  // the warm-up
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(step(), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_TRUE(graph->report().external_work);
  EXPECT_EQ(graph->report().node_count, 2u) << "counted from the graph itself";
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_KERNEL), 2u);
  EXPECT_EQ(graph->report().pinned_slices, 3u) << "in, out and the dropped intermediate";
  EXPECT_THAT(read_u32(out), ElementsAreArray(iota_u32(256, 2))) << "the warm-up's result";
  // Another buffer allocated now must not reuse the pinned intermediate's memory.
  Buffer other = upload_u32(std::vector<std::uint32_t>(256, 7));
  ASSERT_THAT(device_->write(in, to_bytes(iota_u32(256, 10)), stream()), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(out), ElementsAreArray(iota_u32(256, 12)));
  EXPECT_THAT(read_u32(other), ElementsAreArray(std::vector<std::uint32_t>(256, 7)));
}

TEST_F(RecordExternalTest, ARefusedRecordingClaimsTheExternalOutputs) {
  Buffer in = upload_u32(iota_u32(16));
  Buffer out = upload_u32(iota_u32(16));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(device_->record_external(stream(), {Arg::in(in), Arg::out(out)}), IsOk());
  ASSERT_EQ(raw_add_one(in, out, 16), CUDA_SUCCESS);
  // The external work then reports a failure of its own: the recording is doomed by it.
  EXPECT_THAT(device_->record_external(stream(), {Arg::in(in), Arg::out(in)},
                                       Error(Errc::driver, "ncclAllReduce: ncclSystemError")),
              StatusIs(Errc::driver, CUDA_SUCCESS, HasSubstr("ncclSystemError")));
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::doomed, CUDA_SUCCESS, HasSubstr("ncclSystemError")));
  ASSERT_TRUE(out.failure().has_value()) << "claimed: the refused graph never wrote it";
  EXPECT_THAT(out.failure()->message(), HasSubstr("recording refused"));
  // The stream is usable: eager work goes on.
  Buffer fresh = upload_u32(iota_u32(16));
  ASSERT_THAT(add_one(fresh, out, 16), IsOk());
  EXPECT_THAT(read_u32(out), ElementsAreArray(iota_u32(16, 1)));
}

TEST_F(RecordExternalTest, ABufferDroppedAfterTheRecordingStaysPinnedWhileTheGraphWritesIt) {
  Buffer in = upload_u32(iota_u32(256));
  std::optional<Buffer> out = upload_u32(std::vector<std::uint32_t>(256, 0));
  auto step = [&]() -> Result<void> {
    if (Result<void> ok = device_->record_external(stream(), {Arg::in(in), Arg::out(*out)}); !ok) {
      return ok;
    }
    EXPECT_EQ(raw_add_one(in, *out, 256), CUDA_SUCCESS);
    return {};
  };
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(step(), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(step(), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().pinned_slices, 2u) << "in and out";
  // The caller drops the buffer the external work writes; the graph still writes its memory on
  // every replay, so a buffer of the same size allocated now must get other memory.
  const CUdeviceptr dropped = out->native_handle();
  out.reset();
  Buffer next = upload_u32(std::vector<std::uint32_t>(256, 7));
  EXPECT_NE(next.native_handle(), dropped) << "the pinned memory of the dropped buffer was reused";
  ASSERT_THAT(graph->replay(), IsOk());
  ASSERT_THAT(device_->sync(stream()), IsOk());
  EXPECT_THAT(read_u32(next), ElementsAreArray(std::vector<std::uint32_t>(256, 7)));
  // Once the graph goes, the memory is the pool's again.
  ASSERT_THAT(graph->destroy(), IsOk());
  Buffer after = upload_u32(std::vector<std::uint32_t>(256, 9));
  EXPECT_THAT(read_u32(after), ElementsAreArray(std::vector<std::uint32_t>(256, 9)));
}

TEST_F(RecordExternalTest, AFailedInputInARecordingIsRefusedAndDoomsIt) {
  Buffer in = upload_u32(iota_u32(16));
  Buffer out = upload_u32(iota_u32(16));
  const Error failed(Errc::driver, "cublasSgemm: CUBLAS_STATUS_EXECUTION_FAILED");
  ASSERT_THAT(device_->record_external(stream(), {Arg::out(in)}, failed), StatusIs(Errc::driver));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  EXPECT_THAT(device_->record_external(stream(), {Arg::in(in), Arg::out(out)}),
              StatusIs(Errc::failed_buffer, CUDA_SUCCESS, HasSubstr("buffer 0 carries an error")));
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::doomed, CUDA_SUCCESS, HasSubstr("CUBLAS_STATUS_EXECUTION_FAILED")));
  ASSERT_TRUE(out.failure().has_value()) << "what the refused work would have written";
  EXPECT_THAT(device_->read(out, stream()),
              StatusIs(Errc::doomed, CUDA_SUCCESS, HasSubstr("CUBLAS_STATUS_EXECUTION_FAILED")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

}  // namespace
}  // namespace graphcap::testing
