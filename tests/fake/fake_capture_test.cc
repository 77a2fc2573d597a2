// Stream capture on one thread: beginning and ending, the nodes captured operations become, the
// invalidation table (every row, every mode), capture info, forks and joins between streams,
// and that captured work runs only when the graph is launched.
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_fixture.h"

namespace graphcap::fake::unit {
namespace {

class FakeCapture : public FakeDriverTest {
 public:
  // Made by the invalidation table's set-up, for its rows.
  CUdeviceptr scratch_ = 0;
  CUevent event_ = nullptr;
  CUgraphExec exec_ = nullptr;

  // The capture on `stream` is INVALIDATED, refuses further work with 901, ends with 901 and a
  // NULL graph, and leaves the stream usable.
  void expect_invalidated(CUstream stream) {
    EXPECT_EQ(status(stream), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_EQ(empty(stream), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CUgraph graph = reinterpret_cast<CUgraph>(std::uintptr_t{0x10});
    EXPECT_EQ(fake_.cuStreamEndCapture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT_EQ(graph, nullptr);
    EXPECT_EQ(status(stream), CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT_EQ(empty(stream), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamSynchronize(stream), CUDA_SUCCESS);
  }
  // The capture on `stream` is ACTIVE and ends into a graph of `count` nodes.
  void expect_active(CUstream stream, std::size_t count) {
    EXPECT_EQ(status(stream), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUgraph graph = nullptr;
    EXPECT_EQ(fake_.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    ASSERT_NE(graph, nullptr);
    EXPECT_EQ(nodes(graph).size(), count);
    EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
  }
};

TEST_F(FakeCapture, AnEmptyCaptureGivesAnEmptyGraphThatLaunches) {
  const CUgraph graph = capture(stream_, [] {});
  EXPECT_THAT(nodes(graph), IsEmpty());
  const CUgraphExec exec = instantiate(graph);
  EXPECT_EQ(fake_.cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
}

TEST_F(FakeCapture, CapturedOperationsBecomeTypedNodesInCreationOrder) {
  const CUdeviceptr a = alloc(64);
  std::uint32_t host[16] = {};
  CUevent recorded = new_event();
  CUevent outside = new_event();
  ASSERT_EQ(fake_.cuEventRecord(outside, stream_), CUDA_SUCCESS);
  CUstream other = new_stream();
  const CUgraph graph = capture(stream_, [&] {
    EXPECT_EQ(fill(stream_, a, 1, 16), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuMemcpyHtoDAsync(a, host, 64, stream_), CUDA_SUCCESS);  // pageable too
    EXPECT_EQ(fake_.cuMemsetD8Async(a, 0, 64, stream_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuEventRecord(recorded, stream_), CUDA_SUCCESS);  // no node
    EXPECT_EQ(fake_.cuStreamWaitEvent(stream_, outside, CU_EVENT_WAIT_EXTERNAL), CUDA_SUCCESS);
    CUdeviceptr temp = 0;
    EXPECT_EQ(fake_.cuMemAllocAsync(&temp, 64, stream_), CUDA_SUCCESS);
    EXPECT_NE(temp, 0u);
    EXPECT_EQ(fake_.cuMemFreeAsync(temp, stream_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuMemcpyDtoHAsync(host, a, 64, stream_), CUDA_SUCCESS);
  });
  EXPECT_THAT(
      node_types(graph),
      ElementsAre(CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMSET,
                  CU_GRAPH_NODE_TYPE_WAIT_EVENT, CU_GRAPH_NODE_TYPE_MEM_ALLOC,
                  CU_GRAPH_NODE_TYPE_MEM_FREE, CU_GRAPH_NODE_TYPE_MEMCPY));
  EXPECT_EQ(fake_.pending_operations(stream_), 1u);  // only the record made outside
  EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventDestroy(recorded), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventDestroy(outside), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(other), CUDA_SUCCESS);
  free(a);
}

TEST_F(FakeCapture, CapturedWorkRunsOnlyWhenTheGraphLaunches) {
  const CUdeviceptr a = alloc(16);
  const CUgraph graph = capture(stream_, [&] { EXPECT_EQ(fill(stream_, a, 9, 4), CUDA_SUCCESS); });
  EXPECT_EQ(fake_.pending_operations(), 0u);
  EXPECT_THAT(peek(a, 4), Each(0u));
  const CUgraphExec exec = instantiate(graph);
  ASSERT_EQ(fake_.cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  EXPECT_THAT(peek(a, 4), Each(0u));
  EXPECT_THAT(download(a, 4, stream_), Each(9u));
  EXPECT_EQ(fake_.cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
  free(a);
}

TEST_F(FakeCapture, CapturedHostCopiesTouchHostMemoryOnEveryLaunch) {
  const CUdeviceptr a = alloc(16);
  std::uint32_t in[4] = {1, 1, 1, 1};
  std::uint32_t out[4] = {};
  const CUgraph graph = capture(stream_, [&] {
    EXPECT_EQ(fake_.cuMemcpyHtoDAsync(a, in, 16, stream_), CUDA_SUCCESS);
    EXPECT_EQ(add_one(stream_, a, a, 4), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuMemcpyDtoHAsync(out, a, 16, stream_), CUDA_SUCCESS);
  });
  EXPECT_THAT(out, Each(0u));  // capture ran nothing
  const CUgraphExec exec = instantiate(graph);
  for (std::uint32_t round = 1; round <= 3; ++round) {
    std::fill(std::begin(in), std::end(in), round * 10);
    ASSERT_EQ(fake_.cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
    EXPECT_THAT(out, Each(round * 10 + 1));
  }
  EXPECT_EQ(fake_.cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
  free(a);
}

TEST_F(FakeCapture, BeginAndEndRefuseWhatTheFactsSay) {
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(empty(stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_ILLEGAL_STATE);
  expect_active(stream_, 1);  // still valid

  EXPECT_EQ(fake_.cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(fake_.cuStreamBeginCapture(stream_legacy(), CU_STREAM_CAPTURE_MODE_RELAXED),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(fake_.cuStreamBeginCapture(stream_, static_cast<CUstreamCaptureMode>(3)),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(status(stream_), CU_STREAM_CAPTURE_STATUS_NONE);
  CUgraph graph = nullptr;
  EXPECT_EQ(fake_.cuStreamEndCapture(stream_, &graph), CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(fake_.cuStreamEndCapture(stream_, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeCapture, ThePerThreadStreamCanCapture) {
  const CUgraph graph =
      capture(stream_per_thread(), [&] { EXPECT_EQ(empty(stream_per_thread()), CUDA_SUCCESS); });
  EXPECT_EQ(nodes(graph).size(), 1u);
  EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
}

TEST_F(FakeCapture, CaptureInfoDescribesTheSequenceAndItsFrontier) {
  CUstreamCaptureStatus state = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  cuuint64_t id = 0;
  ASSERT_EQ(fake_.cuStreamGetCaptureInfo(stream_, &state, &id, nullptr, nullptr, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(state, CU_STREAM_CAPTURE_STATUS_NONE);

  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUgraph building = nullptr;
  const CUgraphNode* deps = nullptr;
  const CUgraphEdgeData* edges = reinterpret_cast<const CUgraphEdgeData*>(std::uintptr_t{8});
  std::size_t count = 99;
  ASSERT_EQ(fake_.cuStreamGetCaptureInfo(stream_, &state, &id, &building, &deps, &edges, &count),
            CUDA_SUCCESS);
  EXPECT_EQ(state, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_NE(id, 0u);
  EXPECT_NE(building, nullptr);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(edges, nullptr);
  ASSERT_EQ(empty(stream_), CUDA_SUCCESS);
  ASSERT_EQ(empty(stream_), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamGetCaptureInfo(stream_, &state, nullptr, nullptr, &deps, nullptr, &count),
            CUDA_SUCCESS);
  ASSERT_EQ(count, 1u);
  const std::vector<CUgraphNode> so_far = nodes(building);  // the graph under construction
  ASSERT_EQ(so_far.size(), 2u);
  EXPECT_EQ(deps[0], so_far[1]);
  EXPECT_EQ(fake_.cuGraphDestroy(building), CUDA_ERROR_ILLEGAL_STATE);  // the capture's
  CUgraph graph = nullptr;
  ASSERT_EQ(fake_.cuStreamEndCapture(stream_, &graph), CUDA_SUCCESS);
  EXPECT_EQ(graph, building);

  cuuint64_t next = 0;
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  ASSERT_EQ(
      fake_.cuStreamGetCaptureInfo(stream_, &state, &next, nullptr, nullptr, nullptr, nullptr),
      CUDA_SUCCESS);
  EXPECT_NE(next, id);  // unique per sequence
  end_any_capture(stream_);
  EXPECT_EQ(
      fake_.cuStreamGetCaptureInfo(stream_, nullptr, &next, nullptr, nullptr, nullptr, nullptr),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
}

TEST_F(FakeCapture, ThreadCaptureModeStartsGlobalAndIsExchanged) {
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  ASSERT_EQ(fake_.cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
  mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  ASSERT_EQ(fake_.cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_RELAXED);
  // A value that is no mode is taken, as on the H200 (graphcap-fidelity; the fake had
  // guessed 1). NULL is 1.
  mode = static_cast<CUstreamCaptureMode>(7);
  EXPECT_EQ(fake_.cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  EXPECT_EQ(fake_.cuThreadExchangeStreamCaptureMode(nullptr), CUDA_ERROR_INVALID_VALUE);
  mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  ASSERT_EQ(fake_.cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<int>(mode), 7);
}

// ---- the invalidation table ---------------------------------------------------------------------

// One row: a call made while stream_ captures, and what each capture mode gives.
struct Row {
  const char* name;
  std::function<CUresult(FakeCapture&, CUstream capturing, CUstream idle)> call;
  CUresult global, thread_local_, relaxed;  // the call's result; 900/901/905/907 invalidate
};

class FakeInvalidationTable
    : public FakeCapture,
      public ::testing::WithParamInterface<std::tuple<int, CUstreamCaptureMode>> {
 public:
  static const std::vector<Row>& rows();
};

template <class F>
Row row(const char* name, CUresult g, CUresult t, CUresult r, F call) {
  return Row{name, call, g, t, r};
}

constexpr CUresult kOk = CUDA_SUCCESS;
constexpr CUresult k900 = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;

const std::vector<Row>& FakeInvalidationTable::rows() {
  static const std::vector<Row> table = {
      row("StreamSynchronize_capturing", k900, k900, k900,
          [](FakeCapture& t, CUstream s, CUstream) { return t.fake_.cuStreamSynchronize(s); }),
      row("StreamQuery_capturing", k900, k900, k900,
          [](FakeCapture& t, CUstream s, CUstream) { return t.fake_.cuStreamQuery(s); }),
      row("CtxSynchronize", k900, k900, k900,
          [](FakeCapture& t, CUstream, CUstream) { return t.fake_.cuCtxSynchronize(); }),
      row("GraphLaunch_into_capturing", k900, k900, k900,
          [](FakeCapture& t, CUstream s, CUstream) { return t.fake_.cuGraphLaunch(t.exec_, s); }),
      row("EventQuery_captured_event", CUDA_ERROR_CAPTURED_EVENT, CUDA_ERROR_CAPTURED_EVENT,
          CUDA_ERROR_CAPTURED_EVENT,
          [](FakeCapture& t, CUstream s, CUstream) {
            CUevent event = t.new_event();
            t.fake_.cuEventRecord(event, s);
            const CUresult r = t.fake_.cuEventQuery(event);
            t.fake_.cuEventDestroy(event);
            return r;
          }),
      row("EventSynchronize_captured_event", CUDA_ERROR_CAPTURED_EVENT, CUDA_ERROR_CAPTURED_EVENT,
          CUDA_ERROR_CAPTURED_EVENT,
          [](FakeCapture& t, CUstream s, CUstream) {
            CUevent event = t.new_event();
            t.fake_.cuEventRecord(event, s);
            const CUresult r = t.fake_.cuEventSynchronize(event);
            t.fake_.cuEventDestroy(event);
            return r;
          }),
      row("StreamWaitEvent_uncaptured_event", CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
          CUDA_ERROR_STREAM_CAPTURE_ISOLATION, CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
          [](FakeCapture& t, CUstream s, CUstream idle) {
            CUevent event = t.new_event();
            t.fake_.cuEventRecord(event, idle);
            const CUresult r = t.fake_.cuStreamWaitEvent(s, event, 0);
            t.fake_.cuEventDestroy(event);
            return r;
          }),
      row("MemAlloc", k900, k900, kOk,
          [](FakeCapture& t, CUstream, CUstream) {
            CUdeviceptr p = 0;
            const CUresult r = t.fake_.cuMemAlloc(&p, 64);
            if (r == CUDA_SUCCESS) t.fake_.cuMemFree(p);
            return r;
          }),
      row("MemFree", k900, k900, kOk,
          [](FakeCapture& t, CUstream, CUstream) { return t.fake_.cuMemFree(t.scratch_); }),
      row("MemAllocHost", k900, k900, kOk,
          [](FakeCapture& t, CUstream, CUstream) {
            void* p = nullptr;
            const CUresult r = t.fake_.cuMemAllocHost(&p, 64);
            if (r == CUDA_SUCCESS) t.fake_.cuMemFreeHost(p);
            return r;
          }),
      row("StreamSynchronize_idle", k900, k900, kOk,
          [](FakeCapture& t, CUstream, CUstream idle) {
            return t.fake_.cuStreamSynchronize(idle);
          }),
      row("EventQuery_uncaptured", k900, k900, kOk,
          [](FakeCapture& t, CUstream, CUstream) { return t.fake_.cuEventQuery(t.event_); }),
      row("EventSynchronize_uncaptured", k900, k900, kOk,
          [](FakeCapture& t, CUstream, CUstream) { return t.fake_.cuEventSynchronize(t.event_); }),
      row("ModuleUnload", k900, k900, kOk,
          [](FakeCapture& t, CUstream, CUstream) {
            CUmodule module = nullptr;
            const auto image = t.fake_.module_image({"empty"});
            t.fake_.cuModuleLoadData(&module, image.data());
            const CUresult r = t.fake_.cuModuleUnload(module);
            if (r != CUDA_SUCCESS) {
              CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
              t.fake_.cuThreadExchangeStreamCaptureMode(&mode);
              t.fake_.cuModuleUnload(module);
              t.fake_.cuThreadExchangeStreamCaptureMode(&mode);
            }
            return r;
          }),
      row("GraphExecDestroy", k900, k900, kOk,
          [](FakeCapture& t, CUstream, CUstream) { return t.fake_.cuGraphExecDestroy(t.exec_); }),
      row("MemGetInfo", kOk, kOk, kOk,
          [](FakeCapture& t, CUstream, CUstream) {
            std::size_t free = 0, total = 0;
            return t.fake_.cuMemGetInfo(&free, &total);
          }),
      row("ModuleLoadData", kOk, kOk, kOk,
          [](FakeCapture& t, CUstream, CUstream) {
            CUmodule module = nullptr;
            const CUresult r = t.fake_.cuModuleLoadData(&module, t.image_.data());
            CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
            t.fake_.cuThreadExchangeStreamCaptureMode(&mode);
            t.fake_.cuModuleUnload(module);
            t.fake_.cuThreadExchangeStreamCaptureMode(&mode);
            return r;
          }),
      row("EventCreate", kOk, kOk, kOk,
          [](FakeCapture& t, CUstream, CUstream) {
            CUevent event = nullptr;
            const CUresult r = t.fake_.cuEventCreate(&event, 0);
            t.fake_.cuEventDestroy(event);
            return r;
          }),
      row("StreamCreate", kOk, kOk, kOk,
          [](FakeCapture& t, CUstream, CUstream) {
            CUstream stream = nullptr;
            const CUresult r = t.fake_.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
            t.fake_.cuStreamDestroy(stream);
            return r;
          }),
      row("Launch_on_idle_stream", kOk, kOk, kOk,
          [](FakeCapture& t, CUstream, CUstream idle) { return t.empty(idle); }),
  };
  return table;
}

TEST_P(FakeInvalidationTable, FollowsTheFacts) {
  const auto& [index, mode] = GetParam();
  const Row& r = rows()[static_cast<std::size_t>(index)];
  CUstream idle = new_stream();
  event_ = new_event();
  ASSERT_EQ(fake_.cuEventRecord(event_, idle), CUDA_SUCCESS);
  scratch_ = alloc(64);
  const CUgraph graph = capture(
      idle, [] {}, CU_STREAM_CAPTURE_MODE_RELAXED);
  exec_ = instantiate(graph);

  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, mode), CUDA_SUCCESS);
  ASSERT_EQ(empty(stream_), CUDA_SUCCESS);
  const CUresult expected = mode == CU_STREAM_CAPTURE_MODE_GLOBAL         ? r.global
                            : mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ? r.thread_local_
                                                                          : r.relaxed;
  EXPECT_EQ(r.call(*this, stream_, idle), expected) << r.name;
  if (expected == CUDA_SUCCESS) {
    expect_active(stream_, 1);
  } else {
    expect_invalidated(stream_);
  }

  // Clean up in RELAXED mode, whatever the row consumed.
  const CUstreamCaptureMode previous = set_mode(CU_STREAM_CAPTURE_MODE_RELAXED);
  fake_.cuGraphExecDestroy(exec_);
  fake_.cuMemFree(scratch_);
  set_mode(previous);
  EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventDestroy(event_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(idle), CUDA_SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(
    EveryRowEveryMode, FakeInvalidationTable,
    ::testing::Combine(::testing::Range(0, 20),
                       ::testing::Values(CU_STREAM_CAPTURE_MODE_GLOBAL,
                                         CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                         CU_STREAM_CAPTURE_MODE_RELAXED)),
    [](const auto& test_info) {
      const int mode = static_cast<int>(std::get<1>(test_info.param));
      return std::string(FakeInvalidationTable::rows()[static_cast<std::size_t>(
                                                           std::get<0>(test_info.param))]
                             .name) +
             (mode == 0   ? "_GLOBAL"
              : mode == 1 ? "_THREAD_LOCAL"
                          : "_RELAXED");
    });

TEST_F(FakeCapture, TableHasEveryRow) { EXPECT_EQ(FakeInvalidationTable::rows().size(), 20u); }

// ---- several streams
// -----------------------------------------------------------------------------

TEST_F(FakeCapture, ForkAndJoinBuildOneGraphWithTheRightEdges) {
  CUstream side = new_stream();
  CUevent fork = new_event();
  CUevent join = new_event();
  const CUdeviceptr a = alloc(16);
  const CUdeviceptr b = alloc(16);
  const CUdeviceptr c = alloc(16);
  const CUgraph graph = capture(stream_, [&] {
    EXPECT_EQ(fill(stream_, a, 1, 4), CUDA_SUCCESS);  // node 0
    EXPECT_EQ(fake_.cuEventRecord(fork, stream_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamWaitEvent(side, fork, 0), CUDA_SUCCESS);
    EXPECT_EQ(status(side), CU_STREAM_CAPTURE_STATUS_ACTIVE);  // pulled in
    EXPECT_EQ(add_one(side, a, b, 4), CUDA_SUCCESS);           // node 1, after 0
    // Node 2 writes memory node 1 does not touch: no edge orders the two branches.
    EXPECT_EQ(fill(stream_, c, 5, 4), CUDA_SUCCESS);           // node 2, after 0
    EXPECT_EQ(fake_.cuEventRecord(join, side), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamWaitEvent(stream_, join, 0), CUDA_SUCCESS);
    const CUgraphNode* deps = nullptr;
    std::size_t count = 0;
    CUstreamCaptureStatus state{};
    EXPECT_EQ(
        fake_.cuStreamGetCaptureInfo(stream_, &state, nullptr, nullptr, &deps, nullptr, &count),
        CUDA_SUCCESS);
    EXPECT_EQ(count, 2u);                     // the origin now depends on both branches
    EXPECT_EQ(empty(stream_), CUDA_SUCCESS);  // node 3, after 1 and 2
  });
  EXPECT_EQ(status(side), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(nodes(graph).size(), 4u);
  const std::string path = ::testing::TempDir() + "fake_fork_join.dot";
  ASSERT_EQ(fake_.cuGraphDebugDotPrint(graph, path.c_str(), 0), CUDA_SUCCESS);
  std::ifstream file(path);
  const std::string dot((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_NE(dot.find("n0 -> n1;"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0 -> n2;"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n1 -> n3;"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n2 -> n3;"), std::string::npos) << dot;
  EXPECT_EQ(dot.find("n0 -> n3;"), std::string::npos) << dot;
  const CUgraphExec exec = instantiate(graph);
  ASSERT_EQ(fake_.cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  EXPECT_THAT(download(b, 4, stream_), Each(2u));
  EXPECT_THAT(download(c, 4, stream_), Each(5u));
  EXPECT_EQ(fake_.cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventDestroy(fork), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventDestroy(join), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(side), CUDA_SUCCESS);
  free(a);
  free(b);
  free(c);
}

TEST_F(FakeCapture, AnUnjoinedForkFailsTheEndAndResetsBothStreams) {
  CUstream side = new_stream();
  CUevent fork = new_event();
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuEventRecord(fork, stream_), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamWaitEvent(side, fork, 0), CUDA_SUCCESS);
  ASSERT_EQ(empty(side), CUDA_SUCCESS);
  CUgraph graph = reinterpret_cast<CUgraph>(std::uintptr_t{0x10});
  EXPECT_EQ(fake_.cuStreamEndCapture(stream_, &graph), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(status(stream_), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(status(side), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(fake_.cuEventDestroy(fork), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(side), CUDA_SUCCESS);
}

TEST_F(FakeCapture, AForkWithoutWorkNeedsNoJoin) {
  CUstream side = new_stream();
  CUevent fork = new_event();
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(empty(stream_), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuEventRecord(fork, stream_), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamWaitEvent(side, fork, 0), CUDA_SUCCESS);
  expect_active(stream_, 1);
  EXPECT_EQ(status(side), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(fake_.cuEventDestroy(fork), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(side), CUDA_SUCCESS);
}

TEST_F(FakeCapture, EndingOnTheForkedStreamInvalidatesBoth) {
  CUstream side = new_stream();
  CUevent fork = new_event();
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuEventRecord(fork, stream_), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamWaitEvent(side, fork, 0), CUDA_SUCCESS);
  CUgraph graph = reinterpret_cast<CUgraph>(std::uintptr_t{0x10});
  EXPECT_EQ(fake_.cuStreamEndCapture(side, &graph), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(status(side), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(status(stream_), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(fake_.cuStreamEndCapture(stream_, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(status(side), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(status(stream_), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(fake_.cuEventDestroy(fork), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(side), CUDA_SUCCESS);
}

TEST_F(FakeCapture, WaitingOnAnotherCapturesEventMergesAndInvalidatesBoth) {
  CUstream other = new_stream();
  CUevent event = new_event();
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamBeginCapture(other, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuEventRecord(event, other), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamWaitEvent(stream_, event, 0), CUDA_ERROR_STREAM_CAPTURE_MERGE);
  EXPECT_EQ(status(stream_), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(status(other), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(empty(other), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CUgraph graph = nullptr;
  EXPECT_EQ(fake_.cuStreamEndCapture(other, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(graph, nullptr);
  expect_invalidated(stream_);  // (its closing sync needs the other capture gone)
  EXPECT_EQ(fake_.cuEventDestroy(event), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(other), CUDA_SUCCESS);
}

TEST_F(FakeCapture, WaitingOnANeverRecordedEventAddsNothing) {
  CUevent event = new_event();
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamWaitEvent(stream_, event, 0), CUDA_SUCCESS);
  expect_active(stream_, 0);
  EXPECT_EQ(fake_.cuEventDestroy(event), CUDA_SUCCESS);
}

TEST_F(FakeCapture, TheLegacyStreamCannotRunNextToACapturingBlockingStream) {
  CUstream blocking = new_stream(CU_STREAM_DEFAULT);
  ASSERT_EQ(fake_.cuStreamBeginCapture(blocking, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUstreamCaptureStatus state{};
  EXPECT_EQ(fake_.cuStreamIsCapturing(nullptr, &state), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  EXPECT_EQ(status(blocking), CU_STREAM_CAPTURE_STATUS_ACTIVE);  // asking does not invalidate
  EXPECT_EQ(empty(nullptr), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  expect_invalidated(blocking);
  // A non-blocking stream's capture does not involve the legacy stream.
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  EXPECT_EQ(empty(nullptr), CUDA_SUCCESS);
  expect_active(stream_, 0);
  EXPECT_EQ(fake_.cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(blocking), CUDA_SUCCESS);
}

TEST_F(FakeCapture, ARefusedCapturedCallInvalidatesTheCapture) {
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuLaunchKernel(empty_, 0, 1, 1, 1, 1, 1, 0, stream_, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  expect_invalidated(stream_);
}

TEST_F(FakeCapture, DestroyingTheCapturingStreamEndsItsCapture) {
  CUstream doomed = new_stream();
  ASSERT_EQ(fake_.cuStreamBeginCapture(doomed, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(empty(doomed), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(doomed), CUDA_SUCCESS);
  // Nothing of the capture is left to prohibit unsafe calls or to leak.
  CUdeviceptr p = alloc(16);
  free(p);
}

}  // namespace
}  // namespace graphcap::fake::unit
