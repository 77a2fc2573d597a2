// What a user sees of a recording, on every driver: CaptureScope, capture modes per recording
// with graphcap's cross-thread checks following them, Graph::dot(), the GRAPHCAP_LOG=debug
// trace, and refusals of invalidated recordings (901) that name graphcap operations.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

class CaptureDiagnosticsTest : public DeviceFixture {};

// ---- CaptureScope --------------------------------------------------------------------------

TEST_F(CaptureDiagnosticsTest, CaptureScopeEndsIntoAGraph) {
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 64), IsOk());  // warm-up
  Result<Graph> graph = [&]() -> Result<Graph> {
    CaptureScope scope(*device_, stream());
    EXPECT_THAT(scope.began(), IsOk());
    EXPECT_EQ(stream().capture_state(), CaptureState::capture);
    if (Result<void> ok = add_one(x, x, 64); !ok) return ok.error();
    return scope.end();
  }();
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  ASSERT_THAT(graph->replay(), IsOk());
  EXPECT_THAT(read_u32(x), ElementsAreArray(iota_u32(64, 2)));
}

TEST_F(CaptureDiagnosticsTest, LeavingACaptureScopeWithoutEndAbortsAndLeavesTheStreamUsable) {
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  EXPECT_THROW(
      {
        CaptureScope scope(*device_, stream());
        ASSERT_THAT(add_one(x, x, 64), IsOk());
        throw std::runtime_error("the step failed");
      },
      std::runtime_error);
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  // What the abandoned recording would have written is claimed; the stream works.
  EXPECT_THAT(device_->read(x, stream()), StatusIs(Errc::doomed, CUDA_SUCCESS,
                                                   HasSubstr("abandoned")));
  ASSERT_THAT(device_->fill(x, std::uint32_t{5}, stream()), IsOk());
  EXPECT_THAT(read_u32(x), Each(5u));
  // And it records again.
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  CaptureScope again(*device_, stream());
  ASSERT_THAT(again.began(), IsOk());
  EXPECT_THAT(again.end(), IsOk());
  EXPECT_THAT(again.end(), StatusIs(Errc::graph_state));
}

TEST_F(CaptureDiagnosticsTest, ACaptureScopeThatCouldNotBeginSaysWhyAndDoesNothing) {
  CaptureScope scope(*device_, stream());  // no prepare_capture
  EXPECT_THAT(scope.began(), StatusIs(Errc::graph_state));
  EXPECT_FALSE(scope.open());
  EXPECT_THAT(scope.end(), StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("prepare_capture")));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

// A scope whose begin is refused with the stream prepared (another recording of this thread is
// open: draining would invalidate it) aborts the window prepare opened: the stream is back in
// no_capture, and a recording already open elsewhere is left alone.
TEST_F(CaptureDiagnosticsTest, ACaptureScopeWhoseBeginIsRefusedLeavesTheStreamNotCapturing) {
  Stream* other = add_stream();
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(iota_u32(64), *other);
  ASSERT_THAT(device_->prepare_capture(*other), IsOk());
  ASSERT_THAT(device_->begin_capture(*other), IsOk());
  ASSERT_THAT(add_one(y, y, 64, *other), IsOk());
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  {
    CaptureScope scope(*device_, stream());
    EXPECT_THAT(scope.began(), StatusIs(Errc::graph_state, CUDA_SUCCESS,
                                        HasSubstr("another recording is open")));
    EXPECT_FALSE(scope.open());
    EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  }
  EXPECT_EQ(other->capture_state(), CaptureState::capture) << "not the scope's to abort";
  // A scope on a stream that records already refuses, and leaves that recording open.
  {
    CaptureScope scope(*device_, *other);
    EXPECT_THAT(scope.began(), StatusIs(Errc::graph_state));
  }
  EXPECT_EQ(other->capture_state(), CaptureState::capture);
  EXPECT_THAT(device_->end_capture(*other), IsOk());
  EXPECT_THAT(device_->record(stream(), [&] { return add_one(x, x, 64); }), IsOk());
}

// ---- Capture modes per recording -----------------------------------------------------------

