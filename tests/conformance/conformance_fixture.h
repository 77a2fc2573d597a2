// The driver conformance suite's fixture: each test gets the driver under test (make_test_driver():
// the fake in graphcap_tests_fake, libcuda in graphcap_tests_cuda), its own current primary
// context on device 0, and RAII owners for every handle it creates. Owners release their handle in
// RELAXED capture mode and end any capture still open on a stream before destroying it, so a
// failing test can neither invalidate nor leave behind a capture that a later test would inherit.
// TearDown checks the test restored the thread's capture mode and (on the fake) leaked nothing.
//
// What each test checks is a row of docs/cuda-driver-facts.md; docs/conformance.md maps rows to
// tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/driver_api.h>

#include "matchers.h"
#include "test_driver.h"

namespace graphcap {
// Failures print CUDA's names, not bare numbers.
void PrintTo(CUresult code, std::ostream* os);
void PrintTo(CUstreamCaptureStatus status, std::ostream* os);
void PrintTo(CUstreamCaptureMode mode, std::ostream* os);
void PrintTo(CUgraphNodeType type, std::ostream* os);
void PrintTo(CUgraphExecUpdateResult result, std::ostream* os);
}  // namespace graphcap

namespace graphcap::testing {

// Sets the calling thread's capture mode for a scope, then puts back the mode it replaced.
class ThreadCaptureMode {
 public:
  ThreadCaptureMode(DriverApi& api, CUstreamCaptureMode mode);
  ThreadCaptureMode(const ThreadCaptureMode&) = delete;
  ThreadCaptureMode& operator=(const ThreadCaptureMode&) = delete;
  ~ThreadCaptureMode();
  // The result of the exchange that set the mode.
  CUresult status() const noexcept { return status_; }
  // The mode the thread had before.
  CUstreamCaptureMode previous() const noexcept { return previous_; }

 private:
  DriverApi* api_;
  CUresult status_;
  CUstreamCaptureMode previous_;
};

// Owns one driver handle of type H, destroyed with DriverApi::*Destroy. Move-only.
template <class H, CUresult (DriverApi::*Destroy)(H)>
class Owned {
 public:
  Owned() = default;
  Owned(DriverApi& api, H handle) : api_(&api), handle_(handle) {}
  Owned(Owned&& other) noexcept
      : api_(other.api_), handle_(std::exchange(other.handle_, H{})) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      reset();
      api_ = other.api_;
      handle_ = std::exchange(other.handle_, H{});
    }
    return *this;
  }
  ~Owned() { reset(); }

  H get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != H{}; }

  // Destroys the handle now; returns what the driver said (CUDA_SUCCESS when there was none).
  CUresult reset() {
    if (handle_ == H{}) return CUDA_SUCCESS;
    const H handle = std::exchange(handle_, H{});
    ThreadCaptureMode relaxed(*api_, CU_STREAM_CAPTURE_MODE_RELAXED);
    return (api_->*Destroy)(handle);
  }
  // Stops owning a handle the driver already destroyed (a test call consumed it).
  H release() noexcept { return std::exchange(handle_, H{}); }

 private:
  DriverApi* api_ = nullptr;
  H handle_{};
};

using RawEvent = Owned<CUevent, &DriverApi::cuEventDestroy>;
using DeviceMemory = Owned<CUdeviceptr, &DriverApi::cuMemFree>;
using HostMemory = Owned<void*, &DriverApi::cuMemFreeHost>;
using RawModule = Owned<CUmodule, &DriverApi::cuModuleUnload>;
using RawGraph = Owned<CUgraph, &DriverApi::cuGraphDestroy>;
using Exec = Owned<CUgraphExec, &DriverApi::cuGraphExecDestroy>;

