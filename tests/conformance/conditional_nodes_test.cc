// Conditional (WHILE) nodes inserted during stream capture, the way graphcap inserts them
// (docs/cuda-driver-facts.md, "Conditional nodes"): cuStreamGetCaptureInfo gives the capturing
// graph and dependencies, cuGraphConditionalHandleCreate a handle on it, cuGraphAddNode the WHILE
// node and its body graph, cuStreamUpdateCaptureDependencies moves the stream after the node, and
// cuStreamBeginCaptureToGraph captures the body on a second stream. Each test is a row measured
// on the H200 (docs/measurements/probes/conditional_probe.cu first, then these tests on both
// drivers).
#include <cstdint>
#include <vector>

#include <graphcap/driver/node_params.h>
#include <graphcap/fake/fake_driver.h>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

struct InsertedLoop {
  CUgraphConditionalHandle handle = 0;
  CUgraphNode node = nullptr;
  CUgraph body = nullptr;
};

class ConditionalNodes : public BodiesTest {
 protected:

  // The WHILE node after `stream`'s current dependencies, later work on `stream` after it.
  CUresult insert_while(CUstream stream, unsigned first, unsigned flags, InsertedLoop* loop,
                        unsigned size = 1) {
    CUgraph graph = nullptr;
    std::vector<CUgraphNode> after;
    if (CUresult r = capture_point(stream, &graph, &after); r != CUDA_SUCCESS) return r;
    if (CUresult r = api().cuGraphConditionalHandleCreate(&loop->handle, graph, context(), first,
                                                          flags);
        r != CUDA_SUCCESS) {
      return r;
    }
    CUgraphNodeParams params = conditional_node_params(loop->handle, CU_GRAPH_COND_TYPE_WHILE, size, context());
    if (CUresult r = api().cuGraphAddNode(&loop->node, graph, after.data(), nullptr, after.size(),
                                          &params);
        r != CUDA_SUCCESS) {
      return r;
    }
    loop->body = params.conditional.phGraph_out[0];
    return api().cuStreamUpdateCaptureDependencies(stream, &loop->node, nullptr, 1,
                                                   CU_STREAM_SET_CAPTURE_DEPENDENCIES);
  }

  // counter (word 0) = k; iterations (word 1) = 0; WHILE(first, flags) { countdown };
  // add_one over word 2 into word 3.
  RawGraph capture_countdown(std::uint32_t k, unsigned first, unsigned flags,
                          InsertedLoop* inserted = nullptr) {
    return capture(s_.get(), [&] {
      EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(0), k, 1u), CUDA_SUCCESS);
      EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(1), 0u, 1u), CUDA_SUCCESS);
      InsertedLoop loop;
      ASSERT_EQ(insert_while(s_.get(), first, flags, &loop), CUDA_SUCCESS);
      ASSERT_EQ(api().cuStreamBeginCaptureToGraph(body_.get(), loop.body, nullptr, nullptr, 0,
                                                  CU_STREAM_CAPTURE_MODE_GLOBAL),
                CUDA_SUCCESS);
      EXPECT_EQ(launch(countdown_, body_.get(), 1, 1, loop.handle, word(0), word(1)),
                CUDA_SUCCESS);
      CUgraph ended = nullptr;
      EXPECT_EQ(api().cuStreamEndCapture(body_.get(), &ended), CUDA_SUCCESS);
      EXPECT_EQ(ended, loop.body);
      EXPECT_EQ(launch(add_one_, s_.get(), 1, 1, word(2), word(3), 1u), CUDA_SUCCESS);
      if (inserted != nullptr) *inserted = loop;
    });
  }

  // Launches `exec` and returns the iterations the loop ran (word 1).
  std::uint32_t run(const Exec& exec) {
    EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
    return download(word(1), 1, s_.get())[0];
  }
};

