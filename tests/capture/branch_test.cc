// Device-side branches on every driver: Device::condition makes a conditional
// handle of the recording, a kernel given Arg::condition(c) sets it, and begin_if / begin_else /
// end_if or begin_switch / begin_case / end_switch record an IF (with its ELSE) or a SWITCH whose
// bodies are what the stream records in between. Replays take the branch the device chose, with
// the same results on the fake and the H200; every misuse is refused with its Errc and changes
// nothing.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/try.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

using ::testing::_;

using Words = std::vector<std::uint32_t>;

class BranchTest : public DeviceFixture {
 protected:
  void SetUp() override {
    DeviceFixture::SetUp();
    if (HasFatalFailure()) return;
    for (auto [kernel, name] : {std::pair{&set_condition_, "set_condition"},
                                std::pair{&countdown_, "countdown"}}) {
      Result<Kernel> found = module_.kernel(name);
      ASSERT_THAT(found, IsOk()) << name;
      *kernel = *found;
    }
    for (Buffer* counter : {&a_, &b_, &c_, &after_}) *counter = upload_u32({0});
  }

  void begin() {
    ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
    ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  }
  // counter += 1 (add_one in place).
  Result<void> bump(const Buffer& counter) { return add_one(counter, counter, 1); }
  // Zeroes every counter (recorded first, so each replay starts from 0).
  Result<void> zero() {
    for (const Buffer* counter : {&a_, &b_, &c_, &after_}) GRAPHCAP_TRY(fill(*counter, 0, 1));
    return {};
  }
  Result<void> set(const Condition& c, const Param<std::uint32_t>& value) {
    return device_->launch(stream(), set_condition_, LaunchDims{},
                           {Arg::condition(c), Arg::param(value)});
  }
  Result<void> set(const Condition& c, std::uint32_t value) {
    return device_->launch(stream(), set_condition_, LaunchDims{},
                           {Arg::condition(c), Arg::value(value)});
  }
  Words counters() { return {read_u32(a_)[0], read_u32(b_)[0], read_u32(c_)[0], read_u32(after_)[0]}; }

  // A recorded step: zero; set c from `value`; IF (c) { bump a } [ELSE { bump b }]; bump after.
  Result<Graph> record_if_else(const Param<std::uint32_t>& value, bool with_else) {
    begin();
    GRAPHCAP_TRY(zero());
    GRAPHCAP_ASSIGN_OR_RETURN(Condition c, device_->condition(stream()));
    GRAPHCAP_TRY(set(c, value));
    GRAPHCAP_TRY(device_->begin_if(stream(), c));
    GRAPHCAP_TRY(bump(a_));
    if (with_else) {
      GRAPHCAP_TRY(device_->begin_else(stream(), c));
      GRAPHCAP_TRY(bump(b_));
    }
    GRAPHCAP_TRY(device_->end_if(stream(), c));
    GRAPHCAP_TRY(bump(after_));
    return device_->end_capture(stream());
  }

  Kernel set_condition_, countdown_;
  Buffer a_, b_, c_, after_;
};

TEST_F(BranchTest, AnIfElseTakesTheBranchTheKernelChoseOnEveryReplay) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(1);
  Result<Graph> graph = record_if_else(value, true);
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_CONDITIONAL), 1u);
  for (const auto& [v, expected] : std::vector<std::pair<std::uint32_t, Words>>{
           {1, {1, 0, 0, 1}}, {0, {0, 1, 0, 1}}, {7, {1, 0, 0, 1}}, {0, {0, 1, 0, 1}}}) {
    SCOPED_TRACE("value " + std::to_string(v));
    ASSERT_THAT(graph->set(value, v), IsOk());
    ASSERT_THAT(graph->replay(), IsOk());
    EXPECT_EQ(counters(), expected);
  }
}

TEST_F(BranchTest, AnIfWithoutElseSkipsItsBodyForZero) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(0);
  Result<Graph> graph = record_if_else(value, false);
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(counters(), (Words{0, 0, 0, 1}));
  ASSERT_THAT(graph->set(value, 1u), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(counters(), (Words{1, 0, 0, 1}));
}

