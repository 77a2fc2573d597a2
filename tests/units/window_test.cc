// Window and its OpenRecording: the capture lifecycle of one stream and the recording's
// bookkeeping, tested as a unit. Its driver half (GraphDriver) is
// a gMock that delegates to the real CudaGraphDriver on the fake, so each test sees exactly which
// driver operations the window asked for, and in what state it was when it asked.
#include <graphcap/capture/window.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/capture/capture_tracker.h>
#include <graphcap/capture/cuda_graph_driver.h>
#include <graphcap/capture/replay_gate.h>
#include <graphcap/memory/allocation.h>
#include <graphcap/memory/buffer_state.h>
#include <graphcap/memory/drop_queue.h>
#include <graphcap/memory/slice_owner.h>
#include <graphcap/memory/slice_pool.h>

#include "fake/fake_fixture.h"
#include "matchers.h"

namespace graphcap::capture {
namespace {

using ::testing::_;
using ::testing::Invoke;
using ::testing::NiceMock;

class MockGraphDriver : public GraphDriver {
 public:
  explicit MockGraphDriver(DriverApi& api) : real_(api) {
    ON_CALL(*this, begin).WillByDefault(Invoke(&real_, &CudaGraphDriver::begin));
    ON_CALL(*this, end).WillByDefault(Invoke(&real_, &CudaGraphDriver::end));
    ON_CALL(*this, instantiate).WillByDefault(Invoke(&real_, &CudaGraphDriver::instantiate));
    ON_CALL(*this, upload).WillByDefault(Invoke(&real_, &CudaGraphDriver::upload));
    ON_CALL(*this, inspect).WillByDefault(Invoke(&real_, &CudaGraphDriver::inspect));
    ON_CALL(*this, instantiate_inspected)
        .WillByDefault(Invoke(&real_, &CudaGraphDriver::instantiate_inspected));
    ON_CALL(*this, update).WillByDefault(Invoke(&real_, &CudaGraphDriver::update));
    ON_CALL(*this, nodes).WillByDefault(Invoke(&real_, &CudaGraphDriver::nodes));
    ON_CALL(*this, body_nodes).WillByDefault(Invoke(&real_, &CudaGraphDriver::body_nodes));
    ON_CALL(*this, last_node).WillByDefault(Invoke(&real_, &CudaGraphDriver::last_node));
    ON_CALL(*this, dump_dot).WillByDefault(Invoke(&real_, &CudaGraphDriver::dump_dot));
    ON_CALL(*this, create_condition)
        .WillByDefault(Invoke(&real_, &CudaGraphDriver::create_condition));
    ON_CALL(*this, add_conditional)
        .WillByDefault(Invoke(&real_, &CudaGraphDriver::add_conditional));
    ON_CALL(*this, begin_body).WillByDefault(Invoke(&real_, &CudaGraphDriver::begin_body));
    ON_CALL(*this, body_active).WillByDefault(Invoke(&real_, &CudaGraphDriver::body_active));
    ON_CALL(*this, end_body).WillByDefault(Invoke(&real_, &CudaGraphDriver::end_body));
  }
  MOCK_METHOD(Result<void>, begin, (CUstream, CUstreamCaptureMode), (override));
  MOCK_METHOD(Result<CapturedGraph>, end, (CUstream), (override));
  MOCK_METHOD(Result<Instantiated>, instantiate, (const CapturedGraph&, const GraphReport&),
              (override));
  MOCK_METHOD(bool, upload, (const Executable&, CUstream, GraphReport&), (override));
  MOCK_METHOD(Result<GraphReport>, inspect, (const CapturedGraph&, const GraphReport&),
              (override));
  MOCK_METHOD(Result<Executable>, instantiate_inspected,
              (const CapturedGraph&, GraphReport&, InstantiateFailure*, bool), (override));
  MOCK_METHOD(bool, update, (const Executable&, const CapturedGraph&, GraphReport&), (override));
  MOCK_METHOD(Result<std::vector<CUgraphNode>>, nodes, (const CapturedGraph&), (override));
  MOCK_METHOD(Result<std::vector<CUgraphNode>>, body_nodes, (CUgraph), (override));
  MOCK_METHOD(Result<CUgraphNode>, last_node, (CUstream), (override));
  MOCK_METHOD(void, dump_dot, (const CapturedGraph&, const std::string&), (override));
  MOCK_METHOD(Result<CUgraphConditionalHandle>, create_condition, (CUstream, unsigned),
              (override));
  MOCK_METHOD(Result<ConditionalNode>, add_conditional,
              (CUstream, CUgraphConditionalHandle, CUgraphConditionalNodeType, unsigned),
              (override));
  MOCK_METHOD(Result<void>, begin_body, (CUstream, CUgraph, CUstreamCaptureMode), (override));
  MOCK_METHOD(Result<bool>, body_active, (CUstream), (override));
  MOCK_METHOD(Result<void>, end_body, (CUstream), (override));

