// Facts file, "Several streams in one capture": an event recorded on a capturing stream and
// waited on by another stream pulls that stream into the same capture; joined back, ending on the
// origin gives the whole graph (launched here, bytes checked); not joined, 904 and both streams
// back to NONE; ending on the forked stream, 903 and both INVALIDATED (the origin's end then
// 901); waiting on an event of a separate capture, 902 and both captures invalidated.
#include <cstdint>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

class MultiStreamCapture : public KernelsTest {
 protected:
  static constexpr std::uint32_t kWords = 200;
  static constexpr std::size_t kBytes = kWords * sizeof(std::uint32_t);

  void SetUp() override {
    KernelsTest::SetUp();
    if (HasFatalFailure()) return;
    forked_ = new_stream();
    fork_ = new_event();
    join_ = new_event();
    ASSERT_FALSE(HasFailure());
  }
  void TearDown() override {
    forked_.reset();
    join_.reset();
    fork_.reset();
    KernelsTest::TearDown();
  }

  // Begins a capture on the origin stream and forks it into the second stream.
  void begin_and_fork() {
    ASSERT_EQ(api().cuStreamBeginCapture(origin_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_SUCCESS);
    EXPECT_EQ(api().cuEventRecord(fork_.get(), origin_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamWaitEvent(forked_.get(), fork_.get(), 0), CUDA_SUCCESS);
  }

  void join() {
    EXPECT_EQ(api().cuEventRecord(join_.get(), forked_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamWaitEvent(origin_.get(), join_.get(), 0), CUDA_SUCCESS);
  }

  cuuint64_t capture_id(CUstream stream) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    EXPECT_EQ(api().cuStreamGetCaptureInfo(stream, &status, &id, nullptr, nullptr, nullptr,
                                           nullptr),
              CUDA_SUCCESS);
    return id;
  }

  RawStream& origin_ = s_;  // the stream each capture begins on
  RawStream forked_;
  RawEvent fork_;
  RawEvent join_;
};

TEST_F(MultiStreamCapture, WaitingOnACapturedEventPullsTheStreamIntoTheSameCapture) {
  ASSERT_EQ(capture_status(forked_.get()), CU_STREAM_CAPTURE_STATUS_NONE);
  begin_and_fork();
  EXPECT_EQ(capture_status(forked_.get()), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_EQ(capture_id(forked_.get()), capture_id(origin_.get()));
  join();
  expect_still_active(origin_.get(), 0);
  EXPECT_EQ(capture_status(forked_.get()), CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(MultiStreamCapture, JoinedForkEndsOnTheOriginWithTheWholeGraph) {
  DeviceMemory a = alloc(kBytes);
  DeviceMemory b = alloc(kBytes);
  DeviceMemory out = alloc(kBytes);
  ASSERT_FALSE(HasFailure());

  ASSERT_EQ(api().cuStreamBeginCapture(origin_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  EXPECT_EQ(launch(fill_, origin_.get(), kGrid, kBlock, a.get(), std::uint32_t{1}, kWords),
            CUDA_SUCCESS);
  EXPECT_EQ(api().cuEventRecord(fork_.get(), origin_.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamWaitEvent(forked_.get(), fork_.get(), 0), CUDA_SUCCESS);
  EXPECT_EQ(launch(fill_, forked_.get(), kGrid, kBlock, b.get(), std::uint32_t{2}, kWords),
            CUDA_SUCCESS);
  join();
  EXPECT_EQ(launch(axpy_, origin_.get(), kGrid, kBlock, a.get(), b.get(), out.get(),
                   std::uint32_t{3}, kWords),
            CUDA_SUCCESS);
  CUgraph raw = nullptr;
  ASSERT_EQ(api().cuStreamEndCapture(origin_.get(), &raw), CUDA_SUCCESS);
  RawGraph graph(api(), raw);
  ASSERT_TRUE(graph);
  EXPECT_EQ(capture_status(origin_.get()), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(capture_status(forked_.get()), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_THAT(node_types(graph.get()),
              ElementsAre(CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_KERNEL,
                          CU_GRAPH_NODE_TYPE_KERNEL));

  // Nothing ran during the capture; the replay computes out = 3 * 1 + 2.
  Exec exec = instantiate(graph.get());
  ASSERT_TRUE(exec);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), origin_.get()), CUDA_SUCCESS);
  EXPECT_THAT(download(out.get(), kWords, origin_.get()), Each(5u));
}

TEST_F(MultiStreamCapture, UnjoinedForkEndsOnTheOriginWithUnjoined) {
  begin_and_fork();
  EXPECT_EQ(launch(empty_, forked_.get(), 1, 1), CUDA_SUCCESS);
  CUgraph graph = reinterpret_cast<CUgraph>(std::uintptr_t{0x1});
  EXPECT_EQ(api().cuStreamEndCapture(origin_.get(), &graph), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(capture_status(origin_.get()), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(capture_status(forked_.get()), CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(MultiStreamCapture, EndOnTheForkedStreamIsUnmatchedAndInvalidatesBoth) {
  begin_and_fork();
  EXPECT_EQ(launch(empty_, forked_.get(), 1, 1), CUDA_SUCCESS);
  CUgraph graph = reinterpret_cast<CUgraph>(std::uintptr_t{0x1});
  EXPECT_EQ(api().cuStreamEndCapture(forked_.get(), &graph), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(capture_status(origin_.get()), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(capture_status(forked_.get()), CU_STREAM_CAPTURE_STATUS_INVALIDATED);

  CUgraph origin_graph = reinterpret_cast<CUgraph>(std::uintptr_t{0x1});
  EXPECT_EQ(api().cuStreamEndCapture(origin_.get(), &origin_graph),
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(origin_graph, nullptr);
  EXPECT_EQ(capture_status(origin_.get()), CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(MultiStreamCapture, WaitingOnAnEventOfASeparateCaptureIsMergeAndInvalidatesBoth) {
  ASSERT_EQ(api().cuStreamBeginCapture(origin_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamBeginCapture(forked_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  EXPECT_NE(capture_id(origin_.get()), capture_id(forked_.get()));
  EXPECT_EQ(launch(empty_, origin_.get(), 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(launch(empty_, forked_.get(), 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(api().cuEventRecord(fork_.get(), origin_.get()), CUDA_SUCCESS);

  EXPECT_EQ(api().cuStreamWaitEvent(forked_.get(), fork_.get(), 0),
            CUDA_ERROR_STREAM_CAPTURE_MERGE);
  EXPECT_EQ(capture_status(origin_.get()), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(capture_status(forked_.get()), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  for (CUstream stream : {origin_.get(), forked_.get()}) {
    CUgraph graph = reinterpret_cast<CUgraph>(std::uintptr_t{0x1});
    EXPECT_EQ(api().cuStreamEndCapture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT_EQ(graph, nullptr);
    EXPECT_EQ(capture_status(stream), CU_STREAM_CAPTURE_STATUS_NONE);
  }
}

}  // namespace
}  // namespace graphcap::testing
