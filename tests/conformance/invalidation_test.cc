// Facts file, "What invalidates a capture": every cell of the table, for calls made on the thread
// that captures. A refused call returns its error and invalidates the capture (a later captured
// call returns 901; ending returns 901 with a NULL graph and the stream back to NONE and usable);
// an allowed call succeeds and the capture ends into its graph. The other-thread rules are in
// cross_thread_capture_test.cc.
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

// What the test prepares before the capture begins, and what the calls made during it create.
struct Scene {
  DriverApi* api = nullptr;
  const void* kernel_image = nullptr;
  RawModule module;
  CUfunction empty = nullptr;
  RawStream other;             // idle: never captured, nothing pending
  RawStream s;                 // the capturing stream
  RawEvent captured_event;     // recorded inside the capture by the calls that need it
  RawEvent uncaptured_event;   // recorded on `other` and completed before the capture
  DeviceMemory memory;         // allocated before the capture
  RawModule spare_module;      // loaded before the capture (the one a call may unload)
  RawGraph graph;              // one empty kernel, captured on `other` before
  Exec exec;                   // its executable
  // Created by calls during the capture; released after it ends.
  DeviceMemory new_memory;
  HostMemory new_host_memory;
  RawModule new_module;
  RawEvent new_event;
  RawStream new_stream;
};

// The table's rows: which result each capture mode gets.
enum class Row {
  kSyncOfCapturingStream,  // 900+I in every mode
  kCapturedEvent,          // 907+I in every mode
  kUncapturedDependency,   // 905+I in every mode
  kUnsafeOnThisThread,     // 900+I in GLOBAL and THREAD_LOCAL, OK in RELAXED
  kAlwaysAllowed,          // OK in every mode
};

struct Call {
  const char* name;
  Row row;
  CUresult (*run)(Scene&);
};

CUresult expected_result(Row row, CUstreamCaptureMode mode) {
  switch (row) {
    case Row::kSyncOfCapturingStream: return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    case Row::kCapturedEvent: return CUDA_ERROR_CAPTURED_EVENT;
    case Row::kUncapturedDependency: return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    case Row::kUnsafeOnThisThread:
      return mode == CU_STREAM_CAPTURE_MODE_RELAXED ? CUDA_SUCCESS
                                                    : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    case Row::kAlwaysAllowed: return CUDA_SUCCESS;
  }
  return CUDA_ERROR_UNKNOWN;
}

// Records the scene's event inside the capture (the rows about captured events need one).
CUresult record_in_capture(Scene& scene) {
  return scene.api->cuEventRecord(scene.captured_event.get(), scene.s.get());
}