 private:
  CudaGraphDriver real_;
};

// Where the test buffers' slices go when their last handle does.
class TestOwner final : public memory::SliceOwner {
 public:
  void drop(const memory::Slice&, std::uint64_t) noexcept override { ++dropped; }
  int dropped = 0;
};

class WindowTest : public fake::unit::FakeDriverTest {
 protected:
  void SetUp() override {
    FakeDriverTest::SetUp();
    device_pool_ = std::make_unique<memory::SlicePool>(fake_, memory::SliceKind::device);
    staging_pool_ = std::make_unique<memory::SlicePool>(fake_, memory::SliceKind::pinned_host);
    drops_ = std::make_unique<memory::DropQueue>(fake_, stream_, *device_pool_, *staging_pool_);
    graphs_ = std::make_unique<NiceMock<MockGraphDriver>>(fake_);
    window_ = std::make_unique<Window>(*graphs_, *device_pool_, *staging_pool_, *drops_,
                                       *tracker_, gate_, stream_);
  }
  void TearDown() override {
    buffers_.clear();
    window_.reset();
    drops_.reset();
    staging_pool_.reset();
    device_pool_.reset();
    FakeDriverTest::TearDown();
  }

  // A buffer whose memory is real device memory of the pool.
  std::shared_ptr<memory::BufferState> buffer(std::size_t bytes) {
    Result<memory::Slice> slice = device_pool_->acquire(bytes, true);
    EXPECT_TRUE(slice.has_value());
    auto allocation = std::make_shared<memory::Allocation>(owner_, *slice);
    buffers_.push_back(std::make_shared<memory::BufferState>(allocation, bytes));
    return buffers_.back();
  }

  // Launches `empty` on the stream and records it as an operation using `uses`.
  void launch_and_record(std::span<const BufferUse> uses, const Error* failure = nullptr) {
    if (failure == nullptr) {
      ASSERT_EQ(fake_.cuLaunchKernel(empty_, 1, 1, 1, 1, 1, 1, 0, stream_, nullptr, nullptr),
                CUDA_SUCCESS);
    }
    Operation op;
    op.node = CU_GRAPH_NODE_TYPE_KERNEL;
    op.uses = uses;
    OpenRecording* recording = window_->recording_into();
    ASSERT_NE(recording, nullptr);
    ASSERT_THAT(recording->record(op, 0, failure, stream_), IsOk());
  }

  CUstreamCaptureStatus capture_status() {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    EXPECT_EQ(fake_.cuStreamIsCapturing(stream_, &status), CUDA_SUCCESS);
    return status;
  }

