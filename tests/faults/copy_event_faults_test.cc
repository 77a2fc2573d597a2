// Copies, fills, events and buffers lent between streams under the fake's control: injected
// failures of the new entry points (cuMemcpyDtoDAsync, cuMemsetD32Async) and of the event calls
// graphcap makes, and the memory of a lent buffer that is dropped while the borrowing stream may
// still use it.
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

class CopyEventFaultsTest : public WithSideStream<FaultFixture> {
 protected:
  // Orders the side stream after everything on the device's stream so far.
  void order_side_after_main() {
    Event e = new_event();
    ASSERT_THAT(device_->record_event(e, stream()), IsOk());
    ASSERT_THAT(device_->wait(*side_, e), IsOk());
  }
};

TEST_F(CopyEventFaultsTest, AFailedEagerCopyMarksTheDestinationOnly) {
  Buffer src = upload_u32(iota_u32(16));
  Buffer dst = upload_u32(iota_u32(16, 100));
  faults().fail_call("cuMemcpyDtoDAsync", CUDA_ERROR_INVALID_VALUE);
  EXPECT_THAT(device_->copy(dst, src, stream()),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE,
                       AllOf(HasSubstr("copy"), HasSubstr("cuMemcpyDtoDAsync"))));
  EXPECT_THAT(device_->read(dst, stream()), StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE));
  EXPECT_THAT(read_u32(src), ElementsAreArray(iota_u32(16)));
  ASSERT_THAT(device_->copy(dst, src, stream()), IsOk());  // a whole copy produces it again
  EXPECT_THAT(read_u32(dst), ElementsAreArray(iota_u32(16)));
}

TEST_F(CopyEventFaultsTest, AFailedRecordedWordFillDoomsTheRecordingAndClaimsItsOutputs) {
  Buffer x = upload_u32(iota_u32(16));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  faults().fail_call("cuMemsetD32Async", CUDA_ERROR_INVALID_VALUE);
  EXPECT_THAT(device_->fill(x, std::uint32_t{7}, stream()),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_VALUE, HasSubstr("cuMemsetD32Async")));
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::doomed, CUDA_ERROR_INVALID_VALUE, HasSubstr("cuMemsetD32Async")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  EXPECT_THAT(device_->read(x, stream()), StatusIs(Errc::doomed));
}

TEST_F(CopyEventFaultsTest, EventCallsThatFailAreReportedByName) {
  faults().fail_call("cuEventCreate", CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_THAT(device_->create_event(),
              StatusIs(Errc::out_of_memory, CUDA_ERROR_OUT_OF_MEMORY, HasSubstr("cuEventCreate")));
  Result<Event> e = device_->create_event();
  ASSERT_THAT(e, IsOk());
  faults().fail_call("cuEventRecord", CUDA_ERROR_INVALID_HANDLE);
  EXPECT_THAT(device_->record_event(*e, stream()),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_HANDLE, HasSubstr("cuEventRecord")));
  ASSERT_THAT(device_->record_event(*e, stream()), IsOk());
  faults().fail_call("cuStreamWaitEvent", CUDA_ERROR_INVALID_HANDLE);
  EXPECT_THAT(device_->wait(*side_, *e),
              StatusIs(Errc::driver, CUDA_ERROR_INVALID_HANDLE, HasSubstr("cuStreamWaitEvent")));
  // The failed wait ordered nothing.
  Buffer x = upload_u32({1, 2});
  EXPECT_THAT(device_->read(x, *side_), StatusIs(Errc::invalid_argument));
}

TEST_F(CopyEventFaultsTest, ABorrowedUseWhoseFenceCantBeCreatedIsRefusedBeforeItRuns) {
  Buffer x = upload_u32(iota_u32(16));
  order_side_after_main();
  faults().fail_call("cuEventCreate", CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_THAT(device_->fill(x, std::uint32_t{9}, *side_),
              StatusIs(Errc::out_of_memory, CUDA_ERROR_OUT_OF_MEMORY, HasSubstr("cuEventCreate")));
  EXPECT_EQ(faults().call_count("cuMemsetD32Async"), 0u);
  EXPECT_THAT(read_u32(x), ElementsAreArray(iota_u32(16)));
}

TEST_F(CopyEventFaultsTest, ABorrowedUseWhoseFenceCantBeRecordedWaitsInstead) {
  Buffer x = upload_u32(iota_u32(16));
  order_side_after_main();
  std::vector<std::string> warnings;
  LogSink previous = set_log_sink([&](LogLevel level, std::string_view message) {
    if (level <= LogLevel::warn) warnings.emplace_back(message);
  });
  faults().fail_call("cuEventRecord", CUDA_ERROR_INVALID_HANDLE);
  ASSERT_THAT(device_->fill(x, std::uint32_t{9}, *side_), IsOk());
  set_log_sink(previous);
  EXPECT_GE(faults().call_count("cuStreamSynchronize"), 1u);
  // Recovered, and said so: the driver's failure is named in a warning.
  EXPECT_THAT(warnings, ::testing::ElementsAre(AllOf(HasSubstr("cuEventRecord"),
                                                     HasSubstr("CUDA_ERROR_INVALID_HANDLE"),
                                                     HasSubstr("waited for the stream instead"))));
  EXPECT_THAT(read_u32(x), Each(9u));
}

TEST_F(CopyEventFaultsTest, ADroppedLentBufferIsNotReusedWhileTheBorrowerMayStillUseIt) {
  if (on_fake()) fake()->set_device_paused(true);  // queries report work as unfinished until a wait
  Buffer input = upload_u32(iota_u32(256));
  Buffer out = upload_u32(iota_u32(256), *side_);
  CUdeviceptr dropped = 0;
  {
    Result<Buffer> lent = device_->alloc(1024, stream());
    ASSERT_THAT(lent, IsOk());
    dropped = lent->native_handle();
    ASSERT_THAT(device_->copy(*lent, input, stream()), IsOk());
    order_side_after_main();
    ASSERT_THAT(add_one(*lent, out, 256, *side_), IsOk());  // queued on the side stream
  }  // dropped: its owner's queue must wait for the side stream's launch
  // On the fake the paused device keeps the borrower's launch queued; a GPU may finish it at once.
  if (on_fake()) {
    EXPECT_GT(fake()->pending_operations(side_->native_handle()), 0u);
  }
  Result<Buffer> next = device_->alloc(1024, stream());
  ASSERT_THAT(next, IsOk());
  if (on_fake()) {
    EXPECT_NE(next->native_handle(), dropped) << "reused while the borrower's launch was queued";
  }
  ASSERT_THAT(device_->sync(stream()), IsOk());  // the owner waited for the borrower
  Result<Buffer> reused = device_->alloc(1024, stream());
  ASSERT_THAT(reused, IsOk());
  // On the fake, `next` could not have it (the borrower's launch was still queued), so the slice
  // comes back now. On a GPU the launch may already have finished when `next` was taken, and
  // `next` may hold it legitimately (seen on the H200): either way it is released by now.
  if (on_fake()) {
    EXPECT_EQ(reused->native_handle(), dropped) << "released once the owner passed the hand-back";
  } else {
    EXPECT_TRUE(reused->native_handle() == dropped || next->native_handle() == dropped)
        << "released once the owner passed the hand-back";
  }
  if (on_fake()) fake()->set_device_paused(false);
  EXPECT_THAT(read_u32(out, *side_), ElementsAreArray(iota_u32(256, 1)));
  if (on_fake()) {
    EXPECT_THAT(fake()->violations(), IsEmpty());
  }
}

}  // namespace
}  // namespace graphcap::testing