const Call kCalls[] = {
    // Row: cuStreamSynchronize(s), cuStreamQuery(s), cuCtxSynchronize, cuGraphLaunch(exec, s).
    {"cuStreamSynchronize_s", Row::kSyncOfCapturingStream,
     [](Scene& scene) { return scene.api->cuStreamSynchronize(scene.s.get()); }},
    {"cuStreamQuery_s", Row::kSyncOfCapturingStream,
     [](Scene& scene) { return scene.api->cuStreamQuery(scene.s.get()); }},
    {"cuCtxSynchronize", Row::kSyncOfCapturingStream,
     [](Scene& scene) { return scene.api->cuCtxSynchronize(); }},
    {"cuGraphLaunch_s", Row::kSyncOfCapturingStream,
     [](Scene& scene) { return scene.api->cuGraphLaunch(scene.exec.get(), scene.s.get()); }},

    // Row: cuEventQuery/cuEventSynchronize of an event recorded inside this capture.
    {"cuEventQuery_captured", Row::kCapturedEvent,
     [](Scene& scene) {
       if (const CUresult recorded = record_in_capture(scene); recorded != CUDA_SUCCESS) {
         return recorded;
       }
       return scene.api->cuEventQuery(scene.captured_event.get());
     }},
    {"cuEventSynchronize_captured", Row::kCapturedEvent,
     [](Scene& scene) {
       if (const CUresult recorded = record_in_capture(scene); recorded != CUDA_SUCCESS) {
         return recorded;
       }
       return scene.api->cuEventSynchronize(scene.captured_event.get());
     }},

    // Row: cuStreamWaitEvent(s, event recorded outside capture, 0).
    {"cuStreamWaitEvent_uncaptured", Row::kUncapturedDependency,
     [](Scene& scene) {
       return scene.api->cuStreamWaitEvent(scene.s.get(), scene.uncaptured_event.get(),
                                           CU_EVENT_WAIT_DEFAULT);
     }},

    // Row: on the same thread, cuMemAlloc, cuMemFree, cuMemAllocHost, sync of another idle
    // stream, cuEventQuery/Synchronize of an uncaptured event, cuModuleUnload, cuGraphExecDestroy.
    {"cuMemAlloc", Row::kUnsafeOnThisThread,
     [](Scene& scene) {
       CUdeviceptr pointer = 0;
       const CUresult result = scene.api->cuMemAlloc(&pointer, 256);
       if (result == CUDA_SUCCESS) scene.new_memory = DeviceMemory(*scene.api, pointer);
       return result;
     }},
    {"cuMemFree", Row::kUnsafeOnThisThread,
     [](Scene& scene) {
       const CUresult result = scene.api->cuMemFree(scene.memory.get());
       if (result == CUDA_SUCCESS) scene.memory.release();
       return result;
     }},
    {"cuMemAllocHost", Row::kUnsafeOnThisThread,
     [](Scene& scene) {
       void* pointer = nullptr;
       const CUresult result = scene.api->cuMemAllocHost(&pointer, 256);
       if (result == CUDA_SUCCESS) scene.new_host_memory = HostMemory(*scene.api, pointer);
       return result;
     }},
    {"cuStreamSynchronize_idle", Row::kUnsafeOnThisThread,
     [](Scene& scene) { return scene.api->cuStreamSynchronize(scene.other.get()); }},
    {"cuEventQuery_uncaptured", Row::kUnsafeOnThisThread,
     [](Scene& scene) { return scene.api->cuEventQuery(scene.uncaptured_event.get()); }},
    {"cuEventSynchronize_uncaptured", Row::kUnsafeOnThisThread,
     [](Scene& scene) { return scene.api->cuEventSynchronize(scene.uncaptured_event.get()); }},
    {"cuModuleUnload", Row::kUnsafeOnThisThread,
     [](Scene& scene) {
       const CUresult result = scene.api->cuModuleUnload(scene.spare_module.get());
       if (result == CUDA_SUCCESS) scene.spare_module.release();
       return result;
     }},
    {"cuGraphExecDestroy", Row::kUnsafeOnThisThread,
     [](Scene& scene) {
       const CUresult result = scene.api->cuGraphExecDestroy(scene.exec.get());
       if (result == CUDA_SUCCESS) scene.exec.release();
       return result;
     }},

    // Row: cuMemGetInfo, cuModuleLoadData, cuEventCreate, cuStreamCreate, launches on another
    // idle stream.
    {"cuMemGetInfo", Row::kAlwaysAllowed,
     [](Scene& scene) {
       std::size_t free = 0;
       std::size_t total = 0;
       const CUresult result = scene.api->cuMemGetInfo(&free, &total);
       EXPECT_GT(total, 0u);
       EXPECT_LE(free, total);
       return result;
     }},
    {"cuModuleLoadData", Row::kAlwaysAllowed,
     [](Scene& scene) {
       CUmodule module = nullptr;
       const CUresult result = scene.api->cuModuleLoadData(&module, scene.kernel_image);
       if (result == CUDA_SUCCESS) scene.new_module = RawModule(*scene.api, module);
       return result;
     }},
    {"cuEventCreate", Row::kAlwaysAllowed,
     [](Scene& scene) {
       CUevent event = nullptr;
       const CUresult result = scene.api->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING);
       if (result == CUDA_SUCCESS) scene.new_event = RawEvent(*scene.api, event);
       return result;
     }},
    {"cuStreamCreate", Row::kAlwaysAllowed,
     [](Scene& scene) {
       CUstream stream = nullptr;
       const CUresult result = scene.api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
       if (result == CUDA_SUCCESS) scene.new_stream = RawStream(*scene.api, stream);
       return result;
     }},
    {"cuLaunchKernel_idle", Row::kAlwaysAllowed,
     [](Scene& scene) {
       return scene.api->cuLaunchKernel(scene.empty, 1, 1, 1, 1, 1, 1, 0, scene.other.get(),
                                        nullptr, nullptr);
     }},
};