  std::shared_ptr<CaptureTracker> tracker_ = CaptureTracker::for_driver(fake_);
  ReplayGate gate_;
  std::shared_ptr<TestOwner> owner_ = std::make_shared<TestOwner>();
  std::unique_ptr<memory::SlicePool> device_pool_;
  std::unique_ptr<memory::SlicePool> staging_pool_;
  std::unique_ptr<memory::DropQueue> drops_;
  std::unique_ptr<NiceMock<MockGraphDriver>> graphs_;
  std::unique_ptr<Window> window_;
  std::vector<std::shared_ptr<memory::BufferState>> buffers_;
};

TEST_F(WindowTest, OutOfOrderTransitionsAreGraphStateAndChangeNothing) {
  EXPECT_CALL(*graphs_, begin).Times(0);
  EXPECT_CALL(*graphs_, end).Times(0);
  EXPECT_THAT(window_->begin(), StatusIs(Errc::graph_state, CUDA_SUCCESS,
                                         HasSubstr("call prepare_capture")));
  EXPECT_THAT(window_->end(true), StatusIs(Errc::graph_state));
  EXPECT_EQ(window_->state(), CaptureState::no_capture);
  ASSERT_THAT(window_->prepare(CU_STREAM_CAPTURE_MODE_GLOBAL, true, nullptr), IsOk());
  EXPECT_THAT(window_->prepare(CU_STREAM_CAPTURE_MODE_GLOBAL, true, nullptr),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("already called")));
  EXPECT_THAT(window_->end(true), StatusIs(Errc::graph_state, CUDA_SUCCESS,
                                           HasSubstr("begin_capture first")));
  EXPECT_EQ(window_->state(), CaptureState::prepare);
  EXPECT_TRUE(device_pool_->armed());
  ASSERT_THAT(window_->abort(), IsOk());
  EXPECT_EQ(window_->state(), CaptureState::no_capture);
  EXPECT_FALSE(device_pool_->armed());
}

TEST_F(WindowTest, AFailedBeginUndoesEverythingAndTheStreamCapturesAgain) {
  EXPECT_CALL(*graphs_, begin)
      .WillOnce(::testing::Return(Error::from_driver("cuStreamBeginCapture",
                                                     CUDA_ERROR_ILLEGAL_STATE)))
      .WillRepeatedly(Invoke([&](CUstream s, CUstreamCaptureMode m) {
        return CudaGraphDriver(fake_).begin(s, m);
      }));
  ASSERT_THAT(window_->prepare(CU_STREAM_CAPTURE_MODE_GLOBAL, true, nullptr), IsOk());
  EXPECT_THAT(window_->begin(), StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_STATE));
  EXPECT_EQ(window_->state(), CaptureState::no_capture);
  EXPECT_FALSE(device_pool_->armed());
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden()) << "the tracker forgot the recording";
  EXPECT_TRUE(gate_.open());
  ASSERT_THAT(window_->prepare(CU_STREAM_CAPTURE_MODE_GLOBAL, true, nullptr), IsOk());
  ASSERT_THAT(window_->begin(), IsOk());
  EXPECT_EQ(capture_status(), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_FALSE(gate_.open()) << "replays on a recording stream are gated";
  ASSERT_THAT(window_->abort(), IsOk());
  EXPECT_EQ(capture_status(), CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(WindowTest, TheTrackerHoldsTheRecordingUntilTheDriverCaptureIsClosed) {
  // Another thread's unsafe call in the gap between "recording over" and cuStreamEndCapture
  // would invalidate the capture being ended (GLOBAL mode).
  bool forbidden_during_end = false;
  EXPECT_CALL(*graphs_, end).WillOnce(Invoke([&](CUstream s) {
    std::thread([&] { forbidden_during_end = tracker_->unsafe_calls_forbidden(); }).join();
    return CudaGraphDriver(fake_).end(s);
  }));
  ASSERT_THAT(window_->prepare(CU_STREAM_CAPTURE_MODE_GLOBAL, true, nullptr), IsOk());
  ASSERT_THAT(window_->begin(), IsOk());
  launch_and_record({});
  Result<std::unique_ptr<Recording>> recording = window_->end(false);
  ASSERT_THAT(recording, IsOk());
  EXPECT_TRUE(forbidden_during_end);
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden());
  EXPECT_EQ((*recording)->report.node_count, 1u);
}

TEST_F(WindowTest, ARecordingPinsItsMemoryAndNamesEachBufferOnceByRole) {
  auto in = buffer(256);
  auto out = buffer(256);
  ASSERT_THAT(window_->prepare(CU_STREAM_CAPTURE_MODE_GLOBAL, true, nullptr), IsOk());
  ASSERT_THAT(window_->begin(), IsOk());
  const BufferUse first[] = {{&in, Access::read}, {&out, Access::write_whole}};
  const BufferUse second[] = {{&out, Access::read_write}};
  launch_and_record(first);
  launch_and_record(second);
  Result<std::unique_ptr<Recording>> ended = window_->end(true);
  ASSERT_THAT(ended, IsOk());
  const Recording* recording = ended->get();
  ASSERT_NE(recording, nullptr);
  EXPECT_EQ(recording->report.node_count, 2u);
  EXPECT_EQ(recording->pins.size(), 2u) << "one pin per slice, however often it is used";
  EXPECT_EQ(recording->report.pinned_slices, 2u);
  EXPECT_EQ(recording->buffers.reads.size(), 2u);
  EXPECT_EQ(recording->buffers.writes.size(), 1u);
  ASSERT_EQ(recording->buffers.produces.size(), 1u);
  EXPECT_EQ(recording->buffers.produces[0].lock(), out);
}

TEST_F(WindowTest, ADoomedRecordingClosesTheDriverCaptureAndClaimsWhatItWouldHaveWritten) {
  auto in = buffer(64);
  auto out = buffer(64);
  EXPECT_CALL(*graphs_, end).Times(1);
  EXPECT_CALL(*graphs_, inspect).Times(0);
  EXPECT_CALL(*graphs_, instantiate_inspected).Times(0);
  ASSERT_THAT(window_->prepare(CU_STREAM_CAPTURE_MODE_GLOBAL, true, nullptr), IsOk());
  ASSERT_THAT(window_->begin(), IsOk());
  const BufferUse uses[] = {{&in, Access::read}, {&out, Access::write_whole}};
  const Error skipped(Errc::invalid_argument, "launch of add_one: input failed");
  launch_and_record(uses, &skipped);
  const BufferUse later[] = {{&in, Access::read}};
  launch_and_record(later);  // the first error is the one reported
  EXPECT_THAT(window_->end(true), StatusIs(Errc::doomed, CUDA_SUCCESS,
                                           HasSubstr("launch of add_one: input failed")));
  EXPECT_EQ(capture_status(), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(window_->state(), CaptureState::no_capture);
  ASSERT_TRUE(out->failed());
  EXPECT_THAT(out->failure()->message(), HasSubstr("recording refused"));
  EXPECT_FALSE(in->failed()) << "only written buffers are claimed";
}

TEST_F(WindowTest, AFailedInstantiateIsReturnedAndClaimsTheWrites) {
  auto out = buffer(64);
  EXPECT_CALL(*graphs_, instantiate_inspected)
      .WillOnce(::testing::Return(Error::from_driver("cuGraphInstantiateWithParams",
                                                     CUDA_ERROR_OUT_OF_MEMORY)));
  ASSERT_THAT(window_->prepare(CU_STREAM_CAPTURE_MODE_GLOBAL, true, nullptr), IsOk());
  ASSERT_THAT(window_->begin(), IsOk());
  const BufferUse uses[] = {{&out, Access::write_part}};
  launch_and_record(uses);
  EXPECT_THAT(window_->end(true), StatusIs(Errc::out_of_memory, CUDA_ERROR_OUT_OF_MEMORY,
                                           HasSubstr("cuGraphInstantiateWithParams")));
  EXPECT_TRUE(out->failed());
  EXPECT_EQ(capture_status(), CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(WindowTest, OnlyTheRecordingThreadEndsAGlobalRecordingButAnyThreadAbortsIt) {
  auto out = buffer(64);
  ASSERT_THAT(window_->prepare(CU_STREAM_CAPTURE_MODE_GLOBAL, true, nullptr), IsOk());
  ASSERT_THAT(window_->begin(), IsOk());
  const BufferUse uses[] = {{&out, Access::write_whole}};
  launch_and_record(uses);
  Result<std::unique_ptr<Recording>> ended = Error(Errc::driver, "not run");
  Result<void> aborted = Error(Errc::driver, "not run");
  std::thread([&] {
    ASSERT_EQ(fake_.cuCtxSetCurrent(context_), CUDA_SUCCESS);  // as Device binds each thread
    ended = window_->end(true);
    aborted = window_->abort();  // terminated with 908 by the driver: the expected outcome
  }).join();
  EXPECT_THAT(ended, StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("abort_capture")));
  EXPECT_THAT(aborted, IsOk());
  EXPECT_EQ(window_->state(), CaptureState::no_capture);
  EXPECT_EQ(capture_status(), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_TRUE(out->failed());
  EXPECT_FALSE(tracker_->unsafe_calls_forbidden()) << "the recording thread may sync again";
}

}  // namespace
}  // namespace graphcap::capture