TEST_F(CaptureDiagnosticsTest, AThreadLocalRecordingLetsAnotherThreadAllocateAndSync) {
  Result<Stream*> other = device_->create_stream();
  ASSERT_THAT(other, IsOk());
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(device_->prepare_capture(stream(), {CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, nullptr}),
              IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 64), IsOk());
  std::thread worker([&] {
    // A size no pool holds yet: a driver allocation, then a wait for the stream.
    Result<Buffer> fresh = device_->alloc(3 << 20, **other);
    EXPECT_THAT(fresh, IsOk());
    if (fresh) {
      EXPECT_THAT(device_->fill(*fresh, std::uint8_t{1}, **other), IsOk());
    }
    EXPECT_THAT(device_->sync(**other), IsOk());
  });
  worker.join();
  ASSERT_THAT(add_one(x, x, 64), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());  // the driver did not invalidate it either
  EXPECT_EQ(graph->report().node_count, 2u);
}

TEST_F(CaptureDiagnosticsTest, AGlobalRecordingRefusesAnotherThreadsUnsafeCallsUpFront) {
  Result<Stream*> other = device_->create_stream();
  ASSERT_THAT(other, IsOk());
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(device_->prepare_capture(stream(), {CU_STREAM_CAPTURE_MODE_GLOBAL, nullptr}),
              IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 64), IsOk());
  std::thread worker([&] {
    // Errc::out_of_memory is the documented meaning of "a pool that may not grow now".
    EXPECT_THAT(device_->alloc(3 << 20, **other),
                StatusIs(Errc::out_of_memory, CUDA_SUCCESS, HasSubstr("global mode")));
    EXPECT_THAT(device_->sync(**other), StatusIs(Errc::graph_state, CUDA_SUCCESS,
                                                 HasSubstr("global mode")));
  });
  worker.join();
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());  // graphcap refused instead of letting the driver invalidate it
  EXPECT_EQ(graph->report().node_count, 1u);
}

TEST_F(CaptureDiagnosticsTest, ACaptureModeThatIsNoModeIsInvalidArgument) {
  EXPECT_THAT(device_->prepare_capture(stream(), {static_cast<CUstreamCaptureMode>(7), nullptr}),
              StatusIs(Errc::invalid_argument));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

// ---- Graph::dot ----------------------------------------------------------------------------

TEST_F(CaptureDiagnosticsTest, DotRendersTheRecordedGraph) {
  Buffer x = upload_u32(iota_u32(64));
  Buffer y = upload_u32(iota_u32(64));
  Buffer z = upload_u32(iota_u32(32));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(fill(x, 3, 64), IsOk());
  ASSERT_THAT(add_one(x, y, 64), IsOk());
  ASSERT_THAT(device_->copy(z, 0, y, 64, 128, stream()), IsOk());
  ASSERT_THAT(device_->fill(x, std::uint8_t{0}, stream()), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, IsOk());
  EXPECT_EQ(without_call_sites(graph->dot()),
            "digraph graphcap {\n"
            "  node [shape=box];\n"
            "  subgraph cluster_stream0 {\n"
            "    label=\"stream 0\";\n"
            "    n0 [label=\"KERNEL\\nkernel fill\\ngrid (1, 1, 1) block (256, 1, 1)\\n"
            "arg 0: out 256 B\\narg 1: value 4 B = 3 (0x3)\\narg 2: value 4 B = 64 (0x40)\"];\n"
            "    n1 [label=\"KERNEL\\nkernel add_one\\ngrid (1, 1, 1) block (256, 1, 1)\\n"
            "arg 0: in 256 B\\narg 1: out 256 B\\narg 2: value 4 B = 64 (0x40)\"];\n"
            "    n2 [label=\"MEMCPY\\nmemcpy 128 B device to device\\nfrom +64 of 256 B\\n"
            "to +0 of 128 B\"];\n"
            "    n3 [label=\"MEMSET\\nmemset 256 B to 0x00\\nat +0 of 256 B\"];\n"
            "  }\n"
            "  n0 -> n1;\n"
            "  n1 -> n2;\n"
            "  n2 -> n3;\n"
            "}\n");
  EXPECT_EQ(Graph{}.dot(), "");
}

TEST_F(CaptureDiagnosticsTest, TheDriversOwnDotIsWrittenOnRequest) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("graphcap-driver-dot-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
       "-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
  std::filesystem::create_directories(dir);
  ASSERT_EQ(setenv("GRAPHCAP_DRIVER_DOT_DIR", dir.c_str(), 1), 0);
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 64), IsOk());
  Result<Graph> graph = device_->end_capture(stream());
  unsetenv("GRAPHCAP_DRIVER_DOT_DIR");
  ASSERT_THAT(graph, IsOk());
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_THAT(files[0].filename().string(), HasSubstr("graphcap-recording-"));
  std::ifstream in(files[0]);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("digraph"));
  std::filesystem::remove_all(dir);
}

