// Launch checks where the driver can't report a kernel's signature: when
// cuFuncGetParamInfo fails, Module::kernel still returns the kernel, says so once per device in
// the log, and its launches go unchecked, as before the check existed. And the layout is read
// once per lookup: launches make no query.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "fault_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class LaunchCheckFaultsTest : public FaultFixture {
 protected:
  void SetUp() override {
    FaultFixture::SetUp();
    previous_ = set_log_sink([this](LogLevel level, std::string_view message) {
      if (level <= LogLevel::warn) warnings_.emplace_back(message);
    });
  }
  void TearDown() override {
    set_log_sink(previous_);
    DeviceFixture::TearDown();
  }

  Kernel lookup(const char* name) {
    Result<Kernel> found = module_.kernel(name);
    EXPECT_THAT(found, IsOk());
    return found ? *found : Kernel{};
  }

  std::vector<std::string> warnings_;
  LogSink previous_;
};

TEST_F(LaunchCheckFaultsTest, WhenTheQueryFailsTheKernelLaunchesUncheckedAndThatIsSaidOnce) {
  faults().fail_always("cuFuncGetParamInfo", CUDA_ERROR_NOT_SUPPORTED);
  Kernel add_one = lookup("add_one");
  Kernel fill = lookup("fill");
  Kernel again = lookup("add_one");
  ASSERT_TRUE(add_one && fill && again);
  EXPECT_FALSE(add_one.has_param_layout());
  EXPECT_FALSE(fill.has_param_layout());
  EXPECT_EQ(add_one.param_count(), 0u);
  EXPECT_EQ(add_one.param_size(0), 0u);
  ASSERT_THAT(warnings_, SizeIs(1)) << "once per device, however many kernels";
  EXPECT_THAT(warnings_[0], AllOf(HasSubstr("add_one"), HasSubstr("cuFuncGetParamInfo"),
                                  HasSubstr("CUDA_ERROR_NOT_SUPPORTED"), HasSubstr("unchecked")));

  Buffer src = upload_u32({1, 2, 3});
  Buffer dst = upload_u32({0, 0, 0});
  // Unchecked: an extra argument reaches the driver (the fake reads the declared three, as CUDA
  // would), where a checked kernel refuses it (LaunchCheckTest.TooManyArguments...).
  ASSERT_THAT(device_->launch(stream(), add_one, dims_for(3),
                              {Arg::in(src), Arg::out(dst), Arg::value(3u), Arg::value(7u)}),
              IsOk());
  EXPECT_THAT(read_u32(dst), ElementsAreArray({2u, 3u, 4u}));
  ASSERT_THAT(device_->launch(stream(), fill, dims_for(3),
                              {Arg::out(dst), Arg::value(8u), Arg::value(3u)}),
              IsOk());
  EXPECT_THAT(read_u32(dst), ElementsAreArray({8u, 8u, 8u}));
  EXPECT_THAT(warnings_, SizeIs(1)) << "launches say nothing more";

  // The driver answers again: the next lookup is checked.
  faults().clear_faults();
  Kernel checked = lookup("add_one");
  EXPECT_TRUE(checked.has_param_layout());
  EXPECT_THAT(device_->launch(stream(), checked, dims_for(3),
                              {Arg::in(src), Arg::out(dst), Arg::value(3u), Arg::value(7u)}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("argument 3")));
}

TEST_F(LaunchCheckFaultsTest, AQueryFailingPartWayLeavesTheKernelUnchecked) {
  faults().fail_call("cuFuncGetParamInfo", CUDA_ERROR_UNKNOWN, 2);  // parameter 1's query
  Kernel add_one = lookup("add_one");
  EXPECT_FALSE(add_one.has_param_layout()) << "half a layout is no layout";
  ASSERT_THAT(warnings_, SizeIs(1));
  EXPECT_THAT(warnings_[0], AllOf(HasSubstr("parameter 1"), HasSubstr("CUDA_ERROR_UNKNOWN")));
  Buffer src = upload_u32({5});
  Buffer dst = upload_u32({0});
  ASSERT_THAT(device_->launch(stream(), add_one, dims_for(1),
                              {Arg::in(src), Arg::out(dst), Arg::value(1u)}),
              IsOk());
  EXPECT_THAT(read_u32(dst), ElementsAreArray({6u}));
}

TEST_F(LaunchCheckFaultsTest, TheLayoutIsReadOnceAtLookupAndNeverAtLaunch) {
  faults().clear_calls();
  Kernel axpy = lookup("axpy");
  // Five answers and the INVALID_VALUE at the count.
  EXPECT_EQ(faults().call_count("cuFuncGetParamInfo"), 6u);
  EXPECT_EQ(axpy.param_count(), 5u);
  EXPECT_THAT(warnings_, SizeIs(0)) << "INVALID_VALUE at the count is the answer, not a failure";
  Buffer x = upload_u32({1, 2});
  Buffer y = upload_u32({10, 20});
  Buffer out = upload_u32({0, 0});
  for (int i = 0; i < 3; ++i) {
    ASSERT_THAT(device_->launch(stream(), axpy, dims_for(2),
                                {Arg::in(x), Arg::in(y), Arg::out(out), Arg::value(2u),
                                 Arg::value(2u)}),
                IsOk());
  }
  EXPECT_THAT(read_u32(out), ElementsAreArray({12u, 24u}));
  EXPECT_EQ(faults().call_count("cuFuncGetParamInfo"), 6u);
}

}  // namespace
}  // namespace graphcap::testing
