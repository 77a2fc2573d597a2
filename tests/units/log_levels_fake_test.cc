// Expected paths are quiet: graphcap logs at warn only what nobody is told otherwise (a refusal
// returned as an error, a fault a wait already reported, are info), and once per cause (a
// device fault fails every free at teardown: one line, not one per allocation). Fake only: the
// strict fake's sticky fault stands for a GPU's; the refusal's fault comes from a
// FaultInjectingDriver around it.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "fault_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

// Every line logged while it lives, with its level.
class Logged {
 public:
  Logged() {
    previous_ = set_log_sink([this](LogLevel level, std::string_view message) {
      lines_.emplace_back(level, std::string(message));
    });
  }
  ~Logged() { set_log_sink(previous_); }
  Logged(const Logged&) = delete;
  Logged& operator=(const Logged&) = delete;
  std::vector<std::string> at(LogLevel level) const {
    std::vector<std::string> lines;
    for (const auto& [at, line] : lines_) {
      if (at == level) lines.push_back(line);
    }
    return lines;
  }

 private:
  std::vector<std::pair<LogLevel, std::string>> lines_;
  LogSink previous_;
};

class LogLevelsFakeTest : public FaultFixture {
 protected:
  void SetUp() override {
    FaultFixture::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_NE(fake(), nullptr) << "graphcap_unit_tests runs on the fake driver";
  }

  // Faults the strict fake (one element past a 16-word Buffer) with several driver allocations
  // in the stream's pool; waits for it when `report`. The fault is sticky: every free fails.
  void fault_the_device(bool report) {
    expect_clean_teardown_ = false;  // nothing can be freed after the fault
    std::vector<Buffer> held;
    for (std::size_t bytes : {std::size_t{64}, std::size_t{1} << 20, std::size_t{3} << 20}) {
      Result<Buffer> buffer = device_->alloc(bytes, stream());
      ASSERT_THAT(buffer, IsOk());
      held.push_back(*buffer);
    }
    ASSERT_THAT(fill(held[0], 7, 17), IsOk());
    if (report) {
      EXPECT_THAT(device_->sync(stream()), StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS));
    }
  }
};

TEST_F(LogLevelsFakeTest, ARefusalReturnedAsAnErrorIsNotAlsoAWarning) {
  Buffer x = upload_u32(iota_u32(32));
  Logged log;
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 32), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  faults().fail_call("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_THAT(add_one(x, x, 32), StatusIs(Errc::driver, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::doomed, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                       HasSubstr("cuLaunchKernel")));
  EXPECT_THAT(log.at(LogLevel::warn), IsEmpty());
  EXPECT_THAT(log.at(LogLevel::info), Contains(HasSubstr("closing a refused recording")));
}

TEST_F(LogLevelsFakeTest, ClosingAfterAReportedFaultWarnsOfNothing) {
  fault_the_device(/*report=*/true);
  Logged log;
  device_.reset();
  fake()->clear_violations();
  EXPECT_THAT(log.at(LogLevel::warn), IsEmpty()) << "the sync said it";
  EXPECT_THAT(log.at(LogLevel::info),
              Contains(AllOf(HasSubstr("closing the pool"), HasSubstr("cuMemFree"),
                             HasSubstr("CUDA_ERROR_ILLEGAL_ADDRESS"), HasSubstr("3 allocations"))));
  std::size_t free_lines = 0;
  for (const std::string& line : log.at(LogLevel::info)) {
    if (line.find("cuMemFree ") != std::string::npos) ++free_lines;
  }
  EXPECT_EQ(free_lines, 1u) << "once per cause";
}

TEST_F(LogLevelsFakeTest, ClosingAfterAnUnreportedFaultWarnsOnceForIt) {
  fault_the_device(/*report=*/false);
  Logged log;
  device_.reset();
  fake()->clear_violations();
  EXPECT_THAT(log.at(LogLevel::warn),
              ElementsAre(AllOf(HasSubstr("closing the device"), HasSubstr("cuStreamSynchronize"),
                                HasSubstr("CUDA_ERROR_ILLEGAL_ADDRESS"))))
      << "nobody was told of the fault: the first failure it causes warns, once";
  EXPECT_THAT(log.at(LogLevel::info),
              Contains(AllOf(HasSubstr("cuMemFree"), HasSubstr("3 allocations"))));
}

}  // namespace
}  // namespace graphcap::testing
