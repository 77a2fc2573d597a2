// Rules graphcap-fidelity's generated programs found on the H200 (2026-12-03/04), driver
// 580.159.04 (runs and programs in docs/conformance.md, "Generated programs"), each as the shortest
// program that shows it, on both drivers. docs/cuda-driver-facts.md, "Found by generated programs",
// has the rows; fidelity_rules_h100_test.cc holds what the H100 showed since.
#include <cstdint>
#include <thread>
#include <vector>

#include <graphcap/fake/fake_driver.h>

#include "fidelity_rules_fixture.h"

namespace graphcap::testing {
namespace {

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

}  // namespace
}  // namespace graphcap::testing