TEST_F(BranchTest, ASwitchRunsTheChosenCaseAndNoneForAValuePastTheLast) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(0);
  begin();
  ASSERT_THAT(zero(), IsOk());
  Result<Condition> c = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(set(*c, value), IsOk());
  ASSERT_THAT(device_->begin_switch(stream(), *c, 4), IsOk());
  ASSERT_THAT(device_->begin_case(stream(), *c, 0), IsOk());
  ASSERT_THAT(bump(a_), IsOk());
  ASSERT_THAT(device_->begin_case(stream(), *c, 2), IsOk());  // case 1 stays empty
  ASSERT_THAT(bump(b_), IsOk());
  ASSERT_THAT(device_->begin_case(stream(), *c, 3), IsOk());
  ASSERT_THAT(bump(c_), IsOk());
  ASSERT_THAT(device_->end_switch(stream(), *c), IsOk());
  ASSERT_THAT(bump(after_), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  for (const auto& [v, expected] : std::vector<std::pair<std::uint32_t, Words>>{
           {0, {1, 0, 0, 1}}, {1, {0, 0, 0, 1}}, {2, {0, 1, 0, 1}}, {3, {0, 0, 1, 1}},
           {4, {0, 0, 0, 1}}, {0xFFFFFFFF, {0, 0, 0, 1}}}) {
    SCOPED_TRACE("value " + std::to_string(v));
    ASSERT_THAT(graph->set(value, v), IsOk());
    ASSERT_THAT(graph->replay(), IsOk());
    EXPECT_EQ(counters(), expected);
  }
}

TEST_F(BranchTest, TheConditionStartsEachReplayAtFirst) {
  // A kernel after the IF sets the condition to 0: it does not carry into the next replay.
  begin();
  ASSERT_THAT(zero(), IsOk());
  Result<Condition> c = device_->condition(stream(), 1);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->first(), 1u);
  ASSERT_THAT(set(*c, 1u), IsOk());
  ASSERT_THAT(device_->begin_if(stream(), *c), IsOk());
  ASSERT_THAT(bump(a_), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *c), IsOk());
  ASSERT_THAT(set(*c, 0u), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  for (int replay = 0; replay < 2; ++replay) {
    ASSERT_THAT(graph->replay(), IsOk());
    EXPECT_EQ(read_u32(a_), Words{1});
  }
}

TEST_F(BranchTest, BranchesAndLoopsNest) {
  // IF (c) { SWITCH (d) { case 1: WHILE (countdown 3) { bump a } } }; an IF inside the WHILE
  // body steered by a condition of the graph (set once, outside the loop): bump b each time.
  Param<std::uint32_t> outer = device_->param<std::uint32_t>(1);
  Param<std::uint32_t> which = device_->param<std::uint32_t>(1);
  Buffer counter = upload_u32({0});
  Buffer iterations = upload_u32({0});
  begin();
  ASSERT_THAT(zero(), IsOk());
  ASSERT_THAT(fill(counter, 3, 1), IsOk());
  ASSERT_THAT(fill(iterations, 0, 1), IsOk());
  Result<Condition> c = device_->condition(stream());
  Result<Condition> inner = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(inner, IsOk());
  ASSERT_THAT(set(*c, outer), IsOk());
  ASSERT_THAT(set(*inner, 1u), IsOk());
  ASSERT_THAT(device_->begin_if(stream(), *c), IsOk());
  Result<Condition> d = device_->condition(stream());  // made in the IF's body
  ASSERT_THAT(d, IsOk());
  ASSERT_THAT(set(*d, which), IsOk());
  ASSERT_THAT(device_->begin_switch(stream(), *d, 2), IsOk());
  ASSERT_THAT(device_->begin_case(stream(), *d, 1), IsOk());
  Result<Loop> loop = device_->begin_while(stream());
  ASSERT_THAT(loop, IsOk());
  ASSERT_THAT(bump(a_), IsOk());
  ASSERT_THAT(device_->begin_if(stream(), *inner), IsOk());
  ASSERT_THAT(bump(b_), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *inner), IsOk());
  ASSERT_THAT(device_->launch(stream(), countdown_, LaunchDims{},
                              {Arg::condition(*loop), Arg::inout(counter), Arg::inout(iterations)}),
              IsOk());
  ASSERT_THAT(device_->end_while(stream(), *loop), IsOk());
  ASSERT_THAT(device_->end_switch(stream(), *d), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *c), IsOk());
  ASSERT_THAT(bump(after_), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_CONDITIONAL), 1u) << "the graph's own";
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(counters(), (Words{3, 3, 0, 1}));
  ASSERT_THAT(graph->set(which, 0u), IsOk());  // case 0 is empty
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(counters(), (Words{0, 0, 0, 1}));
  ASSERT_THAT(graph->set(which, 1u), IsOk());
  ASSERT_THAT(graph->set(outer, 0u), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(counters(), (Words{0, 0, 0, 1}));
}

