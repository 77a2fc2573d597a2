// Facts file, "Device memory the driver holds per executable": instantiate takes the
// driver's own memory for an executable (upload and launch take none), in 2 MiB chunks several
// executables share; destroying executables gives nothing back, and later executables reuse what
// the driver kept. The sizes are the measured model's (src/graphcap/driver/executable_memory.h),
// which the fake implements: each test runs in a process of its own under ctest, so on the GPU
// nothing kept by an earlier test's executables is there to reuse.
#include <cstdint>
#include <vector>

#include <graphcap/driver/executable_memory.h>

#include "conformance/conformance_fixture.h"

namespace graphcap::testing {
namespace {

class ExecutableMemory : public KernelsTest {
 protected:
  void SetUp() override {
    KernelsTest::SetUp();
    if (HasFatalFailure()) return;
    buffer_ = alloc(64 * 1024);
    ASSERT_FALSE(HasFailure());
  }
  void TearDown() override {
    buffer_.reset();
    KernelsTest::TearDown();
  }

  std::size_t taken_since(std::size_t free_before) {
    const std::size_t now = free_memory();
    return now < free_before ? free_before - now : 0;
  }

  // A chain of `nodes` nodes of one kind, captured from one stream.
  enum class Node { kernel, memset, dtod };
  RawGraph chain(Node node, std::size_t nodes) {
    return capture(s_.get(), [&] {
      for (std::size_t i = 0; i < nodes; ++i) {
        switch (node) {
          case Node::kernel:
            ASSERT_EQ(launch(empty_, s_.get(), 1, 1), CUDA_SUCCESS);
            break;
          case Node::memset:
            ASSERT_EQ(api().cuMemsetD32Async(buffer_.get(), 1u, 64, s_.get()), CUDA_SUCCESS);
            break;
          case Node::dtod:
            ASSERT_EQ(api().cuMemcpyDtoDAsync(buffer_.get() + 32 * 1024, buffer_.get(), 256,
                                              s_.get()),
                      CUDA_SUCCESS);
            break;
        }
      }
    });
  }

  // `count` executables of `graph`: the memory instantiate took, then that upload and a launch
  // of each took none.
  std::vector<Exec> instantiate_many(CUgraph graph, std::size_t count, std::size_t* taken) {
    const std::size_t before = free_memory();
    std::vector<Exec> execs;
    for (std::size_t i = 0; i < count; ++i) execs.push_back(instantiate(graph));
    *taken = taken_since(before);
    const std::size_t instantiated = free_memory();
    for (const Exec& exec : execs) EXPECT_EQ(api().cuGraphUpload(exec.get(), s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(taken_since(instantiated), 0u) << "upload took memory";
    for (const Exec& exec : execs) EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(taken_since(instantiated), 0u) << "the first launch took memory";
    return execs;
  }

  DeviceMemory buffer_;
};

// M.kernel.1x256: 256 executables of one kernel node held 28 MiB (112 KiB each); destroying them
// gave nothing back, and a second batch took nothing more.
TEST_F(ExecutableMemory, InstantiateTakesAboutATenthOfAMebibytePerSmallExecutableInChunks) {
  RawGraph graph = chain(Node::kernel, 1);
  std::size_t taken = 0;
  std::vector<Exec> execs = instantiate_many(graph.get(), 256, &taken);
  EXPECT_EQ(taken % kDriverMemoryChunk, 0u) << taken;
  EXPECT_EQ(executable_driver_bytes({1, 0, 0}) * 256, 28 * kMiB) << "the model's figure";
  EXPECT_NEAR(static_cast<double>(taken), 28.0 * kMiB, 2.0 * kMiB);
  const std::size_t held = free_memory();
  execs.clear();
  EXPECT_EQ(free_memory(), held) << "destroying executables gives nothing back";
  std::size_t again = 0;
  std::vector<Exec> second = instantiate_many(graph.get(), 256, &again);
  EXPECT_EQ(again, 0u) << "the second batch reuses what the driver kept";
}

// M.kernel.1000, M.memcpy.1000: 8 executables of 1000 kernel or DtoD copy nodes held 18 MiB.
TEST_F(ExecutableMemory, KernelAndCopyNodesCostAboutTwoKibibytesEach) {
  EXPECT_EQ(executable_driver_bytes({1000, 0, 0}) * 8, 18 * kMiB) << "the model's figure";
  std::vector<std::vector<Exec>> kept;  // alive, so the second kind can't reuse the first's
  for (Node node : {Node::kernel, Node::dtod}) {
    SCOPED_TRACE(node == Node::kernel ? "kernel nodes" : "DtoD copy nodes");
    RawGraph graph = chain(node, 1000);
    std::size_t taken = 0;
    kept.push_back(instantiate_many(graph.get(), 8, &taken));
    EXPECT_NEAR(static_cast<double>(taken), 18.0 * kMiB, 2.0 * kMiB);
  }
}

// M.memset.1000: 8 executables of 1000 memset nodes fit in one chunk.
TEST_F(ExecutableMemory, MemsetNodesCostAlmostNothing) {
  RawGraph graph = chain(Node::memset, 1000);
  std::size_t taken = 0;
  std::vector<Exec> execs = instantiate_many(graph.get(), 8, &taken);
  EXPECT_LE(taken, kDriverMemoryChunk);
}

}  // namespace
}  // namespace graphcap::testing
