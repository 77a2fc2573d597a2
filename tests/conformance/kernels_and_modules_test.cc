// Kernels and modules: every test kernel launched eagerly computes the right bytes (and nothing
// past n); a captured add_one replayed twice adds two; loading a garbage image is an error, not a
// crash; a kernel name the module lacks is CUDA_ERROR_NOT_FOUND.
#include <cstdint>
#include <vector>

#include "conformance_fixture.h"
#include "kernels/test_kernels.h"

namespace graphcap::testing {
namespace {

class KernelLaunch : public KernelsTest {
 protected:
  // More than kGrid * kBlock threads: grid-stride loops.
  static constexpr std::uint32_t kWords = 1000;
  static constexpr std::uint32_t kGuardWords = 16;
  static constexpr std::uint32_t kGuard = 0xdeadbeef;
  static constexpr std::size_t kBytes = (kWords + kGuardWords) * sizeof(std::uint32_t);

  void SetUp() override {
    KernelsTest::SetUp();
    if (HasFatalFailure()) return;
    x_ = alloc(kBytes);
    y_ = alloc(kBytes);
    out_ = alloc(kBytes);
    ASSERT_FALSE(HasFailure());
    upload(x_.get(), with_guard(iota(kWords, 0)), s_.get());
    upload(y_.get(), with_guard(iota(kWords, 1000)), s_.get());
    upload(out_.get(), with_guard(std::vector<std::uint32_t>(kWords, 0)), s_.get());
  }
  void TearDown() override {
    out_.reset();
    y_.reset();
    x_.reset();
    KernelsTest::TearDown();
  }

  static std::vector<std::uint32_t> with_guard(std::vector<std::uint32_t> values) {
    values.insert(values.end(), kGuardWords, kGuard);
    return values;
  }

  // Reads `buffer`'s first kWords values, checking the guard words past them are untouched.
  std::vector<std::uint32_t> read(const DeviceMemory& buffer) {
    std::vector<std::uint32_t> values = download(buffer.get(), kWords + kGuardWords, s_.get());
    const std::vector<std::uint32_t> guard(values.begin() + kWords, values.end());
    EXPECT_THAT(guard, Each(kGuard)) << "a kernel wrote past n";
    values.resize(kWords);
    return values;
  }

  DeviceMemory x_;
  DeviceMemory y_;
  DeviceMemory out_;
};

TEST_F(KernelLaunch, EveryTestKernelIsInTheImage) {
  for (const char* name : kTestKernelNames) {
    CUfunction function = nullptr;
    EXPECT_EQ(api().cuModuleGetFunction(&function, module_.get(), name), CUDA_SUCCESS) << name;
    EXPECT_NE(function, nullptr) << name;
  }
}

TEST_F(KernelLaunch, EmptyRunsAndCompletes) {
  EXPECT_EQ(launch(kernel(module_, "empty"), s_.get(), kGrid, kBlock), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
}

TEST_F(KernelLaunch, AddOneEagerly) {
  EXPECT_EQ(launch(kernel(module_, "add_one"), s_.get(), kGrid, kBlock, x_.get(), out_.get(),
                   kWords),
            CUDA_SUCCESS);
  EXPECT_EQ(read(out_), iota(kWords, 1));
}

TEST_F(KernelLaunch, FillEagerly) {
  EXPECT_EQ(launch(kernel(module_, "fill"), s_.get(), kGrid, kBlock, out_.get(),
                   std::uint32_t{0x12345678}, kWords),
            CUDA_SUCCESS);
  EXPECT_THAT(read(out_), Each(0x12345678u));
}

TEST_F(KernelLaunch, AxpyEagerly) {
  EXPECT_EQ(launch(kernel(module_, "axpy"), s_.get(), kGrid, kBlock, x_.get(), y_.get(),
                   out_.get(), std::uint32_t{3}, kWords),
            CUDA_SUCCESS);
  std::vector<std::uint32_t> expected(kWords);
  for (std::uint32_t i = 0; i < kWords; ++i) expected[i] = 3 * i + (1000 + i);
  EXPECT_EQ(read(out_), expected);
}

TEST_F(KernelLaunch, CopyEagerly) {
  EXPECT_EQ(launch(kernel(module_, "copy"), s_.get(), kGrid, kBlock, y_.get(), out_.get(),
                   kWords),
            CUDA_SUCCESS);
  EXPECT_EQ(read(out_), iota(kWords, 1000));
}

TEST_F(KernelLaunch, MoreThreadsThanElementsWriteOnlyN) {
  EXPECT_EQ(launch(kernel(module_, "fill"), s_.get(), 8, 256, out_.get(), std::uint32_t{4},
                   kWords),
            CUDA_SUCCESS);
  EXPECT_THAT(read(out_), Each(4u));
}

TEST_F(KernelLaunch, CapturedAddOneReplayedTwiceAddsTwo) {
  CUfunction add_one = kernel(module_, "add_one");
  RawGraph graph = capture(s_.get(), [&] {
    EXPECT_EQ(launch(add_one, s_.get(), kGrid, kBlock, x_.get(), x_.get(), kWords),
              CUDA_SUCCESS);
  });
  EXPECT_THAT(node_types(graph.get()), ElementsAre(CU_GRAPH_NODE_TYPE_KERNEL));
  EXPECT_EQ(read(x_), iota(kWords, 0)) << "capturing ran nothing";

  Exec exec = instantiate(graph.get());
  ASSERT_TRUE(exec);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(read(x_), iota(kWords, 2));
}

using ModuleLoad = ConformanceTest;

TEST_F(ModuleLoad, LoadingAGarbageImageIsAnError) {
  // Neither ELF, fatbin nor PTX; NUL-terminated, so a driver reading it as text stops.
  std::vector<unsigned char> garbage(256, 0xa5);
  garbage.back() = 0;
  CUmodule raw = nullptr;
  const CUresult result = api().cuModuleLoadData(&raw, garbage.data());
  RawModule module(api(), result == CUDA_SUCCESS ? raw : nullptr);
  EXPECT_NE(result, CUDA_SUCCESS);
}

TEST_F(ModuleLoad, AKernelNameTheModuleLacksIsNotFound) {
  RawModule module = load_test_kernels();
  ASSERT_TRUE(module);
  CUfunction function = nullptr;
  EXPECT_EQ(api().cuModuleGetFunction(&function, module.get(), "no_such_kernel"),
            CUDA_ERROR_NOT_FOUND);
}

}  // namespace
}  // namespace graphcap::testing
