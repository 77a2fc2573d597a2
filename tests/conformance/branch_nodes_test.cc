// IF, IF/ELSE and SWITCH nodes inserted during stream capture the way graphcap inserts them
// (docs/cuda-driver-facts.md, "IF, IF/ELSE and SWITCH nodes"): a handle on the capturing graph, the
// node after the stream's dependencies (cuGraphAddNode), the stream moved after it, and each body
// captured on a second stream (RELAXED) into one of the node's body graphs. Each test is a row
// measured on the H200 by docs/measurements/probes/branch_probe.cu (its case in brackets), held
// on both drivers.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <graphcap/driver/node_params.h>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

class BranchNodes : public BodiesTest {
 protected:
  // word(i) += 1, as a body's marker.
  void bump(CUstream stream, std::size_t i) {
    EXPECT_EQ(launch(add_one_, stream, 1, 1, word(i), word(i), 1u), CUDA_SUCCESS);
  }
  void set(CUstream stream, CUgraphConditionalHandle handle, std::uint32_t value) {
    EXPECT_EQ(launch(set_condition_, stream, 1, 1, handle, value), CUDA_SUCCESS);
  }

  // A handle on the graph `stream` captures into.
  CUgraphConditionalHandle handle(CUstream stream, unsigned first, unsigned flags) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph graph = nullptr;
    EXPECT_EQ(api().cuStreamGetCaptureInfo(stream, &status, nullptr, &graph, nullptr, nullptr,
                                           nullptr),
              CUDA_SUCCESS);
    CUgraphConditionalHandle made = 0;
    EXPECT_EQ(api().cuGraphConditionalHandleCreate(&made, graph, context(), first, flags),
              CUDA_SUCCESS);
    return made;
  }

  // A conditional node after `stream`'s dependencies (later work on `stream` after it): its body
  // graphs, or the driver's code.
  CUresult insert(CUstream stream, CUgraphConditionalNodeType type, unsigned size,
                  CUgraphConditionalHandle handle, std::vector<CUgraph>* bodies,
                  CUgraphNode* node = nullptr) {
    CUgraph graph = nullptr;
    std::vector<CUgraphNode> after;
    if (CUresult r = capture_point(stream, &graph, &after); r != CUDA_SUCCESS) return r;
    CUgraphNodeParams params = conditional_node_params(handle, type, size, context());
    CUgraphNode added = nullptr;
    if (CUresult r =
            api().cuGraphAddNode(&added, graph, after.data(), nullptr, after.size(), &params);
        r != CUDA_SUCCESS) {
      return r;
    }
    bodies->assign(params.conditional.phGraph_out, params.conditional.phGraph_out + size);
    if (node != nullptr) *node = added;
    return api().cuStreamUpdateCaptureDependencies(stream, &added, nullptr, 1,
                                                   CU_STREAM_SET_CAPTURE_DEPENDENCIES);
  }

  // Captures `record` into body graph `body` on `on` (RELAXED, as graphcap does).
  void capture_body(CUstream on, CUgraph body, const std::function<void()>& record) {
    ASSERT_EQ(api().cuStreamBeginCaptureToGraph(on, body, nullptr, nullptr, 0,
                                                CU_STREAM_CAPTURE_MODE_RELAXED),
              CUDA_SUCCESS);
    record();
    CUgraph ended = nullptr;
    EXPECT_EQ(api().cuStreamEndCapture(on, &ended), CUDA_SUCCESS);
    EXPECT_EQ(ended, body);
  }

  // A graph: [set the handle to `value` when given]; a node of `type` whose body b bumps word b;
  // a bump of word 10 after it (the graph goes on).
  RawGraph branch(CUgraphConditionalNodeType type, unsigned size, unsigned first, unsigned flags,
               std::optional<std::uint32_t> value) {
    return capture(s_.get(), [&] {
      const CUgraphConditionalHandle h = handle(s_.get(), first, flags);
      if (value) set(s_.get(), h, *value);
      std::vector<CUgraph> bodies;
      ASSERT_EQ(insert(s_.get(), type, size, h, &bodies), CUDA_SUCCESS);
      for (unsigned b = 0; b < size; ++b) capture_body(body_.get(), bodies[b], [&] { bump(body_.get(), b); });
      bump(s_.get(), 10);
    });
  }

  // Launches `exec` from zeroed words; the counters of words 0..n-1 and word 10.
  std::vector<std::uint32_t> run(const Exec& exec, std::size_t n, bool zero = true) {
    if (zero) upload(words_.get(), std::vector<std::uint32_t>(64, 0), s_.get());
    EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
    std::vector<std::uint32_t> words = download(words_.get(), 11, s_.get());
    std::vector<std::uint32_t> out(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(n));
    out.push_back(words[10]);
    return out;
  }
};

