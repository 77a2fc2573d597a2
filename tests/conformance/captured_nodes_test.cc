// Facts file, "Beginning and ending a capture": the node each captured operation adds. One kernel
// launch: KERNEL; cuMemcpyHtoDAsync (even from pageable memory): MEMCPY; cuMemsetD8Async: MEMSET;
// cuEventRecord: no node; waiting with CU_EVENT_WAIT_EXTERNAL on an event recorded outside any
// capture: WAIT_EVENT.
#include <cstdint>
#include <vector>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

using CapturedNodes = KernelsTest;

TEST_F(CapturedNodes, OneKernelLaunchIsOneKernelNode) {
  DeviceMemory buffer = alloc(64 * sizeof(std::uint32_t));
  ASSERT_FALSE(HasFailure());
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), kGrid, kBlock, buffer.get(), std::uint32_t{7},
                     std::uint32_t{64}),
              CUDA_SUCCESS);
  });
  EXPECT_THAT(node_types(graph.get()), ElementsAre(CU_GRAPH_NODE_TYPE_KERNEL));
}

TEST_F(CapturedNodes, HostToDeviceCopyFromPageableMemoryIsAMemcpyNode) {
  DeviceMemory buffer = alloc(256);
  ASSERT_FALSE(HasFailure());
  const std::vector<std::uint8_t> pageable(256, 0x5a);  // ordinary heap memory, not pinned
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(api().cuMemcpyHtoDAsync(buffer.get(), pageable.data(), pageable.size(), s_.get()),
              CUDA_SUCCESS);
  });
  EXPECT_THAT(node_types(graph.get()), ElementsAre(CU_GRAPH_NODE_TYPE_MEMCPY));
}

TEST_F(CapturedNodes, MemsetD8IsAMemsetNode) {
  DeviceMemory buffer = alloc(256);
  ASSERT_FALSE(HasFailure());
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(api().cuMemsetD8Async(buffer.get(), 0xab, 256, s_.get()), CUDA_SUCCESS);
  });
  EXPECT_THAT(node_types(graph.get()), ElementsAre(CU_GRAPH_NODE_TYPE_MEMSET));
}

TEST_F(CapturedNodes, EventRecordAddsNoNode) {
  RawEvent event = new_event();
  ASSERT_FALSE(HasFailure());
  RawGraph only_record = capture(s_.get(), [&] {
    EXPECT_EQ(api().cuEventRecord(event.get(), s_.get()), CUDA_SUCCESS);
  });
  EXPECT_THAT(node_types(only_record.get()), IsEmpty());

  RawGraph between_kernels = capture(s_.get(), [&] {
    EXPECT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS);
    EXPECT_EQ(api().cuEventRecord(event.get(), s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS);
  });
  EXPECT_THAT(node_types(between_kernels.get()),
              ElementsAre(CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_KERNEL));
}

TEST_F(CapturedNodes, ExternalWaitOnAnEventRecordedOutsideCaptureIsAWaitEventNode) {
  RawEvent event = new_event();
  RawStream other = new_stream();
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(api().cuEventRecord(event.get(), other.get()), CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamSynchronize(other.get()), CUDA_SUCCESS);
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(api().cuStreamWaitEvent(s_.get(), event.get(), CU_EVENT_WAIT_EXTERNAL),
              CUDA_SUCCESS);
  });
  EXPECT_THAT(node_types(graph.get()), ElementsAre(CU_GRAPH_NODE_TYPE_WAIT_EVENT));
}

TEST_F(CapturedNodes, MixedSequenceListsNodesInCaptureOrder) {
  DeviceMemory buffer = alloc(64 * sizeof(std::uint32_t));
  ASSERT_FALSE(HasFailure());
  const std::vector<std::uint32_t> host = iota(64);
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(api().cuMemcpyHtoDAsync(buffer.get(), host.data(), 64 * sizeof(std::uint32_t),
                                      s_.get()),
              CUDA_SUCCESS);
    EXPECT_EQ(launch(fill_, s_.get(), kGrid, kBlock, buffer.get(), std::uint32_t{1},
                     std::uint32_t{64}),
              CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemsetD8Async(buffer.get(), 0, 16, s_.get()), CUDA_SUCCESS);
  });
  EXPECT_THAT(node_types(graph.get()),
              ElementsAre(CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_KERNEL,
                          CU_GRAPH_NODE_TYPE_MEMSET));
}

}  // namespace
}  // namespace graphcap::testing
