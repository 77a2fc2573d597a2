// ForwardingDriver: every entry point reaches the inner driver's entry point of the same name,
// once, with its arguments in order and its result unchanged; a derived driver overrides only what
// it watches.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/driver/forwarding_driver.h>
#include <graphcap/fake/fake_driver.h>
#include <graphcap/fake/mock_driver.h>

namespace graphcap::fake::unit {
namespace {

using ::testing::Return;
using ::testing::StrictMock;

template <class Handle>
Handle handle(std::uintptr_t value) {
  return reinterpret_cast<Handle>(value);
}

// An inner driver that writes down each entry point called, by name, and answers every one with
// CUDA_ERROR_UNKNOWN. Generated from the table rather than a StrictMock with an expectation per
// entry point: that instantiated gMock's expectation machinery for every signature, 30 s of
// compile under CI's sanitizers for the same assertion (reliability.md "CI").
class NameRecordingDriver final : public FakeDriver {
 public:
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  CUresult name(GRAPHCAP_PARAM_TYPES(params)) override {              \
    called.push_back(#name);                                          \
    return CUDA_ERROR_UNKNOWN;                                        \
  }
#include <graphcap/driver/entry_points.def>
  std::vector<std::string> called;
};

TEST(ForwardingDriver, EveryEntryPointReachesTheInnerOneOfItsName) {
  NameRecordingDriver inner;
  ForwardingDriver forwarding(inner);
  std::vector<std::string> table;
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) table.push_back(#name);
#include <graphcap/driver/entry_points.def>
  // Every argument zero; the result is the inner driver's.
#define GRAPHCAP_ZERO(type, param) std::type_identity_t<type>{}
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  EXPECT_EQ(forwarding.name(GRAPHCAP_PP_EACH(GRAPHCAP_ZERO, params)), CUDA_ERROR_UNKNOWN) << #name;
#include <graphcap/driver/entry_points.def>
#undef GRAPHCAP_ZERO
  // In the table's order, each exactly once: a crossed or doubled call would show here.
  EXPECT_EQ(inner.called, table);
  EXPECT_FALSE(table.empty());
}

TEST(ForwardingDriver, ArgumentsArriveInOrder) {
  StrictMock<MockDriver> inner;
  ForwardingDriver forwarding(inner);
  const auto function = handle<CUfunction>(0x10);
  const auto stream = handle<CUstream>(0x20);
  void** params = handle<void**>(0x30);
  void** extra = handle<void**>(0x40);
  EXPECT_CALL(inner, cuLaunchKernel(function, 1, 2, 3, 4, 5, 6, 7, stream, params, extra))
      .WillOnce(Return(CUDA_SUCCESS));
  EXPECT_EQ(forwarding.cuLaunchKernel(function, 1, 2, 3, 4, 5, 6, 7, stream, params, extra),
            CUDA_SUCCESS);

  float milliseconds = 0;
  const auto start = handle<CUevent>(0x50);
  const auto end = handle<CUevent>(0x60);
  EXPECT_CALL(inner, cuEventElapsedTime(&milliseconds, start, end))
      .WillOnce(Return(CUDA_ERROR_NOT_READY));
  EXPECT_EQ(forwarding.cuEventElapsedTime(&milliseconds, start, end), CUDA_ERROR_NOT_READY);
}

TEST(ForwardingDriver, NameIsTheInnerDriversAndInnerIsIt) {
  FakeDriver fake;
  ForwardingDriver forwarding(fake);
  EXPECT_STREQ(forwarding.name(), "fake");
  EXPECT_EQ(&forwarding.inner(), &fake);
}

// The documented use: override one entry point, let the rest through.
class CountingQueries final : public ForwardingDriver {
 public:
  using ForwardingDriver::ForwardingDriver;
  CUresult cuStreamQuery(CUstream stream) override {
    ++queries;
    return ForwardingDriver::cuStreamQuery(stream);
  }
  int queries = 0;
};

TEST(ForwardingDriver, ADerivedDriverWatchesOneEntryPointAndPassesTheRest) {
  FakeDriver fake;
  CountingQueries counting(fake);
  DriverApi& api = counting;
  ASSERT_EQ(api.cuInit(0), CUDA_SUCCESS);
  CUcontext context = nullptr;
  ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSetCurrent(context), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamQuery(stream), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(api.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  EXPECT_EQ(counting.queries, 1);
  EXPECT_EQ(fake.call_count("cuStreamQuery"), 1u);
  EXPECT_EQ(fake.call_count("cuStreamCreate"), 1u);
  EXPECT_EQ(fake.live_handles().total(), 0u);
}

}  // namespace
}  // namespace graphcap::fake::unit
