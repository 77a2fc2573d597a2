// Launch options on every driver: Device::launch with LaunchOptions goes through
// cuLaunchKernelEx. A programmatic launch runs correctly eagerly and replayed when the kernel
// waits for its predecessor, and a recording makes it a programmatic edge from a kernel (an
// ordinary one from anything else); a priority is carried on the node and makes the graph
// instantiate with node priorities. On the fake, a programmatic kernel that reads before it
// waits is a violation (a GPU gives stale data there).
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/try.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

using ::testing::_;

class LaunchOptionsTest : public DeviceFixture {
 protected:
  static constexpr std::uint32_t kN = 256;

  void SetUp() override {
    DeviceFixture::SetUp();
    if (HasFatalFailure()) return;
    Result<Kernel> pdl = module_.kernel("pdl_add_one");
    ASSERT_THAT(pdl, IsOk());
    pdl_add_one_ = *pdl;
    for (Buffer& buffer : buffers_) buffer = upload_u32(std::vector<std::uint32_t>(kN, 0));
  }

  // buffers_[i + 1] = buffers_[i] + 1.
  Result<void> step(std::size_t i, LaunchOptions options, std::uint32_t wait = 1) {
    return device_->launch(stream(), pdl_add_one_, dims_for(kN),
                           {Arg::in(buffers_[i]), Arg::out(buffers_[i + 1]), Arg::value(kN),
                            Arg::value(wait)},
                           options);
  }
  // buffers_[0] = 0..n-1, then a chain of 4 steps, the last 3 programmatic.
  Result<void> chain(bool programmatic, std::uint32_t wait = 1) {
    GRAPHCAP_TRY(device_->write(buffers_[0], to_bytes(iota_u32(kN)), stream()));
    GRAPHCAP_TRY(step(0, {}));
    for (std::size_t i = 1; i < 4; ++i) GRAPHCAP_TRY(step(i, {.programmatic = programmatic, .priority = std::nullopt}, wait));
    return {};
  }
  Result<Graph> record(const std::function<Result<void>()>& pass) {
    return device_->record(stream(), pass);
  }

  Kernel pdl_add_one_;
  Buffer buffers_[5];
};

TEST_F(LaunchOptionsTest, AProgrammaticChainRunsEagerlyAndReplayedLikeAPlainOne) {
  ASSERT_THAT(chain(true), IsOk());
  EXPECT_EQ(read_u32(buffers_[4]), iota_u32(kN, 4));
  Result<Graph> graph = record([&] { return chain(true); });
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().programmatic_edges, 3u);
  EXPECT_FALSE(graph->report().node_priorities);
  ASSERT_THAT(device_->fill(buffers_[4], std::uint32_t{0}, stream()), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(buffers_[4]), iota_u32(kN, 4));
  EXPECT_THAT(graph->dot(), HasSubstr("[style=dashed, label=\"programmatic\"]"));
}

TEST_F(LaunchOptionsTest, AProgrammaticLaunchAfterACopyIsAnOrdinaryEdge) {
  Result<Graph> graph = record([&]() -> Result<void> {
    GRAPHCAP_TRY(device_->copy(buffers_[1], buffers_[0], stream()));
    return step(1, {.programmatic = true, .priority = std::nullopt});
  });
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(graph->report().programmatic_edges, 0u);
  EXPECT_THAT(graph->dot(), ::testing::Not(HasSubstr("programmatic")));
}

TEST_F(LaunchOptionsTest, APriorityMakesTheGraphUseNodePriorities) {
  Result<Graph> graph = record([&] { return step(0, {.priority = -5}); });
  ASSERT_THAT(graph, IsOk());
  EXPECT_TRUE(graph->report().node_priorities);
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(buffers_[1]), std::vector<std::uint32_t>(kN, 1));
  // Eagerly, any value: the driver clamps it (measured).
  ASSERT_THAT(step(0, {.priority = 10}), IsOk());
  ASSERT_THAT(step(0, {.priority = -15}), IsOk());
  EXPECT_EQ(read_u32(buffers_[1]), std::vector<std::uint32_t>(kN, 1));
}

TEST_F(LaunchOptionsTest, ReRecordingWithAnotherPriorityOrEdgeKindReinstantiates) {
  Result<Graph> graph = record([&] { return step(0, {.priority = -5}); });
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(step(0, {.priority = 0}), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(step(0, {.priority = 0}), IsOk());
  ASSERT_THAT(device_->end_capture(stream(), *graph), IsOk());
  EXPECT_FALSE(graph->report().updated);
  EXPECT_EQ(graph->report().update_result, CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED);
  ASSERT_THAT(graph->replay(), IsOk());

  Result<Graph> plain = record([&] { return chain(false); });
  ASSERT_THAT(plain, IsOk());
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(chain(true), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(chain(true), IsOk());
  ASSERT_THAT(device_->end_capture(stream(), *plain), IsOk());
  EXPECT_FALSE(plain->report().updated);
  EXPECT_EQ(plain->report().update_result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  ASSERT_THAT(plain->replay(), IsOk());
  EXPECT_EQ(read_u32(buffers_[4]), iota_u32(kN, 4));
}

TEST_F(LaunchOptionsTest, OnTheFakeAKernelThatReadsBeforeItWaitsIsAViolation) {
  if (!on_fake()) {
    GTEST_SKIP() << "a GPU reports nothing: the dependent reads stale data (measured on the H200, "
                    "docs/cuda-driver-facts.md P03.a); the check is the fake's";
  }
  ASSERT_THAT(chain(true, /*wait=*/0), IsOk());
  EXPECT_EQ(read_u32(buffers_[4]), iota_u32(kN, 4));
  EXPECT_THAT(fake()->violations(),
              ::testing::Contains(HasSubstr("before KernelContext::wait_for_predecessor()")));
  fake()->clear_violations();
  Result<Graph> graph = record([&] { return chain(true, 0); });
  ASSERT_THAT(graph, IsOk());
  fake()->clear_violations();  // the warm-up's
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_EQ(read_u32(buffers_[4]), iota_u32(kN, 4));
  EXPECT_THAT(fake()->violations(), ::testing::Contains(HasSubstr("cuGraphLaunch")));
  fake()->clear_violations();
}

}  // namespace
}  // namespace graphcap::testing
