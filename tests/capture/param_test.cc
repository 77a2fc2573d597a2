// Per-replay parameters on every driver: Device::param, Arg::param and
// Graph::set. A recorded launch that takes a Param has its node named (cuStreamGetCaptureInfo);
// Graph::set patches every such node (cuGraphExecKernelNodeSetParams) from the next replay on.
#include <cstdint>
#include <limits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "device_fixture.h"
#include "kernels/test_kernels.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class ParamTest : public DeviceFixture {
 protected:
  static constexpr std::uint32_t kN = 300;
  static constexpr std::size_t kBytes = kN * sizeof(std::uint32_t);

  Buffer zeros() { return upload_u32(std::vector<std::uint32_t>(kN, 0)); }
  Result<void> fill_with(const Buffer& dst, const Param<std::uint32_t>& value) {
    return device_->launch(stream(), fill_, dims_for(kN),
                           {Arg::out(dst), Arg::param(value), Arg::value(kN)});
  }
};

TEST_F(ParamTest, EagerLaunchesUseTheCurrentValue) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(5);
  EXPECT_EQ(value.value(), 5u);
  Buffer out = zeros();
  ASSERT_THAT(fill_with(out, value), IsOk());
  EXPECT_THAT(read_u32(out), Each(5u));
  value.set(8);
  ASSERT_THAT(fill_with(out, value), IsOk());
  EXPECT_THAT(read_u32(out), Each(8u));
}

TEST_F(ParamTest, SetChangesEveryLaterReplayAndNotTheParamsValue) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(5);
  Buffer out = zeros();
  Graph graph = capture([&] { ASSERT_THAT(fill_with(out, value), IsOk()); });
  ASSERT_TRUE(graph);
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), Each(5u));
  ASSERT_THAT(graph.set(value, 9u), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), Each(9u));
  ASSERT_THAT(graph.set(value, std::uint16_t{11}), IsOk());  // a type a uint32_t holds
  ASSERT_THAT(graph.replay(), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), Each(11u));
  EXPECT_EQ(value.value(), 5u) << "Graph::set changes the graph, not what eager launches use";
}

TEST_F(ParamTest, EveryNodeThatTookTheParamIsSetAndNoOther) {
  Param<std::uint32_t> step = device_->param<std::uint32_t>(1);
  Param<std::uint32_t> other = device_->param<std::uint32_t>(100);
  Buffer a = zeros(), b = zeros(), c = zeros(), d = zeros();
  Graph graph = capture([&] {
    ASSERT_THAT(fill_with(a, step), IsOk());
    ASSERT_THAT(fill_with(b, other), IsOk());
    ASSERT_THAT(fill_with(c, step), IsOk());
    ASSERT_THAT(add_one(c, d, kN), IsOk());  // reads c: depends on the set node
  });
  ASSERT_TRUE(graph);
  ASSERT_THAT(graph.set(step, 41u), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(a), Each(41u));
  EXPECT_THAT(read_u32(b), Each(100u));
  EXPECT_THAT(read_u32(c), Each(41u));
  EXPECT_THAT(read_u32(d), Each(42u));
}

TEST_F(ParamTest, TwoParamsOfOneNodeKeepEachOthersValues) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(3);
  Param<std::uint32_t> count = device_->param<std::uint32_t>(kN);
  Buffer out = zeros();
  Graph graph = capture([&] {
    ASSERT_THAT(device_->launch(stream(), fill_, dims_for(kN),
                                {Arg::out(out), Arg::param(value), Arg::param(count)}),
                IsOk());
  });
  ASSERT_TRUE(graph);
  ASSERT_THAT(graph.set(value, 6u), IsOk());
  ASSERT_THAT(graph.set(count, 10u), IsOk());
  ASSERT_THAT(device_->write(out, to_bytes(std::vector<std::uint32_t>(kN, 0)), stream()), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  std::vector<std::uint32_t> expected(kN, 0);
  std::fill(expected.begin(), expected.begin() + 10, 6u);
  EXPECT_THAT(read_u32(out), ElementsAreArray(expected));
}

TEST_F(ParamTest, AParamTheGraphNeverTookIsInvalidArgument) {
  Param<std::uint32_t> taken = device_->param<std::uint32_t>(1);
  Param<std::uint32_t> never = device_->param<std::uint32_t>(1);
  Buffer out = zeros();
  Graph graph = capture([&] { ASSERT_THAT(fill_with(out, taken), IsOk()); });
  ASSERT_TRUE(graph);
  EXPECT_THAT(graph.set(never, 2u),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("never")));
  // Eager launches with it don't count either: only recorded launches do.
  ASSERT_THAT(fill_with(out, never), IsOk());
  EXPECT_THAT(graph.set(never, 2u), StatusIs(Errc::invalid_argument));
  EXPECT_THAT(graph.set(Param<std::uint32_t>{}, 2u), StatusIs(Errc::invalid_argument));
}

