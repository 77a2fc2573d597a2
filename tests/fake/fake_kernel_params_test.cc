// Kernel parameters as CUDA passes them: a fake kernel declares its parameter layout when it is
// registered (as a cubin does), and cuLaunchKernel reads exactly those parameters from an
// unterminated kernelParams array, or from the `extra` buffer at CUDA's offsets (measured on an
// H200 with cuFuncGetParamInfo: docs/cuda-driver-facts.md, "A kernel's parameter layout"). A
// kernel registered without a layout is refused rather than read. Run under ASan, the exactly-sized arrays here
// prove that nothing reads past them.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_fixture.h"
#include "undeclared_kernel.h"

namespace graphcap::fake::unit {
namespace {

void* key(std::uintptr_t value) { return reinterpret_cast<void*>(value); }

// The measured signature (char, double, short, float*, unsigned long long).
struct Mixed {
  char c = 0;
  double d = 0;
  short s = 0;
  CUdeviceptr p = 0;
  unsigned long long u = 0;
};

// A struct passed by value: 80 bytes, aligned to 8.
struct Big {
  std::uint64_t words[10];
};

class FakeKernelParams : public FakeDriverTest {
 public:
  explicit FakeKernelParams(FakeDriverOptions options = {}) : FakeDriverTest(options) {}

