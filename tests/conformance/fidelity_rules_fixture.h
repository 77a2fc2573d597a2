// The fixture of the FidelityRules suites (fidelity_rules_test.cc: what the H200 showed;
// fidelity_rules_h100_test.cc: what the H100's seed 9,400,001 showed): the steps several rules
// share, on both drivers. Not in an anonymous namespace: both files' tests must name one fixture
// class (GoogleTest refuses a suite whose tests use two), as they do in a build file by file.
#pragma once

#include <cstddef>
#include <vector>

#include <graphcap/driver/node_params.h>

#include "conformance_fixture.h"

namespace graphcap::testing {

// The graph a stream's capture builds (cuStreamGetCaptureInfo).
inline CUgraph building(DriverApi& api, CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph graph = nullptr;
  EXPECT_EQ(api.cuStreamGetCaptureInfo(stream, &status, nullptr, &graph, nullptr, nullptr,
                                       nullptr),
            CUDA_SUCCESS);
  return graph;
}

// The nodes the next node captured on `stream` depends on (cuStreamGetCaptureInfo).
inline std::vector<CUgraphNode> capture_dependencies(DriverApi& api, CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUgraphNode* deps = nullptr;
  std::size_t count = 0;
  EXPECT_EQ(api.cuStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps, nullptr, &count),
            CUDA_SUCCESS);
  return std::vector<CUgraphNode>(deps, deps + count);
}

// A graph's nodes in creation order (cuGraphGetNodes).
inline std::vector<CUgraphNode> nodes_of(DriverApi& api, CUgraph graph) {
  std::size_t count = 0;
  EXPECT_EQ(api.cuGraphGetNodes(graph, nullptr, &count), CUDA_SUCCESS);
  std::vector<CUgraphNode> nodes(count);
  EXPECT_EQ(api.cuGraphGetNodes(graph, nodes.data(), &count), CUDA_SUCCESS);
  return nodes;
}

class FidelityRules : public ConformanceTest {
 protected:
  // cuGraphExecUpdate of `exec` from `graph` refused with `result`, naming node `index` of the
  // `count` nodes of `graph` (creation order) as the one that differs.
  void expect_update_refused(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResult result,
                             std::size_t count, std::size_t index) {
    CUgraphExecUpdateResultInfo info{};
    EXPECT_EQ(api().cuGraphExecUpdate(exec, graph, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    EXPECT_EQ(info.result, result);
    const std::vector<CUgraphNode> nodes = nodes_of(api(), graph);
    ASSERT_EQ(nodes.size(), count);
    EXPECT_EQ(info.errorNode, nodes[index]);
  }
  // The same, naming no node (a topology that differs as a whole).
  void expect_update_refused(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResult result) {
    CUgraphExecUpdateResultInfo info{};
    EXPECT_EQ(api().cuGraphExecUpdate(exec, graph, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    EXPECT_EQ(info.result, result);
    EXPECT_EQ(info.errorNode, nullptr);
    EXPECT_EQ(info.errorFromNode, nullptr);
  }
  // A graph that allocates 1,024 bytes at `*scratch`, fills them with `value` and frees them
  // (memory nodes of its own), instantiated and replayed once.
  struct SelfFreeingGraph {
    RawGraph graph;
    Exec exec;
  };
  SelfFreeingGraph replayed_self_freeing_graph(CUstream s, unsigned char value,
                                               CUdeviceptr* scratch) {
    SelfFreeingGraph made;
    made.graph = capture(s, [&] {
      EXPECT_EQ(api().cuMemAllocAsync(scratch, 1024, s), CUDA_SUCCESS);
      EXPECT_EQ(api().cuMemsetD8Async(*scratch, value, 1024, s), CUDA_SUCCESS);
      EXPECT_EQ(api().cuMemFreeAsync(*scratch, s), CUDA_SUCCESS);
    });
    made.exec = instantiate(made.graph.get());
    EXPECT_EQ(api().cuGraphLaunch(made.exec.get(), s), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamSynchronize(s), CUDA_SUCCESS);
    return made;
  }
  // A conditional node of `type` on `handle` added to `graph` after `after` (the nodes of `s`'s
  // capture dependencies), `s` going on after it, and its body's capture begun on `body_stream`
  // (RELAXED): the caller records the body and ends that capture.
  void begin_conditional_body(CUgraph graph, CUstream s, const std::vector<CUgraphNode>& after,
                              CUgraphConditionalHandle handle, CUgraphConditionalNodeType type,
                              CUstream body_stream, CUgraphNode* node) {
    CUgraphNodeParams params = conditional_node_params(handle, type, 1, context());
    ASSERT_EQ(api().cuGraphAddNode(node, graph, after.data(), nullptr, after.size(), &params),
              CUDA_SUCCESS);
    ASSERT_EQ(api().cuStreamUpdateCaptureDependencies(s, node, nullptr, 1,
                                                      CU_STREAM_SET_CAPTURE_DEPENDENCIES),
              CUDA_SUCCESS);
    ASSERT_EQ(api().cuStreamBeginCaptureToGraph(body_stream, params.conditional.phGraph_out[0],
                                                nullptr, nullptr, 0,
                                                CU_STREAM_CAPTURE_MODE_RELAXED),
              CUDA_SUCCESS);
  }
  // An IF node added to `graph`, which `s` is capturing into (s goes on after the node), its body
  // captured on `body_stream` with one launch of `kernel`.
  void add_if_with_one_launch(CUgraph graph, CUstream s, CUstream body_stream, CUfunction kernel,
                              CUgraphNode* node) {
    CUgraphConditionalHandle handle = 0;
    ASSERT_EQ(api().cuGraphConditionalHandleCreate(&handle, graph, context(), 0, 0),
              CUDA_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(
        begin_conditional_body(graph, s, {}, handle, CU_GRAPH_COND_TYPE_IF, body_stream, node));
    EXPECT_EQ(launch(kernel, body_stream, 1, 1), CUDA_SUCCESS);
    CUgraph ended = nullptr;
    ASSERT_EQ(api().cuStreamEndCapture(body_stream, &ended), CUDA_SUCCESS);
  }
};

}  // namespace graphcap::testing