TEST_F(BranchTest, ReRecordingTheSameBranchesUpdatesInPlaceAndAnotherKindReinstantiates) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(0);
  Result<Graph> graph = record_if_else(value, true);
  ASSERT_THAT(graph, IsOk());
  // With and without the ELSE body: an IF node always has two bodies, so the update applies.
  begin();
  ASSERT_THAT(zero(), IsOk());
  Result<Condition> c = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(set(*c, value), IsOk());
  ASSERT_THAT(device_->begin_if(stream(), *c), IsOk());
  ASSERT_THAT(bump(c_), IsOk());
  ASSERT_THAT(device_->begin_else(stream(), *c), IsOk());
  ASSERT_THAT(bump(b_), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *c), IsOk());
  ASSERT_THAT(bump(after_), IsOk());
  ASSERT_THAT(device_->end_capture(stream(), *graph), IsOk());
  EXPECT_TRUE(graph->report().updated) << graph->report().update_refusal;
  ASSERT_THAT(graph->set(value, 1u), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(counters(), (Words{0, 0, 1, 1}));
  // A SWITCH where the IF was: the driver refuses the update on that node; re-instantiated.
  begin();
  ASSERT_THAT(zero(), IsOk());
  Result<Condition> d = device_->condition(stream());
  ASSERT_THAT(d, IsOk());
  ASSERT_THAT(set(*d, value), IsOk());
  ASSERT_THAT(device_->begin_switch(stream(), *d, 2), IsOk());
  ASSERT_THAT(device_->begin_case(stream(), *d, 1), IsOk());
  ASSERT_THAT(bump(a_), IsOk());
  ASSERT_THAT(device_->end_switch(stream(), *d), IsOk());
  ASSERT_THAT(bump(after_), IsOk());
  ASSERT_THAT(device_->end_capture(stream(), *graph), IsOk());
  EXPECT_FALSE(graph->report().updated);
  EXPECT_EQ(graph->report().update_result, CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(graph->report().update_error_node_type, CU_GRAPH_NODE_TYPE_CONDITIONAL);
  ASSERT_THAT(graph->set(value, 1u), IsOk());  // the new executable took the recorded value, 0
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(counters(), (Words{1, 0, 0, 1}));
}

TEST_F(BranchTest, DotNamesTheBranchNode) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(1);
  Result<Graph> graph = record_if_else(value, true);
  ASSERT_THAT(graph, IsOk());
  EXPECT_THAT(graph->dot(), AllOf(HasSubstr("CONDITIONAL\\nif (condition"),
                                  HasSubstr("kernel set_condition")));
}

// ---- misuse: the Errc, and nothing changed ---------------------------------------------------

TEST_F(BranchTest, AConditionOutsideARecordingIsRefused) {
  EXPECT_THAT(device_->condition(stream()),
              StatusIs(Errc::graph_state, _, HasSubstr("condition")));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  EXPECT_THAT(device_->condition(stream()), StatusIs(Errc::graph_state));
  Condition empty;
  EXPECT_THAT(device_->begin_if(stream(), empty), StatusIs(Errc::graph_state));
  EXPECT_EQ(stream().capture_state(), CaptureState::prepare);
  ASSERT_THAT(device_->abort_capture(stream()), IsOk());
}

TEST_F(BranchTest, AConditionNoKernelTakesIsRefusedAndStaysUsable) {
  begin();
  Result<Condition> c = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  EXPECT_THAT(device_->begin_if(stream(), *c),
              StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("Arg::condition")));
  EXPECT_THAT(device_->begin_switch(stream(), *c, 2), StatusIs(Errc::graph_state));
  // Nothing changed: record the kernel, and the same condition begins its IF.
  ASSERT_THAT(set(*c, 1u), IsOk());
  ASSERT_THAT(device_->begin_if(stream(), *c), IsOk());
  ASSERT_THAT(bump(a_), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *c), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(a_), Words{1});
}

