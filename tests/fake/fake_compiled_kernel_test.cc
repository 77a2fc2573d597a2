// GRAPHCAP_KERNEL on the fake (<graphcap/kernel.h>, compiled by the host compiler): the layout
// from the signature, the body once per thread with CUDA's indices, checked pointers, atomic_add,
// and register_compiled_kernels finding every kernel linked in (the test kernels come from a
// static library, linked whole).
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/kernel.h>

#include "fake_fixture.h"

namespace {

using graphcap::kernel::ptr;

// Three floats by value: 12 bytes, aligned to 4.
struct Triple {
  float a, b, c;
};

}  // namespace

// Each thread writes where it is: its linear index in the grid gets its thread and block indices
// packed 4 bits each; the first thread also writes the block and grid dimensions.
GRAPHCAP_KERNEL(where_am_i, (ptr<std::uint32_t> out, ptr<std::uint32_t> dims)) {
  using namespace graphcap::kernel;
  const Index3 t = thread_idx(), b = block_idx(), bd = block_dim(), gd = grid_dim();
  const std::uint32_t block = (b.z * gd.y + b.y) * gd.x + b.x;
  const std::uint32_t thread = (t.z * bd.y + t.y) * bd.x + t.x;
  out[block * bd.x * bd.y * bd.z + thread] =
      t.x | t.y << 4 | t.z << 8 | b.x << 12 | b.y << 16 | b.z << 20;
  if (block == 0 && thread == 0) {
    const std::uint32_t all[6] = {bd.x, bd.y, bd.z, gd.x, gd.y, gd.z};
    for (int i = 0; i < 6; ++i) dims[i] = all[i];
  }
}

// Parameters of several sizes and alignments, a struct of floats among them.
GRAPHCAP_KERNEL(odd_layout, (char c, Triple t, ptr<int> p, short s, double d)) {
  if (graphcap::kernel::thread_idx().x != 0) return;
  p[0] = c + static_cast<int>(t.a + t.b + t.c) + s + static_cast<int>(d);
}

// Counts its threads, then every thread of block 1 and up reads far past its memory.
GRAPHCAP_KERNEL(count_then_overrun, (ptr<std::uint32_t> counter, ptr<const std::uint32_t> far)) {
  graphcap::kernel::atomic_add(counter, 1u);
  if (graphcap::kernel::block_idx().x > 0) counter[1] = far[1u << 20];
}

// A pointer the body makes itself (null): not a parameter's.
GRAPHCAP_KERNEL(null_store, (std::uint32_t value)) {
  ptr<std::uint32_t> nowhere = nullptr;
  if (graphcap::kernel::thread_idx().x == 0) nowhere[0] = value;
}

namespace graphcap::fake::unit {
namespace {

class FakeCompiledKernels : public FakeDriverTest {
 public:
  explicit FakeCompiledKernels(FakeDriverOptions options = {}) : FakeDriverTest(options) {}