 protected:
  // Loads a module of the one named kernel and returns its function.
  CUfunction load(const char* name) {
    const auto image = fake_.module_image({name});
    CUmodule module = nullptr;
    EXPECT_EQ(fake_.cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
    modules_.push_back(module);
    CUfunction function = nullptr;
    EXPECT_EQ(fake_.cuModuleGetFunction(&function, module, name), CUDA_SUCCESS);
    return function;
  }
  void TearDown() override {
    for (CUmodule module : modules_) EXPECT_EQ(fake_.cuModuleUnload(module), CUDA_SUCCESS);
    FakeDriverTest::TearDown();
  }
  CUresult run(CUfunction function, void** params, void** extra) {
    const CUresult launched =
        fake_.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream_, params, extra);
    if (launched != CUDA_SUCCESS) return launched;
    return fake_.cuStreamSynchronize(stream_);
  }
  // A kernel of the measured mixed signature that records what it saw.
  CUfunction register_mixed(Mixed* seen, std::vector<KernelParamInfo>* layout) {
    fake_.register_typed_kernel<char, double, short, float*, unsigned long long>(
        "mixed", [seen, layout](KernelContext& k) {
          *seen = {k.value<char>(0), k.value<double>(1), k.value<short>(2),
                   k.value<CUdeviceptr>(3), k.value<unsigned long long>(4)};
          layout->assign(k.param_layout().begin(), k.param_layout().end());
        });
    return load("mixed");
  }
  std::vector<CUmodule> modules_;
};

// Violations studied as records (the work runs on), not as faults of the stream.
class FakeKernelParamsRecordOnly : public FakeKernelParams {
 public:
  FakeKernelParamsRecordOnly() : FakeKernelParams(record_only()) {}
};

TEST_F(FakeKernelParams, AnExactlySizedUnterminatedArrayIsReadExactly) {
  const CUdeviceptr src = alloc(16);
  const CUdeviceptr dst = alloc(16);
  upload(src, {1, 2, 3, 4}, stream_);
  CUdeviceptr a = src;
  CUdeviceptr b = dst;
  std::uint32_t n = 4;
  std::array<void*, 3> params = {&a, &b, &n};  // as CUDA documents: no terminator
  ASSERT_EQ(fake_.cuLaunchKernel(add_one_, 1, 1, 1, 32, 1, 1, 0, stream_, params.data(), nullptr),
            CUDA_SUCCESS);
  EXPECT_THAT(download(dst, 4, stream_), ElementsAre(2, 3, 4, 5));

  // The same from an array on the heap, exactly three pointers long.
  auto heap = std::make_unique<void*[]>(3);
  heap[0] = &b;
  heap[1] = &a;
  heap[2] = &n;
  ASSERT_EQ(fake_.cuLaunchKernel(add_one_, 1, 1, 1, 32, 1, 1, 0, stream_, heap.get(), nullptr),
            CUDA_SUCCESS);
  EXPECT_THAT(download(src, 4, stream_), ElementsAre(3, 4, 5, 6));
  free(src);
  free(dst);
}

TEST_F(FakeKernelParams, ACapturedLaunchKeepsTheValuesOfItsLaunchTime) {
  const CUdeviceptr dst = alloc(16);
  CUdeviceptr pointer = dst;
  std::uint32_t value = 7;
  std::uint32_t n = 4;
  std::array<void*, 3> params = {&pointer, &value, &n};
  const CUgraph graph = capture(stream_, [&] {
    EXPECT_EQ(fake_.cuLaunchKernel(fill_, 1, 1, 1, 32, 1, 1, 0, stream_, params.data(), nullptr),
              CUDA_SUCCESS);
  });
  value = 9;  // copied at capture, as CUDA does
  const CUgraphExec exec = instantiate(graph);
  ASSERT_EQ(fake_.cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  EXPECT_THAT(download(dst, 4, stream_), ElementsAre(7, 7, 7, 7));
  EXPECT_EQ(fake_.cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
  free(dst);
}

TEST_F(FakeKernelParams, AKernelWithoutALayoutIsRefusedWithAViolationNamingIt) {
  expect_violations_ = true;
  bool ran = false;
  graphcap::testing::register_undeclared_kernel(fake_, "unlaid", [&ran](KernelContext&) { ran = true; });
  const CUfunction unlaid = load("unlaid");  // loading and finding it are fine
  std::uint64_t value = 1;
  std::array<void*, 1> params = {&value};
  EXPECT_EQ(fake_.cuLaunchKernel(unlaid, 1, 1, 1, 1, 1, 1, 0, stream_, params.data(), nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuLaunchKernel(unlaid, 1, 1, 1, 1, 1, 1, 0, stream_, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.pending_operations(stream_), 0u);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_FALSE(ran);
  const auto violations = fake_.violations();
  ASSERT_THAT(violations, SizeIs(2));
  EXPECT_THAT(violations[0], HasSubstr("kernel 'unlaid' has no declared parameter layout"));
  EXPECT_THAT(violations[0], HasSubstr("register_typed_kernel<Params...>"));
  EXPECT_THAT(violations[0], HasSubstr("register_kernel(name, param_sizes, body)"));

  // Refused inside a capture, it invalidates the capture as any failed captured call does.
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuLaunchKernel(unlaid, 1, 1, 1, 1, 1, 1, 0, stream_, params.data(), nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(status(stream_), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  end_any_capture(stream_);
}

TEST_F(FakeKernelParams, TypedMixedParametersAreLaidOutAsOnTheH200) {
  Mixed seen;
  std::vector<KernelParamInfo> layout;
  const CUfunction mixed = register_mixed(&seen, &layout);
  char c = 'x';
  double d = 2.5;
  short s = -3;
  CUdeviceptr p = 0x1234567890ULL;
  unsigned long long u = 0xfedcba9876543210ULL;
  auto params = std::make_unique<void*[]>(5);  // exactly five, no terminator
  params[0] = &c;
  params[1] = &d;
  params[2] = &s;
  params[3] = &p;
  params[4] = &u;
  ASSERT_EQ(run(mixed, params.get(), nullptr), CUDA_SUCCESS);
  EXPECT_EQ(seen.c, c);
  EXPECT_EQ(seen.d, d);
  EXPECT_EQ(seen.s, s);
  EXPECT_EQ(seen.p, p);
  EXPECT_EQ(seen.u, u);
  EXPECT_THAT(layout, ElementsAre(KernelParamInfo{0, 1}, KernelParamInfo{8, 8},
                                  KernelParamInfo{16, 2}, KernelParamInfo{24, 8},
                                  KernelParamInfo{32, 8}));
}

TEST_F(FakeKernelParams, TypedMixedParametersAreReadFromTheExtraBufferAtTheirOffsets) {
  Mixed seen;
  std::vector<KernelParamInfo> layout;
  const CUfunction mixed = register_mixed(&seen, &layout);
  const char c = 'y';
  const double d = -0.125;
  const short s = 0x1234;
  const CUdeviceptr p = 0xabcdef00ULL;
  const unsigned long long u = 42;
  auto buffer = std::make_unique<std::byte[]>(40);  // exactly the layout's 40 bytes
  std::memset(buffer.get(), 0xee, 40);              // padding the fake must not read as values
  std::memcpy(buffer.get() + 0, &c, 1);
  std::memcpy(buffer.get() + 8, &d, 8);
  std::memcpy(buffer.get() + 16, &s, 2);
  std::memcpy(buffer.get() + 24, &p, 8);
  std::memcpy(buffer.get() + 32, &u, 8);
  std::size_t size = 40;
  void* extra[] = {key(1), buffer.get(), key(2), &size, key(0)};
  ASSERT_EQ(run(mixed, nullptr, extra), CUDA_SUCCESS);
  EXPECT_EQ(seen.c, c);
  EXPECT_EQ(seen.d, d);
  EXPECT_EQ(seen.s, s);
  EXPECT_EQ(seen.p, p);
  EXPECT_EQ(seen.u, u);

  size = 39;  // one byte short of the last parameter
  EXPECT_EQ(fake_.cuLaunchKernel(mixed, 1, 1, 1, 1, 1, 1, 0, stream_, nullptr, extra),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeKernelParams, AStructOf80BytesPassesByValue) {
  Big seen{};
  std::vector<KernelParamInfo> layout;
  fake_.register_typed_kernel<Big, int*>("big", [&](KernelContext& k) {
    seen = k.value<Big>(0);
    layout.assign(k.param_layout().begin(), k.param_layout().end());
    auto out = k.buffer<std::uint64_t>(1, 1);
    if (!out.empty()) out[0] = std::accumulate(std::begin(seen.words), std::end(seen.words), 0ULL);
  });
  const CUfunction big = load("big");
  const CUdeviceptr out = alloc(8);
  Big value{};
  for (std::uint64_t i = 0; i < 10; ++i) value.words[i] = (i + 1) * 100;  // sum 5500
  CUdeviceptr pointer = out;
  std::array<void*, 2> params = {&value, &pointer};
  ASSERT_EQ(run(big, params.data(), nullptr), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(&seen, &value, sizeof value), 0);
  EXPECT_THAT(layout, ElementsAre(KernelParamInfo{0, 80}, KernelParamInfo{80, 8}));
  std::uint64_t sum = 0;
  ASSERT_TRUE(fake_.read_device(out, std::as_writable_bytes(std::span(&sum, 1))));
  EXPECT_EQ(sum, 5500u);

  // From `extra`: the struct then the pointer at 80.
  seen = {};
  ASSERT_TRUE(fake_.write_device(out, std::as_bytes(std::span(&seen.words[0], 1))));
  auto buffer = std::make_unique<std::byte[]>(88);
  std::memcpy(buffer.get(), &value, 80);
  std::memcpy(buffer.get() + 80, &pointer, 8);
  std::size_t size = 88;
  void* extra[] = {key(1), buffer.get(), key(2), &size, key(0)};
  ASSERT_EQ(run(big, nullptr, extra), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(&seen, &value, sizeof value), 0);
  ASSERT_TRUE(fake_.read_device(out, std::as_writable_bytes(std::span(&sum, 1))));
  EXPECT_EQ(sum, 5500u);
  free(out);
}

TEST_F(FakeKernelParams, TypedLayoutsFollowEachTypesAlignment) {
  // A struct of floats aligns to 4, not to its size's power of two: after a char it lies at 4.
  struct Floats {
    float f[3];
  };
  struct alignas(16) Wide {
    float f[4];
  };
  std::vector<KernelParamInfo> layout;
  fake_.register_typed_kernel<char, Floats, char, Wide, std::uint16_t>(
      "aligned", [&](KernelContext& k) {
        layout.assign(k.param_layout().begin(), k.param_layout().end());
      });
  const CUfunction aligned = load("aligned");
  char c = 1;
  Floats floats{};
  Wide wide{};
  std::uint16_t h = 2;
  std::array<void*, 5> params = {&c, &floats, &c, &wide, &h};
  ASSERT_EQ(run(aligned, params.data(), nullptr), CUDA_SUCCESS);
  EXPECT_THAT(layout, ElementsAre(KernelParamInfo{0, 1}, KernelParamInfo{4, 12},
                                  KernelParamInfo{16, 1}, KernelParamInfo{32, 16},
                                  KernelParamInfo{48, 2}));
}

TEST_F(FakeKernelParams, SizesOnlyLayoutsUseNaturalAlignment) {
  std::vector<KernelParamInfo> layout;
  fake_.register_kernel("sized", {1, 8, 2, 8, 8, 12, 1, 80, 3}, [&](KernelContext& k) {
    layout.assign(k.param_layout().begin(), k.param_layout().end());
    EXPECT_EQ(k.param_count(), 9u);
    EXPECT_EQ(k.param_size(7), 80u);
    EXPECT_EQ(k.param_size(9), 0u);  // past the declared count
  });
  const CUfunction sized = load("sized");
  std::array<std::uint64_t, 10> storage{};  // big enough for every parameter
  std::array<void*, 9> params{};
  for (void*& param : params) param = storage.data();
  ASSERT_EQ(run(sized, params.data(), nullptr), CUDA_SUCCESS);
  // The measured (char, double, short, float*, unsigned long long) prefix, then a 12-byte
  // parameter at 4-byte alignment, a char, 80 bytes at 8 and 3 bytes at 1.
  EXPECT_THAT(layout, ElementsAre(KernelParamInfo{0, 1}, KernelParamInfo{8, 8},
                                  KernelParamInfo{16, 2}, KernelParamInfo{24, 8},
                                  KernelParamInfo{32, 8}, KernelParamInfo{40, 12},
                                  KernelParamInfo{52, 1}, KernelParamInfo{56, 80},
                                  KernelParamInfo{136, 3}));
}

TEST_F(FakeKernelParams, ZeroParametersTakeNullParams) {
  std::size_t count = 99;
  fake_.register_typed_kernel<>("none", [&](KernelContext& k) { count = k.param_count(); });
  const CUfunction none = load("none");
  ASSERT_EQ(run(none, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(count, 0u);
  count = 99;
  std::array<void*, 1> ignored = {nullptr};  // nothing is read from it
  ASSERT_EQ(run(none, ignored.data(), nullptr), CUDA_SUCCESS);
  EXPECT_EQ(count, 0u);
}

TEST_F(FakeKernelParams, MissingDeclaredParametersAreRefused) {
  const CUdeviceptr dst = alloc(16);
  CUdeviceptr pointer = dst;
  std::uint32_t value = 1;
  // Declared parameters but no array, or a NULL among the declared entries.
  EXPECT_EQ(fake_.cuLaunchKernel(fill_, 1, 1, 1, 1, 1, 1, 0, stream_, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  std::array<void*, 3> short_params = {&pointer, &value, nullptr};
  EXPECT_EQ(
      fake_.cuLaunchKernel(fill_, 1, 1, 1, 1, 1, 1, 0, stream_, short_params.data(), nullptr),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.pending_operations(stream_), 0u);
  free(dst);
}

TEST_F(FakeKernelParamsRecordOnly, ValueChecksTheDeclaredSizeExactly) {
  expect_violations_ = true;
  std::uint32_t narrow = 1;
  std::uint64_t wide = 1;
  fake_.register_typed_kernel<std::uint64_t, std::uint16_t>("exact", [&](KernelContext& k) {
    narrow = k.value<std::uint32_t>(0);  // declared 8 bytes
    wide = k.value<std::uint64_t>(1);    // declared 2 bytes
  });
  const CUfunction exact = load("exact");
  std::uint64_t first = 5;
  std::uint16_t second = 6;
  std::array<void*, 2> params = {&first, &second};
  ASSERT_EQ(run(exact, params.data(), nullptr), CUDA_SUCCESS);
  EXPECT_EQ(narrow, 0u);  // T{} on a mismatch
  EXPECT_EQ(wide, 0u);
  const auto violations = fake_.violations();
  ASSERT_THAT(violations, SizeIs(2));
  EXPECT_THAT(violations[0], HasSubstr("kernel 'exact' reads parameter 0 as 4 bytes, but it has 8"));
  EXPECT_THAT(violations[1], HasSubstr("kernel 'exact' reads parameter 1 as 8 bytes, but it has 2"));
}

// cuFuncGetParamInfo answers the declared layout (the H200's rows are conformance tests, in
// tests/conformance/param_info_test.cc); these are the fake's own edges.
TEST_F(FakeKernelParams, ParamInfoAnswersTheDeclaredLayoutUpToTheCount) {
  fake_.register_typed_kernel<Big, int*>("big", [](KernelContext&) {});
  const CUfunction big = load("big");
  std::size_t offset = 7;
  std::size_t size = 7;
  EXPECT_EQ(fake_.cuFuncGetParamInfo(big, 0, &offset, &size), CUDA_SUCCESS);
  EXPECT_EQ(offset, 0u);
  EXPECT_EQ(size, 80u);
  EXPECT_EQ(fake_.cuFuncGetParamInfo(big, 1, &offset, &size), CUDA_SUCCESS);
  EXPECT_EQ(offset, 80u);
  EXPECT_EQ(size, 8u);
  offset = size = 7;
  EXPECT_EQ(fake_.cuFuncGetParamInfo(big, 2, &offset, &size), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(offset, 7u) << "a refused query writes nothing";
  EXPECT_EQ(size, 7u);
  EXPECT_EQ(fake_.cuFuncGetParamInfo(big, 0, nullptr, &size), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeKernelParams, ParamInfoOfAKernelWithoutALayoutIsNotSupported) {
  graphcap::testing::register_undeclared_kernel(fake_, "opaque", [](KernelContext&) {});
  const CUfunction opaque = load("opaque");
  std::size_t offset = 0;
  std::size_t size = 0;
  EXPECT_EQ(fake_.cuFuncGetParamInfo(opaque, 0, &offset, &size), CUDA_ERROR_NOT_SUPPORTED);
}

TEST_F(FakeKernelParams, ParamInfoOfAnUnloadedFunctionIsAnInvalidHandle) {
  fake_.register_typed_kernel<int>("gone", [](KernelContext&) {});
  const CUfunction gone = load("gone");
  ASSERT_EQ(fake_.cuModuleUnload(modules_.back()), CUDA_SUCCESS);
  modules_.pop_back();
  std::size_t offset = 0;
  EXPECT_EQ(fake_.cuFuncGetParamInfo(gone, 0, &offset, nullptr), CUDA_ERROR_INVALID_HANDLE);
}

}  // namespace
}  // namespace graphcap::fake::unit
