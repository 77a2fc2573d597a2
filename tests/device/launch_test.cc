// Launches on every driver: results read back equal a host simulation, and bad launches are
// refused with a specific error before the driver sees them.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <limits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class LaunchTest : public DeviceFixture {};

TEST_F(LaunchTest, PingPongOf150LaunchesMatchesHostSimulation) {
  constexpr std::uint32_t kN = 1000;
  std::vector<std::uint32_t> a = iota_u32(kN, 7);
  std::vector<std::uint32_t> b(kN, 0);
  Buffer da = upload_u32(a);
  Buffer db = upload_u32(b);
  for (int i = 0; i < 150; ++i) {
    const bool forward = i % 2 == 0;
    ASSERT_THAT(add_one(forward ? da : db, forward ? db : da, kN), IsOk()) << "launch " << i;
    auto& src = forward ? a : b;
    auto& dst = forward ? b : a;
    for (std::uint32_t j = 0; j < kN; ++j) dst[j] = src[j] + 1;
  }
  EXPECT_THAT(read_u32(da), ElementsAreArray(a));
  EXPECT_THAT(read_u32(db), ElementsAreArray(b));
  EXPECT_EQ(read_u32(da)[0], 7u + 150u);  // launch 149 wrote a
  EXPECT_EQ(read_u32(db)[0], 7u + 149u);  // launch 148 wrote b
}

TEST_F(LaunchTest, AxpyComputesOnEveryElement) {
  constexpr std::uint32_t kN = 3000;  // several blocks, not a multiple of 256
  Buffer x = upload_u32(iota_u32(kN));
  Buffer y = upload_u32(std::vector<std::uint32_t>(kN, 5));
  Result<Buffer> out = device_->alloc(kN * sizeof(std::uint32_t), stream());
  ASSERT_THAT(out, IsOk());
  ASSERT_THAT(device_->launch(stream(), axpy_, dims_for(kN),
                              {Arg::in(x), Arg::in(y), Arg::out(*out), Arg::value(std::uint32_t{3}),
                               Arg::value(kN)}),
              IsOk());
  std::vector<std::uint32_t> expected(kN);
  for (std::uint32_t i = 0; i < kN; ++i) expected[i] = 3 * i + 5;
  EXPECT_THAT(read_u32(*out), ElementsAreArray(expected));
}

TEST_F(LaunchTest, GridStrideKernelsAreCorrectForAnyShape) {
  constexpr std::uint32_t kN = 5000;
  Result<Buffer> out = device_->alloc(kN * sizeof(std::uint32_t), stream());
  ASSERT_THAT(out, IsOk());
  LaunchDims one_block;  // grid 1x1x1, block 32: each thread strides over many elements
  one_block.block.x = 32;
  ASSERT_THAT(device_->launch(stream(), fill_, one_block,
                              {Arg::out(*out), Arg::value(std::uint32_t{42}), Arg::value(kN)}),
              IsOk());
  EXPECT_THAT(read_u32(*out), ElementsAreArray(std::vector<std::uint32_t>(kN, 42)));
}

TEST_F(LaunchTest, ZeroGridOrBlockDimensionIsInvalidArgument) {
  Buffer b = upload_u32({1, 2, 3});
  for (LaunchDims dims : {LaunchDims{{0, 1, 1}, {32, 1, 1}, 0}, LaunchDims{{1, 0, 1}, {32, 1, 1}, 0},
                          LaunchDims{{1, 1, 1}, {0, 1, 1}, 0}, LaunchDims{{1, 1, 1}, {32, 1, 0}, 0}}) {
    EXPECT_THAT(device_->launch(stream(), fill_, dims,
                                {Arg::out(b), Arg::value(std::uint32_t{1}), Arg::value(3u)}),
                StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("zero dimension")));
  }
  EXPECT_THAT(read_u32(b), ElementsAreArray({1u, 2u, 3u}));  // nothing ran
}

TEST_F(LaunchTest, DimensionsPastTheDeviceLimitsAreInvalidArgument) {
  Buffer b = upload_u32({1});
  const DeviceLimits& limits = device_->limits();
  ASSERT_GT(limits.max_threads_per_block, 0u);
  std::vector<LaunchDims> too_big = {
      {{1, 1, 1}, {limits.max_threads_per_block + 1, 1, 1}, 0},  // too many threads
      {{1, 1, 1}, {1, 1, limits.max_block.z + 1}, 0},            // block z past its limit
      {{1, limits.max_grid.y + 1, 1}, {1, 1, 1}, 0},             // grid y past its limit
      {{1, 1, 1}, {32, 32, 2}, 0},                               // 2048 threads
      {{1, 1, 1}, {1, 1, 1}, limits.max_shared_bytes + 1},       // shared memory
  };
  for (const LaunchDims& dims : too_big) {
    EXPECT_THAT(device_->launch(stream(), fill_, dims,
                                {Arg::out(b), Arg::value(std::uint32_t{9}), Arg::value(1u)}),
                StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("exceed")));
  }
  EXPECT_THAT(read_u32(b), ElementsAreArray({1u}));
}