using Counts = std::vector<std::uint32_t>;

TEST_F(BranchNodes, AnIfRunsItsBodyOnEveryLaunchItsDefaultIsNonzeroAndNeverOtherwise) {
  RawGraph taken = branch(CU_GRAPH_COND_TYPE_IF, 1, 1, kGraphCondAssignDefault, std::nullopt);
  Exec exec = instantiate(taken.get());
  EXPECT_EQ(run(exec, 1), (Counts{1, 1}));
  EXPECT_EQ(run(exec, 1), (Counts{1, 1}));
  RawGraph skipped = branch(CU_GRAPH_COND_TYPE_IF, 1, 0, kGraphCondAssignDefault, std::nullopt);
  Exec never = instantiate(skipped.get());
  EXPECT_EQ(run(never, 1), (Counts{0, 1}));
}

TEST_F(BranchNodes, AnIfElseRunsItsBodyForAnyNonzeroValueAndItsElseForZero) {
  for (const auto& [value, expected] :
       std::vector<std::pair<std::uint32_t, Counts>>{{0, {0, 1, 1}}, {1, {1, 0, 1}},
                                                     {7, {1, 0, 1}}}) {
    SCOPED_TRACE("value " + std::to_string(value));
    RawGraph graph = branch(CU_GRAPH_COND_TYPE_IF, 2, 1, kGraphCondAssignDefault, value);
    Exec exec = instantiate(graph.get());
    EXPECT_EQ(run(exec, 2), expected);
  }
}

TEST_F(BranchNodes, ASwitchRunsTheCaseItsValueNamesAndNoneForAValuePastTheLast) {
  for (std::uint32_t value : {0u, 1u, 2u, 3u, 4u, 100u, 0xFFFFFFFFu}) {
    SCOPED_TRACE("value " + std::to_string(value));
    RawGraph graph = branch(CU_GRAPH_COND_TYPE_SWITCH, 4, 0, kGraphCondAssignDefault, value);
    Exec exec = instantiate(graph.get());
    Counts expected(4, 0);
    if (value < 4) expected[value] = 1;
    expected.push_back(1);  // the graph went on
    EXPECT_EQ(run(exec, 4), expected);
  }
}

TEST_F(BranchNodes, ASwitchDefaultSelectsItsCaseOnEveryLaunch) {
  RawGraph two = branch(CU_GRAPH_COND_TYPE_SWITCH, 4, 2, kGraphCondAssignDefault, std::nullopt);
  Exec exec = instantiate(two.get());
  EXPECT_EQ(run(exec, 4), (Counts{0, 0, 1, 0, 1}));
  EXPECT_EQ(run(exec, 4), (Counts{0, 0, 1, 0, 1}));
  RawGraph nine = branch(CU_GRAPH_COND_TYPE_SWITCH, 4, 9, kGraphCondAssignDefault, std::nullopt);
  Exec none = instantiate(nine.get());
  EXPECT_EQ(run(none, 4), (Counts{0, 0, 0, 0, 1}));
}