TEST_F(ConditionalNodes, AWhileNodeInsertedDuringCaptureRunsItsBodyUntilAKernelClearsIt) {
  upload(words_.get(), iota(64), s_.get());
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(0), 5u, 1u), CUDA_SUCCESS);
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(1), 0u, 1u), CUDA_SUCCESS);
    InsertedLoop loop;
    ASSERT_EQ(insert_while(s_.get(), 1, kGraphCondAssignDefault, &loop), CUDA_SUCCESS);
    // The stream's one dependency is now the WHILE node.
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    const CUgraphNode* deps = nullptr;
    std::size_t count = 0;
    ASSERT_EQ(api().cuStreamGetCaptureInfo(s_.get(), &status, nullptr, nullptr, &deps, nullptr,
                                           &count),
              CUDA_SUCCESS);
    ASSERT_EQ(count, 1u);
    EXPECT_EQ(deps[0], loop.node);
    ASSERT_EQ(api().cuStreamBeginCaptureToGraph(body_.get(), loop.body, nullptr, nullptr, 0,
                                                CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_SUCCESS);
    // The body stream captures into the body graph, from no dependencies.
    CUgraph graph_of_body = nullptr;
    ASSERT_EQ(api().cuStreamGetCaptureInfo(body_.get(), &status, nullptr, &graph_of_body, &deps,
                                           nullptr, &count),
              CUDA_SUCCESS);
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_EQ(graph_of_body, loop.body);
    EXPECT_EQ(count, 0u);
    EXPECT_EQ(launch(countdown_, body_.get(), 1, 1, loop.handle, word(0), word(1)), CUDA_SUCCESS);
    CUgraph ended = nullptr;
    EXPECT_EQ(api().cuStreamEndCapture(body_.get(), &ended), CUDA_SUCCESS);
    EXPECT_EQ(ended, loop.body);  // the node's own body graph
    EXPECT_EQ(node_types(loop.body), std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_KERNEL});
    EXPECT_EQ(launch(add_one_, s_.get(), 1, 1, word(2), word(3), 1u), CUDA_SUCCESS);
  });
  ASSERT_TRUE(graph);
  EXPECT_EQ(node_types(graph.get()),
            (std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_KERNEL,
                                          CU_GRAPH_NODE_TYPE_CONDITIONAL,
                                          CU_GRAPH_NODE_TYPE_KERNEL}));
  Exec exec = instantiate(graph.get());
  // With CU_GRAPH_COND_ASSIGN_DEFAULT every launch starts the loop afresh.
  EXPECT_EQ(run(exec), 5u);
  EXPECT_EQ(run(exec), 5u);
  EXPECT_EQ(download(word(0), 4, s_.get()), (std::vector<std::uint32_t>{0, 5, 2, 3}));
}

TEST_F(ConditionalNodes, ADefaultOfZeroRunsTheBodyNever) {
  RawGraph graph = capture_countdown(3, 0, kGraphCondAssignDefault);
  Exec exec = instantiate(graph.get());
  EXPECT_EQ(run(exec), 0u);
  EXPECT_EQ(download(word(0), 1, s_.get())[0], 3u);  // the counter was never touched
}

TEST_F(ConditionalNodes, WithoutAssignDefaultTheConditionStartsAtZeroAndTheDefaultIsIgnored) {
  RawGraph graph = capture_countdown(3, 1, 0);
  Exec exec = instantiate(graph.get());
  EXPECT_EQ(run(exec), 0u);
  EXPECT_EQ(run(exec), 0u);
}

