// What the harness keeps out of a program so that it stays defined on a GPU whatever the program
// lost: a shrunk program (calls dropped) or a generated one reaching a state CUDA leaves
// undefined is skipped there, on both drivers alike, instead of being made.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fake_model.h"
#include "program.h"
#include "replay.h"

namespace graphcap::fidelity {
namespace {

std::vector<Call> calls_of(const std::string& lines) {
  std::istringstream in("program 0 seed 0 driver fake\n" + lines + "end\n");
  return read_traces(in, "test").at(0).calls;
}

// A capture records into the body of an IF node of another capture's graph; the shrinker dropped
// the body's end. Destroying the graph holding the node would destroy the body under the capture.
TEST(FidelityHarness, AGraphWhoseBodyACaptureRecordsIntoIsNotDestroyed) {
  const std::vector<Call> calls = calls_of(
      "t0 cuModuleLoadData m1 test\n"
      "t0 cuModuleGetFunction f1 m1 set_condition\n"
      "t0 cuStreamCreate s1 1\n"
      "t0 cuStreamCreate s2 1\n"
      "t0 cuStreamBeginCapture s1 RELAXED\n"
      "t0 cuStreamGetCaptureInfo s1 g1\n"
      "t0 cuGraphConditionalHandleCreate c1 g1 primary 0 1\n"
      "t0 cuGraphAddNode q1 g1 @s1 IF c1 1\n"
      "t0 cuStreamBeginCaptureToGraph s2 q1.0 [] RELAXED\n"
      "t0 cuStreamEndCapture s1 g2\n"
      "t0 cuGraphDestroy g2\n"
      "t0 cuStreamIsCapturing s2\n");
  FidelityFake fake;
  std::vector<Observation> got;
  ASSERT_NO_THROW(got = run_program(calls, fake.driver, fake.image));
  ASSERT_EQ(got.size(), calls.size());
  EXPECT_FALSE(got[8].skipped) << "the body's capture began: " << got[8].text();
  EXPECT_EQ(got[9].code, CUDA_SUCCESS) << got[9].text();
  EXPECT_TRUE(got[10].skipped) << got[10].text();
  EXPECT_FALSE(got[11].skipped);
  EXPECT_EQ(got[11].detail, " st=A") << "s2 still captures the body";
}

// The program that crashed the H200's driver (seed 9,000,001, program 5369), in short: a graph
// allocation of one capture (b4, s2's) memset by another capture (s1's), whose graph is then
// instantiated after the allocating capture ended and took its allocation with it.
TEST(FidelityHarness, AGraphAllocationIsUsedOnlyInsideTheCaptureThatMadeIt) {
  const std::vector<Call> calls = calls_of(
      "t0 cuStreamCreate s1 1\n"
      "t0 cuStreamCreate s2 1\n"
      "t0 cuMemAlloc b1 1024\n"
      "t0 cuStreamBeginCapture s1 RELAXED\n"
      "t0 cuStreamBeginCapture s2 RELAXED\n"
      "t0 cuMemAllocAsync b4 1024 s2\n"
      "t0 cuMemsetD8Async b4 8 1024 s2\n"   // its own capture: made
      "t0 cuMemsetD8Async b1 7 1024 s1\n"
      "t0 cuMemsetD8Async b4 0 1024 s1\n"   // another capture: skipped
      "t0 cuMemsetD8Async b4 0 1024 s1\n"
      "t0 cuMemcpyDtoDAsync b1 b4 1024 s1\n"
      "t0 cuStreamEndCapture s2 g1\n"
      "t0 cuStreamEndCapture s1 g2\n"
      "t0 cuGraphInstantiateWithFlags x1 g2 0\n"
      "t0 cuMemFree b4\n");
  FidelityFake fake;
  const std::vector<Observation> got = run_program(calls, fake.driver, fake.image);
  ASSERT_EQ(got.size(), calls.size());
  EXPECT_FALSE(got[5].skipped);
  EXPECT_EQ(got[5].code, CUDA_SUCCESS);
  EXPECT_FALSE(got[6].skipped);
  EXPECT_FALSE(got[7].skipped);
  EXPECT_TRUE(got[8].skipped) << got[8].text();
  EXPECT_TRUE(got[9].skipped) << got[9].text();
  EXPECT_TRUE(got[10].skipped) << got[10].text();
  EXPECT_EQ(got[12].code, CUDA_SUCCESS) << got[12].text();
  EXPECT_NE(got[12].detail.find("g2=[2] "), std::string::npos)
      << "one memset node: " << got[12].text();
  EXPECT_EQ(got[13].code, CUDA_SUCCESS);
  EXPECT_TRUE(got[14].skipped) << "gone with its capture: " << got[14].text();
  EXPECT_TRUE(fake.driver.violations().empty());
}

// Seed 14, program 814 on the H200, shrunk: a capture forked onto a second stream, a kernel on
// one and a copy on the other both write b3 with no edge between them, and the graph is launched.
// b3's bytes after the launch are the GPU's to choose: shown racy, counted, not compared.
TEST(FidelityHarness, BytesWrittenByNodesNoEdgeOrdersAreRacyAndCountedApart) {
  std::ifstream in(std::filesystem::path(GRAPHCAP_FIDELITY_TRACES) /
                   "h200-2026-12-04-run11-racy.trace");
  const std::vector<Trace> traces = read_traces(in, "racy");
  ASSERT_EQ(traces.size(), 1u);
  const Trace& h200 = traces[0];
  FidelityFake fake;
  const std::vector<Observation> got = run_program(h200.calls, fake.driver, fake.image);
  ASSERT_EQ(got.size(), h200.calls.size());
  EXPECT_EQ(got.back().detail.rfind(" ; b3~=", 0), 0u) << got.back().text();
  EXPECT_NE(h200.observations.back().detail, got.back().detail) << "the bytes differ";
  EXPECT_FALSE(first_difference(h200.calls, h200.observations, got).has_value());
  EXPECT_EQ(racy_differences(h200.calls, h200.observations, got), 1u);
}

}  // namespace
}  // namespace graphcap::fidelity
