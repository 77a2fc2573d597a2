// Graph::replay_checked on every driver: the recording's operations issued again one by one, each
// followed by a wait, so the first that fails is named (its node, what it is, where it was
// called, the driver's code); the values a replay would use now, params set on the graph
// included; graphs it can't run as a replay would are refused before anything runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <source_location>
#include <string>
#include <vector>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class ReplayCheckedTest : public DeviceFixture {
 protected:
  // "file:line" as graphcap names a call made at `line` of this file.
  static std::string site(std::uint_least32_t line) {
    return std::string(std::source_location::current().file_name()) + ":" + std::to_string(line);
  }

  // 100 operations (kernels, copies and fills over 64-word buffers), of which operation 37, a
  // `fill` kernel, writes `n` words into a 64-word buffer. On the fake n = 128 runs past the
  // Buffer; on a GPU the write must leave the pool's memory to fault, so it runs 4 GiB on.
  // Recorded without a warm-up (which would fault eagerly). Returns the graph and, in *line, the
  // line of the faulting launch.
  Result<Graph> hundred_with_one_out_of_bounds(std::uint_least32_t* line) {
    a_ = upload_u32(iota_u32(64));
    b_ = upload_u32(iota_u32(64));
    bad_ = upload_u32(iota_u32(64));
    const std::uint32_t n = on_fake() ? 128u : (1u << 30);
    GRAPHCAP_TRY(device_->prepare_capture(stream()));
    GRAPHCAP_TRY(device_->begin_capture(stream()));
    for (int i = 0; i < 100; ++i) {
      Result<void> recorded;
      if (i == 37) {
        *line = std::source_location::current().line() + 1;
        recorded = device_->launch(stream(), fill_, dims_for(64),
                                   {Arg::out(bad_), Arg::value(7u), Arg::value(n)});
      } else if (i % 3 == 0) {
        recorded = add_one(a_, b_, 64);
      } else if (i % 3 == 1) {
        recorded = device_->copy(a_, b_, stream());
      } else {
        recorded = device_->fill(a_, std::uint32_t{1}, stream());
      }
      if (!recorded) {
        (void)device_->abort_capture(stream());
        return recorded.error();
      }
    }
    return device_->end_capture(stream());
  }

  Buffer a_, b_, bad_;
};

// The graph's operations run eagerly in recording order with the values recorded: the same
// bytes as a replay, and nothing the graph holds changes (it replays as before).
TEST_F(ReplayCheckedTest, RunsTheGraphsOperationsInOrderWithTheBytesAReplayGives) {
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(std::vector<std::uint32_t>(64, 0));
  Buffer z = upload_u32(std::vector<std::uint32_t>(64, 0));
  Result<Graph> graph = device_->record(stream(), [&]() -> Result<void> {
    GRAPHCAP_TRY(add_one(x, y, 64));                                      // y = x + 1
    GRAPHCAP_TRY(device_->copy(z, 0, y, 0, 128, stream()));               // z[0..32) = y[0..32)
    GRAPHCAP_TRY(device_->fill(z, 128, 128, std::uint8_t{0}, stream()));  // z[32..64) = 0
    GRAPHCAP_TRY(device_->write(y, 0, to_bytes({5, 6}), stream()));       // y[0..2) = 5, 6
    return add_one(z, x, 64);                                             // x = z + 1
  });
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(device_->write(x, to_bytes(iota_u32(64)), stream()), IsOk());
  ASSERT_THAT(graph->replay_checked(), IsOk());
  std::vector<std::uint32_t> expect_x(64, 1);
  for (std::uint32_t i = 0; i < 32; ++i) expect_x[i] = i + 2;
  std::vector<std::uint32_t> expect_y = iota_u32(64, 1);
  expect_y[0] = 5;
  expect_y[1] = 6;
  EXPECT_THAT(read_u32(x), ElementsAreArray(expect_x));
  EXPECT_THAT(read_u32(y), ElementsAreArray(expect_y));
  // A replay from the same inputs computes the same.
  ASSERT_THAT(device_->write(x, to_bytes(iota_u32(64)), stream()), IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray(expect_x));
  EXPECT_THAT(read_u32(y), ElementsAreArray(expect_y));
}

