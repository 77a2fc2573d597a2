// What the fake finds that a GPU shows only as wrong bytes, at the driver API: graph nodes that
// no path of edges orders touching the same bytes (FakeDriverOptions::detect_races), a launch's
// nodes in any order the edges allow (node_order_seed), and addresses baked into a captured
// kernel's parameters whose memory is gone at the replay.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "fake_fixture.h"

namespace graphcap::fake::unit {
namespace {

std::string hex(CUdeviceptr value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

class FakeRaces : public FakeDriverTest {
 public:
  explicit FakeRaces(FakeDriverOptions options = {}) : FakeDriverTest(options) {}

  void SetUp() override {
    FakeDriverTest::SetUp();
    side_ = new_stream();
    fork_ = new_event();
    join_ = new_event();
    a_ = alloc(16);
    b_ = alloc(16);
  }
  void TearDown() override {
    if (!expect_fault_) {
      if (exec_ != nullptr) {
        EXPECT_EQ(fake_.cuGraphExecDestroy(exec_), CUDA_SUCCESS);
      }
      if (graph_ != nullptr) {
        EXPECT_EQ(fake_.cuGraphDestroy(graph_), CUDA_SUCCESS);
      }
      EXPECT_EQ(fake_.cuEventDestroy(fork_), CUDA_SUCCESS);
      EXPECT_EQ(fake_.cuEventDestroy(join_), CUDA_SUCCESS);
      EXPECT_EQ(fake_.cuStreamDestroy(side_), CUDA_SUCCESS);
      free(a_);
      free(b_);
    }
    FakeDriverTest::TearDown();
  }

  // The defect: node 0 fills a with 1; the side stream forks after it and computes b = a + 1
  // (node 1) while the origin rewrites a with 5 (node 2); both join (node 3). No edge orders 1
  // and 2: b is 2 or 6 depending on which runs first.
  void record_side_read_of_a_rewritten_intermediate() {
    graph_ = capture(stream_, [&] {
      EXPECT_EQ(fill(stream_, a_, 1, 4), CUDA_SUCCESS);
      EXPECT_EQ(fake_.cuEventRecord(fork_, stream_), CUDA_SUCCESS);
      EXPECT_EQ(fake_.cuStreamWaitEvent(side_, fork_, 0), CUDA_SUCCESS);
      EXPECT_EQ(add_one(side_, a_, b_, 4), CUDA_SUCCESS);
      EXPECT_EQ(fill(stream_, a_, 5, 4), CUDA_SUCCESS);
      EXPECT_EQ(fake_.cuEventRecord(join_, side_), CUDA_SUCCESS);
      EXPECT_EQ(fake_.cuStreamWaitEvent(stream_, join_, 0), CUDA_SUCCESS);
      EXPECT_EQ(empty(stream_), CUDA_SUCCESS);
    });
    exec_ = instantiate(graph_);
  }

  CUstream side_ = nullptr;
  CUevent fork_ = nullptr, join_ = nullptr;
  CUdeviceptr a_ = 0, b_ = 0;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

TEST_F(FakeRaces, ASideStreamReadingAnIntermediateTheOriginRewritesIsARaceThatFailsTheReplay) {
  record_side_read_of_a_rewritten_intermediate();
  ASSERT_EQ(fake_.cuGraphLaunch(exec_, stream_), CUDA_SUCCESS);
  // Under strict the race fails the launch as a fault does, and names both nodes and the bytes.
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_LAUNCH_FAILED);
  const std::string expected =
      "race between node 1 (kernel 'add_one') and node 2 (kernel 'fill'), which no path of edges "
      "orders: node 1 reads and node 2 writes the 16 bytes at " +
      hex(a_) + " (bytes 0-16 of allocation " + hex(a_) + " of 16 bytes)";
  EXPECT_THAT(fake_.stream_fault(stream_), HasSubstr(expected));
  EXPECT_THAT(fake_.violations(), ElementsAre(HasSubstr(expected)));
  expect_fault_ = true;
}

TEST_F(FakeRaces, AConsumerThatJoinsTooLateRacesWithTheSideStreamsWrite) {
  // A missing join: the origin reads b (node 2) after waiting for an event the side stream
  // recorded before it wrote b (node 1); the side stream is joined only afterwards (node 3).
  CUevent early = new_event();
  const CUdeviceptr c = alloc(16);
  graph_ = capture(stream_, [&] {
    EXPECT_EQ(fill(stream_, a_, 1, 4), CUDA_SUCCESS);  // node 0
    EXPECT_EQ(fake_.cuEventRecord(fork_, stream_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamWaitEvent(side_, fork_, 0), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuEventRecord(early, side_), CUDA_SUCCESS);  // before the write: too early
    EXPECT_EQ(add_one(side_, a_, b_, 4), CUDA_SUCCESS);          // node 1 writes b
    EXPECT_EQ(fake_.cuStreamWaitEvent(stream_, early, 0), CUDA_SUCCESS);
    EXPECT_EQ(add_one(stream_, b_, c, 4), CUDA_SUCCESS);  // node 2 reads b
    EXPECT_EQ(fake_.cuEventRecord(join_, side_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamWaitEvent(stream_, join_, 0), CUDA_SUCCESS);
    EXPECT_EQ(empty(stream_), CUDA_SUCCESS);  // node 3
  });
  exec_ = instantiate(graph_);
  ASSERT_EQ(fake_.cuGraphLaunch(exec_, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_THAT(fake_.stream_fault(stream_),
              HasSubstr("race between node 1 (kernel 'add_one') and node 2 (kernel 'add_one'), "
                        "which no path of edges orders: node 1 writes and node 2 reads the 16 "
                        "bytes at " +
                        hex(b_)));
  expect_fault_ = true;
}

TEST_F(FakeRaces, TheSameGraphWithItsJoinRunsCleanly) {
  // The join where it belongs: node 2 depends on node 1, so nothing races.
  const CUdeviceptr c = alloc(16);
  graph_ = capture(stream_, [&] {
    EXPECT_EQ(fill(stream_, a_, 1, 4), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuEventRecord(fork_, stream_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamWaitEvent(side_, fork_, 0), CUDA_SUCCESS);
    EXPECT_EQ(add_one(side_, a_, b_, 4), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuEventRecord(join_, side_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamWaitEvent(stream_, join_, 0), CUDA_SUCCESS);
    EXPECT_EQ(add_one(stream_, b_, c, 4), CUDA_SUCCESS);
    EXPECT_EQ(fill(stream_, a_, 5, 4), CUDA_SUCCESS);
  });
  exec_ = instantiate(graph_);
  for (int replay = 0; replay < 2; ++replay) {
    ASSERT_EQ(fake_.cuGraphLaunch(exec_, stream_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  }
  EXPECT_THAT(download(c, 4, stream_), Each(3u));
  EXPECT_THAT(fake_.violations(), IsEmpty());
  free(c);
}

TEST_F(FakeRaces, TwoMemsetsOfOneRangeOnTwoBranchesRace) {
  graph_ = capture(stream_, [&] {
    EXPECT_EQ(fake_.cuEventRecord(fork_, stream_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamWaitEvent(side_, fork_, 0), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuMemsetD32Async(a_ + 4, 7, 2, side_), CUDA_SUCCESS);  // node 0: bytes 4-12
    EXPECT_EQ(fake_.cuMemsetD8Async(a_ + 8, 1, 8, stream_), CUDA_SUCCESS);  // node 1: bytes 8-16
    EXPECT_EQ(fake_.cuEventRecord(join_, side_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamWaitEvent(stream_, join_, 0), CUDA_SUCCESS);
  });
  exec_ = instantiate(graph_);
  ASSERT_EQ(fake_.cuGraphLaunch(exec_, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_THAT(fake_.stream_fault(stream_),
              HasSubstr("race between node 0 (memset of 8 bytes at " + hex(a_ + 4) +
                        ") and node 1 (memset of 8 bytes at " + hex(a_ + 8) +
                        "), which no path of edges orders: node 0 writes and node 1 writes the 4 "
                        "bytes at " +
                        hex(a_ + 8) + " (bytes 8-12 of allocation " + hex(a_) + " of 16 bytes)"));
  expect_fault_ = true;
}

class FakeRacesRecorded : public FakeRaces {
 public:
  FakeRacesRecorded() : FakeRaces(record_only()) {}
};

TEST_F(FakeRacesRecorded, ARaceIsRecordedOncePerExecutableAndTheWorkRunsOn) {
  record_side_read_of_a_rewritten_intermediate();
  for (int replay = 0; replay < 3; ++replay) {
    ASSERT_EQ(fake_.cuGraphLaunch(exec_, stream_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  }
  EXPECT_THAT(download(b_, 4, stream_), Each(2u));  // creation order: the side read first
  EXPECT_THAT(fake_.violations(),
              ElementsAre(HasSubstr("race between node 1 (kernel 'add_one') and node 2")));
  fake_.clear_violations();
}

class FakeRacesOff : public FakeRaces {
 public:
  FakeRacesOff() : FakeRaces([] {
    FakeDriverOptions options;
    options.detect_races = false;
    return options;
  }()) {}
};

TEST_F(FakeRacesOff, WithoutTheCheckTheRacyGraphRunsInCreationOrder) {
  record_side_read_of_a_rewritten_intermediate();
  ASSERT_EQ(fake_.cuGraphLaunch(exec_, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_THAT(download(b_, 4, stream_), Each(2u));
  EXPECT_THAT(download(a_, 4, stream_), Each(5u));
}

// ---- node order -----------------------------------------------------------------------------

class FakeNodeOrder : public FakeRaces {
 public:
  FakeNodeOrder() : FakeRaces([] {
    FakeDriverOptions options;
    options.detect_races = false;  // the order dependence shows as bytes, not as a violation
    options.node_order_seed = 7;
    return options;
  }()) {}
};

TEST_F(FakeNodeOrder, ASeededOrderShowsTheOrderDependenceAsWrongBytes) {
  record_side_read_of_a_rewritten_intermediate();
  // Each launch draws its own order: over a few launches both orders of nodes 1 and 2 run, so b
  // is sometimes 2 (the side read first) and sometimes 6 (it read the rewritten a).
  std::set<std::uint32_t> seen;
  for (int replay = 0; replay < 16; ++replay) {
    ASSERT_EQ(fake_.cuGraphLaunch(exec_, stream_), CUDA_SUCCESS);
    const std::vector<std::uint32_t> b = download(b_, 4, stream_);
    EXPECT_THAT(b, Each(b[0]));
    seen.insert(b[0]);
    EXPECT_THAT(download(a_, 4, stream_), Each(5u));  // node 2 always runs after node 0
  }
  EXPECT_EQ(seen, (std::set<std::uint32_t>{2u, 6u}));
}

TEST_F(FakeNodeOrder, ASeededOrderRespectsEveryEdge) {
  // A chain of 40 dependent adds on one stream: any order that respects the edges gives 40.
  graph_ = capture(stream_, [&] {
    EXPECT_EQ(fill(stream_, a_, 0, 4), CUDA_SUCCESS);
    for (int i = 0; i < 20; ++i) {
      EXPECT_EQ(add_one(stream_, a_, b_, 4), CUDA_SUCCESS);
      EXPECT_EQ(add_one(stream_, b_, a_, 4), CUDA_SUCCESS);
    }
  });
  exec_ = instantiate(graph_);
  for (int replay = 0; replay < 3; ++replay) {
    ASSERT_EQ(fake_.cuGraphLaunch(exec_, stream_), CUDA_SUCCESS);
    EXPECT_THAT(download(a_, 4, stream_), Each(40u));
  }
}

class FakeNodeOrderChecked : public FakeRaces {
 public:
  FakeNodeOrderChecked() : FakeRaces([] {
    FakeDriverOptions options;
    options.node_order_seed = 3;
    return options;
  }()) {}
};

TEST_F(FakeNodeOrderChecked, ARandomOrderOfAJoinedForkFindsNoRace) {
  // Two branches on disjoint memory, joined: whatever the order, no race and the right bytes.
  const CUdeviceptr c = alloc(16);
  graph_ = capture(stream_, [&] {
    EXPECT_EQ(fill(stream_, a_, 1, 4), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuEventRecord(fork_, stream_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamWaitEvent(side_, fork_, 0), CUDA_SUCCESS);
    EXPECT_EQ(add_one(side_, a_, b_, 4), CUDA_SUCCESS);
    EXPECT_EQ(add_one(stream_, a_, c, 4), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuEventRecord(join_, side_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamWaitEvent(stream_, join_, 0), CUDA_SUCCESS);
    EXPECT_EQ(add_one(stream_, b_, a_, 4), CUDA_SUCCESS);
  });
  exec_ = instantiate(graph_);
  for (int replay = 0; replay < 8; ++replay) {
    ASSERT_EQ(fake_.cuGraphLaunch(exec_, stream_), CUDA_SUCCESS);
    EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  }
  EXPECT_THAT(download(a_, 4, stream_), Each(3u));
  EXPECT_THAT(download(c, 4, stream_), Each(2u));
  EXPECT_THAT(fake_.violations(), IsEmpty());
  free(c);
}

// ---- baked addresses ------------------------------------------------------------------------

TEST_F(FakeRaces, APointerToMemoryFreedAfterCaptureIsBakedAtCapture) {
  const CUdeviceptr gone = alloc(64);
  graph_ = capture(stream_, [&] { EXPECT_EQ(fill(stream_, gone, 3, 16), CUDA_SUCCESS); });
  exec_ = instantiate(graph_);
  free(gone);
  ASSERT_EQ(fake_.cuGraphLaunch(exec_, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(fake_.stream_fault(stream_),
              HasSubstr("(node 0): kernel 'fill' parameter 0 holds " + hex(gone) +
                        ", an address baked at capture: it lay in allocation " + hex(gone) +
                        " of 64 bytes then, and now it is in freed memory (allocation " +
                        hex(gone) + " of 64 bytes)"));
  expect_fault_ = true;
}

TEST_F(FakeRaces, AnAddressInsideAStructPassedByValueIsBakedAtCaptureToo) {
  // affine's Affine p holds a 64-bit offset at bytes 8-16: a raw address there (as a tensor
  // map holds its global address) is passed by value on every replay.
  CUfunction affine = nullptr;
  const std::vector<std::byte> image = fake_.module_image({"affine"});
  CUmodule module = nullptr;
  ASSERT_EQ(fake_.cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuModuleGetFunction(&affine, module, "affine"), CUDA_SUCCESS);
  const CUdeviceptr gone = alloc(256);
  graph_ = capture(stream_, [&] {
    EXPECT_EQ(launch(affine, stream_, Affine{1, gone + 32, 4}, a_), CUDA_SUCCESS);
  });
  exec_ = instantiate(graph_);
  free(gone);
  ASSERT_EQ(fake_.cuGraphLaunch(exec_, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_THAT(fake_.stream_fault(stream_),
              HasSubstr("kernel 'affine' parameter 0 (bytes 8-16 of its 24) holds " +
                        hex(gone + 32) + ", an address baked at capture: it lay in allocation " +
                        hex(gone) + " of 256 bytes then, and now it is in freed memory"));
  expect_fault_ = true;
}

TEST_F(FakeRaces, AnIntegerThatIsNoAddressOfFreedMemoryIsNotBaked) {
  // The rule is narrow: a word counts only if it lay inside live device memory at capture and
  // lies in none at the replay. Ordinary values, and addresses of memory still alive, pass.
  CUfunction affine = nullptr;
  const std::vector<std::byte> image = fake_.module_image({"affine"});
  CUmodule module = nullptr;
  ASSERT_EQ(fake_.cuModuleLoadData(&module, image.data()), CUDA_SUCCESS);
  ASSERT_EQ(fake_.cuModuleGetFunction(&affine, module, "affine"), CUDA_SUCCESS);
  const CUdeviceptr never = b_ + (std::uint64_t{1} << 32);  // in no allocation, ever
  graph_ = capture(stream_, [&] {
    EXPECT_EQ(launch(affine, stream_, Affine{1, 12345, 4}, a_), CUDA_SUCCESS);
    EXPECT_EQ(launch(affine, stream_, Affine{1, never, 4}, a_), CUDA_SUCCESS);
    EXPECT_EQ(launch(affine, stream_, Affine{1, b_, 4}, a_), CUDA_SUCCESS);
  });
  exec_ = instantiate(graph_);
  ASSERT_EQ(fake_.cuGraphLaunch(exec_, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_THAT(fake_.violations(), IsEmpty());
  EXPECT_EQ(fake_.cuGraphExecDestroy(exec_), CUDA_SUCCESS);
  exec_ = nullptr;
  EXPECT_EQ(fake_.cuModuleUnload(module), CUDA_SUCCESS);
}

// ---- eager work of several streams ---------------------------------------------------------

std::string stream_text(CUstream stream) {
  return "stream " + hex(reinterpret_cast<std::uintptr_t>(stream));
}

TEST_F(FakeRaces, TwoStreamsWritingTheSameBytesWithNothingBetweenThemRace) {
  EXPECT_EQ(fill(stream_, a_, 1, 4), CUDA_SUCCESS);
  EXPECT_EQ(fill(side_, a_, 2, 4), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(side_), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_THAT(fake_.stream_fault(side_),
              HasSubstr("cuLaunchKernel (kernel 'fill') on " + stream_text(side_) +
                        ": race with cuLaunchKernel (kernel 'fill') on " + stream_text(stream_) +
                        ": both write the 16 bytes at " + hex(a_) + " (bytes 0-16 of allocation " +
                        hex(a_) + " of 16 bytes), and no event wait or host wait orders the two"));
  expect_fault_ = true;
}

TEST_F(FakeRaces, AnEventWaitOrAHostWaitOrdersTwoStreamsWrites) {
  EXPECT_EQ(fill(stream_, a_, 1, 4), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventRecord(fork_, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamWaitEvent(side_, fork_, 0), CUDA_SUCCESS);
  EXPECT_EQ(fill(side_, a_, 2, 4), CUDA_SUCCESS);  // after the event: ordered
  EXPECT_EQ(fake_.cuStreamSynchronize(side_), CUDA_SUCCESS);
  EXPECT_EQ(fill(stream_, a_, 3, 4), CUDA_SUCCESS);  // after the host's wait for side_: ordered
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_THAT(download(a_, 4, stream_), Each(3u));
  EXPECT_THAT(fake_.violations(), IsEmpty());
}

TEST_F(FakeRaces, AnEventWaitOrdersTheStreamsAfterTheEventIsDestroyed) {
  // Destroying an event right after waiting on it is legal: the wait was made, and its record,
  // still queued, orders the streams when it runs.
  CUevent brief = new_event();
  EXPECT_EQ(fill(stream_, a_, 1, 4), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventRecord(brief, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamWaitEvent(side_, brief, 0), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventDestroy(brief), CUDA_SUCCESS);
  EXPECT_EQ(fill(side_, a_, 2, 4), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(side_), CUDA_SUCCESS);
  EXPECT_THAT(download(a_, 4, side_), Each(2u));
  EXPECT_THAT(fake_.violations(), IsEmpty());
}

TEST_F(FakeRaces, TheLegacyStreamOrdersBlockingStreamsButNotNonBlockingOnes) {
  CUstream blocking = new_stream(CU_STREAM_DEFAULT);
  EXPECT_EQ(fill(blocking, a_, 1, 4), CUDA_SUCCESS);
  EXPECT_EQ(fill(nullptr, a_, 2, 4), CUDA_SUCCESS);   // waits for the blocking stream's fill
  EXPECT_EQ(fill(blocking, a_, 3, 4), CUDA_SUCCESS);  // waits for the legacy stream's
  EXPECT_EQ(fake_.cuStreamSynchronize(blocking), CUDA_SUCCESS);
  EXPECT_THAT(fake_.violations(), IsEmpty());
  EXPECT_EQ(fill(side_, b_, 1, 4), CUDA_SUCCESS);   // side_ is non-blocking
  EXPECT_EQ(fill(nullptr, b_, 2, 4), CUDA_SUCCESS);  // so nothing orders these two
  EXPECT_EQ(fake_.cuStreamSynchronize(nullptr), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_THAT(fake_.stream_fault(nullptr),
              HasSubstr("on the legacy stream of device 0: race with cuLaunchKernel (kernel "
                        "'fill') on " +
                        stream_text(side_) + ": both write the 16 bytes at " + hex(b_)));
  expect_fault_ = true;
}

}  // namespace
}  // namespace graphcap::fake::unit