using Param = std::tuple<Call, CUstreamCaptureMode>;

class SameThreadCall : public ConformanceTest, public ::testing::WithParamInterface<Param> {
 protected:
  void SetUp() override {
    ConformanceTest::SetUp();
    if (HasFatalFailure()) return;
    scene_ = std::make_unique<Scene>();
    Scene& scene = *scene_;
    scene.api = &api();
    scene.kernel_image = test_driver().kernel_image().data();
    scene.module = load_test_kernels();
    scene.empty = kernel(scene.module, "empty");
    scene.other = new_stream();
    scene.s = new_stream();
    scene.captured_event = new_event();
    scene.uncaptured_event = new_event();
    scene.memory = alloc(256);
    scene.spare_module = load_test_kernels();
    ASSERT_FALSE(HasFailure());
    scene.graph = capture(scene.other.get(), [&] {
      EXPECT_EQ(launch(scene.empty, scene.other.get(), 1, 1), CUDA_SUCCESS);
    });
    scene.exec = instantiate(scene.graph.get());
    ASSERT_EQ(api().cuEventRecord(scene.uncaptured_event.get(), scene.other.get()),
              CUDA_SUCCESS);
    ASSERT_EQ(api().cuStreamSynchronize(scene.other.get()), CUDA_SUCCESS);
    ASSERT_FALSE(HasFailure());
  }
  void TearDown() override {
    scene_.reset();  // before the context goes
    ConformanceTest::TearDown();
  }

  std::unique_ptr<Scene> scene_;
};

TEST_P(SameThreadCall, FollowsTheTable) {
  const auto& [call, mode] = GetParam();
  Scene& scene = *scene_;
  ASSERT_EQ(api().cuStreamBeginCapture(scene.s.get(), mode), CUDA_SUCCESS);

  const CUresult expected = expected_result(call.row, mode);
  EXPECT_EQ(call.run(scene), expected) << call.name;

  if (expected == CUDA_SUCCESS) {
    expect_still_active(scene.s.get(), 0);
  } else {
    expect_invalidated(scene.s.get(), scene.empty);
  }
  if (call.row == Row::kAlwaysAllowed) {
    // The idle stream's launch ran eagerly, outside the capture.
    EXPECT_EQ(api().cuStreamSynchronize(scene.other.get()), CUDA_SUCCESS);
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& param) {
  return std::string(std::get<0>(param.param).name) + "_" +
         ::testing::PrintToString(std::get<1>(param.param));
}

INSTANTIATE_TEST_SUITE_P(Invalidation, SameThreadCall,
                         ::testing::Combine(::testing::ValuesIn(kCalls), every_capture_mode()),
                         param_name);

// After an invalidation the stream captures again, cleanly.
using Invalidation = KernelsTest;

TEST_F(Invalidation, AnInvalidatedStreamCanCaptureAgain) {
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  expect_invalidated(s_.get(), empty_);

  RawGraph graph =
      capture(s_.get(), [&] { EXPECT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS); });
  ::testing::Matcher<std::vector<CUgraphNodeType>> one_kernel =
      ::testing::ElementsAre(CU_GRAPH_NODE_TYPE_KERNEL);
  EXPECT_THAT(node_types(graph.get()), one_kernel);
}

TEST_F(Invalidation, EveryLaterCapturedCallReturnsInvalidated) {
  DeviceMemory buffer = alloc(64);
  RawEvent event = new_event();
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamQuery(s_.get()), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  const std::uint8_t bytes[64] = {};
  EXPECT_EQ(api().cuMemcpyHtoDAsync(buffer.get(), bytes, sizeof bytes, s_.get()),
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(api().cuMemsetD8Async(buffer.get(), 1, 64, s_.get()),
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  expect_invalidated(s_.get(), empty_);
}

}  // namespace
}  // namespace graphcap::testing