// ---- GRAPHCAP_LOG=debug ----------------------------------------------------------------------

class CapturedDebugLog {
 public:
  CapturedDebugLog() {
    previous_ = set_log_sink([this](LogLevel level, std::string_view message) {
      if (level != LogLevel::debug) return;
      std::lock_guard lock(mutex_);
      lines_.emplace_back(message);
    });
  }
  ~CapturedDebugLog() { set_log_sink(previous_); }
  std::vector<std::string> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  LogSink previous_;
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

TEST_F(CaptureDiagnosticsTest, TheDebugLogTracesARecording) {
  Buffer x = upload_u32(iota_u32(64));
  CapturedDebugLog debug;
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 64), IsOk());
  ASSERT_THAT(device_->fill(x, std::uint8_t{1}, stream()), IsOk());
  ASSERT_THAT(device_->end_capture(stream()), IsOk());
  const std::vector<std::string> lines = debug.lines();
  EXPECT_THAT(lines, Contains(AllOf(HasSubstr("begins on stream 0"), HasSubstr("global mode"))));
  EXPECT_THAT(lines, Contains(HasSubstr(": node 0 KERNEL: kernel add_one grid (1, 1, 1)")));
  EXPECT_THAT(lines, Contains(HasSubstr(": node 1 MEMSET: memset 256 B to 0x01")));
  EXPECT_THAT(lines, Contains(AllOf(HasSubstr("ends on stream 0: 2 nodes (KERNEL 1, MEMSET 1)"),
                                    HasSubstr("instantiated"))));
}

// ---- Refusals of invalidated recordings ----------------------------------------------------

TEST_F(CaptureDiagnosticsTest, AnInvalidatedRecordingNamesTheFirstOperationThatSawIt) {
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(fill(x, 3, 64), IsOk());
  // Outside graphcap: a wait for the recording stream invalidates the driver's recording (900).
  EXPECT_EQ(device_->driver().cuStreamSynchronize(stream().native_handle()),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_THAT(add_one(x, x, 64), StatusIs(Errc::driver, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED));
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::doomed, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                       AllOf(HasSubstr("launch of add_one"),
                             HasSubstr("first graphcap operation to see the recording "
                                       "invalidated"),
                             HasSubstr("the one before it was kernel fill"),
                             HasSubstr("thread_local"))));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

TEST_F(CaptureDiagnosticsTest, AnInvalidationNoOperationSawIsExplainedAtEnd) {
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(add_one(x, x, 64), IsOk());
  EXPECT_EQ(device_->driver().cuStreamSynchronize(stream().native_handle()),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_THAT(device_->end_capture(stream()),
              StatusIs(Errc::driver, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                       AllOf(HasSubstr("no graphcap operation saw the invalidation"),
                             HasSubstr("the last one recorded was kernel add_one"))));
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  // The claims carry the refusal; the stream works again.
  EXPECT_THAT(device_->read(x, stream()), StatusIs(Errc::driver));
  ASSERT_THAT(device_->fill(x, std::uint32_t{1}, stream()), IsOk());
  EXPECT_THAT(read_u32(x), Each(1u));
}

// ---- the driver's own account of an invalidation (DriverApi::capture_invalidation) ---------

// The number of the call `entry` from `thread` that got `result`, in the fake's call log (1-based),
// or 0 if it is not there.
std::size_t call_number(const std::vector<fake::CallRecord>& calls, const char* entry,
                        std::thread::id thread, CUresult result) {
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].entry_point == entry && calls[i].thread == thread && calls[i].result == result) {
      return i + 1;
    }
  }
  return 0;
}