TEST_F(BranchTest, AConditionSteersOneBranch) {
  begin();
  Result<Condition> c = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(set(*c, 1u), IsOk());
  ASSERT_THAT(device_->begin_if(stream(), *c), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *c), IsOk());
  EXPECT_THAT(device_->begin_if(stream(), *c),
              StatusIs(Errc::graph_state, _, HasSubstr("steers a branch already")));
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(BranchTest, AnElseWithoutItsIfOrTwiceIsRefused) {
  begin();
  Result<Condition> c = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(set(*c, 1u), IsOk());
  EXPECT_THAT(device_->begin_else(stream(), *c),
              StatusIs(Errc::graph_state, _, HasSubstr("begin_if first")));
  ASSERT_THAT(device_->begin_if(stream(), *c), IsOk());
  ASSERT_THAT(device_->begin_else(stream(), *c), IsOk());
  EXPECT_THAT(device_->begin_else(stream(), *c),
              StatusIs(Errc::graph_state, _, HasSubstr("one ELSE per IF")));
  ASSERT_THAT(device_->end_if(stream(), *c), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(BranchTest, EndingWithTheOtherKindsEndOrOutOfOrderIsRefused) {
  begin();
  Result<Condition> c = device_->condition(stream());
  Result<Condition> d = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(d, IsOk());
  ASSERT_THAT(set(*c, 1u), IsOk());
  ASSERT_THAT(set(*d, 0u), IsOk());
  ASSERT_THAT(device_->begin_if(stream(), *c), IsOk());
  EXPECT_THAT(device_->end_switch(stream(), *c),
              StatusIs(Errc::graph_state, _, HasSubstr("end_if")));
  ASSERT_THAT(device_->begin_switch(stream(), *d, 1), IsOk());
  EXPECT_THAT(device_->end_if(stream(), *c),
              StatusIs(Errc::graph_state, _, HasSubstr("innermost")));
  EXPECT_THAT(device_->end_if(stream(), *d), StatusIs(Errc::graph_state, _, HasSubstr("end_switch")));
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::graph_state, _, HasSubstr("end_switch")));
  EXPECT_EQ(stream().capture_state(), CaptureState::capture);
  ASSERT_THAT(device_->end_switch(stream(), *d), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *c), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(BranchTest, ACaseTwiceOrPastTheLastIsRefused) {
  begin();
  Result<Condition> c = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(set(*c, 1u), IsOk());
  EXPECT_THAT(device_->begin_switch(stream(), *c, 0), StatusIs(Errc::invalid_argument));
  ASSERT_THAT(device_->begin_switch(stream(), *c, 2), IsOk());
  EXPECT_THAT(device_->begin_case(stream(), *c, 2),
              StatusIs(Errc::graph_state, _, HasSubstr("case 2 of a SWITCH of 2 cases")));
  ASSERT_THAT(device_->begin_case(stream(), *c, 1), IsOk());
  ASSERT_THAT(bump(a_), IsOk());
  EXPECT_THAT(device_->begin_case(stream(), *c, 1),
              StatusIs(Errc::graph_state, _, HasSubstr("each case once")));
  ASSERT_THAT(bump(a_), IsOk());  // still case 1's body
  ASSERT_THAT(device_->end_switch(stream(), *c), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(a_), Words{2});
}

TEST_F(BranchTest, NothingIsRecordedBetweenBeginSwitchAndItsFirstCase) {
  begin();
  Result<Condition> c = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(set(*c, 0u), IsOk());
  ASSERT_THAT(device_->begin_switch(stream(), *c, 1), IsOk());
  EXPECT_THAT(bump(a_), StatusIs(Errc::graph_state, _, HasSubstr("begin_case")));
  EXPECT_THAT(device_->condition(stream()), StatusIs(Errc::graph_state));
  EXPECT_THAT(device_->begin_while(stream()), StatusIs(Errc::graph_state));
  ASSERT_THAT(device_->begin_case(stream(), *c, 0), IsOk());
  ASSERT_THAT(bump(a_), IsOk());
  ASSERT_THAT(device_->end_switch(stream(), *c), IsOk());
  Result<Graph> graph = device_->end_capture(stream());  // the refusals doomed nothing
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(a_), Words{1});
}

