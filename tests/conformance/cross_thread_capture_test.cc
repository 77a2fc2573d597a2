// Facts file, "What invalidates a capture", the other-thread rules: while thread A captures in
// GLOBAL mode, an unsafe call (cuMemAlloc, cuStreamQuery of an unrelated stream) from thread B
// whose own mode is GLOBAL returns 900 and invalidates A's capture; every other combination of A's
// capture mode and B's thread mode is allowed; a thread in RELAXED mode is never refused; and
// cuStreamEndCapture from another thread gives 908 (NULL graph, capture terminated, A's own end
// then 401) for GLOBAL and THREAD_LOCAL captures, and succeeds for a RELAXED one.
#include <cstdint>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

enum class UnsafeCall { kMemAlloc, kStreamQueryOfUnrelatedStream };

void PrintTo(UnsafeCall call, std::ostream* os) {
  *os << (call == UnsafeCall::kMemAlloc ? "cuMemAlloc" : "cuStreamQuery_unrelated");
}

// Thread A (the test's thread) captures in A's mode; thread B sets its own mode and makes the call.
using CrossThreadParam = std::tuple<CUstreamCaptureMode, CUstreamCaptureMode, UnsafeCall>;

class OtherThreadCall : public ConformanceTest,
                        public ::testing::WithParamInterface<CrossThreadParam> {};

TEST_P(OtherThreadCall, IsRefusedOnlyWhenBothAreGlobal) {
  const auto& [capture_mode, thread_b_mode, call] = GetParam();
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream unrelated = new_stream();
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());

  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), capture_mode), CUDA_SUCCESS);
  CUresult result = CUDA_ERROR_UNKNOWN;
  CUresult mode_set = CUDA_ERROR_UNKNOWN;
  CUdeviceptr pointer = 0;
  std::thread thread_b([&] {
    api().cuCtxSetCurrent(context());
    ThreadCaptureMode mode(api(), thread_b_mode);
    mode_set = mode.status();
    result = call == UnsafeCall::kMemAlloc ? api().cuMemAlloc(&pointer, 256)
                                           : api().cuStreamQuery(unrelated.get());
  });
  thread_b.join();
  DeviceMemory allocated(api(), pointer);  // freed (relaxed) once the test is done
  ASSERT_EQ(mode_set, CUDA_SUCCESS);

  const bool refused = capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                       thread_b_mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
  EXPECT_EQ(result, refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS);
  if (refused) {
    EXPECT_EQ(pointer, CUdeviceptr{0});
    expect_invalidated(s.get(), empty);
  } else {
    expect_still_active(s.get(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    CrossThreadCapture, OtherThreadCall,
    ::testing::Combine(every_capture_mode(), every_capture_mode(),
                       ::testing::Values(UnsafeCall::kMemAlloc,
                                         UnsafeCall::kStreamQueryOfUnrelatedStream)),
    [](const ::testing::TestParamInfo<CrossThreadParam>& param) {
      return "capture_" + ::testing::PrintToString(std::get<0>(param.param)) + "_thread_" +
             ::testing::PrintToString(std::get<1>(param.param)) + "_" +
             ::testing::PrintToString(std::get<2>(param.param));
    });

using CrossThreadCapture = ConformanceTest;

// The capturing thread itself, once in RELAXED mode, may make unsafe calls during its own GLOBAL
// capture.
TEST_F(CrossThreadCapture, ARelaxedThreadIsNeverRefusedEvenDuringItsOwnGlobalCapture) {
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUdeviceptr pointer = 0;
  {
    ThreadCaptureMode relaxed(api(), CU_STREAM_CAPTURE_MODE_RELAXED);
    ASSERT_EQ(relaxed.status(), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemAlloc(&pointer, 256), CUDA_SUCCESS);
  }
  DeviceMemory allocated(api(), pointer);
  EXPECT_NE(pointer, CUdeviceptr{0});
  expect_still_active(s.get(), 0);
}

class EndFromAnotherThread : public ConformanceTest,
                             public ::testing::WithParamInterface<CUstreamCaptureMode> {};

TEST_P(EndFromAnotherThread, IsWrongThreadUnlessRelaxed) {
  const CUstreamCaptureMode mode = GetParam();
  RawModule module = load_test_kernels();
  CUfunction empty = kernel(module, "empty");
  RawStream s = new_stream();
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(api().cuStreamBeginCapture(s.get(), mode), CUDA_SUCCESS);
  EXPECT_EQ(launch(empty, s.get(), 1, 1), CUDA_SUCCESS);

  CUresult result = CUDA_ERROR_UNKNOWN;
  CUgraph raw = reinterpret_cast<CUgraph>(std::uintptr_t{0x1});  // must be written
  std::thread other([&] {
    api().cuCtxSetCurrent(context());
    result = api().cuStreamEndCapture(s.get(), &raw);
  });
  other.join();
  RawGraph graph(api(), raw == reinterpret_cast<CUgraph>(std::uintptr_t{0x1}) ? nullptr : raw);

  if (mode == CU_STREAM_CAPTURE_MODE_RELAXED) {
    EXPECT_EQ(result, CUDA_SUCCESS);
    ASSERT_NE(graph.get(), nullptr);
    EXPECT_THAT(node_types(graph.get()), ElementsAre(CU_GRAPH_NODE_TYPE_KERNEL));
    EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_NONE);
  } else {
    EXPECT_EQ(result, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    EXPECT_EQ(raw, nullptr);
    // The capture is over: the capturing thread finds nothing left to end.
    EXPECT_EQ(capture_status(s.get()), CU_STREAM_CAPTURE_STATUS_NONE);
    CUgraph own = nullptr;
    EXPECT_EQ(api().cuStreamEndCapture(s.get(), &own), CUDA_ERROR_ILLEGAL_STATE);
    EXPECT_EQ(own, nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(CrossThreadCapture, EndFromAnotherThread,
                         every_capture_mode(), capture_mode_name);

}  // namespace
}  // namespace graphcap::testing
