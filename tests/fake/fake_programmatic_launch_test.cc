// The fake's programmatic-dependent-launch contract (its own check; on a GPU an early read just
// reads stale data, docs/cuda-driver-facts.md P03.a): a kernel launched with
// PROGRAMMATIC_STREAM_SERIALIZATION that takes a buffer its kernel predecessor may write before
// KernelContext::wait_for_predecessor() is a violation, eagerly and in a replayed graph; waiting
// first, or a predecessor that already ran, or one that is not a kernel, is not.
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "fake/fake_fixture.h"

namespace graphcap::fake::unit {
namespace {

class FakeProgrammaticLaunch : public FakeDriverTest {
 protected:
  void SetUp() override {
    FakeDriverTest::SetUp();
    if (HasFatalFailure()) return;
    image_ = fake_.module_image({"pdl_add_one"});
    ASSERT_EQ(fake_.cuModuleLoadData(&pdl_module_, image_.data()), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuModuleGetFunction(&pdl_add_one_, pdl_module_, "pdl_add_one"),
              CUDA_SUCCESS);
    a_ = alloc(64 * 4);
    b_ = alloc(64 * 4);
    c_ = alloc(64 * 4);
    upload(a_, std::vector<std::uint32_t>(64, 1), stream_);
  }
  void TearDown() override {
    free(a_);
    free(b_);
    free(c_);
    EXPECT_EQ(fake_.cuModuleUnload(pdl_module_), CUDA_SUCCESS);
    FakeDriverTest::TearDown();
  }

  CUresult step(CUdeviceptr src, CUdeviceptr dst, bool programmatic, std::uint32_t wait) {
    std::uint32_t n = 64;
    void* params[] = {&src, &dst, &n, &wait};
    CUlaunchAttribute attribute;
    std::memset(&attribute, 0, sizeof attribute);
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config;
    std::memset(&config, 0, sizeof config);
    config.gridDimX = config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 64;
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = stream_;
    config.attrs = &attribute;
    config.numAttrs = programmatic ? 1 : 0;
    return fake_.cuLaunchKernelEx(&config, pdl_add_one_, params, nullptr);
  }

  CUmodule pdl_module_ = nullptr;
  CUfunction pdl_add_one_ = nullptr;
  CUdeviceptr a_ = 0, b_ = 0, c_ = 0;
};

TEST_F(FakeProgrammaticLaunch, ReadingThePredecessorsOutputBeforeWaitingIsAViolation) {
  ASSERT_EQ(step(a_, b_, false, 0), CUDA_SUCCESS);
  ASSERT_EQ(step(b_, c_, true, 0), CUDA_SUCCESS);  // reads b before waiting
  EXPECT_EQ(download(c_, 1, stream_)[0], 3u) << "the fake's device is sequential: no stale data";
  ASSERT_EQ(fake_.violations().size(), 1u);
  EXPECT_TRUE(mentions(fake_.violations(), "launched programmatically after kernel 'pdl_add_one'",
                       "wait_for_predecessor"));
  fake_.clear_violations();
}

TEST_F(FakeProgrammaticLaunch, WaitingFirstOrAPredecessorThatAlreadyRanIsNoViolation) {
  ASSERT_EQ(step(a_, b_, false, 0), CUDA_SUCCESS);
  ASSERT_EQ(step(b_, c_, true, 1), CUDA_SUCCESS);
  EXPECT_EQ(download(c_, 1, stream_)[0], 3u);
  // The predecessor finished before the programmatic launch was made (the host waited).
  ASSERT_EQ(step(a_, b_, false, 0), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  ASSERT_EQ(step(b_, c_, true, 0), CUDA_SUCCESS);
  EXPECT_EQ(download(c_, 1, stream_)[0], 3u);
  // Not a kernel before it: a programmatic launch after a memset waits for it as any launch.
  ASSERT_EQ(fake_.cuMemsetD32Async(b_, 5, 64, stream_), CUDA_SUCCESS);
  ASSERT_EQ(step(b_, c_, true, 0), CUDA_SUCCESS);
  EXPECT_EQ(download(c_, 1, stream_)[0], 6u);
  // And a launch without the attribute never overlaps.
  ASSERT_EQ(step(a_, b_, false, 0), CUDA_SUCCESS);
  ASSERT_EQ(step(b_, c_, false, 0), CUDA_SUCCESS);
  EXPECT_EQ(download(c_, 1, stream_)[0], 3u);
  EXPECT_TRUE(fake_.violations().empty());
}

TEST_F(FakeProgrammaticLaunch, AReplayedProgrammaticEdgeIsCheckedTheSameWay) {
  const CUgraph graph = capture(stream_, [&] {
    EXPECT_EQ(step(a_, b_, false, 0), CUDA_SUCCESS);
    EXPECT_EQ(step(b_, c_, true, 0), CUDA_SUCCESS);
  });
  const CUgraphExec exec = instantiate(graph);
  EXPECT_TRUE(fake_.violations().empty()) << "nothing ran at capture";
  ASSERT_EQ(fake_.cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(download(c_, 1, stream_)[0], 3u);
  EXPECT_TRUE(mentions(fake_.violations(), "cuGraphLaunch", "wait_for_predecessor"));
  fake_.clear_violations();
  EXPECT_EQ(fake_.cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
}

TEST_F(FakeProgrammaticLaunch, AttributesTheFakeDoesNotModelAreRefusedAndSaid) {
  CUdeviceptr src = a_, dst = b_;
  std::uint32_t n = 64, wait = 1;
  void* params[] = {&src, &dst, &n, &wait};
  CUlaunchAttribute attribute;
  std::memset(&attribute, 0, sizeof attribute);
  attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attribute.value.cooperative = 1;
  CUlaunchConfig config;
  std::memset(&config, 0, sizeof config);
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 1;
  config.hStream = stream_;
  config.attrs = &attribute;
  config.numAttrs = 1;
  EXPECT_EQ(fake_.cuLaunchKernelEx(&config, pdl_add_one_, params, nullptr),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_TRUE(mentions(fake_.violations(), "not modelled"));
  fake_.clear_violations();
  EXPECT_EQ(fake_.cuLaunchKernelEx(nullptr, pdl_add_one_, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
}  // namespace graphcap::fake::unit