// A param set on the graph after recording is what the checked replay launches with.
TEST_F(ReplayCheckedTest, LaunchesWithTheValueAParamWasSetToOnTheGraph) {
  Buffer out = upload_u32(std::vector<std::uint32_t>(64, 0));
  Param<std::uint32_t> value = device_->param<std::uint32_t>(3);
  Result<Graph> graph = device_->record(stream(), [&] {
    return device_->launch(stream(), fill_, dims_for(64),
                           {Arg::out(out), Arg::param(value), Arg::value(std::uint32_t{64})});
  });
  ASSERT_THAT(graph, IsOk());
  EXPECT_THAT(read_u32(out), Each(3u));  // the warm-up's
  ASSERT_THAT(graph->set(value, 41u), IsOk());
  ASSERT_THAT(device_->fill(out, std::uint32_t{0}, stream()), IsOk());
  ASSERT_THAT(graph->replay_checked(), IsOk());
  EXPECT_THAT(read_u32(out), Each(41u));
  EXPECT_EQ(value.value(), 3u);  // the eager value is the param's own, untouched
}

// What replay_checked can't run as a replay would is refused before anything runs.
TEST_F(ReplayCheckedTest, RefusesConditionalNodesAndExternalWorkBeforeRunningAnything) {
  Result<Kernel> set_condition = module_.kernel("set_condition");
  ASSERT_THAT(set_condition, IsOk());
  Buffer out = upload_u32(std::vector<std::uint32_t>(64, 0));
  // (Conditions exist only in recordings: recorded without a warm-up.)
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(fill(out, 1, 64), IsOk());
  Result<Condition> c = device_->condition(stream());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(device_->launch(stream(), *set_condition, LaunchDims{{1, 1, 1}, {1, 1, 1}, 0},
                              {Arg::condition(*c), Arg::value(1u)}),
              IsOk());
  ASSERT_THAT(device_->begin_if(stream(), *c), IsOk());
  ASSERT_THAT(fill(out, 2, 64), IsOk());
  ASSERT_THAT(device_->end_if(stream(), *c), IsOk());
  Result<Graph> branch = device_->end_capture(stream());
  ASSERT_THAT(branch, IsOk());
  ASSERT_THAT(device_->fill(out, std::uint32_t{0}, stream()), IsOk());
  EXPECT_THAT(branch->replay_checked(),
              StatusIs(Errc::graph_state, CUDA_SUCCESS,
                       AllOf(HasSubstr("replay_checked: node 2 (if (condition"),
                             HasSubstr("is a conditional node"), HasSubstr("nothing was run"))));
  EXPECT_THAT(read_u32(out), Each(0u));  // not even the fill before it ran

  Result<Graph> external = device_->record(stream(), [&]() -> Result<void> {
    GRAPHCAP_TRY(fill(out, 1, 64));
    return device_->record_external(stream(), {Arg::out(out)});
  });
  ASSERT_THAT(external, IsOk());
  EXPECT_THAT(external->replay_checked(),
              StatusIs(Errc::graph_state, CUDA_SUCCESS,
                       AllOf(HasSubstr("node 1 (external work (record_external) at "),
                             HasSubstr("Device::record_external"))));
  EXPECT_THAT(Graph{}.replay_checked(), StatusIs(Errc::graph_state));
}

