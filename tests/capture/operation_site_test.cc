// Every operation that enters a recording keeps where it was called (its defaulted
// std::source_location), on every driver: Graph::dot() labels, the refusals of a recording
// (doomed, unjoined, an open loop, misuse) and a refused exec update name it as "file:line".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class OperationSiteTest : public DeviceFixture {
 protected:
  // "file:line" as graphcap names a call made at `line` of this file.
  static std::string site(std::uint_least32_t line) {
    return std::string(std::source_location::current().file_name()) + ":" + std::to_string(line);
  }
  void begin() {
    ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
    ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  }
};

TEST_F(OperationSiteTest, GraphDotNamesTheLineOfEveryRecordedOperation) {
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(iota_u32(64));
  std::uint_least32_t launch = 0, copy = 0, fill = 0, write = 0;
  Result<Graph> graph = device_->record(stream(), [&]() -> Result<void> {
    launch = std::source_location::current().line() + 1;
    GRAPHCAP_TRY(device_->launch(stream(), add_one_, dims_for(64),
                                 {Arg::in(x), Arg::out(y), Arg::value(64u)}));
    copy = std::source_location::current().line() + 1;
    GRAPHCAP_TRY(device_->copy(x, y, stream()));
    fill = std::source_location::current().line() + 1;
    GRAPHCAP_TRY(device_->fill(y, std::uint8_t{1}, stream()));
    write = std::source_location::current().line() + 1;
    return device_->write(x, to_bytes({1, 2}), stream());
  });
  ASSERT_THAT(graph, IsOk());
  const std::string dot = graph->dot();
  EXPECT_THAT(dot, HasSubstr("arg 2: value 4 B = 64 (0x40)\\nat " + site(launch) + "\"]"));
  EXPECT_THAT(dot, HasSubstr("to +0 of 256 B\\nat " + site(copy) + "\"]"));
  EXPECT_THAT(dot, HasSubstr("at +0 of 256 B\\nat " + site(fill) + "\"]"));
  EXPECT_THAT(dot, HasSubstr("write of 8 bytes from the host\\nat " + site(write) + "\"]"));
}

TEST_F(OperationSiteTest, ADoomedRecordingIsRefusedNamingTheLineOfTheOperationThatFailed) {
  Buffer in = upload_u32(iota_u32(64));
  Buffer out = upload_u32(iota_u32(64));
  // `in` carries a failure (external work that failed writes it).
  ASSERT_THAT(device_->record_external(stream(), {Arg::out(in)},
                                       Error(Errc::driver, "cublas failed", CUDA_ERROR_UNKNOWN)),
              StatusIs(Errc::driver));
  begin();
  const std::uint_least32_t line = std::source_location::current().line() + 1;
  EXPECT_THAT(device_->launch(stream(), add_one_, dims_for(64),
                              {Arg::in(in), Arg::out(out), Arg::value(64u)}),
              StatusIs(Errc::failed_buffer, CUDA_ERROR_UNKNOWN,
                       HasSubstr("launch of add_one at " + site(line) + ": argument 0 carries")));
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::doomed, CUDA_ERROR_UNKNOWN,
                       HasSubstr("recording refused: launch of add_one at " + site(line) + ":")));
}

TEST_F(OperationSiteTest, UnjoinedSideWorkIsRefusedNamingItsLine) {
  Stream* side = add_stream();
  ASSERT_NE(side, nullptr);
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(iota_u32(64), *side);
  Event uploaded = new_event();  // the recording replays after y's upload
  ASSERT_THAT(device_->record_event(uploaded, *side), IsOk());
  ASSERT_THAT(device_->wait(stream(), uploaded), IsOk());
  Event fork = new_event();
  begin();
  ASSERT_THAT(fill(x, 1, 64), IsOk());
  ASSERT_THAT(device_->record_event(fork, stream()), IsOk());
  ASSERT_THAT(device_->wait(*side, fork), IsOk());
  const std::uint_least32_t line = std::source_location::current().line() + 1;
  ASSERT_THAT(device_->fill(y, std::uint8_t{2}, *side), IsOk());
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::graph_state, CUDA_SUCCESS,
                       HasSubstr("its last unjoined operation is memset 256 B to 0x02 at " +
                                 site(line) + " (node 1)")));
}

TEST_F(OperationSiteTest, AnOpenLoopAndMisuseAreRefusedNamingTheirLines) {
  begin();
  const std::uint_least32_t line = std::source_location::current().line() + 1;
  Result<Loop> loop = device_->begin_while(stream(), false);
  ASSERT_THAT(loop, IsOk());
  EXPECT_THAT(
      device_->end_capture(stream()),
      StatusIs(Errc::graph_state, CUDA_SUCCESS,
               HasSubstr("the innermost the while loop at node 0 (begun at " + site(line) + ")")));
  // Misuse is refused with the caller's line too.
  Loop empty;
  const std::uint_least32_t misuse = std::source_location::current().line() + 1;
  EXPECT_THAT(device_->end_while(stream(), empty),
              StatusIs(Errc::graph_state, CUDA_SUCCESS,
                       AllOf(HasSubstr("end_while: an empty Loop"),
                             HasSubstr("(at " + site(misuse) + ")"))));
  ASSERT_THAT(device_->end_while(stream(), *loop), IsOk());
  EXPECT_THAT(device_->end_capture(stream()), IsOk());
}

TEST_F(OperationSiteTest, ARefusedExecUpdateNamesGraphcapsNodeAndItsLine) {
  Buffer out = upload_u32(std::vector<std::uint32_t>(64, 0));
  begin();
  ASSERT_THAT(fill(out, 5, 64), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  const std::vector<std::byte> threes = to_bytes(std::vector<std::uint32_t>(64, 3));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->write(out, threes, stream()), IsOk());  // the warm-up primes the staging
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  const std::uint_least32_t line = std::source_location::current().line() + 1;
  ASSERT_THAT(device_->write(out, threes, stream()), IsOk());
  ASSERT_THAT(device_->end_capture(stream(), *graph), IsOk());
  const GraphReport& report = graph->report();
  EXPECT_FALSE(report.updated);
  EXPECT_EQ(report.update_result, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
  EXPECT_THAT(report.update_refusal,
              HasSubstr("at node 0 (MEMCPY); graphcap's node 0: write of 256 bytes from the host "
                        "at " +
                        site(line) + "; re-instantiated"));
}

}  // namespace
}  // namespace graphcap::testing