TEST_F(ConditionalNodes, AKernelBeforeTheNodeSetsTheConditionOverTheDefault) {
  RawGraph graph = capture(s_.get(), [&] {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph capturing = nullptr;
    ASSERT_EQ(api().cuStreamGetCaptureInfo(s_.get(), &status, nullptr, &capturing, nullptr,
                                           nullptr, nullptr),
              CUDA_SUCCESS);
    InsertedLoop loop;
    ASSERT_EQ(api().cuGraphConditionalHandleCreate(&loop.handle, capturing, context(), 1,
                                                   kGraphCondAssignDefault),
              CUDA_SUCCESS);
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(0), 4u, 1u), CUDA_SUCCESS);
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(1), 0u, 1u), CUDA_SUCCESS);
    EXPECT_EQ(launch(set_condition_, s_.get(), 1, 1, loop.handle, 0u), CUDA_SUCCESS);
    // The node on the handle created above.
    const CUgraphNode* deps = nullptr;
    std::size_t count = 0;
    ASSERT_EQ(api().cuStreamGetCaptureInfo(s_.get(), &status, nullptr, nullptr, &deps, nullptr,
                                           &count),
              CUDA_SUCCESS);
    const std::vector<CUgraphNode> after(deps, deps + count);
    CUgraphNodeParams params = conditional_node_params(loop.handle, CU_GRAPH_COND_TYPE_WHILE, 1, context());
    ASSERT_EQ(api().cuGraphAddNode(&loop.node, capturing, after.data(), nullptr, after.size(),
                                   &params),
              CUDA_SUCCESS);
    ASSERT_EQ(api().cuStreamUpdateCaptureDependencies(s_.get(), &loop.node, nullptr, 1,
                                                      CU_STREAM_SET_CAPTURE_DEPENDENCIES),
              CUDA_SUCCESS);
    ASSERT_EQ(api().cuStreamBeginCaptureToGraph(body_.get(), params.conditional.phGraph_out[0],
                                                nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_SUCCESS);
    EXPECT_EQ(launch(countdown_, body_.get(), 1, 1, loop.handle, word(0), word(1)), CUDA_SUCCESS);
    CUgraph ended = nullptr;
    EXPECT_EQ(api().cuStreamEndCapture(body_.get(), &ended), CUDA_SUCCESS);
  });
  Exec exec = instantiate(graph.get());
  EXPECT_EQ(run(exec), 0u);  // the default is assigned when the launch starts, not at the node
}

TEST_F(ConditionalNodes, ABodyMayHoldDeviceCopiesAndMemsets) {
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(0), 3u, 1u), CUDA_SUCCESS);
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(1), 0u, 1u), CUDA_SUCCESS);
    InsertedLoop loop;
    ASSERT_EQ(insert_while(s_.get(), 1, kGraphCondAssignDefault, &loop), CUDA_SUCCESS);
    ASSERT_EQ(api().cuStreamBeginCaptureToGraph(body_.get(), loop.body, nullptr, nullptr, 0,
                                                CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemsetD32Async(word(8), 7, 2, body_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemcpyDtoDAsync(word(10), word(8), 2 * sizeof(std::uint32_t), body_.get()),
              CUDA_SUCCESS);
    EXPECT_EQ(launch(countdown_, body_.get(), 1, 1, loop.handle, word(0), word(1)), CUDA_SUCCESS);
    CUgraph ended = nullptr;
    EXPECT_EQ(api().cuStreamEndCapture(body_.get(), &ended), CUDA_SUCCESS);
    EXPECT_EQ(node_types(loop.body),
              (std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_MEMCPY,
                                            CU_GRAPH_NODE_TYPE_KERNEL}));
  });
  Exec exec = instantiate(graph.get());
  EXPECT_EQ(run(exec), 3u);
  EXPECT_EQ(download(word(8), 4, s_.get()), (std::vector<std::uint32_t>{7, 7, 7, 7}));
}

TEST_F(ConditionalNodes, MemoryNodesInABodyAreCapturedThenRefusedByInstantiate) {
  RawGraph graph = capture(s_.get(), [&] {
    InsertedLoop loop;
    ASSERT_EQ(insert_while(s_.get(), 0, kGraphCondAssignDefault, &loop), CUDA_SUCCESS);
    ASSERT_EQ(api().cuStreamBeginCaptureToGraph(body_.get(), loop.body, nullptr, nullptr, 0,
                                                CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_SUCCESS);
    CUdeviceptr scratch = 0;
    EXPECT_EQ(api().cuMemAllocAsync(&scratch, 256, body_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemFreeAsync(scratch, body_.get()), CUDA_SUCCESS);
    CUgraph ended = nullptr;
    EXPECT_EQ(api().cuStreamEndCapture(body_.get(), &ended), CUDA_SUCCESS);
    EXPECT_EQ(node_types(loop.body),
              (std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_MEM_ALLOC,
                                            CU_GRAPH_NODE_TYPE_MEM_FREE}));
  });
  ASSERT_TRUE(graph);
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&exec, graph.get(), 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exec, nullptr);
}

