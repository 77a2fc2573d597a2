// Pooled memory on every driver: round trips, partial writes and reads, bad sizes and ranges,
// buffers of other devices and streams, and reuse of dropped memory.
#include <cstdint>
#include <limits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class MemoryTest : public DeviceFixture {};

TEST_F(MemoryTest, UploadThenReadRoundTrips) {
  const std::vector<std::uint32_t> values = iota_u32(4096, 100);
  Buffer buffer = upload_u32(values);
  EXPECT_EQ(buffer.size(), values.size() * sizeof(std::uint32_t));
  EXPECT_NE(buffer.native_handle(), 0u);
  EXPECT_THAT(read_u32(buffer), ElementsAreArray(values));
}

TEST_F(MemoryTest, WriteAndReadAtAnOffset) {
  Buffer buffer = upload_u32({1, 2, 3, 4, 5, 6});
  ASSERT_THAT(device_->write(buffer, 2 * sizeof(std::uint32_t), to_bytes({30, 40}), stream()),
              IsOk());
  EXPECT_THAT(read_u32(buffer), ElementsAre(1u, 2u, 30u, 40u, 5u, 6u));
  Result<std::vector<std::byte>> part =
      device_->read(buffer, 3 * sizeof(std::uint32_t), 2 * sizeof(std::uint32_t), stream());
  ASSERT_THAT(part, IsOk());
  EXPECT_THAT(to_u32(*part), ElementsAre(40u, 5u));
}

TEST_F(MemoryTest, ZeroAndUnrepresentableSizesAreInvalidArgument) {
  EXPECT_THAT(device_->alloc(0, stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("zero bytes")));
  EXPECT_THAT(device_->alloc(std::numeric_limits<std::size_t>::max(), stream()),
              StatusIs(Errc::invalid_argument));
  EXPECT_THAT(device_->alloc(std::numeric_limits<std::size_t>::max() - 100, stream()),
              StatusIs(Errc::invalid_argument));
}

TEST_F(MemoryTest, AllocationPastTheDeviceMemoryIsOutOfMemory) {
  constexpr std::size_t kPebibyte = std::size_t{1} << 50;  // more than any device has
  EXPECT_THAT(device_->alloc(kPebibyte, stream()),
              StatusIs(Errc::out_of_memory, CUDA_ERROR_OUT_OF_MEMORY, HasSubstr("cuMemAlloc")));
  // The device is still usable.
  Buffer buffer = upload_u32({9, 8, 7});
  EXPECT_THAT(read_u32(buffer), ElementsAre(9u, 8u, 7u));
}

TEST_F(MemoryTest, WritesAndReadsPastTheEndAreInvalidArgument) {
  Buffer buffer = upload_u32({1, 2, 3, 4});
  const std::vector<std::byte> five = to_bytes({1, 2, 3, 4, 5});
  EXPECT_THAT(device_->write(buffer, five, stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("outside the buffer")));
  EXPECT_THAT(device_->write(buffer, 12, to_bytes({7, 7}), stream()),
              StatusIs(Errc::invalid_argument));
  EXPECT_THAT(device_->read(buffer, 8, 9, stream()), StatusIs(Errc::invalid_argument));
  EXPECT_THAT(device_->read(buffer, 17, 0, stream()), StatusIs(Errc::invalid_argument));
  // offset + count overflows size_t: still refused, never wrapped around.
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  EXPECT_THAT(device_->read(buffer, huge, 2, stream()), StatusIs(Errc::invalid_argument));
  EXPECT_THAT(device_->read(buffer, 4, huge, stream()), StatusIs(Errc::invalid_argument));
  EXPECT_THAT(device_->write(buffer, huge - 1, to_bytes({1}), stream()),
              StatusIs(Errc::invalid_argument));
  EXPECT_THAT(read_u32(buffer), ElementsAre(1u, 2u, 3u, 4u));  // untouched
}

TEST_F(MemoryTest, EmptyBufferIsInvalidArgument) {
  Buffer empty;
  EXPECT_FALSE(empty);
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_THAT(device_->read(empty, stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("empty Buffer")));
  EXPECT_THAT(device_->write(empty, to_bytes({1}), stream()), StatusIs(Errc::invalid_argument));
}

TEST_F(MemoryTest, BufferOfAnotherDeviceIsInvalidArgument) {
  Result<std::unique_ptr<Device>> other = Device::open(driver_->api());
  ASSERT_THAT(other, IsOk());
  Result<Buffer> foreign = (*other)->alloc(64, (*other)->stream());
  ASSERT_THAT(foreign, IsOk());
  EXPECT_THAT(device_->read(*foreign, stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("another device")));
  EXPECT_THAT(device_->write(*foreign, to_bytes({1}), stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("another device")));
  EXPECT_THAT(add_one(*foreign, *foreign, 1),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("another device")));
  // A stream of another device, too.
  EXPECT_THAT(device_->alloc(64, (*other)->stream()),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("another device")));
}

TEST_F(MemoryTest, BufferOfAnotherStreamIsInvalidArgument) {
  Result<Stream*> second = device_->create_stream();
  ASSERT_THAT(second, IsOk());
  Buffer buffer = upload_u32({1, 2});
  EXPECT_THAT(device_->read(buffer, **second),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS, HasSubstr("another stream")));
  // On its own stream it works, and the second stream works with its own buffers.
  Buffer mine = upload_u32({5, 6}, **second);
  EXPECT_THAT(read_u32(mine, **second), ElementsAre(5u, 6u));
  EXPECT_THAT(read_u32(buffer), ElementsAre(1u, 2u));
}

TEST_F(MemoryTest, DroppedMemoryIsReusedOnceTheStreamPassedIt) {
  CUdeviceptr first = 0;
  {
    Buffer buffer = upload_u32(iota_u32(1024));
    ASSERT_THAT(fill(buffer, 3, 1024), IsOk());
    first = buffer.native_handle();
    ASSERT_THAT(device_->sync(stream()), IsOk());
  }  // dropped after the stream passed its last use: back in the pool at once
  Result<Buffer> again = device_->alloc(1024 * sizeof(std::uint32_t), stream());
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->native_handle(), first);
  const memory::PoolStats stats = device_->memory_stats(stream()).device;
  EXPECT_EQ(stats.driver_allocations, 1u);
}

TEST_F(MemoryTest, SizesShareAClassWithoutNewDriverAllocations) {
  {
    Result<Buffer> big = device_->alloc(4000, stream());  // class 4096
    ASSERT_THAT(big, IsOk());
  }
  ASSERT_THAT(device_->sync(stream()), IsOk());
  Result<Buffer> close = device_->alloc(3900, stream());  // the same class
  ASSERT_THAT(close, IsOk());
  EXPECT_EQ(device_->memory_stats(stream()).device.driver_allocations, 1u);
}

}  // namespace
}  // namespace graphcap::testing
