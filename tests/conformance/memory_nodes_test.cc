// Facts file, "Memory nodes": cuMemAllocAsync/cuMemFreeAsync inside a capture record MEM_ALLOC and
// MEM_FREE in creation order; a graph whose allocation is never freed launches once and then
// fails every launch with 1 (instantiate and upload succeed, the stream stays usable); freeing the
// allocation makes the next launch succeed, destroying the graph does not; AUTO_FREE_ON_LAUNCH
// relaunches every time; a graph with memory nodes has one executable at a time (801).
#include <cstdint>
#include <string>
#include <vector>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

class MemoryNodes : public KernelsTest {
 protected:
  static constexpr std::uint32_t kWords = 256;
  static constexpr std::size_t kBytes = kWords * sizeof(std::uint32_t);

  // A graph that allocates kWords words (at *pointer, known from capture time on) and fills
  // them with `value`, and never frees them.
  RawGraph capture_unfreed_allocation(CUdeviceptr* pointer, std::uint32_t value) {
    return capture(s_.get(), [&] {
      EXPECT_EQ(api().cuMemAllocAsync(pointer, kBytes, s_.get()), CUDA_SUCCESS);
      EXPECT_EQ(launch(fill_, s_.get(), kGrid, kBlock, *pointer, value, kWords), CUDA_SUCCESS);
    });
  }

  // Frees what the graph allocated, outside the graph, and waits.
  void free_allocation(CUdeviceptr pointer) {
    EXPECT_EQ(api().cuMemFreeAsync(pointer, s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
  }
};

TEST_F(MemoryNodes, AllocAndFreeRecordMemAllocAndMemFreeInCreationOrder) {
  CUdeviceptr pointer = 0;
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(api().cuMemAllocAsync(&pointer, kBytes, s_.get()), CUDA_SUCCESS);
    EXPECT_NE(pointer, CUdeviceptr{0}) << "the pointer is returned at once, during the capture";
    EXPECT_EQ(launch(fill_, s_.get(), kGrid, kBlock, pointer, std::uint32_t{3}, kWords),
              CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemFreeAsync(pointer, s_.get()), CUDA_SUCCESS);
  });
  EXPECT_THAT(node_types(graph.get()),
              ElementsAre(CU_GRAPH_NODE_TYPE_MEM_ALLOC, CU_GRAPH_NODE_TYPE_KERNEL,
                          CU_GRAPH_NODE_TYPE_MEM_FREE));
}

TEST_F(MemoryNodes, AGraphThatFreesItsAllocationRelaunches) {
  CUdeviceptr pointer = 0;
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(api().cuMemAllocAsync(&pointer, kBytes, s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(launch(fill_, s_.get(), kGrid, kBlock, pointer, std::uint32_t{3}, kWords),
              CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemFreeAsync(pointer, s_.get()), CUDA_SUCCESS);
  });
  Exec exec = instantiate(graph.get());
  ASSERT_TRUE(exec);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
}

TEST_F(MemoryNodes, UnfreedAllocationLaunchesOnceThenEveryLaunchIsInvalidValue) {
  CUdeviceptr pointer = 0;
  RawGraph graph = capture_unfreed_allocation(&pointer, 7);
  EXPECT_THAT(node_types(graph.get()),
              ElementsAre(CU_GRAPH_NODE_TYPE_MEM_ALLOC, CU_GRAPH_NODE_TYPE_KERNEL));

  CUgraphExec raw = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&raw, graph.get(), 0), CUDA_SUCCESS);
  Exec exec(api(), raw);
  ASSERT_TRUE(exec);
  EXPECT_EQ(api().cuGraphUpload(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS) << "first launch";
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
  // The allocation outlives the launch, holding what the graph wrote.
  EXPECT_THAT(download(pointer, kWords, s_.get()), Each(7u));

  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_ERROR_INVALID_VALUE)
      << "second launch";
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_ERROR_INVALID_VALUE)
      << "third launch";

  // The stream is unharmed.
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);

  free_allocation(pointer);
}

