// GraphMemory's driver bytes on every driver: for an executable the model puts at one of the
// driver's 2 MiB chunks or more, end_capture asks cuMemGetInfo around the instantiate (measured
// where the drop can be this executable's), unless DeviceOptions::measure_driver_memory is off:
// then the model's figure stands and no query is made (the query costs about 0.2 ms of a
// 1,000-node end_capture on the H200; docs/performance.md).
#include <cstddef>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/driver/executable_memory.h>
#include <graphcap/fake/fake_driver.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

// Enough kernel nodes for the model to reach one 2 MiB chunk.
constexpr int kLaunches = 1000;

class DriverMemoryReportTest : public DeviceFixture {
 protected:
  Result<Graph> capture_launches(int n) {
    if (Result<void> prepared = device_->prepare_capture(stream()); !prepared) {
      return prepared.error();
    }
    if (Result<void> begun = device_->begin_capture(stream()); !begun) return begun.error();
    for (int i = 0; i < n; ++i) {
      if (Result<void> launched = device_->launch(stream(), empty_, dims_for(1), {}); !launched) {
        (void)device_->abort_capture(stream());
        return launched.error();
      }
    }
    return device_->end_capture(stream());
  }
  std::size_t memory_queries() { return on_fake() ? fake()->call_count("cuMemGetInfo") : 0; }
};

TEST_F(DriverMemoryReportTest, ALargeExecutablesDriverBytesAreAskedAroundTheInstantiate) {
  ASSERT_GE(executable_driver_bytes({kLaunches, 0, 0}), std::size_t{2} << 20);
  const std::size_t queries_before = memory_queries();
  Result<Graph> graph = capture_launches(kLaunches);
  ASSERT_THAT(graph, IsOk());
  const GraphMemory& memory = graph->report().memory;
  EXPECT_EQ(memory.driver_model_bytes, executable_driver_bytes({kLaunches, 0, 0}));
  EXPECT_TRUE(memory.driver_taken_known) << "cuMemGetInfo was asked before and after";
  if (on_fake()) {
    EXPECT_EQ(memory_queries() - queries_before, 2u);
    // The fake takes exactly the model's bytes, in whole chunks: the drop is this executable's.
    EXPECT_EQ(memory.driver_source, DriverBytesSource::measured);
    EXPECT_EQ(memory.driver_bytes, memory.driver_taken_bytes);
  } else {
    // The real driver may fit it into chunks it kept: measured only where the drop is within
    // reach of the model, else the model's figure.
    EXPECT_EQ(memory.driver_bytes, memory.driver_source == DriverBytesSource::measured
                                       ? memory.driver_taken_bytes
                                       : memory.driver_model_bytes);
  }
  EXPECT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(device_->sync(stream()), IsOk());
}

class DriverMemoryNotMeasuredTest : public DriverMemoryReportTest {
 protected:
  DeviceOptions device_options() const override {
    DeviceOptions options;
    options.measure_driver_memory = false;
    return options;
  }
};

TEST_F(DriverMemoryNotMeasuredTest, TheModelsFigureStandsAndNoQueryIsMade) {
  const std::size_t queries_before = memory_queries();
  Result<Graph> graph = capture_launches(kLaunches);
  ASSERT_THAT(graph, IsOk());
  const GraphMemory& memory = graph->report().memory;
  EXPECT_EQ(memory.driver_source, DriverBytesSource::model);
  EXPECT_EQ(memory.driver_bytes, executable_driver_bytes({kLaunches, 0, 0}));
  EXPECT_EQ(memory.driver_model_bytes, memory.driver_bytes);
  EXPECT_FALSE(memory.driver_taken_known);
  EXPECT_EQ(memory_queries(), queries_before) << "no cuMemGetInfo";
  EXPECT_EQ(graph->report().node_count, static_cast<std::size_t>(kLaunches));
  EXPECT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(device_->sync(stream()), IsOk());
}

}  // namespace
}  // namespace graphcap::testing
