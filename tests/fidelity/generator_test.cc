// graphcap-fidelity's own units, on the fake: programs are reproducible from (seed, index), traces
// read back as written, timing-dependent codes and capture numbers compare as the tool says, and
// a difference shrinks to the few calls that show it.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <graphcap/driver/forwarding_driver.h>
#include <graphcap/fake/fake_driver.h>

#include "fake_model.h"
#include "generator.h"
#include "kernels/test_kernels.h"
#include "program.h"
#include "replay.h"

namespace graphcap::fidelity {
namespace {

using Fake = FidelityFake;

std::string text(const Trace& trace) {
  std::ostringstream out;
  write_trace(out, trace);
  return out.str();
}

TEST(Fidelity, AProgramIsTheSameForTheSameSeedAndIndexAndAnotherForAnother) {
  GeneratorOptions options;
  options.seed = 5;
  Fake a, b, c;
  const Trace first = generate(options, 3, a.driver, a.image);
  const Trace again = generate(options, 3, b.driver, b.image);
  const Trace other = generate(options, 4, c.driver, c.image);
  EXPECT_GE(first.calls.size(), options.min_calls);
  EXPECT_EQ(text(first), text(again));
  EXPECT_NE(text(first), text(other));
}

TEST(Fidelity, ATraceReadsBackAsWritten) {
  GeneratorOptions options;
  Fake fake;
  Trace trace = generate(options, 0, fake.driver, fake.image);
  trace.difference = "cuStreamQuery_900/0";
  trace.difference_at = 7;
  std::istringstream in(text(trace));
  const std::vector<Trace> read = read_traces(in, "test");
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(text(read[0]), text(trace));
  EXPECT_EQ(read[0].seed, trace.seed);
  EXPECT_EQ(read[0].difference_at, 7u);
}

TEST(Fidelity, OnlyQueriesTreatNotReadyAsDoneAndCaptureNumbersAreNotCompared) {
  Observation done{false, CUDA_SUCCESS, ""};
  Observation busy{false, CUDA_ERROR_NOT_READY, ""};
  EXPECT_TRUE(same_observation("cuStreamQuery", done, busy));
  EXPECT_TRUE(same_observation("cuEventQuery", busy, done));
  EXPECT_FALSE(same_observation("cuStreamSynchronize", done, busy));
  Observation one{false, CUDA_SUCCESS, " ; s1:A1/0"};
  Observation two{false, CUDA_SUCCESS, " ; s1:A2/0"};
  Observation deps{false, CUDA_SUCCESS, " ; s1:A1/1"};
  EXPECT_TRUE(same_observation("cuStreamBeginCapture", one, two));
  EXPECT_FALSE(same_observation("cuStreamBeginCapture", one, deps));
  Observation skipped{true, 0, ""};
  EXPECT_FALSE(same_observation("cuStreamQuery", done, skipped));
}

// A driver that answers 1 to every cuStreamSynchronize once any capture has begun.
class Broken : public ForwardingDriver {
 public:
  using ForwardingDriver::ForwardingDriver;
  CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) override {
    const CUresult r = ForwardingDriver::cuStreamBeginCapture(stream, mode);
    began_ = began_ || r == CUDA_SUCCESS;
    return r;
  }
  CUresult cuStreamSynchronize(CUstream stream) override {
    return began_ ? CUDA_ERROR_INVALID_VALUE : ForwardingDriver::cuStreamSynchronize(stream);
  }

 private:
  bool began_ = false;
};

TEST(Fidelity, ADifferenceShrinksToTheCallsThatShowIt) {
  GeneratorOptions options;
  options.seed = 2;
  // The first program of seed 2 where the broken driver answers a cuStreamSynchronize otherwise
  // (a program may show it first elsewhere: the harness's own reads of bytes wait for streams).
  std::vector<Call> calls;
  std::string kind;
  for (std::uint64_t index = 0; index < 200 && kind.rfind("cuStreamSynchronize", 0) != 0;
       ++index) {
    Fake model;
    const Trace trace = generate(options, index, model.driver, model.image);
    Fake inner;
    Broken broken(inner.driver);
    std::vector<Observation> got;
    try {
      got = run_program(trace.calls, broken, inner.image);
    } catch (const std::exception&) {
      continue;  // the harness's own syncs broke too (it says so): not a program to shrink
    }
    if (auto d = first_difference(trace.calls, trace.observations, got)) {
      kind = d->kind();
      calls.assign(trace.calls.begin(), trace.calls.begin() + static_cast<long>(d->call) + 1);
    }
  }
  ASSERT_FALSE(kind.empty()) << "no program of seed 2 synchronizes after a capture began";
  EXPECT_EQ(kind.rfind("cuStreamSynchronize", 0), 0u) << kind;
  auto shows = [&](const std::vector<Call>& candidate) {
    Fake good, inner;
    Broken broken(inner.driver);
    auto d = first_difference(candidate, run_program(candidate, good.driver, good.image),
                              run_program(candidate, broken, inner.image));
    return d.has_value() && d->kind() == kind;
  };
  const std::vector<Call> small = shrink(calls, shows);
  EXPECT_TRUE(shows(small));
  std::string shown;
  for (const Call& call : small) shown += "\n  " + call.text();
  EXPECT_LE(small.size(), 5u)
      << "a stream, a capture (ended, where the sync would otherwise be an unsafe call on both "
         "drivers), a sync, and a second stream at most:"
      << shown;
  EXPECT_EQ(small.back().entry, "cuStreamSynchronize");
  bool begins = false;
  for (const Call& call : small) begins = begins || call.entry == "cuStreamBeginCapture";
  EXPECT_TRUE(begins);
}

}  // namespace
}  // namespace graphcap::fidelity