TEST_F(BranchNodes, WithoutAssignDefaultTheValueStartsAtZeroAndPersistsAcrossLaunches) {
  // A kernel after the node sets the value: the first launch sees 0, later ones what it set.
  RawGraph graph = capture(s_.get(), [&] {
    const CUgraphConditionalHandle h = handle(s_.get(), 1, 0);
    std::vector<CUgraph> bodies;
    ASSERT_EQ(insert(s_.get(), CU_GRAPH_COND_TYPE_SWITCH, 3, h, &bodies), CUDA_SUCCESS);
    for (unsigned b = 0; b < 3; ++b) capture_body(body_.get(), bodies[b], [&] { bump(body_.get(), b); });
    set(s_.get(), h, 2);
  });
  Exec exec = instantiate(graph.get());
  EXPECT_EQ(run(exec, 3), (Counts{1, 0, 0, 0}));
  EXPECT_EQ(run(exec, 3), (Counts{0, 0, 1, 0}));
  EXPECT_EQ(run(exec, 3), (Counts{0, 0, 1, 0}));
  // With ASSIGN_DEFAULT the default wins on every launch.
  RawGraph reset = capture(s_.get(), [&] {
    const CUgraphConditionalHandle h = handle(s_.get(), 0, kGraphCondAssignDefault);
    std::vector<CUgraph> bodies;
    ASSERT_EQ(insert(s_.get(), CU_GRAPH_COND_TYPE_IF, 1, h, &bodies), CUDA_SUCCESS);
    capture_body(body_.get(), bodies[0], [&] { bump(body_.get(), 0); });
    set(s_.get(), h, 1);
  });
  Exec again = instantiate(reset.get());
  EXPECT_EQ(run(again, 1), (Counts{0, 0}));
  EXPECT_EQ(run(again, 1), (Counts{0, 0}));
}

TEST_F(BranchNodes, EmptyBodiesAreValid) {
  for (const auto& [type, size] : std::vector<std::pair<CUgraphConditionalNodeType, unsigned>>{
           {CU_GRAPH_COND_TYPE_IF, 1}, {CU_GRAPH_COND_TYPE_IF, 2}, {CU_GRAPH_COND_TYPE_SWITCH, 4},
           {CU_GRAPH_COND_TYPE_WHILE, 1}}) {
    RawGraph graph = capture(s_.get(), [&] {
      const CUgraphConditionalHandle h =
          handle(s_.get(), type == CU_GRAPH_COND_TYPE_WHILE ? 0 : 1, kGraphCondAssignDefault);
      std::vector<CUgraph> bodies;
      ASSERT_EQ(insert(s_.get(), type, size, h, &bodies), CUDA_SUCCESS);
      bump(s_.get(), 10);
    });
    Exec exec = instantiate(graph.get());
    EXPECT_EQ(run(exec, 0), (Counts{1}));
  }
}

TEST_F(BranchNodes, SizesOutsideEachTypesRangeAreInvalidValue) {
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  for (const auto& [type, size] : std::vector<std::pair<CUgraphConditionalNodeType, unsigned>>{
           {CU_GRAPH_COND_TYPE_SWITCH, 0}, {CU_GRAPH_COND_TYPE_IF, 0}, {CU_GRAPH_COND_TYPE_IF, 3},
           {CU_GRAPH_COND_TYPE_WHILE, 0}}) {
    const CUgraphConditionalHandle h = handle(s_.get(), 0, kGraphCondAssignDefault);
    std::vector<CUgraph> bodies;
    EXPECT_EQ(insert(s_.get(), type, size, h, &bodies), CUDA_ERROR_INVALID_VALUE)
        << "type " << type << " size " << size;
  }
  // The refusals leave the capture active (its unused handles stay on the graph).
  CUgraph raw = nullptr;
  ASSERT_EQ(api().cuStreamEndCapture(s_.get(), &raw), CUDA_SUCCESS);
  RawGraph graph(api(), raw);
}