TEST_F(ConditionalNodes, ExecUpdateTakesABodyOfTheSameTopologyAndRefusesOneKernelMore) {
  RawGraph first = capture_countdown(3, 1, kGraphCondAssignDefault);
  Exec exec = instantiate(first.get());
  EXPECT_EQ(run(exec), 3u);
  RawGraph second = capture_countdown(4, 1, kGraphCondAssignDefault);
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(api().cuGraphExecUpdate(exec.get(), second.get(), &info), CUDA_SUCCESS);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  EXPECT_EQ(run(exec), 4u);
  // One kernel more in the body.
  RawGraph third = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(0), 3u, 1u), CUDA_SUCCESS);
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(1), 0u, 1u), CUDA_SUCCESS);
    InsertedLoop loop;
    ASSERT_EQ(insert_while(s_.get(), 1, kGraphCondAssignDefault, &loop), CUDA_SUCCESS);
    ASSERT_EQ(api().cuStreamBeginCaptureToGraph(body_.get(), loop.body, nullptr, nullptr, 0,
                                                CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_SUCCESS);
    EXPECT_EQ(launch(add_one_, body_.get(), 1, 1, word(2), word(3), 1u), CUDA_SUCCESS);
    EXPECT_EQ(launch(countdown_, body_.get(), 1, 1, loop.handle, word(0), word(1)), CUDA_SUCCESS);
    CUgraph ended = nullptr;
    EXPECT_EQ(api().cuStreamEndCapture(body_.get(), &ended), CUDA_SUCCESS);
    EXPECT_EQ(launch(add_one_, s_.get(), 1, 1, word(2), word(3), 1u), CUDA_SUCCESS);
  });
  info = CUgraphExecUpdateResultInfo{};
  EXPECT_EQ(api().cuGraphExecUpdate(exec.get(), third.get(), &info),
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  EXPECT_EQ(run(exec), 4u);  // unchanged
}

TEST_F(ConditionalNodes, ABodyKernelNodeTakesNewParametersInTheExecutable) {
  InsertedLoop loop;
  RawGraph graph = capture_countdown(3, 1, kGraphCondAssignDefault, &loop);
  Exec exec = instantiate(graph.get());
  CUgraphNode kernel_node = nullptr;
  std::size_t count = 1;
  ASSERT_EQ(api().cuGraphGetNodes(loop.body, &kernel_node, &count), CUDA_SUCCESS);
  ASSERT_EQ(count, 1u);
  // The same handle; counter and iterations move to words 40 and 41.
  CUgraphConditionalHandle handle = loop.handle;
  CUdeviceptr counter = word(40);
  CUdeviceptr iterations = word(41);
  void* args[] = {&handle, &counter, &iterations};
  CUDA_KERNEL_NODE_PARAMS params = kernel_node_params(countdown_, LaunchDims{}, args);
  EXPECT_EQ(api().cuGraphExecKernelNodeSetParams(exec.get(), kernel_node, &params),
            CUDA_SUCCESS);
  upload(word(40), {3, 0}, s_.get());
  EXPECT_EQ(run(exec), 0u);  // word 1: reset by the graph, counted by nothing now
  EXPECT_EQ(download(word(40), 2, s_.get()), (std::vector<std::uint32_t>{0, 3}));
}