// On the fake a fault is named directly: the node, the kernel, the test's line, its buffers, the
// driver's code and the strict fake's own account of the violation.
TEST_F(ReplayCheckedTest, NamesTheOneOfAHundredOperationsThatWritesOutOfBoundsOnTheFake) {
  if (!on_fake()) GTEST_SKIP() << "a GPU fault is sticky: see the ...InItsOwnProcess test";
  std::uint_least32_t line = 0;
  Result<Graph> graph = hundred_with_one_out_of_bounds(&line);
  ASSERT_THAT(graph, IsOk()) << (graph ? "" : graph.error().message());
  const Result<void> checked = graph->replay_checked();
  EXPECT_THAT(checked,
              StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS,
                       AllOf(HasSubstr("replay_checked: node 37 of 100 failed: kernel fill at " +
                                       site(line) +
                                       " (grid (1, 1, 1) block (256, 1, 1); "
                                       "arg 0: out 256 B; arg 1: value 4 B = 7 "
                                       "(0x7); arg 2: value 4 B = 128 (0x80))"),
                             HasSubstr("CUDA_ERROR_ILLEGAL_ADDRESS"),
                             HasSubstr("the driver's account of the fault: "),
                             HasSubstr("kernel 'fill'"), HasSubstr("Buffer"))));
  EXPECT_THAT(checked,
              StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS, Not(HasSubstr("node 36 "))));
  // The fault is sticky, as a GPU's: this driver is done.
  fake()->clear_violations();
  expect_clean_teardown_ = false;
}

// The same on every driver, in a process of its own (a GPU's fault ends its process's context):
// the child records the graph, checks it, prints what replay_checked said, and exits 0 when it
// named exactly operation 37 at its line.
TEST_F(ReplayCheckedTest, NamesTheOneOfAHundredOperationsThatWritesOutOfBoundsInItsOwnProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::uint_least32_t line = 0;
        Result<Graph> graph = hundred_with_one_out_of_bounds(&line);
        if (!graph) {
          std::cerr << "recording failed: " << graph.error().message() << std::endl;
          std::_Exit(2);
        }
        const Result<void> checked = graph->replay_checked();
        const std::string named =
            "replay_checked: node 37 of 100 failed: kernel fill at " + site(line) + " (";
        if (checked) {
          std::cerr << "replay_checked succeeded" << std::endl;
          std::_Exit(3);
        }
        std::cerr << checked.error().message() << std::endl;
        const bool exact = checked.error().code() == Errc::driver &&
                           checked.error().driver_code() != CUDA_SUCCESS &&
                           checked.error().message().find(named) != std::string::npos;
        if (exact) std::cerr << "named operation 37 at its line" << std::endl;
        std::_Exit(exact ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "named operation 37 at its line");
}

// A copy that fails (here the driver refuses it, injected on the fake) is named as a copy, with
// its ranges and the line that recorded it.
TEST_F(ReplayCheckedTest, NamesACopyThatFails) {
  if (!on_fake()) GTEST_SKIP() << "the failure is injected into the fake";
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(iota_u32(64));
  y.set_label("kv");
  std::uint_least32_t line = 0;
  Result<Graph> graph = device_->record(stream(), [&]() -> Result<void> {
    GRAPHCAP_TRY(add_one(x, x, 64));
    line = std::source_location::current().line() + 1;
    GRAPHCAP_TRY(device_->copy(y, 0, x, 64, 128, stream()));
    return add_one(y, x, 64);
  });
  ASSERT_THAT(graph, IsOk());
  fake()->fail_call("cuMemcpyDtoDAsync", CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(graph->replay_checked(),
              StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS,
                       HasSubstr("replay_checked: node 1 of 3 failed: memcpy 128 B device to "
                                 "device at " +
                                 site(line) +
                                 " (from +64 of 256 B; to +0 of 256 B): cuMemcpyDtoDAsync "
                                 "failed: CUDA_ERROR_ILLEGAL_ADDRESS")));
  // What the graph writes carries the failure, as after a failed replay.
  EXPECT_THAT(device_->read(x, stream()), StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS));
}

}  // namespace
}  // namespace graphcap::testing