TEST_F(BranchTest, AConditionThatSteersNoBranchKeepsItsBodyOrTheRecordingOpen) {
  begin();
  Result<Condition> c = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(set(*c, 1u), IsOk());
  ASSERT_THAT(device_->begin_if(stream(), *c), IsOk());
  Result<Condition> unused_inside = device_->condition(stream());
  ASSERT_THAT(unused_inside, IsOk());
  EXPECT_THAT(device_->end_if(stream(), *c),
              StatusIs(Errc::graph_state, _, HasSubstr("steers no branch")));
  EXPECT_THAT(device_->begin_else(stream(), *c), StatusIs(Errc::graph_state));
  ASSERT_THAT(set(*unused_inside, 0u), IsOk());
  ASSERT_THAT(device_->begin_if(stream(), *unused_inside), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *unused_inside), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *c), IsOk());
  Result<Condition> unused = device_->condition(stream());
  ASSERT_THAT(unused, IsOk());
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::graph_state, _,
                       AllOf(HasSubstr("steers no branch"),
                             HasSubstr("CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED"))));
  EXPECT_EQ(stream().capture_state(), CaptureState::capture);
  ASSERT_THAT(set(*unused, 0u), IsOk());
  ASSERT_THAT(device_->begin_if(stream(), *unused), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *unused), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(BranchTest, AConditionOfAnotherRecordingIsRefused) {
  begin();
  Result<Condition> c = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(set(*c, 1u), IsOk());
  ASSERT_THAT(device_->begin_if(stream(), *c), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *c), IsOk());
  ASSERT_THAT(device_->end_capture(stream()), IsOk());
  EXPECT_THAT(set(*c, 1u), StatusIs(Errc::invalid_argument, _, HasSubstr("eager")));
  EXPECT_THAT(set(Condition{}, 1u), StatusIs(Errc::invalid_argument, _, HasSubstr("empty")));
  begin();
  EXPECT_THAT(set(*c, 1u), StatusIs(Errc::invalid_argument, _, HasSubstr("another recording")));
  EXPECT_THAT(device_->begin_if(stream(), *c),
              StatusIs(Errc::graph_state, _, HasSubstr("another recording")));
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(BranchTest, ASideStreamCannotBranch) {
  Stream* side = add_stream();
  ASSERT_NE(side, nullptr);
  Event fork = new_event();
  Event join = new_event();
  begin();
  ASSERT_THAT(device_->record_event(fork, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side, fork), IsOk());
  EXPECT_THAT(device_->condition(*side), StatusIs(Errc::graph_state, _, HasSubstr("forked")));
  ASSERT_THAT(device_->record_event(join, *side), IsOk());
  ASSERT_THAT(device_->wait(stream(), join), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(BranchTest, ConditionalNodesNestToTheDepthTheH200Showed) {
  begin();
  Result<Condition> c = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(set(*c, 1u), IsOk());
  std::vector<Loop> loops;
  for (int depth = 0; depth < 128; ++depth) {
    Result<Loop> loop = device_->begin_while(stream(), false);
    ASSERT_THAT(loop, IsOk()) << "depth " << depth;
    loops.push_back(*loop);
  }
  EXPECT_THAT(device_->begin_while(stream(), false),
              StatusIs(Errc::graph_state, _, HasSubstr("at most 128")));
  EXPECT_THAT(device_->begin_if(stream(), *c), StatusIs(Errc::graph_state, _, HasSubstr("128")));
  ASSERT_THAT(bump(a_), IsOk());
  for (auto loop = loops.rbegin(); loop != loops.rend(); ++loop) {
    ASSERT_THAT(device_->end_while(stream(), *loop), IsOk());
  }
  // The refused IF changed nothing: the condition begins one now.
  ASSERT_THAT(device_->begin_if(stream(), *c), IsOk());
  ASSERT_THAT(bump(b_), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *c), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(counters(), (Words{0, 1, 0, 0})) << "no loop ran its body";
}

TEST_F(BranchTest, AnInstantiateRefusalNamesTheNodeAndItsBody) {
  // Memory nodes in a conditional body (work issued around graphcap on s.native_handle(), declared
  // with record_external): the driver records them and refuses the graph at instantiate, naming the
  // MEM_ALLOC node of the body (docs/cuda-driver-facts.md I06).
  begin();
  Result<Loop> loop = device_->begin_while(stream(), false);
  ASSERT_THAT(loop, IsOk());
  ASSERT_THAT(device_->record_external(stream(), {}), IsOk());
  CUdeviceptr scratch = 0;
  ASSERT_EQ(device_->driver().cuMemAllocAsync(&scratch, 256, stream().native_handle()),
            CUDA_SUCCESS);
  ASSERT_EQ(device_->driver().cuMemFreeAsync(scratch, stream().native_handle()), CUDA_SUCCESS);
  ASSERT_THAT(device_->end_while(stream(), *loop), IsOk());
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE,
                       AllOf(HasSubstr("cuGraphInstantiateWithParams"),
                             HasSubstr("CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED"),
                             HasSubstr("node 0 (MEM_ALLOC) of body 0 of graphcap's node 0"),
                             HasSubstr("while loop"), HasSubstr("external work"))));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  // The stream is usable and records again.
  begin();
  ASSERT_THAT(bump(a_), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(a_), Words{1});
}

}  // namespace
}  // namespace graphcap::testing
