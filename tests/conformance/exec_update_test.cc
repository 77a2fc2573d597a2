// Facts file, "Exec update": cuGraphExecUpdate of an executable with a graph of the same topology
// whose kernel parameters, grid, function (same context) or 1-D memset size changed succeeds, and
// the executable then computes with the new parameters (checked byte for byte). A different node
// count is 910 / TOPOLOGY_CHANGED with no error node; the same count with other edges is 910 /
// TOPOLOGY_CHANGED with an error node; a node of another type is 910 / NODE_TYPE_CHANGED with an
// error node.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

class ExecUpdate : public KernelsTest {
 protected:
  static constexpr std::uint32_t kWords = 300;
  static constexpr std::size_t kBytes = kWords * sizeof(std::uint32_t);

  void SetUp() override {
    KernelsTest::SetUp();
    if (HasFatalFailure()) return;
    src_ = alloc(kBytes);
    dst_ = alloc(kBytes);
    s2_ = new_stream();
    fork_ = new_event();
    join_ = new_event();
    ASSERT_FALSE(HasFailure());
    upload(src_.get(), iota(kWords, 100), s_.get());
  }
  void TearDown() override {
    s2_.reset();
    join_.reset();
    fork_.reset();
    dst_.reset();
    src_.reset();
    KernelsTest::TearDown();
  }

  // Updates `exec` from `graph`, expecting `expected` and the update result `result`.
  CUgraphExecUpdateResultInfo update(CUgraphExec exec, CUgraph graph, CUresult expected,
                                     CUgraphExecUpdateResult result) {
    CUgraphExecUpdateResultInfo info{};
    info.result = static_cast<CUgraphExecUpdateResult>(-1);
    info.errorNode = reinterpret_cast<CUgraphNode>(std::uintptr_t{0x1});
    EXPECT_EQ(api().cuGraphExecUpdate(exec, graph, &info), expected);
    EXPECT_EQ(info.result, result);
    return info;
  }

  void run(CUgraphExec exec) {
    EXPECT_EQ(api().cuGraphLaunch(exec, s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
  }

  void zero_dst() {
    EXPECT_EQ(api().cuMemsetD8Async(dst_.get(), 0, kBytes, s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
  }

  // Two empty kernels, one after the other on one stream (one edge).
  RawGraph two_kernels_in_sequence() {
    return capture(s_.get(), [&] {
      EXPECT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS);
      EXPECT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS);
    });
  }

  // Two empty kernels side by side on two streams (no edge): fork to s2 and join back.
  RawGraph two_kernels_in_parallel() {
    return capture(s_.get(), [&] {
      EXPECT_EQ(api().cuEventRecord(fork_.get(), s_.get()), CUDA_SUCCESS);
      EXPECT_EQ(api().cuStreamWaitEvent(s2_.get(), fork_.get(), 0), CUDA_SUCCESS);
      EXPECT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS);
      EXPECT_EQ(launch(empty_, s2_.get(), 1, 1), CUDA_SUCCESS);
      EXPECT_EQ(api().cuEventRecord(join_.get(), s2_.get()), CUDA_SUCCESS);
      EXPECT_EQ(api().cuStreamWaitEvent(s_.get(), join_.get(), 0), CUDA_SUCCESS);
    });
  }

  DeviceMemory src_;
  DeviceMemory dst_;
  RawStream s2_;
  RawEvent fork_;
  RawEvent join_;
};

TEST_F(ExecUpdate, ChangedKernelParametersUpdateAndTheExecComputesWithThem) {
  RawGraph seven = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), kGrid, kBlock, dst_.get(), std::uint32_t{7}, kWords),
              CUDA_SUCCESS);
  });
  RawGraph nine = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), kGrid, kBlock, dst_.get(), std::uint32_t{9}, kWords),
              CUDA_SUCCESS);
  });
  Exec exec = instantiate(seven.get());
  ASSERT_TRUE(exec);
  run(exec.get());
  EXPECT_THAT(download(dst_.get(), kWords, s_.get()), Each(7u));

  update(exec.get(), nine.get(), CUDA_SUCCESS, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  run(exec.get());
  EXPECT_THAT(download(dst_.get(), kWords, s_.get()), Each(9u));
}

TEST_F(ExecUpdate, ChangedGridUpdatesAndTheExecStillCoversEveryElement) {
  RawGraph narrow = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), 1, 32, dst_.get(), std::uint32_t{5}, kWords), CUDA_SUCCESS);
  });
  RawGraph wide = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), 4, 32, dst_.get(), std::uint32_t{5}, kWords), CUDA_SUCCESS);
  });
  Exec exec = instantiate(narrow.get());
  ASSERT_TRUE(exec);
  update(exec.get(), wide.get(), CUDA_SUCCESS, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  zero_dst();
  run(exec.get());
  EXPECT_THAT(download(dst_.get(), kWords, s_.get()), Each(5u));
}

