// Facts file, "Beginning and ending a capture": begin on a capturing stream, on the legacy/NULL
// stream, with an invalid mode; end on a stream that is not capturing; the empty capture; and the
// three capture modes each beginning and ending cleanly.
#include <cstdint>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

using CaptureBeginEnd = KernelsTest;

TEST_F(CaptureBeginEnd, BeginOnACapturingStreamIsIllegalStateAndTheCaptureStaysValid) {
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_EQ(capture_status(s_.get()), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS) << "the running capture still records";
  expect_still_active(s_.get(), 2);
}

TEST_F(CaptureBeginEnd, BeginOnTheNullStreamIsUnsupported) {
  EXPECT_EQ(api().cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(capture_status(nullptr), CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(CaptureBeginEnd, BeginOnTheLegacyStreamIsUnsupported) {
  EXPECT_EQ(api().cuStreamBeginCapture(stream_legacy(), CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(capture_status(stream_legacy()), CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(CaptureBeginEnd, BeginWithAnInvalidModeIsInvalidValue) {
  EXPECT_EQ(api().cuStreamBeginCapture(s_.get(), static_cast<CUstreamCaptureMode>(3)),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().cuStreamBeginCapture(s_.get(), static_cast<CUstreamCaptureMode>(-1)),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(capture_status(s_.get()), CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(CaptureBeginEnd, EndOnAStreamThatIsNotCapturingIsIllegalState) {
  CUgraph graph = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s_.get(), &graph), CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(capture_status(s_.get()), CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(CaptureBeginEnd, EndTwiceIsIllegalStateTheSecondTime) {
  RawGraph graph = capture(s_.get(), [] {});
  CUgraph second = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s_.get(), &second), CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_EQ(second, nullptr);
}

TEST_F(CaptureBeginEnd, EmptyCaptureIsAValidGraphWithNoNodesThatInstantiatesAndLaunches) {
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(capture_status(s_.get()), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUgraph raw = nullptr;
  ASSERT_EQ(api().cuStreamEndCapture(s_.get(), &raw), CUDA_SUCCESS);
  ASSERT_NE(raw, nullptr);
  RawGraph graph(api(), raw);
  EXPECT_EQ(capture_status(s_.get()), CU_STREAM_CAPTURE_STATUS_NONE);

  std::size_t count = 99;
  EXPECT_EQ(api().cuGraphGetNodes(graph.get(), nullptr, &count), CUDA_SUCCESS);
  EXPECT_EQ(count, 0u);

  Exec exec = instantiate(graph.get());
  ASSERT_TRUE(exec);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
}

// Every mode is a valid mode: each begins, records, and ends into a graph.
class CaptureModes : public ConformanceTest,
                     public ::testing::WithParamInterface<CUstreamCaptureMode> {};

TEST_P(CaptureModes, BeginRecordEnd) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), GetParam()), CUDA_SUCCESS);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_ACTIVE);

  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph capturing_graph = nullptr;
  const CUgraphNode* dependencies = nullptr;
  const CUgraphEdgeData* edges = nullptr;
  std::size_t dependency_count = 99;
  EXPECT_EQ(api().cuStreamGetCaptureInfo(s.get(), &status, &id, &capturing_graph, &dependencies,
                                         &edges, &dependency_count),
            CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_NE(capturing_graph, nullptr);
  EXPECT_EQ(dependency_count, 0u) << "nothing recorded yet";

  EXPECT_EQ(launch(empty, s.get(), 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamGetCaptureInfo(s.get(), &status, nullptr, nullptr, &dependencies,
                                         nullptr, &dependency_count),
            CUDA_SUCCESS);
  EXPECT_EQ(dependency_count, 1u) << "the next node would depend on the kernel";
  expect_still_active(s.get(), 1);
}

INSTANTIATE_TEST_SUITE_P(EveryMode, CaptureModes, every_capture_mode(), capture_mode_name);

}  // namespace
}  // namespace graphcap::testing
