// Launches checked against the kernel's own signature, on every driver: Module::kernel
// reads the parameter layout once (cuFuncGetParamInfo), and Device::launch refuses a launch whose
// arguments don't fit it (too few, too many, a value of the wrong size, a buffer where a scalar is
// expected, a struct of the wrong size) with Errc::invalid_argument naming the kernel and the
// parameter, before the driver sees it: nothing is marked, no recording is doomed, and the next
// right launch runs as if nothing happened.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "kernels/test_kernels.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

// A struct of the wrong size for affine's first parameter (16 bytes, not 24).
struct ShortAffine {
  std::uint32_t scale;
  std::uint32_t n;
  std::uint64_t offset;
};
static_assert(sizeof(ShortAffine) == 16);

class LaunchCheckTest : public DeviceFixture {
 protected:
  void SetUp() override {
    DeviceFixture::SetUp();
    for (auto [kernel, name] : {std::pair{&mixed_, "mixed"}, std::pair{&affine_, "affine"}}) {
      Result<Kernel> found = module_.kernel(name);
      ASSERT_THAT(found, IsOk());
      *kernel = *found;
    }
  }

  // A refusal by the signature: the exact code, no driver code, the kernel, the parameter and
  // both sizes named.
  static auto Refused(const std::string& kernel, const std::string& parameter,
                      const std::string& expected, const std::string& given) {
    return StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                    AllOf(HasSubstr("launch of " + kernel), HasSubstr(parameter),
                          HasSubstr(expected), HasSubstr(given)));
  }

  // Every buffer is unmarked and still holds `values`.
  void expect_untouched(const Buffer& buffer, const std::vector<std::uint32_t>& values) {
    EXPECT_FALSE(buffer.failure().has_value()) << "a refused launch marks nothing";
    EXPECT_THAT(read_u32(buffer), ElementsAreArray(values));
  }

  Kernel mixed_, affine_;
};

TEST_F(LaunchCheckTest, KernelsReportTheirOwnSignature) {
  ASSERT_TRUE(add_one_.has_param_layout());
  EXPECT_EQ(add_one_.param_count(), 3u);
  EXPECT_EQ(add_one_.param_size(0), 8u);
  EXPECT_EQ(add_one_.param_size(1), 8u);
  EXPECT_EQ(add_one_.param_size(2), 4u);
  EXPECT_EQ(add_one_.param_offset(2), 16u);
  EXPECT_EQ(add_one_.param_size(3), 0u) << "past the count";

  ASSERT_TRUE(mixed_.has_param_layout());
  ASSERT_EQ(mixed_.param_count(), 5u);
  const std::size_t sizes[] = {1, 8, 2, 8, 8};
  const std::size_t offsets[] = {0, 8, 16, 24, 32};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(mixed_.param_size(i), sizes[i]) << "parameter " << i;
    EXPECT_EQ(mixed_.param_offset(i), offsets[i]) << "parameter " << i;
  }

  EXPECT_EQ(affine_.param_count(), 2u);
  EXPECT_EQ(affine_.param_size(0), sizeof(Affine));
  EXPECT_EQ(affine_.param_offset(1), 24u);

  EXPECT_TRUE(empty_.has_param_layout());
  EXPECT_EQ(empty_.param_count(), 0u);

  const Kernel none;
  EXPECT_FALSE(none.has_param_layout());
  EXPECT_EQ(none.param_count(), 0u);
  EXPECT_EQ(none.param_size(0), 0u);
}

TEST_F(LaunchCheckTest, TooFewArgumentsAreRefusedNamingTheMissingParameter) {
  Buffer src = upload_u32({1, 2, 3});
  Buffer dst = upload_u32({9, 9, 9});
  EXPECT_THAT(device_->launch(stream(), add_one_, dims_for(3), {Arg::in(src), Arg::out(dst)}),
              Refused("add_one", "parameter 2", "4 bytes", "given 0"));
  EXPECT_THAT(device_->launch(stream(), add_one_, dims_for(3), {}),
              Refused("add_one", "parameter 0", "8 bytes", "given 0"));
  expect_untouched(dst, {9, 9, 9});
  ASSERT_THAT(add_one(src, dst, 3), IsOk());
  EXPECT_THAT(read_u32(dst), ElementsAreArray({2u, 3u, 4u}));
}

TEST_F(LaunchCheckTest, TooManyArgumentsAreRefusedNamingTheExtraOne) {
  Buffer src = upload_u32({1, 2, 3});
  Buffer dst = upload_u32({9, 9, 9});
  EXPECT_THAT(device_->launch(stream(), add_one_, dims_for(3),
                              {Arg::in(src), Arg::out(dst), Arg::value(3u), Arg::value(7u)}),
              Refused("add_one", "argument 3", "expected 0", "a value of 4 bytes"));
  EXPECT_THAT(device_->launch(stream(), empty_, dims_for(1), {Arg::out(dst)}),
              Refused("empty", "argument 0", "expected 0", "a buffer"));
  expect_untouched(dst, {9, 9, 9});
  ASSERT_THAT(add_one(src, dst, 3), IsOk());
  EXPECT_THAT(read_u32(dst), ElementsAreArray({2u, 3u, 4u}));
  EXPECT_THAT(device_->launch(stream(), empty_, dims_for(1), {}), IsOk());
}