TEST_F(BranchNodes, ASwitchOfSixtyFourCasesRunsItsLastCaseForTheLastValue) {
  RawGraph graph = capture(s_.get(), [&] {
    const CUgraphConditionalHandle h = handle(s_.get(), 63, kGraphCondAssignDefault);
    std::vector<CUgraph> bodies;
    ASSERT_EQ(insert(s_.get(), CU_GRAPH_COND_TYPE_SWITCH, 64, h, &bodies), CUDA_SUCCESS);
    for (unsigned b = 0; b < 64; ++b) {
      capture_body(body_.get(), bodies[b], [&] { bump(body_.get(), b == 63 ? 1 : 0); });
    }
  });
  Exec exec = instantiate(graph.get());
  EXPECT_EQ(run(exec, 2), (Counts{0, 1, 0}));
}

TEST_F(BranchNodes, AHandleOfTheOuterGraphSteersAnIfInsideAnIfBody) {
  RawGraph graph = capture(s_.get(), [&] {
    const CUgraphConditionalHandle outer = handle(s_.get(), 1, kGraphCondAssignDefault);
    const CUgraphConditionalHandle inner = handle(s_.get(), 0, kGraphCondAssignDefault);
    set(s_.get(), inner, 1);
    std::vector<CUgraph> outer_bodies;
    ASSERT_EQ(insert(s_.get(), CU_GRAPH_COND_TYPE_IF, 1, outer, &outer_bodies), CUDA_SUCCESS);
    capture_body(body_.get(), outer_bodies[0], [&] {
      std::vector<CUgraph> inner_bodies;
      ASSERT_EQ(insert(body_.get(), CU_GRAPH_COND_TYPE_IF, 1, inner, &inner_bodies),
                CUDA_SUCCESS);
      capture_body(inner_.get(), inner_bodies[0], [&] { bump(inner_.get(), 0); });
    });
  });
  Exec exec = instantiate(graph.get());
  EXPECT_EQ(run(exec, 1), (Counts{1, 0}));
}

TEST_F(BranchNodes, AnIfInsideAWhileBodyEvaluatesTheValueSetInEachIteration) {
  // WHILE (word 20 from 4) { countdown of word 30 (from 2) sets the IF: 1, 0, then 1 twice (it
  // wraps below 0); IF { bump 0 }; countdown of word 20 sets the WHILE }.
  RawGraph graph = capture(s_.get(), [&] {
    const CUgraphConditionalHandle loop = handle(s_.get(), 1, kGraphCondAssignDefault);
    std::vector<CUgraph> loop_body;
    ASSERT_EQ(insert(s_.get(), CU_GRAPH_COND_TYPE_WHILE, 1, loop, &loop_body), CUDA_SUCCESS);
    capture_body(body_.get(), loop_body[0], [&] {
      const CUgraphConditionalHandle odd = handle(body_.get(), 0, kGraphCondAssignDefault);
      EXPECT_EQ(launch(countdown_, body_.get(), 1, 1, odd, word(30), word(31)), CUDA_SUCCESS);
      std::vector<CUgraph> if_body;
      ASSERT_EQ(insert(body_.get(), CU_GRAPH_COND_TYPE_IF, 1, odd, &if_body), CUDA_SUCCESS);
      capture_body(inner_.get(), if_body[0], [&] { bump(inner_.get(), 0); });
      EXPECT_EQ(launch(countdown_, body_.get(), 1, 1, loop, word(20), word(21)), CUDA_SUCCESS);
    });
  });
  Exec exec = instantiate(graph.get());
  std::vector<std::uint32_t> words(64, 0);
  words[20] = 4;
  words[30] = 2;
  upload(words_.get(), words, s_.get());
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  const std::vector<std::uint32_t> after = download(words_.get(), 32, s_.get());
  EXPECT_EQ(after[21], 4u) << "WHILE iterations";
  EXPECT_EQ(after[31], 4u) << "the IF's setter ran once per iteration";
  EXPECT_EQ(after[0], 3u) << "the IF body ran where its value was 1";
}