// A stream; ends a capture still open on it (discarding the graph) before destroying it.
class RawStream {
 public:
  RawStream() = default;
  RawStream(DriverApi& api, CUstream stream) : api_(&api), stream_(stream) {}
  RawStream(RawStream&& other) noexcept
      : api_(other.api_), stream_(std::exchange(other.stream_, nullptr)) {}
  RawStream& operator=(RawStream&& other) noexcept {
    if (this != &other) {
      reset();
      api_ = other.api_;
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  ~RawStream() { reset(); }

  // Ends any capture still open on the stream, then destroys it.
  void reset();
  // Stops owning a stream the driver already destroyed (a test call consumed it).
  CUstream release() noexcept { return std::exchange(stream_, nullptr); }

  CUstream get() const noexcept { return stream_; }
  explicit operator bool() const noexcept { return stream_ != nullptr; }

 private:
  DriverApi* api_ = nullptr;
  CUstream stream_ = nullptr;
};

// The launch shape tests use unless they say otherwise: fewer threads than elements, so the
// kernels' grid-stride loops are exercised.
inline constexpr unsigned kGrid = 2;
inline constexpr unsigned kBlock = 64;

inline constexpr std::size_t kMiB = std::size_t{1} << 20;

class ConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // How many devices the test's driver should have: the fake is made with that many (the real
  // driver has the machine's). Tests of several devices override it and skip below it.
  virtual int devices() const { return 1; }

  DriverApi& api() { return *api_; }
  TestDriver& test_driver() { return *test_driver_; }
  CUcontext context() const noexcept { return context_; }
  CUdevice device() const noexcept { return device_; }

  // ---- handles (each EXPECTs success and returns an empty owner on failure) -----------------
  RawStream new_stream();  // non-blocking: never synchronizes with the legacy stream
  RawEvent new_event();    // timing disabled
  DeviceMemory alloc(std::size_t bytes);
  RawModule load_test_kernels();
  CUfunction kernel(const RawModule& module, const char* name);
  // Instantiates with `flags`, expecting CUDA_SUCCESS.
  Exec instantiate(CUgraph graph, unsigned long long flags = 0);

  // ---- launches ------------------------------------------------------------------------------
  // cuLaunchKernel with the arguments' addresses as kernelParams (pass CUdeviceptr for pointers
  // and std::uint32_t for values: the sizes must be the kernel's).
  template <class... Args>
  CUresult launch(CUfunction function, CUstream stream, unsigned grid, unsigned block,
                  Args... args) {
    void* params[] = {static_cast<void*>(&args)..., nullptr};
    return api().cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, stream, params, nullptr);
  }

  // ---- memory --------------------------------------------------------------------------------
  // Copies `values` to `dst` on `stream` and waits.
  void upload(CUdeviceptr dst, const std::vector<std::uint32_t>& values, CUstream stream);
  // Reads `count` values from `src` on `stream`, after waiting for it.
  std::vector<std::uint32_t> download(CUdeviceptr src, std::size_t count, CUstream stream);
  std::vector<std::uint8_t> download_bytes(CUdeviceptr src, std::size_t count, CUstream stream);
  // The device's free memory (cuMemGetInfo).
  std::size_t free_memory();

  // ---- capture -------------------------------------------------------------------------------
  CUstreamCaptureStatus capture_status(CUstream stream);
  std::vector<CUgraphNodeType> node_types(CUgraph graph);
  // Begins a capture on `stream`, runs `body` (which records work on it), ends it; EXPECTs
  // every step to succeed.
  RawGraph capture(CUstream stream, const std::function<void()>& body,
                CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL);
  // The capture on `stream` was invalidated: its status says so, a further captured call returns
  // 901, ending it returns 901 with a NULL graph and the stream is usable again.
  void expect_invalidated(CUstream stream, CUfunction probe_kernel);
  // The capture on `stream` is still active and ends into a graph of `nodes` nodes.
  void expect_still_active(CUstream stream, std::size_t nodes = 0);

 private:
  std::unique_ptr<TestDriver> test_driver_;
  DriverApi* api_ = nullptr;
  CUdevice device_{};
  CUcontext context_ = nullptr;
  bool context_retained_ = false;
  CUstreamCaptureMode initial_mode_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
};

// A ConformanceTest with the test kernels loaded (module_, and each kernel as <name>_) and a
// stream s_. A subclass makes its own handles after SetUp and releases them before TearDown, which
// releases these before the base's checks.
class KernelsTest : public ConformanceTest {
 protected:
  void SetUp() override;
  void TearDown() override;

  RawModule module_;
  CUfunction empty_ = nullptr;
  CUfunction fill_ = nullptr;
  CUfunction add_one_ = nullptr;
  CUfunction copy_ = nullptr;
  CUfunction axpy_ = nullptr;
  CUfunction set_condition_ = nullptr;
  CUfunction countdown_ = nullptr;
  CUfunction pdl_add_one_ = nullptr;
  RawStream s_;
};

// A KernelsTest with what conditional bodies are captured with: 64 words of device memory
// (word(i) is the i-th) and two more streams, body_ and inner_ (a body's, a nested body's).
class BodiesTest : public KernelsTest {
 protected:
  void SetUp() override;
  void TearDown() override;

  CUdeviceptr word(std::size_t i) const { return words_.get() + i * sizeof(std::uint32_t); }
  // Where the capture on `stream` stands (cuStreamGetCaptureInfo): the graph it builds and the
  // nodes the next node captured there depends on; the driver's code.
  CUresult capture_point(CUstream stream, CUgraph* graph, std::vector<CUgraphNode>* after);

  DeviceMemory words_;
  RawStream body_;
  RawStream inner_;
};

// n consecutive values from `first`.
std::vector<std::uint32_t> iota(std::size_t n, std::uint32_t first = 0);

// The three capture modes, as the values of a TEST_P's parameter (or of one of them).
inline auto every_capture_mode() {
  return ::testing::Values(CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                           CU_STREAM_CAPTURE_MODE_RELAXED);
}
// A test parameterised by the capture mode alone, named for it (GLOBAL, THREAD_LOCAL, RELAXED).
std::string capture_mode_name(const ::testing::TestParamInfo<CUstreamCaptureMode>& param);

}  // namespace graphcap::testing
