// Fixture for the fake driver's unit tests: a fresh FakeDriver with the test kernels, cuInit done,
// device 0's primary context current, the test kernels loaded and one non-blocking stream. After
// the test: no handle the test made is still alive, no violation was recorded (unless the test
// expects some), and tearing everything down leaves zero live handles and nothing reclaimed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/fake/fake_driver.h>

#include "kernels/test_kernels.h"
#include "matchers.h"

namespace graphcap::fake::unit {

// The options of a fake for tests that study violations: recorded only, the work runs on
// (FakeDriverOptions::strict false; strict, the default, fails the work's stream as well).
inline FakeDriverOptions record_only(FakeDriverOptions options = {}) {
  options.strict = false;
  return options;
}

class FakeDriverTest : public ::testing::Test {
  // Public: table-driven tests reach the fixture from lambdas.
 public:
  explicit FakeDriverTest(FakeDriverOptions options = {}) : fake_(options) {}

  void SetUp() override {
    graphcap::testing::register_test_kernels(fake_);
    ASSERT_EQ(fake_.cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuDevicePrimaryCtxRetain(&context_, 0), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuCtxSetCurrent(context_), CUDA_SUCCESS);
    image_ = fake_.module_image({"empty", "add_one", "fill", "axpy", "copy"});
    ASSERT_EQ(fake_.cuModuleLoadData(&module_, image_.data()), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuModuleGetFunction(&empty_, module_, "empty"), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuModuleGetFunction(&add_one_, module_, "add_one"), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuModuleGetFunction(&fill_, module_, "fill"), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuModuleGetFunction(&axpy_, module_, "axpy"), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuModuleGetFunction(&copy_, module_, "copy"), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    baseline_ = fake_.live_handles();
  }

  void TearDown() override {
    if (context_ == nullptr) return;
    // A test that faulted the strict fake on purpose: the fault is sticky (nothing that uses the
    // context works any more, frees included), as a GPU process is done after one.
    if (expect_fault_) return;
    EXPECT_EQ(fake_.live_handles(), baseline_) << "the test leaked a handle";
    if (!expect_violations_) {
      EXPECT_THAT(fake_.violations(), ::testing::IsEmpty());
    }
    EXPECT_EQ(fake_.cuStreamDestroy(stream_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuModuleUnload(module_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    EXPECT_EQ(fake_.live_handles().total(), 0u);
    EXPECT_EQ(fake_.reclaimed_handles(), 0u);
  }

  // ---- memory ---------------------------------------------------------------------------------
  CUdeviceptr alloc(std::size_t bytes) {
    CUdeviceptr pointer = 0;
    EXPECT_EQ(fake_.cuMemAlloc(&pointer, bytes), CUDA_SUCCESS);
    return pointer;
  }
  void free(CUdeviceptr pointer) { EXPECT_EQ(fake_.cuMemFree(pointer), CUDA_SUCCESS); }
  // Copies `values` in on `stream` and waits.
  void upload(CUdeviceptr dst, const std::vector<std::uint32_t>& values, CUstream stream) {
    EXPECT_EQ(fake_.cuMemcpyHtoDAsync(dst, values.data(), values.size() * 4, stream), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamSynchronize(stream), CUDA_SUCCESS);
  }
  // Reads through the driver (a pageable copy: synchronous, after all queued work).
  std::vector<std::uint32_t> download(CUdeviceptr src, std::size_t count, CUstream stream) {
    std::vector<std::uint32_t> values(count);
    EXPECT_EQ(fake_.cuMemcpyDtoHAsync(values.data(), src, count * 4, stream), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamSynchronize(stream), CUDA_SUCCESS);
    return values;
  }
  // Reads simulated memory directly, running nothing.
  std::vector<std::uint32_t> peek(CUdeviceptr src, std::size_t count) {
    std::vector<std::uint32_t> values(count);
    EXPECT_TRUE(fake_.read_device(src, std::as_writable_bytes(std::span(values))));
    return values;
  }

  // ---- launches -------------------------------------------------------------------------------
  template <class... Args>
  CUresult launch(CUfunction function, CUstream stream, Args... args) {
    void* params[] = {static_cast<void*>(&args)..., nullptr};
    return fake_.cuLaunchKernel(function, 2, 1, 1, 64, 1, 1, 0, stream, params, nullptr);
  }
  CUresult fill(CUstream stream, CUdeviceptr dst, std::uint32_t value, std::uint32_t n) {
    return launch(fill_, stream, dst, value, n);
  }
  CUresult add_one(CUstream stream, CUdeviceptr src, CUdeviceptr dst, std::uint32_t n) {
    return launch(add_one_, stream, src, dst, n);
  }
  CUresult empty(CUstream stream) { return launch(empty_, stream); }

  // ---- capture --------------------------------------------------------------------------------
  CUstreamCaptureStatus status(CUstream stream) {
    auto status = static_cast<CUstreamCaptureStatus>(-1);
    EXPECT_EQ(fake_.cuStreamIsCapturing(stream, &status), CUDA_SUCCESS);
    return status;
  }
  CUgraph capture(CUstream stream, const std::function<void()>& body,
                  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL) {
    EXPECT_EQ(fake_.cuStreamBeginCapture(stream, mode), CUDA_SUCCESS);
    body();
    CUgraph graph = nullptr;
    EXPECT_EQ(fake_.cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    EXPECT_NE(graph, nullptr);
    return graph;
  }
  std::vector<CUgraphNode> nodes(CUgraph graph) {
    std::size_t count = 0;
    EXPECT_EQ(fake_.cuGraphGetNodes(graph, nullptr, &count), CUDA_SUCCESS);
    std::vector<CUgraphNode> result(count);
    if (count != 0) {
      EXPECT_EQ(fake_.cuGraphGetNodes(graph, result.data(), &count), CUDA_SUCCESS);
    }
    return result;
  }
  std::vector<CUgraphNodeType> node_types(CUgraph graph) {
    std::vector<CUgraphNodeType> types;
    for (CUgraphNode node : nodes(graph)) {
      auto type = static_cast<CUgraphNodeType>(-1);
      EXPECT_EQ(fake_.cuGraphNodeGetType(node, &type), CUDA_SUCCESS);
      types.push_back(type);
    }
    return types;
  }
  CUgraphExec instantiate(CUgraph graph, unsigned long long flags = 0) {
    CUgraphExec exec = nullptr;
    EXPECT_EQ(fake_.cuGraphInstantiateWithFlags(&exec, graph, flags), CUDA_SUCCESS);
    return exec;
  }
  CUstream new_stream(unsigned flags = CU_STREAM_NON_BLOCKING) {
    CUstream stream = nullptr;
    EXPECT_EQ(fake_.cuStreamCreate(&stream, flags), CUDA_SUCCESS);
    return stream;
  }
  CUevent new_event(unsigned flags = CU_EVENT_DEFAULT) {
    CUevent event = nullptr;
    EXPECT_EQ(fake_.cuEventCreate(&event, flags), CUDA_SUCCESS);
    return event;
  }
  // Swaps the calling thread's capture mode; returns the previous one.
  CUstreamCaptureMode set_mode(CUstreamCaptureMode mode) {
    EXPECT_EQ(fake_.cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
    return mode;
  }
  // Ends whatever capture `stream` is in, discarding the result.
  void end_any_capture(CUstream stream) {
    CUgraph graph = nullptr;
    fake_.cuStreamEndCapture(stream, &graph);
    if (graph != nullptr) {
      EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
    }
  }

  FakeDriver fake_;
  CUcontext context_ = nullptr;
  std::vector<std::byte> image_;
  CUmodule module_ = nullptr;
  CUfunction empty_ = nullptr, add_one_ = nullptr, fill_ = nullptr, axpy_ = nullptr,
             copy_ = nullptr;
  CUstream stream_ = nullptr;
  LiveHandles baseline_;
  bool expect_violations_ = false;
  bool expect_fault_ = false;
};

inline bool mentions(const std::vector<std::string>& texts, const std::string& a,
                     const std::string& b = {}) {
  for (const std::string& text : texts) {
    if (text.find(a) != std::string::npos && text.find(b) != std::string::npos) return true;
  }
  return false;
}

}  // namespace graphcap::fake::unit
