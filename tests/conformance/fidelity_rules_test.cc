// Rules graphcap-fidelity's generated programs found on the H200 (2026-12-03/04) and the H100
// (2026-12-07, seed 9,400,001), driver 580.159.04 (runs and programs in docs/conformance.md,
// "Generated programs"), each as the shortest program that shows it, on both drivers.
// docs/cuda-driver-facts.md, "Found by generated programs", has the rows.
#include <cstdint>
#include <thread>
#include <vector>

#include <graphcap/driver/launch_config.h>
#include <graphcap/driver/node_params.h>
#include <graphcap/fake/fake_driver.h>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

// The graph a stream's capture builds (cuStreamGetCaptureInfo).
CUgraph building(DriverApi& api, CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph graph = nullptr;
  EXPECT_EQ(api.cuStreamGetCaptureInfo(stream, &status, nullptr, &graph, nullptr, nullptr,
                                       nullptr),
            CUDA_SUCCESS);
  return graph;
}

// A graph's nodes in creation order (cuGraphGetNodes).
std::vector<CUgraphNode> nodes_of(DriverApi& api, CUgraph graph) {
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

TEST_F(FidelityRules, InstantiateIsAnUnsafeCallDuringAGlobalCaptureOfThisThread) {
  RawStream s = new_stream();
  RawStream other = new_stream();
  RawGraph done = capture(other.get(), [] {});
  ASSERT_TRUE(done);
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&exec, done.get(), 0),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CUgraph ended = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  // With the capture over, it instantiates.
  Exec instantiated = instantiate(done.get());
  EXPECT_TRUE(instantiated);
}

TEST_F(FidelityRules, TheGraphACaptureBuildsInstantiatesWhereTheModeAllows) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(launch(empty, s.get(), 1, 1), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&exec, building(api(), s.get()), 0), CUDA_SUCCESS);
  Exec owned(api(), exec);
  expect_still_active(s.get(), 1);
}

TEST_F(FidelityRules, BadInstantiateFlagsBeforeAnotherThreadsInvalidatedCapture) {
  RawStream s = new_stream();
  RawStream other = new_stream();
  RawGraph done = capture(other.get(), [] {});
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamQuery(s.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);  // invalidated
  CUresult from_other = CUDA_SUCCESS;
  std::thread([&] {
    EXPECT_EQ(api().cuCtxSetCurrent(context()), CUDA_SUCCESS);
    CUgraphExec exec = nullptr;
    from_other = api().cuGraphInstantiateWithFlags(&exec, done.get(), 2);
  }).join();
  EXPECT_EQ(from_other, CUDA_ERROR_INVALID_VALUE);
  // On the capturing thread itself its invalidated capture still makes it 900.
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&exec, done.get(), 5),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph ended = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