// This was a run-time refusal (Errc::invalid_argument for -1, 2.5, NaN, 1 << 40 on a
// Param<uint32_t>); it is a compile-time one: a value whose type narrows to the param's does not
// compile, whatever the value; one that converts without narrowing compiles and works.
template <class P, class V>
concept settable = requires(Graph& graph, const P& param, V value) { graph.set(param, value); };
static_assert(settable<Param<std::uint32_t>, std::uint32_t>);
static_assert(settable<Param<std::uint32_t>, std::uint16_t>);
static_assert(!settable<Param<std::uint32_t>, int>);  // -1 would be a huge count
static_assert(!settable<Param<std::uint32_t>, std::int64_t>);
static_assert(!settable<Param<std::uint32_t>, double>);  // 2.5 would truncate
static_assert(!settable<Param<float>, double>);          // set(p, 0.1): write 0.1f
static_assert(settable<Param<float>, float>);
static_assert(settable<Param<double>, float>);
static_assert(!settable<Param<bool>, int>);
static_assert(!settable<Param<Affine>, std::uint32_t>);  // a struct takes only itself
static_assert(settable<Param<Affine>, Affine>);

TEST_F(ParamTest, AValueOfATypeThatConvertsWithoutNarrowingIsSetExactly) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(5);
  Buffer out = zeros();
  Graph graph = capture([&] { ASSERT_THAT(fill_with(out, value), IsOk()); });
  ASSERT_TRUE(graph);
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), Each(5u));
  EXPECT_THAT(graph.set(value, std::uint8_t{7}), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), Each(7u));
}

TEST_F(ParamTest, SetOnAnEmptyOrDestroyedGraphIsGraphState) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(5);
  Buffer out = zeros();
  Graph graph = capture([&] { ASSERT_THAT(fill_with(out, value), IsOk()); });
  ASSERT_THAT(graph.destroy(), IsOk());
  EXPECT_THAT(graph.set(value, 1u), StatusIs(Errc::graph_state));
  Graph empty;
  EXPECT_THAT(empty.set(value, 1u), StatusIs(Errc::graph_state));
}

TEST_F(ParamTest, ASetWhileAReplayIsInFlightChangesOnlyTheNextReplay) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(5);
  Buffer out = zeros();
  Buffer first = zeros();
  Graph graph = capture([&] { ASSERT_THAT(fill_with(out, value), IsOk()); });
  ASSERT_TRUE(graph);
  if (on_fake()) fake()->set_device_paused(true);  // both replays wait in the queue
  ASSERT_THAT(graph.replay(), IsOk());
  ASSERT_THAT(device_->launch(stream(), copy_, dims_for(kN),
                              {Arg::in(out), Arg::out(first), Arg::value(kN)}),
              IsOk());
  ASSERT_THAT(graph.set(value, 9u), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  if (on_fake()) fake()->set_device_paused(false);
  EXPECT_THAT(read_u32(first), Each(5u));
  EXPECT_THAT(read_u32(out), Each(9u));
}

TEST_F(ParamTest, AGraphUpdatedByReRecordingKeepsItsParamNodes) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(5);
  Buffer a = zeros(), b = zeros();
  Graph graph = capture([&] { ASSERT_THAT(fill_with(a, value), IsOk()); });
  ASSERT_TRUE(graph);
  ASSERT_THAT(rerecord(graph, [&] { ASSERT_THAT(fill_with(b, value), IsOk()); }), IsOk());
  EXPECT_TRUE(graph.report().updated);
  ASSERT_THAT(graph.set(value, 13u), IsOk());
  ASSERT_THAT(device_->write(a, to_bytes(std::vector<std::uint32_t>(kN, 0)), stream()), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(b), Each(13u));
  EXPECT_THAT(read_u32(a), Each(0u));
}

TEST_F(ParamTest, ParamsAddedByReRecordingAGraphWithoutThemReinstantiate) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(5);
  Buffer out = zeros();
  Graph graph = capture([&] { ASSERT_THAT(fill(out, 2, kN), IsOk()); });
  ASSERT_TRUE(graph);
  ASSERT_THAT(rerecord(graph, [&] { ASSERT_THAT(fill_with(out, value), IsOk()); }), IsOk());
  EXPECT_FALSE(graph.report().updated);
  EXPECT_THAT(graph.report().update_refusal, HasSubstr("per-replay parameters"));
  ASSERT_THAT(graph.set(value, 8u), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), Each(8u));
  // And a later re-recording with the same params is an update again.
  ASSERT_THAT(rerecord(graph, [&] { ASSERT_THAT(fill_with(out, value), IsOk()); }), IsOk());
  EXPECT_TRUE(graph.report().updated);
  ASSERT_THAT(graph.set(value, 4u), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), Each(4u));
}

TEST_F(ParamTest, AReRecordingStartsFromTheParamsValueNotTheOldGraphs) {
  Param<std::uint32_t> value = device_->param<std::uint32_t>(5);
  Buffer out = zeros();
  Graph graph = capture([&] { ASSERT_THAT(fill_with(out, value), IsOk()); });
  ASSERT_THAT(graph.set(value, 9u), IsOk());
  ASSERT_THAT(rerecord(graph, [&] { ASSERT_THAT(fill_with(out, value), IsOk()); }), IsOk());
  ASSERT_THAT(graph.replay(), IsOk());
  EXPECT_THAT(read_u32(out), Each(5u));
}

}  // namespace
}  // namespace graphcap::testing