TEST_F(ExecUpdate, ChangedFunctionUpdatesAndTheExecRunsTheNewOne) {
  RawGraph adds = capture(s_.get(), [&] {
    EXPECT_EQ(launch(add_one_, s_.get(), kGrid, kBlock, src_.get(), dst_.get(), kWords),
              CUDA_SUCCESS);
  });
  RawGraph copies = capture(s_.get(), [&] {
    EXPECT_EQ(launch(copy_, s_.get(), kGrid, kBlock, src_.get(), dst_.get(), kWords),
              CUDA_SUCCESS);
  });
  Exec exec = instantiate(adds.get());
  ASSERT_TRUE(exec);
  run(exec.get());
  EXPECT_EQ(download(dst_.get(), kWords, s_.get()), iota(kWords, 101));

  update(exec.get(), copies.get(), CUDA_SUCCESS, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  zero_dst();
  run(exec.get());
  EXPECT_EQ(download(dst_.get(), kWords, s_.get()), iota(kWords, 100));
}

TEST_F(ExecUpdate, ChangedMemsetSizeUpdatesAndTheExecSetsTheNewSize) {
  RawGraph short_set = capture(s_.get(), [&] {
    EXPECT_EQ(api().cuMemsetD8Async(dst_.get(), 0xab, 64, s_.get()), CUDA_SUCCESS);
  });
  RawGraph long_set = capture(s_.get(), [&] {
    EXPECT_EQ(api().cuMemsetD8Async(dst_.get(), 0xab, 128, s_.get()), CUDA_SUCCESS);
  });
  Exec exec = instantiate(short_set.get());
  ASSERT_TRUE(exec);
  update(exec.get(), long_set.get(), CUDA_SUCCESS, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  zero_dst();
  run(exec.get());
  std::vector<std::uint8_t> expected(256, 0);
  std::fill(expected.begin(), expected.begin() + 128, std::uint8_t{0xab});
  EXPECT_EQ(download_bytes(dst_.get(), 256, s_.get()), expected);
}

TEST_F(ExecUpdate, DifferentNodeCountIsTopologyChangedWithoutAnErrorNode) {
  RawGraph one =
      capture(s_.get(), [&] { EXPECT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS); });
  RawGraph two = two_kernels_in_sequence();
  Exec exec = instantiate(one.get());
  ASSERT_TRUE(exec);
  const CUgraphExecUpdateResultInfo info =
      update(exec.get(), two.get(), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
             CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  EXPECT_EQ(info.errorNode, nullptr);
}

TEST_F(ExecUpdate, SameNodeCountWithOtherEdgesIsTopologyChangedWithAnErrorNode) {
  RawGraph sequence = two_kernels_in_sequence();
  RawGraph parallel = two_kernels_in_parallel();
  ASSERT_EQ(node_types(sequence.get()).size(), 2u);
  ASSERT_EQ(node_types(parallel.get()).size(), 2u);
  Exec exec = instantiate(sequence.get());
  ASSERT_TRUE(exec);
  const CUgraphExecUpdateResultInfo info =
      update(exec.get(), parallel.get(), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
             CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  EXPECT_NE(info.errorNode, nullptr);
  EXPECT_NE(info.errorNode, reinterpret_cast<CUgraphNode>(std::uintptr_t{0x1}));
}

TEST_F(ExecUpdate, NodeOfAnotherTypeIsNodeTypeChangedWithAnErrorNode) {
  RawGraph kernel_graph = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), kGrid, kBlock, dst_.get(), std::uint32_t{1}, kWords),
              CUDA_SUCCESS);
  });
  RawGraph memset_graph = capture(s_.get(), [&] {
    EXPECT_EQ(api().cuMemsetD8Async(dst_.get(), 1, kBytes, s_.get()), CUDA_SUCCESS);
  });
  Exec exec = instantiate(kernel_graph.get());
  ASSERT_TRUE(exec);
  const CUgraphExecUpdateResultInfo info =
      update(exec.get(), memset_graph.get(), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
             CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
  EXPECT_NE(info.errorNode, nullptr);
  EXPECT_NE(info.errorNode, reinterpret_cast<CUgraphNode>(std::uintptr_t{0x1}));
}

}  // namespace
}  // namespace graphcap::testing
