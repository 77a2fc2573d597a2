// Graph::dot() labels: a kernel node names its kernel, each buffer with its access,
// size and label (Buffer::set_label), each value with its value, each param with the value it
// had when recorded, and the line that recorded it. The same on every driver: graphcap renders its own record of the recording.
#include <cstdint>
#include <source_location>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class GraphDotLabelsTest : public DeviceFixture {};

TEST_F(GraphDotLabelsTest, KernelNodesNameBufferLabelsValuesAndParams) {
  Buffer kv = upload_u32(iota_u32(64));
  Buffer bias = upload_u32(iota_u32(64));
  Buffer out = upload_u32(iota_u32(64));
  kv.set_label("kv_cache");
  EXPECT_EQ(kv.label(), "kv_cache");
  Buffer copy = kv;  // a shared handle: the copy has the label
  EXPECT_EQ(copy.label(), "kv_cache");
  EXPECT_EQ(out.label(), "");
  Param<std::uint32_t> scale = device_->param<std::uint32_t>(3);
  std::uint_least32_t line = 0;
  Result<Graph> graph = device_->record(stream(), [&] {
    line = std::source_location::current().line() + 1;
    return device_->launch(stream(), axpy_, dims_for(64),
                           {Arg::in(kv), Arg::in(bias), Arg::out(out), Arg::param(scale),
                            Arg::value(std::uint32_t{64})});
  });
  ASSERT_THAT(graph, IsOk());
  kv.set_label("renamed");  // the recording keeps the label it was recorded with
  const std::string dot = graph->dot();
  EXPECT_THAT(dot, HasSubstr("kernel axpy\\ngrid (1, 1, 1) block (256, 1, 1)\\n"
                             "arg 0: in 256 B \\\"kv_cache\\\"\\n"
                             "arg 1: in 256 B\\n"
                             "arg 2: out 256 B\\n"
                             "arg 3: param 4 B = 3 (0x3) when recorded\\n"
                             "arg 4: value 4 B = 64 (0x40)\\n"
                             "at " + std::string(std::source_location::current().file_name()) +
                             ":" + std::to_string(line) + "\""));
  kv.set_label("");
  EXPECT_EQ(kv.label(), "");
  EXPECT_EQ(Buffer{}.label(), "");
}

}  // namespace
}  // namespace graphcap::testing