TEST_F(ConditionalNodes, NestedLoopsAssignTheInnerDefaultOncePerLaunchNotPerOuterIteration) {
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(0), 3u, 1u), CUDA_SUCCESS);
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(1), 0u, 1u), CUDA_SUCCESS);
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(5), 0u, 1u), CUDA_SUCCESS);
    InsertedLoop outer;
    ASSERT_EQ(insert_while(s_.get(), 1, kGraphCondAssignDefault, &outer), CUDA_SUCCESS);
    ASSERT_EQ(api().cuStreamBeginCaptureToGraph(body_.get(), outer.body, nullptr, nullptr, 0,
                                                CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_SUCCESS);
    EXPECT_EQ(launch(fill_, body_.get(), 1, 1, word(4), 4u, 1u), CUDA_SUCCESS);
    InsertedLoop inner;
    ASSERT_EQ(insert_while(body_.get(), 1, kGraphCondAssignDefault, &inner), CUDA_SUCCESS);
    ASSERT_EQ(api().cuStreamBeginCaptureToGraph(inner_.get(), inner.body, nullptr, nullptr, 0,
                                                CU_STREAM_CAPTURE_MODE_GLOBAL),
              CUDA_SUCCESS);
    EXPECT_EQ(launch(countdown_, inner_.get(), 1, 1, inner.handle, word(4), word(5)),
              CUDA_SUCCESS);
    CUgraph ended = nullptr;
    EXPECT_EQ(api().cuStreamEndCapture(inner_.get(), &ended), CUDA_SUCCESS);
    EXPECT_EQ(launch(countdown_, body_.get(), 1, 1, outer.handle, word(0), word(1)),
              CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamEndCapture(body_.get(), &ended), CUDA_SUCCESS);
  });
  Exec exec = instantiate(graph.get());
  EXPECT_EQ(run(exec), 3u);
  // The inner loop ran 4 times in the first outer iteration and ended with its condition 0,
  // which no kernel re-armed: 4, not 12.
  EXPECT_EQ(download(word(5), 1, s_.get())[0], 4u);
}

TEST_F(ConditionalNodes, TheOuterCaptureEndsWhileTheBodyCaptureIsStillOpen) {
  CUgraph body = nullptr;
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(0), 3u, 1u), CUDA_SUCCESS);
  EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(1), 0u, 1u), CUDA_SUCCESS);
  InsertedLoop loop;
  ASSERT_EQ(insert_while(s_.get(), 1, kGraphCondAssignDefault, &loop), CUDA_SUCCESS);
  body = loop.body;
  ASSERT_EQ(api().cuStreamBeginCaptureToGraph(body_.get(), body, nullptr, nullptr, 0,
                                              CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  EXPECT_EQ(launch(countdown_, body_.get(), 1, 1, loop.handle, word(0), word(1)), CUDA_SUCCESS);
  CUgraph raw = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s_.get(), &raw), CUDA_SUCCESS);
  RawGraph graph(api(), raw);
  EXPECT_EQ(capture_status(body_.get()), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUgraph ended = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(body_.get(), &ended), CUDA_SUCCESS);
  EXPECT_EQ(ended, body);
  Exec exec = instantiate(graph.get());
  EXPECT_EQ(run(exec), 3u);
}