TEST_F(LaunchCheckTest, AValueOfTheWrongSizeIsRefused) {
  Buffer dst = upload_u32({9, 9, 9});
  // fill's n is 4 bytes: a size_t (8) or a uint16_t (2) would be read as garbage on CUDA.
  EXPECT_THAT(device_->launch(stream(), fill_, dims_for(3),
                              {Arg::out(dst), Arg::value(5u), Arg::value(std::uint64_t{3})}),
              Refused("fill", "parameter 2", "expected 4", "given 8"));
  EXPECT_THAT(device_->launch(stream(), fill_, dims_for(3),
                              {Arg::out(dst), Arg::value(std::uint16_t{5}), Arg::value(3u)}),
              Refused("fill", "parameter 1", "expected 4", "given 2"));
  expect_untouched(dst, {9, 9, 9});
  ASSERT_THAT(fill(dst, 5, 3), IsOk());
  EXPECT_THAT(read_u32(dst), ElementsAreArray({5u, 5u, 5u}));
}

TEST_F(LaunchCheckTest, ABufferWhereAScalarIsExpectedIsRefused) {
  Buffer dst = upload_u32({9, 9, 9});
  Buffer other = upload_u32({1});
  EXPECT_THAT(device_->launch(stream(), fill_, dims_for(3),
                              {Arg::out(dst), Arg::in(other), Arg::value(3u)}),
              Refused("fill", "parameter 1", "expected 4", "a buffer"));
  // And a 4-byte scalar where the kernel takes a pointer.
  EXPECT_THAT(device_->launch(stream(), fill_, dims_for(3),
                              {Arg::value(0u), Arg::value(5u), Arg::value(3u)}),
              Refused("fill", "parameter 0", "expected 8", "given 4"));
  expect_untouched(dst, {9, 9, 9});
  expect_untouched(other, {1});
  ASSERT_THAT(fill(dst, 6, 3), IsOk());
  EXPECT_THAT(read_u32(dst), ElementsAreArray({6u, 6u, 6u}));
}

TEST_F(LaunchCheckTest, AStructByValueOfTheRightSizeRunsAndOfTheWrongSizeIsRefused) {
  Buffer out = upload_u32({0, 0, 0, 0, 0});
  EXPECT_THAT(device_->launch(stream(), affine_, dims_for(5),
                              {Arg::value(ShortAffine{3, 4, 10}), Arg::out(out)}),
              Refused("affine", "parameter 0", "expected 24", "given 16"));
  expect_untouched(out, {0, 0, 0, 0, 0});
  ASSERT_THAT(device_->launch(stream(), affine_, dims_for(5),
                              {Arg::value(Affine{3, 10, 4}), Arg::out(out)}),
              IsOk());
  EXPECT_THAT(read_u32(out), ElementsAreArray({10u, 13u, 16u, 19u, 0u}));  // n = 4 of 5
}

TEST_F(LaunchCheckTest, MixedSizesAreCheckedOneByOne) {
  Buffer out = upload_u32({0, 0, 0});
  // An int where the kernel takes a char.
  EXPECT_THAT(device_->launch(stream(), mixed_, dims_for(3),
                              {Arg::value(1), Arg::value(20.0), Arg::value(short{300}),
                               Arg::out(out), Arg::value(3ULL)}),
              Refused("mixed", "parameter 0", "expected 1", "given 4"));
  // A float where it takes a double.
  EXPECT_THAT(device_->launch(stream(), mixed_, dims_for(3),
                              {Arg::value(char{1}), Arg::value(20.0f), Arg::value(short{300}),
                               Arg::out(out), Arg::value(3ULL)}),
              Refused("mixed", "parameter 1", "expected 8", "given 4"));
  expect_untouched(out, {0, 0, 0});
  ASSERT_THAT(device_->launch(stream(), mixed_, dims_for(3),
                              {Arg::value(char{1}), Arg::value(20.0), Arg::value(short{300}),
                               Arg::out(out), Arg::value(3ULL)}),
              IsOk());
  EXPECT_THAT(read_u32(out), ElementsAreArray({321u, 321u, 321u}));
}

TEST_F(LaunchCheckTest, ARefusedLaunchInARecordingDoesNotDoomIt) {
  Buffer x = upload_u32({1, 2, 3});
  Buffer y = upload_u32({0, 0, 0});
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, y, 3), IsOk());  // the warm-up
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  EXPECT_THAT(device_->launch(stream(), add_one_, dims_for(3), {Arg::in(x), Arg::out(y)}),
              Refused("add_one", "parameter 2", "4 bytes", "given 0"));
  EXPECT_THAT(device_->launch(stream(), add_one_, dims_for(3),
                              {Arg::in(x), Arg::out(y), Arg::value(std::uint64_t{3})}),
              Refused("add_one", "parameter 2", "expected 4", "given 8"));
  ASSERT_THAT(add_one(y, x, 3), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk()) << "the refused launches never happened";
  EXPECT_FALSE(y.failure().has_value());
  EXPECT_FALSE(x.failure().has_value());
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray({3u, 4u, 5u}));  // y (2, 3, 4) + 1
}

}  // namespace
}  // namespace graphcap::testing