enum class FreeWith { kMemFreeAsync, kMemFree };

class MemoryNodesFreeing : public MemoryNodes, public ::testing::WithParamInterface<FreeWith> {};

TEST_P(MemoryNodesFreeing, FreeingTheAllocationMakesTheNextLaunchSucceed) {
  CUdeviceptr pointer = 0;
  RawGraph graph = capture_unfreed_allocation(&pointer, 9);
  Exec exec = instantiate(graph.get());
  ASSERT_TRUE(exec);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_ERROR_INVALID_VALUE);

  if (GetParam() == FreeWith::kMemFreeAsync) {
    EXPECT_EQ(api().cuMemFreeAsync(pointer, s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
  } else {
    EXPECT_EQ(api().cuMemFree(pointer), CUDA_SUCCESS);
  }

  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS) << "after the free";
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
  EXPECT_THAT(download(pointer, kWords, s_.get()), Each(9u));
  // Allocated again by that launch, and again not freed.
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_ERROR_INVALID_VALUE);

  free_allocation(pointer);
}

INSTANTIATE_TEST_SUITE_P(MemoryNodes, MemoryNodesFreeing,
                         ::testing::Values(FreeWith::kMemFreeAsync, FreeWith::kMemFree),
                         [](const ::testing::TestParamInfo<FreeWith>& param) {
                           return std::string(param.param == FreeWith::kMemFreeAsync
                                                  ? "cuMemFreeAsync"
                                                  : "cuMemFree");
                         });

TEST_F(MemoryNodes, DestroyingTheGraphDoesNotFreeTheAllocation) {
  CUdeviceptr pointer = 0;
  RawGraph graph = capture_unfreed_allocation(&pointer, 5);
  Exec exec = instantiate(graph.get());
  ASSERT_TRUE(exec);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);

  EXPECT_EQ(graph.reset(), CUDA_SUCCESS);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);

  free_allocation(pointer);
}

TEST_F(MemoryNodes, AutoFreeOnLaunchRelaunchesEveryTime) {
  CUdeviceptr pointer = 0;
  RawGraph graph = capture_unfreed_allocation(&pointer, 11);
  Exec exec = instantiate(graph.get(), CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
  ASSERT_TRUE(exec);
  for (int launch_index = 1; launch_index <= 3; ++launch_index) {
    EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS) << "launch " << launch_index;
  }
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
  EXPECT_THAT(download(pointer, kWords, s_.get()), Each(11u));
  // The last launch's allocation is still live: freeing it is the caller's job.
  free_allocation(pointer);
}

TEST_F(MemoryNodes, AGraphWithMemoryNodesHasOneExecutableAtATime) {
  CUdeviceptr pointer = 0;
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(api().cuMemAllocAsync(&pointer, kBytes, s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(launch(fill_, s_.get(), kGrid, kBlock, pointer, std::uint32_t{1}, kWords),
              CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemFreeAsync(pointer, s_.get()), CUDA_SUCCESS);
  });
  Exec first = instantiate(graph.get());
  ASSERT_TRUE(first);

  CUgraphExec second = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&second, graph.get(), 0), CUDA_ERROR_NOT_SUPPORTED);
  Exec second_owner(api(), second);  // nothing, unless the driver disagrees

  EXPECT_EQ(first.reset(), CUDA_SUCCESS);
  Exec third = instantiate(graph.get());
  EXPECT_TRUE(third);
}

TEST_F(MemoryNodes, AGraphWithoutMemoryNodesInstantiatesManyTimes) {
  RawGraph graph =
      capture(s_.get(), [&] { EXPECT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS); });
  Exec first = instantiate(graph.get());
  Exec second = instantiate(graph.get());
  Exec third = instantiate(graph.get());
  EXPECT_TRUE(first && second && third);
  EXPECT_EQ(api().cuGraphLaunch(second.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuGraphLaunch(third.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
}

}  // namespace
}  // namespace graphcap::testing
