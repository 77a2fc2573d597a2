// Modules, kernels and launches: the fake image format, cuModuleLoadData's checks, functions of
// unloaded modules, launch-shape limits, the `extra` buffer, and what a kernel body's parameter and
// buffer checks record (fake_kernel_params_test.cc: declared parameter layouts).
#include <cstring>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_fixture.h"

namespace graphcap::fake::unit {
namespace {

class FakeModules : public FakeDriverTest {
 public:
  explicit FakeModules(FakeDriverOptions options = {}) : FakeDriverTest(options) {}

 protected:
  // Loads a module of the named kernels; returns the function of the first.
  CUfunction load(std::initializer_list<std::string_view> names) {
    const auto image = fake_.module_image(names);
    CUmodule module = nullptr;
    EXPECT_EQ(fake_.cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
    extra_modules_.push_back(module);
    CUfunction function = nullptr;
    EXPECT_EQ(fake_.cuModuleGetFunction(&function, module, std::string(*names.begin()).c_str()),
              CUDA_SUCCESS);
    return function;
  }
  void TearDown() override {
    for (CUmodule module : extra_modules_) EXPECT_EQ(fake_.cuModuleUnload(module), CUDA_SUCCESS);
    FakeDriverTest::TearDown();
  }
  std::vector<CUmodule> extra_modules_;
};

// Violations studied as records (the work runs on), not as faults of the stream.
class FakeModulesRecordOnly : public FakeModules {
 public:
  FakeModulesRecordOnly() : FakeModules(record_only()) {}
};

TEST_F(FakeModules, ImageIsNulTerminatedTextNamingEachKernel) {
  const auto image = fake_.module_image({"fill", "copy"});
  ASSERT_FALSE(image.empty());
  EXPECT_EQ(image.back(), std::byte{0});
  const std::string text(reinterpret_cast<const char*>(image.data()));
  EXPECT_EQ(text,
            "// graphcap fake module\n.version 8.0\n.target fake\n.entry fill\n.entry copy\n");
}

TEST_F(FakeModules, LoadDataChecksTheImage) {
  CUmodule module = nullptr;
  EXPECT_EQ(fake_.cuModuleLoadData(&module, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuModuleLoadData(nullptr, image_.data()), CUDA_ERROR_INVALID_VALUE);
  const char ptx[] = ".version 8.0\n.target sm_90\n";
  EXPECT_EQ(fake_.cuModuleLoadData(&module, ptx), CUDA_ERROR_INVALID_IMAGE);
  // Shorter than the magic line and exactly that long: the check must stop at the NUL (ASan
  // catches a read past it).
  const std::string prefix = "// graphcap fake";
  auto* cut = new char[prefix.size() + 1];
  std::memcpy(cut, prefix.c_str(), prefix.size() + 1);
  EXPECT_EQ(fake_.cuModuleLoadData(&module, cut), CUDA_ERROR_INVALID_IMAGE);
  delete[] cut;
  const auto unknown = fake_.module_image({"fill", "no_such_kernel"});
  EXPECT_EQ(fake_.cuModuleLoadData(&module, unknown.data()), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(fake_.live_handles().modules, 1u);
}

TEST_F(FakeModules, GetFunctionFindsOnlyTheModulesKernels) {
  const auto image = fake_.module_image({"fill"});
  CUmodule module = nullptr;
  ASSERT_EQ(fake_.cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  extra_modules_.push_back(module);
  CUfunction function = nullptr;
  EXPECT_EQ(fake_.cuModuleGetFunction(&function, module, "copy"), CUDA_ERROR_NOT_FOUND);
  CUfunction first = nullptr;
  CUfunction second = nullptr;
  EXPECT_EQ(fake_.cuModuleGetFunction(&first, module, "fill"), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuModuleGetFunction(&second, module, "fill"), CUDA_SUCCESS);
  EXPECT_EQ(first, second);
  EXPECT_NE(first, fill_);  // another module's function
  EXPECT_EQ(fake_.cuModuleGetFunction(&function, nullptr, "fill"), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(fake_.cuModuleGetFunction(&function, module, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeModules, FunctionsOfAnUnloadedModuleAreInvalid) {
  const auto image = fake_.module_image({"fill"});
  CUmodule module = nullptr;
  ASSERT_EQ(fake_.cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  CUfunction function = nullptr;
  ASSERT_EQ(fake_.cuModuleGetFunction(&function, module, "fill"), CUDA_SUCCESS);
  const CUdeviceptr a = alloc(16);
  ASSERT_EQ(launch(function, stream_, a, std::uint32_t{1}, std::uint32_t{4}), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuModuleUnload(module), CUDA_SUCCESS);  // queued work ran first
  EXPECT_THAT(peek(a, 4), Each(1u));
  EXPECT_EQ(launch(function, stream_, a, std::uint32_t{2}, std::uint32_t{4}),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(fake_.cuModuleUnload(module), CUDA_ERROR_INVALID_HANDLE);
  CUfunction again = nullptr;
  EXPECT_EQ(fake_.cuModuleGetFunction(&again, module, "fill"), CUDA_ERROR_INVALID_HANDLE);
  free(a);
}

TEST_F(FakeModules, LaunchShapesFollowTheH200Limits) {
  // A body run once per launch: the test kernels are GRAPHCAP_KERNELs, run once per thread,
  // and a grid at the limits has 2^62 threads.
  fake_.register_typed_kernel<>("once", [](KernelContext&) {});
  const CUfunction once = load({"once"});
  auto shape = [&](unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared = 0) {
    return fake_.cuLaunchKernel(once, gx, gy, gz, bx, by, bz, shared, stream_, nullptr, nullptr);
  };
  EXPECT_EQ(shape(1, 1, 1, 1, 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(shape(0, 1, 1, 1, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(shape(1, 0, 1, 1, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(shape(1, 1, 1, 0, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(shape(1, 1, 1, 1, 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(shape(1, 1, 1, 1024, 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(shape(1, 1, 1, 1025, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(shape(1, 1, 1, 1, 1024, 1), CUDA_SUCCESS);
  EXPECT_EQ(shape(1, 1, 1, 1, 1, 64), CUDA_SUCCESS);
  EXPECT_EQ(shape(1, 1, 1, 1, 1, 65), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(shape(1, 1, 1, 32, 32, 1), CUDA_SUCCESS);
  EXPECT_EQ(shape(1, 1, 1, 64, 32, 1), CUDA_ERROR_INVALID_VALUE);  // 2048 threads
  EXPECT_EQ(shape(2147483647u, 65535, 65535, 1, 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(shape(2147483648u, 1, 1, 1, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(shape(1, 65536, 1, 1, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(shape(1, 1, 65536, 1, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(shape(1, 1, 1, 1, 1, 1, 49152), CUDA_SUCCESS);
  EXPECT_EQ(shape(1, 1, 1, 1, 1, 1, 49153), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.pending_operations(stream_), 7u);  // only the valid ones were queued
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, stream_, nullptr, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(FakeModules, ParamsAndExtraTogetherAreInvalid) {
  void* params[] = {nullptr};
  void* extra[] = {nullptr};
  EXPECT_EQ(fake_.cuLaunchKernel(empty_, 1, 1, 1, 1, 1, 1, 0, stream_, params, extra),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.pending_operations(stream_), 0u);
}

TEST_F(FakeModules, ExtraBufferLaysParametersOutAtTheirNaturalAlignment) {
  struct Seen {
    std::uint8_t a = 0;
    std::uint64_t b = 0;
    std::uint16_t c = 0;
    std::uint32_t d = 0;
  } seen;
  fake_.register_kernel("mixed", {1, 8, 2, 4}, [&seen](KernelContext& k) {
    seen = {k.value<std::uint8_t>(0), k.value<std::uint64_t>(1), k.value<std::uint16_t>(2),
            k.value<std::uint32_t>(3)};
  });
  const CUfunction mixed = load({"mixed"});
  alignas(8) std::byte buffer[24] = {};
  const std::uint8_t a = 7;
  const std::uint64_t b = 0x1122334455667788ULL;
  const std::uint16_t c = 0xbeef;
  const std::uint32_t d = 0xcafef00d;
  std::memcpy(buffer + 0, &a, 1);
  std::memcpy(buffer + 8, &b, 8);
  std::memcpy(buffer + 16, &c, 2);
  std::memcpy(buffer + 20, &d, 4);
  std::size_t size = sizeof buffer;
  void* extra[] = {reinterpret_cast<void*>(std::uintptr_t{1}), buffer,
                   reinterpret_cast<void*>(std::uintptr_t{2}), &size,
                   reinterpret_cast<void*>(std::uintptr_t{0})};
  ASSERT_EQ(fake_.cuLaunchKernel(mixed, 1, 1, 1, 1, 1, 1, 0, stream_, nullptr, extra),
            CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(seen.a, a);
  EXPECT_EQ(seen.b, b);
  EXPECT_EQ(seen.c, c);
  EXPECT_EQ(seen.d, d);

  size = 23;  // too small for the last parameter
  EXPECT_EQ(fake_.cuLaunchKernel(mixed, 1, 1, 1, 1, 1, 1, 0, stream_, nullptr, extra),
            CUDA_ERROR_INVALID_VALUE);
  void* no_size[] = {reinterpret_cast<void*>(std::uintptr_t{1}), buffer,
                     reinterpret_cast<void*>(std::uintptr_t{0})};
  EXPECT_EQ(fake_.cuLaunchKernel(mixed, 1, 1, 1, 1, 1, 1, 0, stream_, nullptr, no_size),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeModules, ExtraBufferWorksForATestKernel) {
  const CUdeviceptr a = alloc(16);
  struct {
    CUdeviceptr dst;
    std::uint32_t value;
    std::uint32_t n;
  } args{a, 42, 4};
  std::size_t size = sizeof args;
  void* extra[] = {reinterpret_cast<void*>(std::uintptr_t{1}), &args,
                   reinterpret_cast<void*>(std::uintptr_t{2}), &size, nullptr};
  ASSERT_EQ(fake_.cuLaunchKernel(fill_, 1, 1, 1, 32, 1, 1, 0, stream_, nullptr, extra),
            CUDA_SUCCESS);
  EXPECT_THAT(download(a, 4, stream_), Each(42u));
  free(a);
}

TEST_F(FakeModules, KernelSeesItsLaunchShape) {
  LaunchDims seen;
  fake_.register_typed_kernel<>("shape", [&](KernelContext& k) { seen = k.dims(); });
  const CUfunction shape = load({"shape"});
  ASSERT_EQ(fake_.cuLaunchKernel(shape, 3, 2, 1, 32, 4, 2, 128, stream_, nullptr, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(seen, (LaunchDims{{3, 2, 1}, {32, 4, 2}, 128}));
}

TEST_F(FakeModulesRecordOnly, ParameterMismatchesAreViolations) {
  expect_violations_ = true;
  std::uint64_t wrong_size = 1;
  std::uint32_t missing = 1;
  fake_.register_kernel("sloppy", {8, 4}, [&](KernelContext& k) {
    wrong_size = k.value<std::uint64_t>(1);  // declared 4 bytes
    missing = k.value<std::uint32_t>(2);     // there are 2 parameters
  });
  const CUfunction sloppy = load({"sloppy"});
  ASSERT_EQ(launch(sloppy, stream_, std::uint64_t{1}, std::uint32_t{2}), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(wrong_size, 0u);  // T{} on a mismatch
  EXPECT_EQ(missing, 0u);
  const auto violations = fake_.violations();
  ASSERT_THAT(violations, SizeIs(2));
  EXPECT_THAT(violations[0], HasSubstr("kernel 'sloppy' reads parameter 1 as 8 bytes"));
  EXPECT_THAT(violations[1], HasSubstr("kernel 'sloppy' reads parameter 2"));
}

TEST_F(FakeModulesRecordOnly, BadBuffersAreViolationsAndGetScratchMemory) {
  expect_violations_ = true;
  std::size_t seen = 0;
  fake_.register_kernel("scribble", {8, 4}, [&](KernelContext& k) {
    auto data = k.buffer<std::uint32_t>(0, k.value<std::uint32_t>(1));
    seen = data.size();
    for (std::uint32_t& element : data) {
      EXPECT_EQ(element, 0u);  // zeroed scratch
      element = 0xdead;
    }
  });
  const CUfunction scribble = load({"scribble"});
  const CUdeviceptr a = alloc(16);
  ASSERT_EQ(launch(scribble, stream_, a, std::uint32_t{8}), CUDA_SUCCESS);  // 32 of 16 bytes
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(seen, 8u);
  EXPECT_THAT(peek(a, 4), Each(0u));  // the real allocation was not touched
  ASSERT_THAT(fake_.violations(), SizeIs(1));
  EXPECT_THAT(fake_.violations()[0], HasSubstr("kernel 'scribble' parameter 0"));
  EXPECT_THAT(fake_.violations()[0], HasSubstr("past the end"));

  fake_.clear_violations();
  ASSERT_EQ(launch(scribble, stream_, a + 2, std::uint32_t{1}), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_TRUE(mentions(fake_.violations(), "not aligned to 4 bytes"));

  fake_.clear_violations();
  ASSERT_EQ(launch(scribble, stream_, a, std::uint32_t{0}), CUDA_SUCCESS);  // empty: fine
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_THAT(fake_.violations(), ::testing::IsEmpty());
  free(a);
}

TEST_F(FakeModules, TestKernelsComputeWhatTheirCudaTwinsDo) {
  const CUdeviceptr x = alloc(16);
  const CUdeviceptr y = alloc(16);
  const CUdeviceptr out = alloc(16);
  upload(x, {1, 2, 3, 4}, stream_);
  upload(y, {10, 20, 30, 40}, stream_);
  ASSERT_EQ(launch(axpy_, stream_, x, y, out, std::uint32_t{3}, std::uint32_t{4}), CUDA_SUCCESS);
  EXPECT_THAT(download(out, 4, stream_), ElementsAre(13, 26, 39, 52));
  ASSERT_EQ(launch(copy_, stream_, x, out, std::uint32_t{4}), CUDA_SUCCESS);
  EXPECT_THAT(download(out, 4, stream_), ElementsAre(1, 2, 3, 4));
  ASSERT_EQ(add_one(stream_, x, out, 4), CUDA_SUCCESS);
  EXPECT_THAT(download(out, 4, stream_), ElementsAre(2, 3, 4, 5));
  for (CUdeviceptr p : {x, y, out}) free(p);
}

}  // namespace
}  // namespace graphcap::fake::unit