TEST_F(CaptureDiagnosticsTest, AnInvalidatedRecordingQuotesTheFakesCallLogForTheOffendingCall) {
  Buffer x = upload_u32(iota_u32(64));
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(fill(x, 3, 64), IsOk());
  // Outside graphcap, on the recording thread: a wait for the recording stream (900).
  EXPECT_EQ(device_->driver().cuStreamSynchronize(stream().native_handle()),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_THAT(add_one(x, x, 64), StatusIs(Errc::driver, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED));
  Result<Graph> graph = device_->end_capture(stream());
  // graphcap's own account, on every driver.
  ASSERT_THAT(graph, StatusIs(Errc::doomed, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                              AllOf(HasSubstr("launch of add_one"),
                                    HasSubstr("the one before it was kernel fill"),
                                    HasSubstr("thread_local"))));
  if (on_fake()) {
    const std::size_t n = call_number(fake()->calls(), "cuStreamSynchronize",
                                      std::this_thread::get_id(),
                                      CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ASSERT_NE(n, 0u);
    EXPECT_THAT(graph.error().message(),
                HasSubstr("(CaptureOptions::mode); the driver's account: the fake's call log: "
                          "call " + std::to_string(n) + " (cuStreamSynchronize, from the "
                          "recording's own thread 1) returned "
                          "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidated the capture)"));
  } else {
    // libcuda keeps no call log: graphcap's account stands alone.
    EXPECT_THAT(graph.error().message(), ::testing::Not(HasSubstr("the driver's account")));
  }
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
}

TEST_F(CaptureDiagnosticsTest, AnInvalidationByAnotherThreadIsNamedWithItsThread) {
  Buffer x = upload_u32(iota_u32(64));
  CUcontext context = nullptr;
  ASSERT_EQ(device_->driver().cuCtxGetCurrent(&context), CUDA_SUCCESS);
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());  // global mode (the default)
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  ASSERT_THAT(fill(x, 3, 64), IsOk());
  // Another thread allocates from the driver directly, around graphcap's checks: in global mode
  // that is prohibited (900) and invalidates the recording; no graphcap operation sees it.
  CUresult allocated = CUDA_SUCCESS;
  std::thread::id other;
  std::thread worker([&] {
    other = std::this_thread::get_id();
    if (device_->driver().cuCtxSetCurrent(context) != CUDA_SUCCESS) return;
    CUdeviceptr pointer = 0;
    allocated = device_->driver().cuMemAlloc(&pointer, 256);
    if (allocated == CUDA_SUCCESS) (void)device_->driver().cuMemFree(pointer);
  });
  worker.join();
  ASSERT_EQ(allocated, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  Result<Graph> graph = device_->end_capture(stream());
  ASSERT_THAT(graph, StatusIs(Errc::driver, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                              AllOf(HasSubstr("no graphcap operation saw the invalidation"),
                                    HasSubstr("the last one recorded was kernel fill"),
                                    HasSubstr("in global mode"))));
  if (on_fake()) {
    const std::size_t n = call_number(fake()->calls(), "cuMemAlloc", other,
                                      CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    ASSERT_NE(n, 0u);
    EXPECT_THAT(graph.error().message(),
                HasSubstr("; the driver's account: the fake's call log: call " +
                          std::to_string(n) + " (cuMemAlloc, from thread 2; the recording began "
                          "on thread 1) returned CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and "
                          "invalidated the capture)"));
  } else {
    EXPECT_THAT(graph.error().message(), ::testing::Not(HasSubstr("the driver's account")));
  }
  // The stream records again, and the account of the old recording is gone with it.
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  ASSERT_THAT(device_->begin_capture(stream()), IsOk());
  if (on_fake()) {
    EXPECT_EQ(fake()->capture_invalidation(stream().native_handle()), "");
  }
  ASSERT_THAT(fill(x, 4, 64), IsOk());
  ASSERT_THAT(device_->end_capture(stream()), IsOk());
}

// A scope whose end was refused with the recording still open (a loop left open) does
// not leave the stream capturing once the scope is gone.
TEST_F(CaptureDiagnosticsTest, ACaptureScopeWhoseEndWasRefusedLeavesNoRecordingOpen) {
  ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
  {
    CaptureScope scope(*device_, stream());
    ASSERT_THAT(scope.began(), IsOk());
    Result<Loop> loop = device_->begin_while(stream(), false);
    ASSERT_THAT(loop, IsOk());
    EXPECT_THAT(scope.end(), StatusIs(Errc::graph_state, CUDA_SUCCESS, HasSubstr("loop")));
    EXPECT_TRUE(scope.open()) << "the recording is still open: the scope still owns it";
  }
  EXPECT_EQ(stream().capture_state(), CaptureState::no_capture);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  ASSERT_EQ(device_->driver().cuStreamIsCapturing(stream().native_handle(), &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  ASSERT_THAT(device_->sync(stream()), IsOk());
}

}  // namespace
}  // namespace graphcap::testing