// The bounds are inclusive: a launch at each limit runs (the check compares x - 1 < limit, so
// an off-by-one there would refuse these).
TEST_F(LaunchTest, DimensionsAtTheDeviceLimitsAreAccepted) {
  Buffer b = upload_u32({1});
  const DeviceLimits& limits = device_->limits();
  ASSERT_GT(limits.max_threads_per_block, 0u);
  const std::vector<LaunchDims> at_limit = {
      {{1, 1, 1}, {limits.max_threads_per_block, 1, 1}, 0},  // as many threads as allowed
      {{1, 1, 1}, {1, 1, limits.max_block.z}, 0},            // block z at its limit
      {{1, limits.max_grid.y, 1}, {1, 1, 1}, 0},             // grid y at its limit
  };
  std::uint32_t value = 10;
  for (const LaunchDims& dims : at_limit) {
    ASSERT_THAT(device_->launch(stream(), fill_, dims,
                                {Arg::out(b), Arg::value(++value), Arg::value(1u)}),
                IsOk());
    EXPECT_THAT(read_u32(b), ElementsAreArray({value}));
  }
}

TEST_F(LaunchTest, EmptyBufferOrKernelIsInvalidArgument) {
  Buffer empty;
  EXPECT_THAT(device_->launch(stream(), fill_, dims_for(1),
                              {Arg::out(empty), Arg::value(1u), Arg::value(1u)}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("empty Buffer")));
  EXPECT_THAT(device_->launch(stream(), Kernel{}, dims_for(1), {}),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("empty Kernel")));
}

TEST_F(LaunchTest, MissingKernelNameIsInvalidArgumentWithNotFound) {
  EXPECT_THAT(module_.kernel("no_such_kernel"),
              StatusIs(Errc::invalid_argument, CUDA_ERROR_NOT_FOUND, HasSubstr("no_such_kernel")));
  EXPECT_THAT(module_.kernel(""), StatusIs(Errc::invalid_argument));
  EXPECT_THAT(Module{}.kernel("add_one"), StatusIs(Errc::invalid_argument));
}

TEST_F(LaunchTest, EmptyAndGarbageModuleImagesAreInvalidArgument) {
  EXPECT_THAT(device_->load_module({}), StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                                                 HasSubstr("empty image")));
  std::vector<std::byte> garbage(256);
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = std::byte(i * 37 + 11);
  EXPECT_THAT(device_->load_module(garbage),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("unrecognized image")));
  // An ELF header whose section table lies past the end of the bytes given.
  std::vector<std::byte> elf(64);
  const unsigned char magic[] = {0x7F, 'E', 'L', 'F', 2, 1, 1};
  for (std::size_t i = 0; i < sizeof magic; ++i) elf[i] = std::byte(magic[i]);
  elf[0x28] = std::byte(0xFF);  // e_shoff far away
  elf[0x3A] = std::byte(64);    // e_shentsize
  elf[0x3C] = std::byte(3);     // e_shnum
  EXPECT_THAT(device_->load_module(elf),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("truncated ELF")));
  // A fatbin header that declares more bytes than given.
  std::vector<std::byte> fatbin(16);
  const unsigned char fat[] = {0x50, 0xED, 0x55, 0xBA, 1, 0, 16, 0, 0, 0, 1, 0};
  for (std::size_t i = 0; i < sizeof fat; ++i) fatbin[i] = std::byte(fat[i]);
  EXPECT_THAT(device_->load_module(fatbin),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("truncated fatbin")));
}

TEST_F(LaunchTest, TruncatedRealImageIsRefusedBeforeTheDriver) {
  std::span<const std::byte> image = driver_->kernel_image();
  ASSERT_GT(image.size(), 32u);
  Result<Module> truncated = device_->load_module(image.first(24));
  // A fake image is text: a prefix of it lacks the .version directive or is still text the fake
  // rejects; a fatbin prefix is caught by its header.
  ASSERT_FALSE(truncated.has_value());
  EXPECT_THAT(truncated.error().code(),
              ::testing::AnyOf(Errc::invalid_argument, Errc::driver));
}

TEST_F(LaunchTest, PtxLookingTextTheDriverRejectsIsADriverError) {
  const std::string text = ".version 99.9\n.target nowhere\nthis is not ptx\n";
  std::vector<std::byte> image(text.size());
  std::memcpy(image.data(), text.data(), text.size());
  Result<Module> module = device_->load_module(image);
  ASSERT_FALSE(module.has_value());
  EXPECT_EQ(module.error().code(), Errc::driver);
  EXPECT_THAT(module.error().driver_code(),
              ::testing::AnyOf(CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_PTX,
                               CUDA_ERROR_UNSUPPORTED_PTX_VERSION));
  EXPECT_THAT(module.error().message(), HasSubstr("cuModuleLoadData"));
}

}  // namespace
}  // namespace graphcap::testing
