// A kernel's parameter layout (docs/cuda-driver-facts.md, "A kernel's parameter layout"):
// cuFuncGetParamInfo answers offset and size for every index below the parameter count, at CUDA's
// natural alignment, and CUDA_ERROR_INVALID_VALUE at the count. Device::launch checks arguments
// against it, so the fake must agree with the H200 on every test kernel (tests/kernels).
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

using Layout = std::vector<std::pair<std::size_t, std::size_t>>;  // offset, size

class ParamInfo : public ConformanceTest {
 protected:
  // Queries indices 0, 1, ... and expects the layout, then CUDA_ERROR_INVALID_VALUE at the count
  // (and past it).
  void expect_layout(const RawModule& module, const char* name, const Layout& expected) {
    SCOPED_TRACE(name);
    CUfunction f = kernel(module, name);
    ASSERT_NE(f, nullptr);
    Layout got;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      std::size_t offset = 12345;
      std::size_t size = 12345;
      ASSERT_EQ(api().cuFuncGetParamInfo(f, i, &offset, &size), CUDA_SUCCESS) << "index " << i;
      got.emplace_back(offset, size);
    }
    EXPECT_EQ(got, expected);
    std::size_t offset = 12345;
    std::size_t size = 12345;
    EXPECT_EQ(api().cuFuncGetParamInfo(f, expected.size(), &offset, &size),
              CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(api().cuFuncGetParamInfo(f, expected.size() + 1, &offset, &size),
              CUDA_ERROR_INVALID_VALUE);
  }
};

// The facts file's rows (pointers as 8 bytes, unsigned as 4).
TEST_F(ParamInfo, PointersAndAScalarAreLaidOutInOrder) {
  RawModule module = load_test_kernels();
  // add_one(const uint32_t*, uint32_t*, uint32_t): the row of (const float*, float*, unsigned).
  expect_layout(module, "add_one", {{0, 8}, {8, 8}, {16, 4}});
  expect_layout(module, "axpy", {{0, 8}, {8, 8}, {16, 8}, {24, 4}, {28, 4}});
  expect_layout(module, "fill", {{0, 8}, {8, 4}, {12, 4}});
}

TEST_F(ParamInfo, MixedSizesAreAlignedNaturally) {
  RawModule module = load_test_kernels();
  // mixed(char, double, short, uint32_t*, unsigned long long): the facts file's row exactly.
  expect_layout(module, "mixed", {{0, 1}, {8, 8}, {16, 2}, {24, 8}, {32, 8}});
}

TEST_F(ParamInfo, AStructByValueIsOneParameterOfItsSize) {
  RawModule module = load_test_kernels();
  // affine(Affine of 24 bytes, 8-aligned, uint32_t*): the facts file measured an 80-byte struct
  // (0/80, 80/8); this one is the same rule at 24 bytes.
  expect_layout(module, "affine", {{0, 24}, {24, 8}});
}

TEST_F(ParamInfo, AKernelWithoutParametersAnswersInvalidValueAtIndexZero) {
  RawModule module = load_test_kernels();
  expect_layout(module, "empty", {});
}

TEST_F(ParamInfo, TheSizeMayBeOmitted) {
  // cuda.h: "paramSize can be set to NULL if only the parameter offset is desired".
  RawModule module = load_test_kernels();
  CUfunction f = kernel(module, "mixed");
  std::size_t offset = 12345;
  EXPECT_EQ(api().cuFuncGetParamInfo(f, 2, &offset, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(offset, 16u);
}

}  // namespace
}  // namespace graphcap::testing
