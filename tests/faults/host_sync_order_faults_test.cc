// A host synchronisation that failed orders nothing (docs/capture-lifecycle.md, "Buffers on
// several streams"): only a completed sync says the stream's work has finished. Every driver:
// the failure is injected by the FaultInjectingDriver around the test driver.
#include <cstdint>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fault_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class HostSyncOrderFaultsTest : public FaultFixture {};

TEST_F(HostSyncOrderFaultsTest, AFailedSyncOrdersNothing) {
  Result<Stream*> side = device_->create_stream();
  ASSERT_THAT(side, IsOk());
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(fill(x, 5, 64), IsOk());
  faults().fail_call("cuStreamSynchronize", CUDA_ERROR_UNKNOWN);
  EXPECT_THAT(device_->sync(stream()),
              StatusIs(Errc::driver, CUDA_ERROR_UNKNOWN, HasSubstr("cuStreamSynchronize")));
  EXPECT_THAT(device_->read(x, **side),
              StatusIs(Errc::invalid_argument, CUDA_SUCCESS,
                       HasSubstr("nothing orders this stream (stream 1)")));
  // The next sync completes, and orders.
  ASSERT_THAT(device_->sync(stream()), IsOk());
  EXPECT_THAT(read_u32(x, **side), Each(5u));
}

}  // namespace
}  // namespace graphcap::testing
