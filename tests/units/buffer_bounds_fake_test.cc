// A kernel touching one element past a Buffer fails the test that launched it: the
// strict fake checks every kernel access against the Buffer graphcap lent (the memory layer
// annotates each Buffer's extent inside its pooled slice, DriverApi::annotate_buffer), and the
// fault surfaces on the stream's next sync or read as the GPU's would, Errc::driver with
// CUDA_ERROR_ILLEGAL_ADDRESS, the message naming the violation. Fake only: on a GPU an overrun
// inside a pooled allocation goes unnoticed, which is the point of checking on the fake.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class BufferBoundsFakeTest : public DeviceFixture {
 protected:
  void SetUp() override {
    DeviceFixture::SetUp();
    ASSERT_NE(fake(), nullptr) << "graphcap_unit_tests runs on the fake driver";
  }
  // The test saw its violation; the fixture's teardown checks there is no other. The fault is
  // sticky (the H200's is: nothing in the process uses the GPU again), so closing the device
  // can't free its memory: the context's release reclaims it, and the leak check is off.
  void expect_one_violation_and_clear() {
    EXPECT_THAT(fake()->violations(), SizeIs(1));
    fake()->clear_violations();
    expect_clean_teardown_ = false;
  }
  void one_element_past_a_pooled_buffer(bool virtual_memory);
};

TEST_F(BufferBoundsFakeTest, OneElementPastAPooledBufferFailsTheSync) {
  Result<Buffer> buffer = device_->alloc(64, stream());  // 16 words, in a 512-byte pooled slice
  ASSERT_THAT(buffer, IsOk());
  ASSERT_THAT(fill(*buffer, 5, 16), IsOk());
  ASSERT_THAT(device_->sync(stream()), IsOk());
  ASSERT_THAT(fill(*buffer, 7, 17), IsOk());  // enqueued: the fault is the device's
  EXPECT_THAT(device_->sync(stream()),
              StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS,
                       AllOf(HasSubstr("cuStreamSynchronize"),
                             HasSubstr("kernel 'fill' parameter 0 (dst), thread (16, 0, 0)"),
                             HasSubstr("runs 4 bytes past the end of the Buffer at"),
                             HasSubstr("of 64 bytes (in allocation"))));
  expect_one_violation_and_clear();
  EXPECT_THAT(device_->sync(stream()), StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS))
      << "sticky, as on the H200";
}

TEST_F(BufferBoundsFakeTest, AReadSurfacesTheFaultOfTheWorkBeforeIt) {
  Result<Buffer> buffer = device_->alloc(64, stream());
  ASSERT_THAT(buffer, IsOk());
  ASSERT_THAT(fill(*buffer, 7, 17), IsOk());
  EXPECT_THAT(device_->read(*buffer, stream()),
              StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS,
                       AllOf(HasSubstr("read"), HasSubstr("past the end of the Buffer"))));
  expect_one_violation_and_clear();
}

// A graph pool lends both graphs the same memory, on either layout: one plain slice, or the base
// of its virtual range (mapped 2 MiB at a time, so only the Buffer's own size can tell the overrun).
void BufferBoundsFakeTest::one_element_past_a_pooled_buffer(bool virtual_memory) {
  Result<GraphPool> pool =
      device_->create_graph_pool(stream(), GraphPoolOptions{.virtual_memory = virtual_memory});
  ASSERT_THAT(pool, IsOk());
  CaptureOptions options;
  options.pool = &*pool;
  Buffer out = upload_u32(std::vector<std::uint32_t>(256, 0));
  CUdeviceptr big_at = 0, small_at = 0;
  // The first graph's intermediate: 1 KiB, shared with the pool's later graphs.
  Result<Graph> big = device_->record(
      stream(),
      [&]() -> Result<void> {
        Result<Buffer> tmp = device_->alloc(1024, stream());
        if (!tmp) return tmp.error();
        big_at = tmp->native_handle();
        if (Result<void> filled = fill(*tmp, 1, 256); !filled) return filled;
        return add_one(*tmp, out, 256);
      },
      options);
  ASSERT_THAT(big, IsOk());
  ASSERT_EQ(pool->intermediates(), 1u);
  // The second graph is lent that slice as a Buffer of 64 bytes (16 words); how many words it
  // fills is a per-replay parameter, 16 while it is recorded.
  Param<std::uint32_t> words = device_->param<std::uint32_t>(16);
  Result<Graph> small = device_->record(
      stream(),
      [&]() -> Result<void> {
        Result<Buffer> tmp = device_->alloc(64, stream());
        if (!tmp) return tmp.error();
        small_at = tmp->native_handle();
        return device_->launch(stream(), fill_, dims_for(32),
                               {Arg::out(*tmp), Arg::value(2u), Arg::param(words)});
      },
      options);
  ASSERT_THAT(small, IsOk());
  EXPECT_EQ(small_at, big_at) << "the same memory";
  EXPECT_EQ(pool->stats().virtual_memory, virtual_memory);
  if (!virtual_memory) {
    EXPECT_EQ(small->report().pool_shared_bytes, big->report().pool_shared_bytes) << "one slice";
  }
  ASSERT_THAT(small->replay(), IsOk());
  EXPECT_THAT(device_->sync(stream()), IsOk());
  // One word past its Buffer: its replay faults. The big graph's replay over the same slice is
  // checked against its own 1 KiB Buffer, and is fine.
  ASSERT_THAT(small->set(words, 17u), IsOk());
  ASSERT_THAT(big->replay(), IsOk());
  EXPECT_THAT(device_->sync(stream()), IsOk());
  ASSERT_THAT(small->replay(), IsOk());
  EXPECT_THAT(device_->sync(stream()),
              StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS,
                       AllOf(HasSubstr("cuGraphLaunch of exec"),
                             HasSubstr("past the end of the Buffer at"), HasSubstr("of 64 bytes"))));
  expect_one_violation_and_clear();
}

TEST_F(BufferBoundsFakeTest, OneElementPastASliceLentByAGraphPoolFailsTheReplaysSync) {
  one_element_past_a_pooled_buffer(false);
}

TEST_F(BufferBoundsFakeTest, OneElementPastAViewOfAGraphPoolsRangeFailsTheReplaysSync) {
  one_element_past_a_pooled_buffer(true);
}

TEST_F(BufferBoundsFakeTest, ADroppedBuffersMemoryIsNoBuffersAnyMore) {
  // A kernel given a dropped Buffer's address (raw interop through native_handle()) after its
  // memory went back to the pool: on a GPU it would scribble on whatever the pool lends next.
  CUdeviceptr stale = 0;
  {
    Result<Buffer> buffer = device_->alloc(64, stream());
    ASSERT_THAT(buffer, IsOk());
    stale = buffer->native_handle();
  }
  ASSERT_THAT(device_->sync(stream()), IsOk());  // the drop queue passes: the slice is returned
  fake::FakeDriver& driver = *fake();
  CUfunction fill_function = fill_.native_handle();
  std::uint32_t value = 3, n = 1;
  void* params[] = {&stale, &value, &n};
  ASSERT_EQ(driver.cuLaunchKernel(fill_function, 1, 1, 1, 1, 1, 1, 0, stream().native_handle(),
                                  params, nullptr),
            CUDA_SUCCESS);
  EXPECT_THAT(device_->sync(stream()),
              StatusIs(Errc::driver, CUDA_ERROR_ILLEGAL_ADDRESS,
                       HasSubstr("in the memory of a Buffer that was dropped")));
  expect_one_violation_and_clear();
}

}  // namespace
}  // namespace graphcap::testing