 protected:
  void SetUp() override {
    FakeDriverTest::SetUp();  // registers the compiled kernels (register_test_kernels)
    const auto image = fake_.module_image(
        {"where_am_i", "odd_layout", "count_then_overrun", "null_store", "count_threads"});
    ASSERT_EQ(fake_.cuModuleLoadData(&module2_, image.data()), CUDA_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(fake_.cuModuleUnload(module2_), CUDA_SUCCESS);
    FakeDriverTest::TearDown();
  }
  CUfunction function(const char* name) {
    CUfunction f = nullptr;
    EXPECT_EQ(fake_.cuModuleGetFunction(&f, module2_, name), CUDA_SUCCESS);
    return f;
  }
  template <class... Args>
  CUresult launch_shape(CUfunction f, LaunchDims dims, Args... args) {
    void* params[] = {static_cast<void*>(&args)..., nullptr};
    return fake_.cuLaunchKernel(f, dims.grid.x, dims.grid.y, dims.grid.z, dims.block.x,
                                dims.block.y, dims.block.z, 0, stream_, params, nullptr);
  }

  CUmodule module2_ = nullptr;
};

class FakeCompiledKernelsRecordOnly : public FakeCompiledKernels {
 public:
  FakeCompiledKernelsRecordOnly() : FakeCompiledKernels(record_only()) {}
};

TEST_F(FakeCompiledKernels, EveryKernelLinkedInIsRegisteredTheStaticLibrarysToo) {
  const std::vector<std::string> names = compiled_kernel_names();
  for (const char* name : graphcap::testing::kTestKernelNames) {
    EXPECT_THAT(names, Contains(std::string(name))) << "from the test kernels' static library";
  }
  EXPECT_THAT(names, Contains(std::string("where_am_i"))) << "from this file";
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  FakeDriver other;
  EXPECT_EQ(register_compiled_kernels(other), names.size());
}

TEST_F(FakeCompiledKernels, TheBodyRunsOncePerThreadWithCudasIndices) {
  const LaunchDims dims{{3, 2, 2}, {4, 2, 3}, 0};
  const std::size_t threads = 3 * 2 * 2 * 4 * 2 * 3;
  const CUdeviceptr out = alloc(threads * 4);
  const CUdeviceptr shape = alloc(6 * 4);
  ASSERT_EQ(launch_shape(function("where_am_i"), dims, out, shape), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  std::vector<std::uint32_t> expected;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 3; ++tz)
          for (unsigned ty = 0; ty < 2; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx)
              expected.push_back(tx | ty << 4 | tz << 8 | bx << 12 | by << 16 | bz << 20);
  EXPECT_THAT(peek(out, threads), ElementsAreArray(expected));
  EXPECT_THAT(peek(shape, 6), ElementsAre(4u, 2u, 3u, 3u, 2u, 2u));
  free(out);
  free(shape);
}

TEST_F(FakeCompiledKernels, AtomicAddCountsEveryThread) {
  const CUdeviceptr counter = alloc(4);
  ASSERT_EQ(launch_shape(function("count_threads"), LaunchDims{{5, 1, 1}, {32, 2, 1}, 0}, counter),
            CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(peek(counter, 1), std::vector<std::uint32_t>{320});
  free(counter);
}

TEST_F(FakeCompiledKernels, TheLayoutComesFromTheSignatureWithCudasAlignment) {
  const CUfunction f = function("odd_layout");
  std::vector<std::pair<std::size_t, std::size_t>> layout;
  for (std::size_t i = 0;; ++i) {
    std::size_t offset = 0, size = 0;
    if (fake_.cuFuncGetParamInfo(f, i, &offset, &size) != CUDA_SUCCESS) break;
    layout.emplace_back(offset, size);
  }
  // char 0/1, Triple 4/12 (aligned to 4), ptr 16/8, short 24/2, double 32/8.
  EXPECT_THAT(layout, ElementsAre(std::pair<std::size_t, std::size_t>{0, 1},
                                  std::pair<std::size_t, std::size_t>{4, 12},
                                  std::pair<std::size_t, std::size_t>{16, 8},
                                  std::pair<std::size_t, std::size_t>{24, 2},
                                  std::pair<std::size_t, std::size_t>{32, 8}));
  const CUdeviceptr out = alloc(4);
  char c = 1;
  Triple t{2.0f, 3.0f, 4.0f};
  short s = 5;
  double d = 6.0;
  void* params[] = {&c, &t, const_cast<CUdeviceptr*>(&out), &s, &d};
  ASSERT_EQ(fake_.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream_, params, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(peek(out, 1), std::vector<std::uint32_t>{1 + 9 + 5 + 6});
  free(out);
}

TEST_F(FakeCompiledKernels, OneElementPastAnAnnotatedBufferFaultsNamingTheParameterAndThread) {
  expect_fault_ = true;
  const CUdeviceptr slice = alloc(512);
  fake_.annotate_buffer(slice, 64);  // a Buffer of 16 words in a 512-byte slice
  ASSERT_EQ(fill(stream_, slice, 9, 17), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(fake_.stream_fault(stream_),
              AllOf(HasSubstr("kernel 'fill' parameter 0 (dst), thread (16, 0, 0) of block (0, 0, "
                              "0)"),
                    HasSubstr("(4 bytes) runs 4 bytes past the end of the Buffer at"),
                    HasSubstr("of 64 bytes")));
  EXPECT_THAT(fake_.violations(), SizeIs(1));
  EXPECT_THAT(peek(slice, 16), ::testing::Each(9u));
  EXPECT_EQ(peek(slice + 64, 1), std::vector<std::uint32_t>{0}) << "the neighbour is untouched";
}

TEST_F(FakeCompiledKernels, AFaultStopsTheGrid) {
  expect_fault_ = true;
  const CUdeviceptr counter = alloc(8);
  const CUdeviceptr far = alloc(4);
  ASSERT_EQ(launch_shape(function("count_then_overrun"), LaunchDims{{4, 1, 1}, {8, 1, 1}, 0},
                         counter, far),
            CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_ILLEGAL_ADDRESS);
  // Block 0 (8 threads) ran, and block 1's row that faulted; then the kernel stopped.
  EXPECT_EQ(peek(counter, 1), std::vector<std::uint32_t>{16});
  EXPECT_THAT(fake_.stream_fault(stream_),
              AllOf(HasSubstr("parameter 1 (far), thread (0, 0, 0) of block (1, 0, 0)"),
                    HasSubstr("runs"), HasSubstr("past the end of allocation")));
}

TEST_F(FakeCompiledKernelsRecordOnly, RecordOnlyRunsTheWholeGridAndRecordsOnePerParameter) {
  expect_violations_ = true;
  const CUdeviceptr counter = alloc(8);
  const CUdeviceptr far = alloc(4);
  ASSERT_EQ(launch_shape(function("count_then_overrun"), LaunchDims{{4, 1, 1}, {8, 1, 1}, 0},
                         counter, far),
            CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(peek(counter, 1), std::vector<std::uint32_t>{32});
  EXPECT_THAT(fake_.violations(), SizeIs(1)) << "24 bad reads, one violation";
  free(counter);
  free(far);
}

TEST_F(FakeCompiledKernels, ANullParameterFaults) {
  expect_fault_ = true;
  ASSERT_EQ(fill(stream_, 0, 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(fake_.stream_fault(stream_),
              AllOf(HasSubstr("parameter 0 (dst)"), HasSubstr("is a null device pointer")));
}

TEST_F(FakeCompiledKernels, ANullPointerTheBodyMadeFaults) {
  expect_fault_ = true;
  ASSERT_EQ(launch_shape(function("null_store"), LaunchDims{}, std::uint32_t{3}), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(fake_.stream_fault(stream_),
              AllOf(HasSubstr("kernel 'null_store' a pointer"), HasSubstr("null device pointer")));
}

TEST(FakeCompiledKernelsLimit, ALaunchOfMoreThreadsThanTheFakeRunsTimesOut) {
  FakeDriverOptions options;
  options.max_threads_per_launch = 1000;
  FakeDriver fake(options);
  register_compiled_kernels(fake);
  CUcontext context = nullptr;
  ASSERT_EQ(fake.cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuCtxSetCurrent(context), CUDA_SUCCESS);
  const auto image = fake.module_image({"empty"});
  CUmodule module = nullptr;
  ASSERT_EQ(fake.cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  CUfunction empty = nullptr;
  ASSERT_EQ(fake.cuModuleGetFunction(&empty, module, "empty"), CUDA_SUCCESS);
  ASSERT_EQ(fake.cuLaunchKernel(empty, 4, 1, 1, 250, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(fake.cuCtxSynchronize(), CUDA_SUCCESS);  // 1000 threads: fine
  ASSERT_EQ(fake.cuLaunchKernel(empty, 5, 1, 1, 250, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(fake.cuStreamSynchronize(nullptr), CUDA_ERROR_LAUNCH_TIMEOUT);
  EXPECT_THAT(fake.violations(),
              ElementsAre(AllOf(HasSubstr("launches 5 blocks of 250 threads"),
                                HasSubstr("max_threads_per_launch"))));
  EXPECT_EQ(fake.cuModuleUnload(module), CUDA_SUCCESS);  // a release works after the fault
  EXPECT_EQ(fake.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
}

TEST(FakeCompiledKernelNames, TheParametersNamesComeFromTheSignatureText) {
  EXPECT_THAT(detail::param_names("(ptr<const float> x, ptr<float> y, float a, unsigned n)"),
              ElementsAre("x", "y", "a", "n"));
  EXPECT_THAT(detail::param_names("(std::pair<int, long> p, Triple t)"), ElementsAre("p", "t"));
  EXPECT_THAT(detail::param_names("()"), ::testing::IsEmpty());
}

}  // namespace
}  // namespace graphcap::fake::unit