TEST_F(ConditionalNodes, CapturingToAGraphOnAStreamAlreadyCapturingIsIllegalState) {
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  InsertedLoop loop;
  ASSERT_EQ(insert_while(s_.get(), 0, kGraphCondAssignDefault, &loop), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamBeginCaptureToGraph(s_.get(), loop.body, nullptr, nullptr, 0,
                                              CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_ILLEGAL_STATE);
  expect_still_active(s_.get(), 1);
}

TEST_F(ConditionalNodes, HandleCreateChecksItsFlagsAndContext) {
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph graph = nullptr;
  ASSERT_EQ(api().cuStreamGetCaptureInfo(s_.get(), &status, nullptr, &graph, nullptr, nullptr,
                                         nullptr),
            CUDA_SUCCESS);
  CUgraphConditionalHandle handle = 0;
  EXPECT_EQ(api().cuGraphConditionalHandleCreate(&handle, graph, context(), 1, 2),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().cuGraphConditionalHandleCreate(&handle, graph, nullptr, 1, 0),
            CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(api().cuGraphConditionalHandleCreate(&handle, graph, context(), 5,
                                                 kGraphCondAssignDefault),
            CUDA_SUCCESS);
  expect_still_active(s_.get(), 0);
}

TEST_F(ConditionalNodes, AWhileNodeTakesOneBodyAndOnlyAHandleOfItsOwnGraph) {
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  InsertedLoop loop;
  EXPECT_EQ(insert_while(s_.get(), 0, kGraphCondAssignDefault, &loop, 2),
            CUDA_ERROR_INVALID_VALUE);
  // The same handle in a node of one body: accepted.
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph capturing = nullptr;
  const CUgraphNode* deps = nullptr;
  std::size_t count = 0;
  ASSERT_EQ(api().cuStreamGetCaptureInfo(s_.get(), &status, nullptr, &capturing, &deps, nullptr,
                                         &count),
            CUDA_SUCCESS);
  CUgraphNodeParams params = conditional_node_params(loop.handle, CU_GRAPH_COND_TYPE_WHILE, 1, context());
  ASSERT_EQ(api().cuGraphAddNode(&loop.node, capturing, nullptr, nullptr, 0, &params),
            CUDA_SUCCESS);
  // A handle of the capturing graph in a node of that node's body graph: refused.
  CUgraphNode inner = nullptr;
  EXPECT_EQ(api().cuGraphAddNode(&inner, params.conditional.phGraph_out[0], nullptr, nullptr, 0,
                                 &params),
            CUDA_ERROR_INVALID_VALUE);
  // A WHILE node with an empty body (condition 0) instantiates.
  CUgraph raw = nullptr;
  ASSERT_EQ(api().cuStreamEndCapture(s_.get(), &raw), CUDA_SUCCESS);
  RawGraph graph(api(), raw);
  Exec exec = instantiate(graph.get());
  EXPECT_TRUE(exec);
}

TEST_F(ConditionalNodes, AHandleNoNodeUsesMakesInstantiateFail) {
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph capturing = nullptr;
  ASSERT_EQ(api().cuStreamGetCaptureInfo(s_.get(), &status, nullptr, &capturing, nullptr, nullptr,
                                         nullptr),
            CUDA_SUCCESS);
  CUgraphConditionalHandle unused = 0;
  ASSERT_EQ(api().cuGraphConditionalHandleCreate(&unused, capturing, context(), 0,
                                                 kGraphCondAssignDefault),
            CUDA_SUCCESS);
  EXPECT_EQ(launch(fill_, s_.get(), 1, 1, word(0), 3u, 1u), CUDA_SUCCESS);
  CUgraph raw = nullptr;
  ASSERT_EQ(api().cuStreamEndCapture(s_.get(), &raw), CUDA_SUCCESS);
  RawGraph graph(api(), raw);
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&exec, graph.get(), 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(ConditionalNodes, AnUnsafeCallInvalidatesTheBodyAndTheOuterCapture) {
  if (test_driver().fake() == nullptr) {
    GTEST_SKIP() << "measured with docs/measurements/probes/conditional_probe.cu (P7, P17-P22) "
                    "instead: once "
                    "a body's capture is invalidated, ending either capture second, or "
                    "destroying the body's stream, crashed the H200's driver (580.159.04)";
  }
  RawStream other = new_stream();
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  InsertedLoop loop;
  ASSERT_EQ(insert_while(s_.get(), 0, kGraphCondAssignDefault, &loop), CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamBeginCaptureToGraph(body_.get(), loop.body, nullptr, nullptr, 0,
                                              CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamQuery(other.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(capture_status(body_.get()), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(capture_status(s_.get()), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  // The enclosing capture ends (901). Ending the body's too, before or after it, crashed the
  // H200's driver (docs/cuda-driver-facts.md): the body's stream is left as it is.
  CUgraph raw = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s_.get(), &raw), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(raw, nullptr);
  EXPECT_EQ(capture_status(s_.get()), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(capture_status(body_.get()), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  if (fake::FakeDriver* fake = test_driver().fake()) {
    // Only the fake may be asked to end it: it answers 901 and records the crash as a violation.
    EXPECT_EQ(api().cuStreamEndCapture(body_.get(), &raw), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT_THAT(fake->violations(),
                ::testing::ElementsAre(::testing::HasSubstr("crashed (SIGSEGV)")));
    fake->clear_violations();
  } else {
    (void)body_.release();  // leaked on the GPU, as graphcap leaks it
  }
}

}  // namespace
}  // namespace graphcap::testing