TEST_F(BranchNodes, AGraphHoldingAConditionalNodeHasOneExecutableAtATime) {
  RawGraph graph = branch(CU_GRAPH_COND_TYPE_IF, 1, 1, kGraphCondAssignDefault, std::nullopt);
  Exec first = instantiate(graph.get());
  CUgraphExec second = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&second, graph.get(), 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(first.reset(), CUDA_SUCCESS);
  Exec again = instantiate(graph.get());
  EXPECT_TRUE(again);
}

TEST_F(BranchNodes, ExecUpdateTakesNewBodyArgumentsAndDefaults) {
  RawGraph first = branch(CU_GRAPH_COND_TYPE_IF, 2, 1, kGraphCondAssignDefault, std::nullopt);
  Exec exec = instantiate(first.get());
  EXPECT_EQ(run(exec, 2), (Counts{1, 0, 1}));
  // The same topology, the default 0: the ELSE body runs from the next launch.
  RawGraph second = branch(CU_GRAPH_COND_TYPE_IF, 2, 0, kGraphCondAssignDefault, std::nullopt);
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(api().cuGraphExecUpdate(exec.get(), second.get(), &info), CUDA_SUCCESS);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  EXPECT_EQ(run(exec, 2), (Counts{0, 1, 1}));
}

TEST_F(BranchNodes, ExecUpdateOfAnotherKindOrSizeIsNotSupportedOnTheNode) {
  RawGraph first = branch(CU_GRAPH_COND_TYPE_IF, 1, 1, kGraphCondAssignDefault, std::nullopt);
  Exec exec = instantiate(first.get());
  for (const auto& [type, size] : std::vector<std::pair<CUgraphConditionalNodeType, unsigned>>{
           {CU_GRAPH_COND_TYPE_IF, 2}, {CU_GRAPH_COND_TYPE_SWITCH, 1}}) {
    RawGraph next = branch(type, size, 1, kGraphCondAssignDefault, std::nullopt);
    CUgraphExecUpdateResultInfo info{};
    EXPECT_EQ(api().cuGraphExecUpdate(exec.get(), next.get(), &info),
              CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED);
    ASSERT_NE(info.errorNode, nullptr);
    CUgraphNodeType named = CU_GRAPH_NODE_TYPE_EMPTY;
    ASSERT_EQ(api().cuGraphNodeGetType(info.errorNode, &named), CUDA_SUCCESS);
    EXPECT_EQ(named, CU_GRAPH_NODE_TYPE_CONDITIONAL);
  }
  EXPECT_EQ(run(exec, 1), (Counts{1, 1})) << "the executable runs unchanged";
}

TEST_F(BranchNodes, ExecUpdateWithOneKernelMoreInABodyIsTopologyChangedNamingNoNode) {
  RawGraph first = branch(CU_GRAPH_COND_TYPE_IF, 1, 1, kGraphCondAssignDefault, std::nullopt);
  Exec exec = instantiate(first.get());
  RawGraph more = capture(s_.get(), [&] {
    const CUgraphConditionalHandle h = handle(s_.get(), 1, kGraphCondAssignDefault);
    std::vector<CUgraph> bodies;
    ASSERT_EQ(insert(s_.get(), CU_GRAPH_COND_TYPE_IF, 1, h, &bodies), CUDA_SUCCESS);
    capture_body(body_.get(), bodies[0], [&] {
      bump(body_.get(), 0);
      bump(body_.get(), 0);
    });
    bump(s_.get(), 10);
  });
  CUgraphExecUpdateResultInfo info{};
  EXPECT_EQ(api().cuGraphExecUpdate(exec.get(), more.get(), &info),
            CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  EXPECT_EQ(info.errorNode, nullptr);
  EXPECT_EQ(run(exec, 1), (Counts{1, 1}));
}

}  // namespace
}  // namespace graphcap::testing