TEST_F(FidelityRules, DeviceLaunchOfAnEmptyGraphIsInvalidValue) {
  RawStream s = new_stream();
  RawGraph empty = capture(s.get(), [] {});
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&exec, empty.get(),
                                              CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FidelityRules, AnEventOfACaptureThatIsOverIsInvalidValueToQueryWaitAndTime) {
  RawStream s = new_stream();
  RawStream other = new_stream();
  RawEvent e = new_event();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(api().cuEventRecord(e.get(), s.get()), CUDA_SUCCESS);
  RawGraph graph;
  {
    CUgraph ended = nullptr;
    ASSERT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_SUCCESS);
    graph = RawGraph(api(), ended);
  }
  EXPECT_EQ(api().cuEventQuery(e.get()), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().cuEventSynchronize(e.get()), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().cuStreamWaitEvent(other.get(), e.get(), 0), CUDA_ERROR_INVALID_VALUE);
  float ms = 0;
  EXPECT_EQ(api().cuEventElapsedTime(&ms, e.get(), e.get()), CUDA_ERROR_INVALID_VALUE);
  // A capture waiting on it is invalidated.
  ASSERT_EQ(api().cuStreamBeginCapture(other.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamWaitEvent(other.get(), e.get(), 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(capture_status(other.get()), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CUgraph ended = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(other.get(), &ended), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

TEST_F(FidelityRules, AnEventOfAnInvalidatedCaptureIsInvalidValueToSynchronize) {
  RawStream s = new_stream();
  RawEvent e = new_event();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(api().cuEventRecord(e.get(), s.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamQuery(s.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(api().cuEventSynchronize(e.get()), CUDA_ERROR_INVALID_VALUE);
  CUgraph ended = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

TEST_F(FidelityRules, LaunchOrUploadIntoAnInvalidatedCaptureIsUnsupported) {
  RawStream s = new_stream();
  RawStream other = new_stream();
  RawGraph done = capture(other.get(), [] {});
  Exec exec = instantiate(done.get());
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamQuery(s.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(api().cuGraphUpload(exec.get(), s.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph ended = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

TEST_F(FidelityRules, AnInvalidatedCaptureEndsWithInvalidatedFromAnotherThread) {
  RawStream s = new_stream();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamQuery(s.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUresult ended = CUDA_SUCCESS;
  std::thread([&] {
    EXPECT_EQ(api().cuCtxSetCurrent(context()), CUDA_SUCCESS);
    CUgraph graph = nullptr;
    ended = api().cuStreamEndCapture(s.get(), &graph);
  }).join();
  EXPECT_EQ(ended, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) << "not 908";
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(FidelityRules, UpdatingTheDependenciesOfAStreamNotCapturingIsIllegalStateFirst) {
  RawStream s = new_stream();
  EXPECT_EQ(api().cuStreamUpdateCaptureDependencies(s.get(), nullptr, nullptr, 0, 7),
            CUDA_ERROR_ILLEGAL_STATE);
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamQuery(s.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(api().cuStreamUpdateCaptureDependencies(s.get(), nullptr, nullptr, 0, 7),
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CUgraph ended = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

TEST_F(FidelityRules, ExchangingTheCaptureModeTakesAValueThatIsNoMode) {
  CUstreamCaptureMode mode = static_cast<CUstreamCaptureMode>(3);
  EXPECT_EQ(api().cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
  mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  EXPECT_EQ(api().cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<int>(mode), 3);
}

TEST_F(FidelityRules, PeerAccessToTheCurrentContextIsUnsupportedAfterTheFlags) {
  EXPECT_EQ(api().cuCtxEnablePeerAccess(nullptr, 1), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(api().cuCtxEnablePeerAccess(context(), 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().cuCtxEnablePeerAccess(context(), 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
}

TEST_F(FidelityRules, AStreamIsQueriedFromAThreadWithoutAContext) {
  RawStream s = new_stream();
  CUresult queried = CUDA_ERROR_UNKNOWN;
  std::thread([&] { queried = api().cuStreamQuery(s.get()); }).join();
  EXPECT_EQ(queried, CUDA_SUCCESS);
}

TEST_F(FidelityRules, AsyncAllocationAndFreeOutsideACaptureAreUnsafeCalls) {
  RawStream s = new_stream();
  RawStream other = new_stream();
  CUdeviceptr pointer = 0;
  ASSERT_EQ(api().cuMemAllocAsync(&pointer, 256, other.get()), CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamSynchronize(other.get()), CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  CUdeviceptr more = 0;
  EXPECT_EQ(api().cuMemAllocAsync(&more, 256, other.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(api().cuMemFreeAsync(pointer, other.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph ended = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(api().cuMemFreeAsync(pointer, other.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(other.get()), CUDA_SUCCESS);
}

TEST_F(FidelityRules, AnExternalWaitOutsideACaptureIsIllegalStateAndBadFlagsLeaveACapture) {
  RawStream s = new_stream();
  RawStream other = new_stream();
  RawEvent e = new_event();
  ASSERT_EQ(api().cuEventRecord(e.get(), other.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamWaitEvent(s.get(), e.get(), CU_EVENT_WAIT_EXTERNAL),
            CUDA_ERROR_ILLEGAL_STATE);
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamWaitEvent(s.get(), e.get(), 2), CUDA_ERROR_INVALID_VALUE);
  expect_still_active(s.get(), 0);
}

TEST_F(FidelityRules, AGraphCapturedIntoCannotBeDestroyedAndAnInvalidatedEndDestroysIt) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  RawGraph graph = capture(s.get(), [&] { EXPECT_EQ(launch(empty, s.get(), 1, 1), CUDA_SUCCESS); });
  ASSERT_TRUE(graph);
  ASSERT_EQ(api().cuStreamBeginCaptureToGraph(s.get(), graph.get(), nullptr, nullptr, 0,
                                              CU_STREAM_CAPTURE_MODE_RELAXED),
            CUDA_SUCCESS);
  EXPECT_EQ(api().cuGraphDestroy(graph.get()), CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_EQ(api().cuStreamQuery(s.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph ended = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_NONE);
  // The driver destroyed the graph: it must not be destroyed again (nor used).
  (void)graph.release();
  if (fake::FakeDriver* fake = test_driver().fake()) {
    EXPECT_EQ(fake->live_handles().graphs, 0u);
  }
}

// ---- Found by 10,000 generated programs (2026-12-04, driver 580.159.04) -------------------------

TEST_F(FidelityRules, UnknownInstantiateFlagsAreInvalidValueBeforeTheCaptureRule) {
  RawStream s = new_stream();
  RawStream other = new_stream();
  RawGraph done = capture(other.get(), [] {});
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  // UPLOAD is no flag of cuGraphInstantiateWithFlags; 16 is none of cuGraphInstantiateWithParams.
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&exec, done.get(), CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD),
            CUDA_ERROR_INVALID_VALUE);
  CUDA_GRAPH_INSTANTIATE_PARAMS p{};
  p.flags = 16;
  EXPECT_EQ(api().cuGraphInstantiateWithParams(&exec, done.get(), &p), CUDA_ERROR_INVALID_VALUE);
  expect_still_active(s.get(), 0);
}

TEST_F(FidelityRules, AnInstantiateThatUploadsIsNoUnsafeCall) {
  RawStream s = new_stream();
  RawStream other = new_stream();
  RawGraph done = capture(other.get(), [] {});
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamQuery(s.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);  // invalidated
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&exec, done.get(), 0),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUDA_GRAPH_INSTANTIATE_PARAMS p{};
  p.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
  p.hUploadStream = other.get();
  ASSERT_EQ(api().cuGraphInstantiateWithParams(&exec, done.get(), &p), CUDA_SUCCESS);
  Exec owned(api(), exec);
  EXPECT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
  CUgraph ended = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

TEST_F(FidelityRules, ElapsedTimeLooksAtTheStartEventFirstAndAtItsCaptureBeforeItsTiming) {
  RawStream s = new_stream();
  RawEvent never = new_event();
  RawEvent captured = new_event();  // timing disabled
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(api().cuEventRecord(captured.get(), s.get()), CUDA_SUCCESS);
  float ms = 0;
  // Recorded in a capture still active: 907, before its disabled timing; the capture goes on.
  EXPECT_EQ(api().cuEventElapsedTime(&ms, captured.get(), captured.get()),
            CUDA_ERROR_CAPTURED_EVENT);
  expect_still_active(s.get(), 0);
  // A start never recorded is 400 whatever the end; the end of a capture that is over is 1.
  EXPECT_EQ(api().cuEventElapsedTime(&ms, never.get(), captured.get()), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api().cuEventElapsedTime(&ms, captured.get(), never.get()), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FidelityRules, AnInterprocessEventIsNeitherRecordedIntoNorWaitedOnByACapture) {
  RawStream s = new_stream();
  CUevent raw = nullptr;
  ASSERT_EQ(api().cuEventCreate(&raw, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS),
            CUDA_SUCCESS);
  RawEvent ipc(api(), raw);
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuEventRecord(ipc.get(), s.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_ACTIVE);  // left as it was
  EXPECT_EQ(api().cuStreamWaitEvent(s.get(), ipc.get(), 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CUgraph ended = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

TEST_F(FidelityRules, AnUnjoinedCaptureEndedOnAnotherThreadIsUnjoined) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  RawStream side = new_stream();
  RawEvent fork = new_event();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(api().cuEventRecord(fork.get(), s.get()), CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamWaitEvent(side.get(), fork.get(), 0), CUDA_SUCCESS);
  ASSERT_EQ(launch(empty, side.get(), 1, 1), CUDA_SUCCESS);  // never joined back
  CUresult ended_code = CUDA_SUCCESS;
  std::thread([&] {
    EXPECT_EQ(api().cuCtxSetCurrent(context()), CUDA_SUCCESS);
    CUgraph ended = nullptr;
    ended_code = api().cuStreamEndCapture(s.get(), &ended);
  }).join();
  EXPECT_EQ(ended_code, CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(capture_status(side.get()), CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(FidelityRules, AMemsetIntoAGraphsAllocationOutsideItsCaptureIsInvalidValue) {
  RawStream s = new_stream();
  RawStream other = new_stream();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUdeviceptr scratch = 0;
  ASSERT_EQ(api().cuMemAllocAsync(&scratch, 256, s.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemsetD8Async(scratch, 7, 256, other.get()), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().cuMemFreeAsync(scratch, s.get()), CUDA_SUCCESS);
  CUgraph ended = nullptr;
  ASSERT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_SUCCESS);
  RawGraph graph(api(), ended);
  EXPECT_EQ(api().cuStreamSynchronize(other.get()), CUDA_SUCCESS);
}

TEST_F(FidelityRules, ADeviceLaunchInstantiateNamesAHostCopyByItsPlace) {
  DeviceMemory device = alloc(256);
  std::vector<std::uint8_t> host(256);
  RawStream s = new_stream();
  auto refused = [&](CUgraph graph, std::size_t copy) {
    std::vector<CUgraphNode> nodes(8);
    std::size_t count = nodes.size();
    ASSERT_EQ(api().cuGraphGetNodes(graph, nodes.data(), &count), CUDA_SUCCESS);
    ASSERT_GT(count, copy);
    CUDA_GRAPH_INSTANTIATE_PARAMS p{};
    p.flags = CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
    CUgraphExec exec = nullptr;
    EXPECT_EQ(api().cuGraphInstantiateWithParams(&exec, graph, &p), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(p.result_out, copy == 0 ? CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED
                                      : CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED);
    EXPECT_EQ(p.hErrNode_out, nodes[copy]);
  };
  RawGraph first = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemcpyDtoHAsync(host.data(), device.get(), 256, s.get()), CUDA_SUCCESS);
  });
  refused(first.get(), 0);
  RawGraph after = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemsetD8Async(device.get(), 1, 256, s.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemcpyDtoHAsync(host.data(), device.get(), 256, s.get()), CUDA_SUCCESS);
  });
  refused(after.get(), 1);
}

TEST_F(FidelityRules, OnlyAnExecutableMadeWithMemoryNodesKeepsTheGraphFromASecond) {
  RawStream s = new_stream();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph building = nullptr;
  ASSERT_EQ(api().cuStreamGetCaptureInfo(s.get(), &status, nullptr, &building, nullptr, nullptr,
                                         nullptr),
            CUDA_SUCCESS);
  Exec before = instantiate(building);  // no memory node yet
  CUdeviceptr scratch = 0;
  ASSERT_EQ(api().cuMemAllocAsync(&scratch, 256, s.get()), CUDA_SUCCESS);
  ASSERT_EQ(api().cuMemFreeAsync(scratch, s.get()), CUDA_SUCCESS);
  Exec with_memory = instantiate(building);
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&exec, building, 0), CUDA_ERROR_NOT_SUPPORTED);
  expect_still_active(s.get(), 2);
}

// Found by a generated program of 2026-12-04 (4908 of its run).
TEST_F(FidelityRules, DestroyingAStreamThatJoinedACaptureLeavesTheCaptureActive) {
  RawStream s = new_stream();
  CUstream side = nullptr;
  ASSERT_EQ(api().cuStreamCreate(&side, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  RawEvent fork = new_event();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            CUDA_SUCCESS);
  ASSERT_EQ(api().cuEventRecord(fork.get(), s.get()), CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamWaitEvent(side, fork.get(), 0), CUDA_SUCCESS);
  EXPECT_EQ(capture_status(side), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_EQ(api().cuStreamDestroy(side), CUDA_SUCCESS);
  expect_still_active(s.get(), 0);
}

// ---- Found by seeds 11 and 13 (20,000 programs, 2026-12-04, driver 580.159.04) -----------------

TEST_F(FidelityRules, ADeviceLaunchInstantiateTakesACopyOfPinnedHostMemory) {
  DeviceMemory device = alloc(256);
  void* pinned = nullptr;
  ASSERT_EQ(api().cuMemAllocHost(&pinned, 256), CUDA_SUCCESS);
  RawStream s = new_stream();
  RawGraph graph = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemcpyDtoHAsync(pinned, device.get(), 256, s.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemcpyHtoDAsync(device.get(), pinned, 256, s.get()), CUDA_SUCCESS);
  });
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&exec, graph.get(),
                                              CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH),
            CUDA_SUCCESS);
  if (exec != nullptr) {
    EXPECT_EQ(api().cuGraphExecDestroy(exec), CUDA_SUCCESS);
  }
  graph = RawGraph();
  EXPECT_EQ(api().cuMemFreeHost(pinned), CUDA_SUCCESS);
}

TEST_F(FidelityRules, AFreeNodeMayFreeAnAllocationOfAnotherCapture) {
  RawStream s = new_stream();
  RawStream other = new_stream();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUdeviceptr scratch = 0;
  ASSERT_EQ(api().cuMemAllocAsync(&scratch, 256, s.get()), CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamBeginCapture(other.get(), CU_STREAM_CAPTURE_MODE_RELAXED),
            CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemFreeAsync(scratch, other.get()), CUDA_SUCCESS);
  // Measured on the H200: that allocation has its free now; the allocating capture's own free of
  // it is INVALID_VALUE, and leaves that capture active with no node added.
  EXPECT_EQ(api().cuMemFreeAsync(scratch, s.get()), CUDA_ERROR_INVALID_VALUE);
  expect_still_active(s.get(), 1);      // the MEM_ALLOC node
  expect_still_active(other.get(), 1);  // the MEM_FREE node
}

// Found by program 4378 of seed 12 (2026-12-04).
TEST_F(FidelityRules, AnAllocationAnExecutableHoldsIsNotFreedInItsGraph) {
  RawStream s = new_stream();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUdeviceptr scratch = 0;
  ASSERT_EQ(api().cuMemAllocAsync(&scratch, 256, s.get()), CUDA_SUCCESS);
  Exec holding = instantiate(building(api(), s.get()));
  EXPECT_EQ(api().cuMemFreeAsync(scratch, s.get()), CUDA_ERROR_INVALID_VALUE);
  holding = Exec();
  expect_still_active(s.get(), 1);  // the MEM_ALLOC node alone
}

// Found by program 7770 of seed 12 (2026-12-04; cuda.h: the memory type of a memcpy
// node's source or destination cannot change).
TEST_F(FidelityRules, AnUpdateThatTurnsACopysDirectionIsParametersChanged) {
  DeviceMemory a = alloc(256);
  DeviceMemory b = alloc(256);
  std::vector<std::uint8_t> host(256);
  RawStream s = new_stream();
  RawGraph from_host = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemcpyHtoDAsync(a.get(), host.data(), 256, s.get()), CUDA_SUCCESS);
  });
  RawGraph on_device = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemcpyDtoDAsync(a.get(), b.get(), 256, s.get()), CUDA_SUCCESS);
  });
  Exec exec = instantiate(from_host.get());
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(api().cuGraphExecUpdate(exec.get(), on_device.get(), &info),
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED);
  std::vector<CUgraphNode> nodes(1);
  std::size_t count = 1;
  ASSERT_EQ(api().cuGraphGetNodes(on_device.get(), nodes.data(), &count), CUDA_SUCCESS);
  EXPECT_EQ(info.errorNode, nodes[0]);
}

TEST_F(FidelityRules, AConditionalNodeKeepsItsGraphFromASecondExecutableMadeBeforeItOrAfter) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  RawStream body_stream = new_stream();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUgraph graph = building(api(), s.get());
  Exec before = instantiate(graph);  // the graph is empty now
  CUgraphNode node = nullptr;
  ASSERT_NO_FATAL_FAILURE(add_if_with_one_launch(graph, s.get(), body_stream.get(), empty, &node));
  CUgraphExec second = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&second, graph, 0), CUDA_ERROR_NOT_SUPPORTED);
  before = Exec();  // destroyed: the graph may have one executable again
  Exec after = instantiate(graph);
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&second, graph, 0), CUDA_ERROR_NOT_SUPPORTED);
  after = Exec();
  CUgraph whole = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s.get(), &whole), CUDA_SUCCESS);
  EXPECT_EQ(whole, graph);
  if (whole != nullptr) {
    EXPECT_EQ(api().cuGraphDestroy(whole), CUDA_SUCCESS);
  }
}

TEST_F(FidelityRules, AGraphWithMemoryNodesAndAnExecutableUpdatesNoOtherExecutable) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  RawGraph memory = capture(s.get(), [&] {
    CUdeviceptr scratch = 0;
    EXPECT_EQ(api().cuMemAllocAsync(&scratch, 256, s.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemsetD8Async(scratch, 1, 256, s.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemFreeAsync(scratch, s.get()), CUDA_SUCCESS);
  });
  RawGraph plain = capture(s.get(), [&] { EXPECT_EQ(launch(empty, s.get(), 1, 1), CUDA_SUCCESS); });
  Exec other = instantiate(plain.get());
  CUgraphExecUpdateResultInfo info{};
  // No executable of the memory graph yet: compared as any graph (another topology).
  EXPECT_EQ(api().cuGraphExecUpdate(other.get(), memory.get(), &info),
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  Exec own = instantiate(memory.get());
  info = CUgraphExecUpdateResultInfo{};
  EXPECT_EQ(api().cuGraphExecUpdate(other.get(), memory.get(), &info), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  EXPECT_EQ(info.errorNode, nullptr);
  // Its own executable takes it.
  EXPECT_EQ(api().cuGraphExecUpdate(own.get(), memory.get(), &info), CUDA_SUCCESS);
}

TEST_F(FidelityRules, DestroyingTheStreamOfACaptureIntoAGraphDestroysTheGraph) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  RawGraph graph = capture(s.get(), [&] { EXPECT_EQ(launch(empty, s.get(), 1, 1), CUDA_SUCCESS); });
  ASSERT_TRUE(graph);
  CUstream into = nullptr;
  ASSERT_EQ(api().cuStreamCreate(&into, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamBeginCaptureToGraph(into, graph.get(), nullptr, nullptr, 0,
                                              CU_STREAM_CAPTURE_MODE_RELAXED),
            CUDA_SUCCESS);
  EXPECT_EQ(launch(empty, into, 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamDestroy(into), CUDA_SUCCESS);
  // The driver destroyed the graph (on the H200: instantiate and node queries of it answered 1, and
  // the next graph took its address): it must not be destroyed again (nor used).
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_NONE);
  (void)graph.release();
  if (fake::FakeDriver* fake = test_driver().fake()) {
    EXPECT_EQ(fake->live_handles().graphs, 0u);
  }
}

// Found by seed 9,400,001 on the H100 (2026-12-07): exec update checks the nodes from the exit
// nodes back along the edges and names the first that fails. Program 11067's shape: the chain
// copy, copy, memset, kernel updated from a chain of four kernels names the memset's node (the
// third), not the first copy's.
TEST_F(FidelityRules, AnUpdateNamesTheNodeNearestTheExitWhoseTypeChanged) {
  RawModule module = load_test_kernels();
  CUfunction add_one = kernel(module, "add_one");
  CUfunction fill = kernel(module, "fill");
  DeviceMemory a = alloc(1024);
  DeviceMemory b = alloc(1024);
  RawStream s = new_stream();
  RawGraph copies = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemcpyDtoDAsync(a.get(), b.get(), 132, s.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemcpyDtoDAsync(b.get(), a.get(), 304, s.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemsetD32Async(a.get(), 7, 8, s.get()), CUDA_SUCCESS);
    EXPECT_EQ(launch(add_one, s.get(), kGrid, kBlock, a.get(), a.get(), 256u), CUDA_SUCCESS);
  });
  RawGraph kernels = capture(s.get(), [&] {
    EXPECT_EQ(launch(add_one, s.get(), kGrid, kBlock, a.get(), b.get(), 256u), CUDA_SUCCESS);
    for (std::uint32_t value = 1; value <= 3; ++value) {
      EXPECT_EQ(launch(fill, s.get(), kGrid, kBlock, b.get(), value, 256u), CUDA_SUCCESS);
    }
  });
  Exec exec = instantiate(copies.get());
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(api().cuGraphExecUpdate(exec.get(), kernels.get(), &info),
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
  const std::vector<CUgraphNode> nodes = nodes_of(api(), kernels.get());
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(info.errorNode, nodes[2]);
  EXPECT_EQ(info.errorFromNode, nullptr);
}

// Seed 9,400,001 on the H100 (program 6333's shape): a graph with more exit nodes than the
// executable's is TOPOLOGY_CHANGED on one of its exits, before any node's type is compared; with
// one exit more, its first. Program 10526's: with fewer, no node is named.
TEST_F(FidelityRules, AnUpdateComparesTheExitNodesFirst) {
  RawModule module = load_test_kernels();
  CUfunction fill = kernel(module, "fill");
  DeviceMemory a = alloc(1024);
  DeviceMemory b = alloc(1024);
  RawStream s = new_stream();
  RawGraph chain = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemsetD32Async(a.get(), 1, 256, s.get()), CUDA_SUCCESS);
    EXPECT_EQ(launch(fill, s.get(), kGrid, kBlock, a.get(), 2u, 256u), CUDA_SUCCESS);
  });
  // Two nodes, neither waiting for the other: a second stream forked before the first node.
  RawStream side = new_stream();
  RawEvent fork = new_event();
  RawEvent join = new_event();
  RawGraph apart = capture(s.get(), [&] {
    EXPECT_EQ(api().cuEventRecord(fork.get(), s.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamWaitEvent(side.get(), fork.get(), 0), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemsetD32Async(a.get(), 3, 256, s.get()), CUDA_SUCCESS);
    EXPECT_EQ(launch(fill, side.get(), kGrid, kBlock, b.get(), 4u, 256u), CUDA_SUCCESS);
    EXPECT_EQ(api().cuEventRecord(join.get(), side.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamWaitEvent(s.get(), join.get(), 0), CUDA_SUCCESS);
  });
  Exec from_chain = instantiate(chain.get());
  ASSERT_NO_FATAL_FAILURE(expect_update_refused(from_chain.get(), apart.get(),
                                                CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, 2, 0));
  Exec from_apart = instantiate(apart.get());
  expect_update_refused(from_apart.get(), chain.get(), CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
}

// Seed 9,400,001 on the H100 (programs 1091, 12251, 12822, 13665, 1413 and five more): an
// executable instantiated without USE_NODE_PRIORITY takes a kernel node of another priority
// (-5 to 0 in program 12251); with the flag it is ATTRIBUTES_CHANGED
// (LaunchAttributes.ExecUpdateToAnotherPriorityIsAttributesChanged).
TEST_F(FidelityRules, AnUpdateComparesNoPriorityWithoutUseNodePriority) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  RawGraph urgent = capture(s.get(), [&] {
    LaunchAttributeList attributes;
    attributes.priority(-5);
    CUlaunchConfig config =
        launch_config(LaunchDims{.grid = {1}, .block = {1}}, s.get(), &attributes);
    EXPECT_EQ(api().cuLaunchKernelEx(&config, empty, nullptr, nullptr), CUDA_SUCCESS);
  });
  RawGraph plain = capture(s.get(), [&] { EXPECT_EQ(launch(empty, s.get(), 1, 1), CUDA_SUCCESS); });
  Exec exec = instantiate(urgent.get());
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(api().cuGraphExecUpdate(exec.get(), plain.get(), &info), CUDA_SUCCESS);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  EXPECT_EQ(info.errorNode, nullptr);
}

// Seed 9,400,001 on the H100 (programs 4309, 12035, 12609, 6371): an executable made while the
// graph held a conditional node but no memory node yet does not keep another executable from
// taking the graph once it has memory nodes: the update compares it (here: other node counts,
// TOPOLOGY_CHANGED naming no node) instead of answering NOT_SUPPORTED.
TEST_F(FidelityRules, AnExecutableMadeBeforeTheMemoryNodesLetsAnotherUpdateFromTheGraph) {
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  RawStream body_stream = new_stream();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUgraph graph = building(api(), s.get());
  CUgraphNode node = nullptr;
  ASSERT_NO_FATAL_FAILURE(add_if_with_one_launch(graph, s.get(), body_stream.get(), empty, &node));
  CUgraph whole = nullptr;
  ASSERT_EQ(api().cuStreamEndCapture(s.get(), &whole), CUDA_SUCCESS);
  RawGraph owned(api(), whole);
  Exec conditional_only = instantiate(whole);
  // Memory nodes after the conditional node, captured into the graph.
  ASSERT_EQ(api().cuStreamBeginCaptureToGraph(s.get(), whole, &node, nullptr, 1,
                                              CU_STREAM_CAPTURE_MODE_RELAXED),
            CUDA_SUCCESS);
  CUdeviceptr scratch = 0;
  EXPECT_EQ(api().cuMemAllocAsync(&scratch, 256, s.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemsetD8Async(scratch, 1, 256, s.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemFreeAsync(scratch, s.get()), CUDA_SUCCESS);
  CUgraph ended = nullptr;
  ASSERT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_SUCCESS);
  EXPECT_EQ(ended, whole);
  RawGraph plain = capture(s.get(), [&] { EXPECT_EQ(launch(empty, s.get(), 1, 1), CUDA_SUCCESS); });
  Exec other = instantiate(plain.get());
  expect_update_refused(other.get(), whole, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
}

// Seed 9,400,001 on the H100 (programs 9009 and 6687): with USE_NODE_PRIORITY, a kernel launched
// with priority 3 (clamped to 0, the least) against one launched with no priority attribute is
// ATTRIBUTES_CHANGED on that node.
TEST_F(FidelityRules, WithNodePrioritiesAnUpdateComparesWhetherALaunchGaveOne) {
  RawModule module = load_test_kernels();
  CUfunction fill = kernel(module, "fill");
  DeviceMemory a = alloc(1024);
  RawStream s = new_stream();
  CUdeviceptr dst = a.get();
  std::uint32_t value = 5;
  std::uint32_t n = 256;
  void* args[] = {&dst, &value, &n};
  RawGraph given = capture(s.get(), [&] {
    LaunchAttributeList attributes;
    attributes.priority(3);
    CUlaunchConfig config =
        launch_config(LaunchDims{.grid = {kGrid}, .block = {kBlock}}, s.get(), &attributes);
    EXPECT_EQ(api().cuLaunchKernelEx(&config, fill, args, nullptr), CUDA_SUCCESS);
  });
  RawGraph plain = capture(s.get(), [&] {
    EXPECT_EQ(launch(fill, s.get(), kGrid, kBlock, a.get(), 6u, 256u), CUDA_SUCCESS);
  });
  Exec exec = instantiate(given.get(), CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);
  expect_update_refused(exec.get(), plain.get(),
                        CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED, 1, 0);
}

// Seed 9,400,001 on the H100 (programs 782, 3396, 7662; cuda.h: a memcpy node's memory must come
// from the same contexts): a copy node from memory of cuMemAllocAsync updated to one from
// cuMemAlloc's is PARAMETERS_CHANGED on that node (program 782's shape: device to pageable host).
TEST_F(FidelityRules, AnUpdateMovingACopyFromPoolMemoryToCuMemAllocIsParametersChanged) {
  DeviceMemory plain = alloc(512);
  RawStream s = new_stream();
  CUdeviceptr pooled = 0;
  ASSERT_EQ(api().cuMemAllocAsync(&pooled, 256, s.get()), CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamSynchronize(s.get()), CUDA_SUCCESS);
  std::vector<std::uint8_t> host(1024);
  RawGraph from_pool = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemcpyDtoHAsync(host.data(), pooled + 64, 72, s.get()), CUDA_SUCCESS);
  });
  RawGraph from_plain = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemcpyDtoHAsync(host.data() + 368, plain.get() + 104, 380, s.get()),
              CUDA_SUCCESS);
  });
  {
    Exec exec = instantiate(from_pool.get());
    expect_update_refused(exec.get(), from_plain.get(),
                          CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED, 1, 0);
  }
  EXPECT_EQ(api().cuMemFreeAsync(pooled, s.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(s.get()), CUDA_SUCCESS);
}

// Seed 9,400,001 on the H100 (program 12392, twice): a WHILE node on a handle of default 1 without
// ASSIGN_DEFAULT, updated from a graph whose WHILE node (same place, same body) is on a handle of
// default 0 with ASSIGN_DEFAULT, is NOT_SUPPORTED on that node. Another default alone is taken
// (BranchNodes.ExecUpdateTakesNewBodyArgumentsAndDefaults): the flag does it.
TEST_F(FidelityRules, AnUpdateToAConditionalHandleThatAssignsItsDefaultIsNotSupported) {
  RawModule module = load_test_kernels();
  CUfunction fill = kernel(module, "fill");
  CUfunction set_condition = kernel(module, "set_condition");
  DeviceMemory a = alloc(1024);
  RawStream s = new_stream();
  RawStream body_stream = new_stream();
  // fill, then a WHILE node whose body sets its handle to 0.
  auto record = [&](unsigned default_value, unsigned flags) {
    return capture(s.get(), [&] {
      EXPECT_EQ(launch(fill, s.get(), kGrid, kBlock, a.get(), 7u, 256u), CUDA_SUCCESS);
      CUgraph graph = building(api(), s.get());
      CUgraphConditionalHandle handle = 0;
      ASSERT_EQ(api().cuGraphConditionalHandleCreate(&handle, graph, context(), default_value,
                                                     flags),
                CUDA_SUCCESS);
      const std::vector<CUgraphNode> before = nodes_of(api(), graph);
      ASSERT_EQ(before.size(), 1u);
      CUgraphNode node = nullptr;
      ASSERT_NO_FATAL_FAILURE(begin_conditional_body(graph, s.get(), before, handle,
                                                     CU_GRAPH_COND_TYPE_WHILE, body_stream.get(),
                                                     &node));
      EXPECT_EQ(launch(set_condition, body_stream.get(), 1, 1, handle, 0u), CUDA_SUCCESS);
      CUgraph ended = nullptr;
      ASSERT_EQ(api().cuStreamEndCapture(body_stream.get(), &ended), CUDA_SUCCESS);
    });
  };
  RawGraph kept = record(1, 0);
  RawGraph assigned = record(0, kGraphCondAssignDefault);
  Exec exec = instantiate(kept.get());
  expect_update_refused(exec.get(), assigned.get(), CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED,
                        2, 1);
}

// Seed 9,400,001 on the H100 (programs 1398 and 5954): a stream that joined a capture, captured
// work and was destroyed before being joined back leaves that work unjoined: the end is 904.
TEST_F(FidelityRules, AStreamDestroyedWithUnjoinedWorkLeavesTheCaptureUnjoined) {
  DeviceMemory a = alloc(1024);
  RawStream s = new_stream();
  CUstream side = nullptr;
  ASSERT_EQ(api().cuStreamCreate(&side, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  RawEvent fork = new_event();
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(api().cuEventRecord(fork.get(), s.get()), CUDA_SUCCESS);
  ASSERT_EQ(api().cuStreamWaitEvent(side, fork.get(), 0), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemsetD32Async(a.get(), 1, 16, side), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamDestroy(side), CUDA_SUCCESS);
  EXPECT_EQ(api().cuMemsetD32Async(a.get() + 512, 2, 16, s.get()), CUDA_SUCCESS);
  CUgraph ended = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  EXPECT_EQ(ended, nullptr);
  EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_NONE);
}

// Seed 9,400,001 on the H100 (programs 5238, 14026, 11987, 5776): a stream forked into a capture
// that set its dependencies (cuStreamUpdateCaptureDependencies, SET) to a conditional node added
// beside it, after capturing work of its own (program 5238) or none (14026), is not waited for:
// the origin's end takes the capture though neither that work nor the node was joined back.
TEST_F(FidelityRules, AStreamThatSetItsCaptureDependenciesHasNothingToJoin) {
  RawModule module = load_test_kernels();
  CUfunction fill = kernel(module, "fill");
  DeviceMemory a = alloc(1024);
  RawStream s = new_stream();
  RawStream side = new_stream();
  RawStream body_stream = new_stream();
  RawEvent fork = new_event();
  for (const bool side_work : {true, false}) {
    SCOPED_TRACE(side_work ? "after work of its own" : "with no work of its own");
    ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemsetD32Async(a.get(), 1, 16, s.get()), CUDA_SUCCESS);
    ASSERT_EQ(api().cuEventRecord(fork.get(), s.get()), CUDA_SUCCESS);
    ASSERT_EQ(api().cuStreamWaitEvent(side.get(), fork.get(), 0), CUDA_SUCCESS);
    if (side_work) {
      EXPECT_EQ(launch(fill, side.get(), kGrid, kBlock, a.get() + 512, 2u, 64u), CUDA_SUCCESS);
    }
    // A conditional node after the side stream's dependencies, which are set to it.
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph graph = nullptr;
    const CUgraphNode* deps = nullptr;
    std::size_t count = 0;
    ASSERT_EQ(api().cuStreamGetCaptureInfo(side.get(), &status, nullptr, &graph, &deps, nullptr,
                                           &count),
              CUDA_SUCCESS);
    ASSERT_EQ(count, 1u);
    const std::vector<CUgraphNode> after(deps, deps + count);
    CUgraphConditionalHandle handle = 0;
    ASSERT_EQ(api().cuGraphConditionalHandleCreate(&handle, graph, context(), 2, 0), CUDA_SUCCESS);
    CUgraphNode node = nullptr;
    ASSERT_NO_FATAL_FAILURE(begin_conditional_body(graph, side.get(), after, handle,
                                                   CU_GRAPH_COND_TYPE_IF, body_stream.get(),
                                                   &node));
    CUgraph body = nullptr;
    ASSERT_EQ(api().cuStreamEndCapture(body_stream.get(), &body), CUDA_SUCCESS);
    EXPECT_EQ(launch(fill, s.get(), kGrid, kBlock, a.get(), 3u, 64u), CUDA_SUCCESS);
    CUgraph ended = nullptr;
    EXPECT_EQ(api().cuStreamEndCapture(s.get(), &ended), CUDA_SUCCESS);
    RawGraph owned(api(), ended);
    EXPECT_EQ(ended, graph);
    EXPECT_EQ(nodes_of(api(), graph).size(), side_work ? 4u : 3u);
    EXPECT_EQ(capture_status(side.get()), CU_STREAM_CAPTURE_STATUS_NONE);
  }
}

// Seed 9,400,001 on the H100 (programs 11119, 9259; 2887): a graph allocation its own graph frees
// cannot be freed by another capture while an executable holding that MEM_FREE lives, its graph
// destroyed (11119), nor once graph and executables are gone (2887): INVALID_VALUE, the capture
// left active with no node added.
TEST_F(FidelityRules, AGraphAllocationFreedByItsOwnGraphIsNotFreedByAnotherCapture) {
  RawStream s = new_stream();
  CUdeviceptr scratch = 0;
  auto [graph, exec] = replayed_self_freeing_graph(s.get(), 7, &scratch);
  graph = RawGraph();  // the executable still holds the MEM_FREE
  for (const bool exec_alive : {true, false}) {
    SCOPED_TRACE(exec_alive ? "its executable alive" : "its executable destroyed");
    if (!exec_alive) exec = Exec();
    ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemFreeAsync(scratch, s.get()), CUDA_ERROR_INVALID_VALUE);
    expect_still_active(s.get(), 0);
  }
}

// Seed 9,400,001 on the H100 (programs 8960 and 4385): a graph holding a memset into another
// graph's allocation that that graph frees itself (so no launch holds it now) is refused by
// instantiate with INVALID_VALUE, though the capture took the memset.
TEST_F(FidelityRules, InstantiateRefusesAMemsetIntoAnotherGraphsAllocationNoLaunchHolds) {
  RawStream s = new_stream();
  CUdeviceptr scratch = 0;
  const SelfFreeingGraph allocating = replayed_self_freeing_graph(s.get(), 96, &scratch);
  RawGraph other = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemsetD8Async(scratch, 212, 1024, s.get()), CUDA_SUCCESS);
  });
  CUgraphExec refused = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&refused, other.get(), 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(refused, nullptr);
}

// Seed 9,400,001 on the H100 (programs 12047 and 4400; CUDA's "API synchronization behavior":
// for a copy from pageable host memory to the device the stream is synchronised first): a copy
// from pageable memory that a graph queued before it on the stream writes reads the graph's bytes.
TEST_F(FidelityRules, ACopyFromPageableMemoryReadsWhatTheStreamsEarlierWorkWroteThere) {
  DeviceMemory source = alloc(256);
  DeviceMemory target = alloc(256);
  RawStream s = new_stream();
  upload(source.get(), std::vector<std::uint32_t>(64, 7u), s.get());
  upload(target.get(), std::vector<std::uint32_t>(64, 0u), s.get());
  std::vector<std::uint32_t> pageable(64, 1u);
  RawGraph to_host = capture(s.get(), [&] {
    EXPECT_EQ(api().cuMemcpyDtoHAsync(pageable.data(), source.get(), 256, s.get()), CUDA_SUCCESS);
  });
  Exec exec = instantiate(to_host.get());
  ASSERT_EQ(api().cuGraphLaunch(exec.get(), s.get()), CUDA_SUCCESS);
  ASSERT_EQ(api().cuMemcpyHtoDAsync(target.get(), pageable.data(), 256, s.get()), CUDA_SUCCESS);
  EXPECT_EQ(download(target.get(), 64, s.get()), std::vector<std::uint32_t>(64, 7u));
}

}  // namespace
}  // namespace graphcap::testing
