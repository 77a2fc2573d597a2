// Capture across threads: the capture mode is per thread, GLOBAL captures prohibit unsafe calls
// from other GLOBAL-mode threads, and ending a capture from another thread is refused (908) for
// GLOBAL and THREAD_LOCAL captures. Also: the fake is safe to drive from many threads at once.
#include <atomic>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_fixture.h"

namespace graphcap::fake::unit {
namespace {

class FakeThreads : public FakeDriverTest {
 public:
  // Runs `body` on a new thread with the test's context current and the given capture mode.
  void on_other_thread(CUstreamCaptureMode mode, const std::function<void()>& body) {
    std::thread other([&] {
      ASSERT_EQ(fake_.cuCtxSetCurrent(context_), CUDA_SUCCESS);
      CUstreamCaptureMode previous = mode;
      ASSERT_EQ(fake_.cuThreadExchangeStreamCaptureMode(&previous), CUDA_SUCCESS);
      EXPECT_EQ(previous, CU_STREAM_CAPTURE_MODE_GLOBAL);  // every thread starts GLOBAL
      body();
    });
    other.join();
  }
};

class FakeCrossThread
    : public FakeThreads,
      public ::testing::WithParamInterface<std::tuple<CUstreamCaptureMode, CUstreamCaptureMode>> {};

std::string mode_name(CUstreamCaptureMode mode) {
  return mode == CU_STREAM_CAPTURE_MODE_GLOBAL         ? "GLOBAL"
         : mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ? "THREAD_LOCAL"
                                                       : "RELAXED";
}

TEST_P(FakeCrossThread, UnsafeCallsFromAnotherThreadFollowTheModes) {
  const auto [capture_mode, thread_mode] = GetParam();
  const bool refused =
      capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
  CUstream unrelated = new_stream();
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, capture_mode), CUDA_SUCCESS);
  ASSERT_EQ(empty(stream_), CUDA_SUCCESS);
  on_other_thread(thread_mode, [&] {
    CUdeviceptr pointer = 0;
    const CUresult alloc_result = fake_.cuMemAlloc(&pointer, 64);
    EXPECT_EQ(alloc_result, refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS);
    if (alloc_result == CUDA_SUCCESS) {
      EXPECT_EQ(fake_.cuMemFree(pointer), CUDA_SUCCESS);
    }
    EXPECT_EQ(fake_.cuStreamQuery(unrelated),
              refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS);
  });
  EXPECT_EQ(status(stream_),
            refused ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUgraph graph = nullptr;
  EXPECT_EQ(fake_.cuStreamEndCapture(stream_, &graph),
            refused ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS);
  if (graph != nullptr) {
    EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
  }
  EXPECT_EQ(fake_.cuStreamDestroy(unrelated), CUDA_SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(EveryPair, FakeCrossThread,
                         ::testing::Combine(::testing::Values(CU_STREAM_CAPTURE_MODE_GLOBAL,
                                                              CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                                              CU_STREAM_CAPTURE_MODE_RELAXED),
                                            ::testing::Values(CU_STREAM_CAPTURE_MODE_GLOBAL,
                                                              CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                                              CU_STREAM_CAPTURE_MODE_RELAXED)),
                         [](const auto& test_info) {
                           return "capture_" + mode_name(std::get<0>(test_info.param)) +
                                  "_caller_" + mode_name(std::get<1>(test_info.param));
                         });

class FakeEndFromOtherThread : public FakeCrossThread {};

TEST_P(FakeEndFromOtherThread, IsRefusedUnlessTheCaptureIsRelaxed) {
  const CUstreamCaptureMode mode = std::get<0>(GetParam());
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, mode), CUDA_SUCCESS);
  ASSERT_EQ(empty(stream_), CUDA_SUCCESS);
  CUgraph graph = reinterpret_cast<CUgraph>(std::uintptr_t{0x10});
  on_other_thread(CU_STREAM_CAPTURE_MODE_GLOBAL, [&] {
    EXPECT_EQ(fake_.cuStreamEndCapture(stream_, &graph),
              mode == CU_STREAM_CAPTURE_MODE_RELAXED ? CUDA_SUCCESS
                                                     : CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  });
  EXPECT_EQ(status(stream_), CU_STREAM_CAPTURE_STATUS_NONE);  // terminated either way
  if (mode == CU_STREAM_CAPTURE_MODE_RELAXED) {
    ASSERT_NE(graph, nullptr);
    EXPECT_EQ(nodes(graph).size(), 1u);
    EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
  } else {
    EXPECT_EQ(graph, nullptr);
    CUgraph mine = nullptr;
    EXPECT_EQ(fake_.cuStreamEndCapture(stream_, &mine), CUDA_ERROR_ILLEGAL_STATE);
    EXPECT_EQ(mine, nullptr);
  }
  EXPECT_EQ(empty(stream_), CUDA_SUCCESS);  // usable again
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(EveryMode, FakeEndFromOtherThread,
                         ::testing::Combine(::testing::Values(CU_STREAM_CAPTURE_MODE_GLOBAL,
                                                              CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                                              CU_STREAM_CAPTURE_MODE_RELAXED),
                                            ::testing::Values(CU_STREAM_CAPTURE_MODE_GLOBAL)),
                         [](const auto& test_info) {
                           return mode_name(std::get<0>(test_info.param));
                         });

TEST_F(FakeThreads, AThreadsOwnThreadLocalModeIgnoresOtherThreadsCaptures) {
  // This thread captures in GLOBAL mode but switches itself to THREAD_LOCAL: another thread's
  // GLOBAL capture then doesn't matter to it, and its own GLOBAL capture still does.
  CUstream theirs = new_stream();
  std::atomic<bool> begun{false};
  std::atomic<bool> done{false};
  std::thread other([&] {
    ASSERT_EQ(fake_.cuCtxSetCurrent(context_), CUDA_SUCCESS);
    ASSERT_EQ(fake_.cuStreamBeginCapture(theirs, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    begun = true;
    while (!done) std::this_thread::yield();
    CUgraph graph = nullptr;
    EXPECT_EQ(fake_.cuStreamEndCapture(theirs, &graph), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
  });
  while (!begun) std::this_thread::yield();
  const CUstreamCaptureMode previous = set_mode(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  CUdeviceptr pointer = 0;
  EXPECT_EQ(fake_.cuMemAlloc(&pointer, 64), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuMemFree(pointer), CUDA_SUCCESS);
  set_mode(previous);
  done = true;
  other.join();
  EXPECT_EQ(fake_.cuStreamDestroy(theirs), CUDA_SUCCESS);
}

TEST_F(FakeThreads, ModesArePerThreadAndNewThreadsStartGlobal) {
  on_other_thread(CU_STREAM_CAPTURE_MODE_RELAXED, [] {});
  on_other_thread(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, [] {});  // checks it starts GLOBAL
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  ASSERT_EQ(fake_.cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

TEST_F(FakeThreads, ManyThreadsLaunchAndSynchronizeConcurrently) {
  constexpr int kThreads = 4;
  constexpr std::uint32_t kElements = 256;
  std::vector<CUdeviceptr> buffers;
  for (int i = 0; i < kThreads; ++i) buffers.push_back(alloc(kElements * 4));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      ASSERT_EQ(fake_.cuCtxSetCurrent(context_), CUDA_SUCCESS);
      CUstream stream = nullptr;
      ASSERT_EQ(fake_.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
      for (std::uint32_t round = 0; round < 20; ++round) {
        EXPECT_EQ(fill(stream, buffers[static_cast<std::size_t>(i)],
                       static_cast<std::uint32_t>(i) * 100 + round, kElements),
                  CUDA_SUCCESS);
        if (round % 5 == 0) {
          const CUgraph graph = capture(
              stream,
              [&] {
                EXPECT_EQ(add_one(stream, buffers[static_cast<std::size_t>(i)],
                                  buffers[static_cast<std::size_t>(i)], kElements),
                          CUDA_SUCCESS);
              },
              CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
          const CUgraphExec exec = instantiate(graph);
          EXPECT_EQ(fake_.cuGraphLaunch(exec, stream), CUDA_SUCCESS);
          EXPECT_EQ(fake_.cuStreamSynchronize(stream), CUDA_SUCCESS);
          EXPECT_EQ(fake_.cuGraphExecDestroy(exec), CUDA_SUCCESS);
          EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
        }
        EXPECT_EQ(fake_.cuStreamSynchronize(stream), CUDA_SUCCESS);
      }
      EXPECT_EQ(fake_.cuStreamDestroy(stream), CUDA_SUCCESS);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_THAT(peek(buffers[static_cast<std::size_t>(i)], kElements),
                Each(static_cast<std::uint32_t>(i) * 100 + 19));
    free(buffers[static_cast<std::size_t>(i)]);
  }
  // Records carry the calling thread.
  std::set<std::thread::id> callers;
  for (const CallRecord& record : fake_.calls()) callers.insert(record.thread);
  EXPECT_EQ(callers.size(), static_cast<std::size_t>(kThreads) + 1);
}

}  // namespace
}  // namespace graphcap::fake::unit
