// cuGraphExecKernelNodeSetParams (per-replay parameters) and the way graphcap names the
// node it sets: cuStreamGetCaptureInfo right after a captured launch lists exactly one dependency,
// the launch's node, which is a node of the graph the capture ends into. cuda.h: "the node is
// identified by the corresponding node in the non-executable graph, from which the executable
// graph was instantiated"; "the modifications only affect future launches". The rows marked
// "needs H200 confirmation" in docs/conformance.md are the fake's reading of cuda.h.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <graphcap/driver/node_params.h>
#include <graphcap/fake/fake_driver.h>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

class KernelNodeSetParams : public KernelsTest {
 protected:
  static constexpr std::uint32_t kWords = 300;
  static constexpr std::size_t kBytes = kWords * sizeof(std::uint32_t);

  void SetUp() override {
    KernelsTest::SetUp();
    if (HasFatalFailure()) return;
    dst_ = alloc(kBytes);
    ASSERT_FALSE(HasFailure());
  }
  void TearDown() override {
    dst_.reset();
    KernelsTest::TearDown();
  }

  // Captures fill(dst, value, kWords) and returns the graph; `node` is the launch's node as
  // cuStreamGetCaptureInfo names it right after the launch.
  RawGraph capture_fill(std::uint32_t value, CUgraphNode* node) {
    return capture(s_.get(), [&] {
      EXPECT_EQ(launch(fill_, s_.get(), kGrid, kBlock, dst_.get(), value, kWords), CUDA_SUCCESS);
      CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
      const CUgraphNode* deps = nullptr;
      std::size_t count = 0;
      EXPECT_EQ(api().cuStreamGetCaptureInfo(s_.get(), &status, nullptr, nullptr, &deps, nullptr,
                                             &count),
                CUDA_SUCCESS);
      EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
      ASSERT_EQ(count, 1u);
      ASSERT_NE(deps, nullptr);
      *node = deps[0];
    });
  }

  // fill's parameters with `value`.
  CUresult set_fill(CUgraphExec exec, CUgraphNode node, std::uint32_t value,
                    unsigned grid = kGrid) {
    CUdeviceptr dst = dst_.get();
    std::uint32_t n = kWords;
    void* args[] = {&dst, &value, &n};
    CUDA_KERNEL_NODE_PARAMS params = kernel_node_params(fill_, LaunchDims{.grid = {grid}, .block = {kBlock}}, args);
    return api().cuGraphExecKernelNodeSetParams(exec, node, &params);
  }

  std::vector<std::uint32_t> run(CUgraphExec exec) {
    EXPECT_EQ(api().cuGraphLaunch(exec, s_.get()), CUDA_SUCCESS);
    return download(dst_.get(), kWords, s_.get());
  }

  DeviceMemory dst_;
};

TEST_F(KernelNodeSetParams, TheCapturedLaunchsNodeIsTheOneDependencyAndANodeOfTheGraph) {
  CUgraphNode node = nullptr;
  RawGraph graph = capture_fill(5, &node);
  ASSERT_TRUE(graph);
  std::size_t count = 1;
  CUgraphNode nodes[1] = {};
  ASSERT_EQ(api().cuGraphGetNodes(graph.get(), nodes, &count), CUDA_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(nodes[0], node);
}

TEST_F(KernelNodeSetParams, ANewValueRunsFromTheNextLaunch) {
  CUgraphNode node = nullptr;
  RawGraph graph = capture_fill(5, &node);
  ASSERT_TRUE(graph);
  Exec exec = instantiate(graph.get());
  EXPECT_THAT(run(exec.get()), Each(5u));
  EXPECT_EQ(set_fill(exec.get(), node, 9), CUDA_SUCCESS);
  EXPECT_THAT(run(exec.get()), Each(9u));
  EXPECT_EQ(set_fill(exec.get(), node, 11, 1), CUDA_SUCCESS);  // another grid too
  EXPECT_THAT(run(exec.get()), Each(11u));
}

TEST_F(KernelNodeSetParams, ALaunchAlreadyEnqueuedKeepsItsValue) {
  CUgraphNode node = nullptr;
  RawGraph graph = capture_fill(5, &node);
  ASSERT_TRUE(graph);
  Exec exec = instantiate(graph.get());
  DeviceMemory first = alloc(kBytes);
  if (auto* fake = test_driver().fake()) fake->set_device_paused(true);
  ASSERT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  // A copy of what the first launch wrote, ordered between the two launches.
  ASSERT_EQ(launch(add_one_, s_.get(), kGrid, kBlock, dst_.get(), first.get(), kWords),
            CUDA_SUCCESS);
  EXPECT_EQ(set_fill(exec.get(), node, 9), CUDA_SUCCESS);
  ASSERT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  if (auto* fake = test_driver().fake()) fake->set_device_paused(false);
  EXPECT_THAT(download(first.get(), kWords, s_.get()), Each(6u));
  EXPECT_THAT(download(dst_.get(), kWords, s_.get()), Each(9u));
}

TEST_F(KernelNodeSetParams, TheSourceGraphsNodeStillNamesItAfterAnExecUpdate) {
  CUgraphNode node = nullptr;
  RawGraph graph = capture_fill(5, &node);
  ASSERT_TRUE(graph);
  Exec exec = instantiate(graph.get());
  CUgraphNode other_node = nullptr;
  RawGraph other = capture_fill(7, &other_node);
  ASSERT_TRUE(other);
  CUgraphExecUpdateResultInfo info{};
  ASSERT_EQ(api().cuGraphExecUpdate(exec.get(), other.get(), &info), CUDA_SUCCESS);
  EXPECT_THAT(run(exec.get()), Each(7u));
  EXPECT_EQ(set_fill(exec.get(), node, 12), CUDA_SUCCESS);
  EXPECT_THAT(run(exec.get()), Each(12u));
}

TEST_F(KernelNodeSetParams, ANodeOfAnotherGraphIsInvalidValue) {
  CUgraphNode node = nullptr;
  RawGraph graph = capture_fill(5, &node);
  ASSERT_TRUE(graph);
  Exec exec = instantiate(graph.get());
  CUgraphNode foreign = nullptr;
  RawGraph other = capture_fill(7, &foreign);
  ASSERT_TRUE(other);
  EXPECT_EQ(set_fill(exec.get(), foreign, 9), CUDA_ERROR_INVALID_VALUE);
  EXPECT_THAT(run(exec.get()), Each(5u)) << "nothing changed";
}

}  // namespace
}  // namespace graphcap::testing
