// The H200's answers in CI (issue 23): every program recorded on the H200 by graphcap-fidelity
// (tests/fidelity/traces/*.trace) is replayed on a fresh fake, and every call must be observed as
// the H200 observed it (result code, capture status of every stream, node types of graphs that
// ended, bytes of buffers at host synchronisations; timing-dependent query codes compare equal,
// program.h says which). A failure names the program, the call and both observations.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "kernels/test_kernels.h"
#include "program.h"
#include "replay.h"

namespace graphcap::fidelity {
namespace {

std::vector<Trace> recorded() {
  std::vector<Trace> traces;
  for (const auto& entry : std::filesystem::directory_iterator(GRAPHCAP_FIDELITY_TRACES)) {
    if (entry.path().extension() != ".trace") continue;
    std::ifstream in(entry.path());
    for (Trace& trace : read_traces(in, entry.path().string())) traces.push_back(std::move(trace));
  }
  return traces;
}

TEST(RecordedH200Traces, EveryCallAnswersOnTheFakeAsOnTheH200) {
  const std::vector<Trace> traces = recorded();
  ASSERT_GE(traces.size(), 100u) << "no recorded traces in " << GRAPHCAP_FIDELITY_TRACES;
  std::size_t calls = 0;
  for (const Trace& trace : traces) {
    ASSERT_TRUE(trace.status.empty()) << "program " << trace.index << ": " << trace.status;
    fake::FakeDriver driver;
    testing::register_test_kernels(driver);
    const std::vector<std::byte> image = driver.module_image(
        {"empty", "add_one", "fill", "axpy", "copy", "mixed", "affine", "countdown",
         "set_condition"});
    const std::vector<Observation> got = run_program(trace.calls, driver, image);
    calls += trace.calls.size();
    if (auto d = first_difference(trace.calls, trace.observations, got)) {
      ADD_FAILURE() << "program " << trace.index << " (seed " << trace.seed << ") call " << d->call
                    << ": " << trace.calls[d->call].text() << "\n  H200: " << d->expected.text()
                    << "\n  fake: " << d->got.text();
    }
    EXPECT_TRUE(driver.violations().empty())
        << "program " << trace.index << ": " << driver.violations().front();
  }
  std::printf("replayed %zu H200 programs (%zu calls) on the fake\n", traces.size(), calls);
}

}  // namespace
}  // namespace graphcap::fidelity
