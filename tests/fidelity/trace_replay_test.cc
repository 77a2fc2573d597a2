// The H200's answers in CI: every program recorded on the H200 by graphcap-fidelity
// (tests/fidelity/traces/*.trace) is replayed on a fresh fake, and every call must be observed as
// the H200 observed it (result code, capture status of every stream, node types of graphs that
// ended, bytes of buffers at host synchronisations; timing-dependent query codes compare equal,
// program.h says which). A failure names the program, the call and both observations.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>

#include "fake_model.h"
#include "program.h"
#include "replay.h"

namespace graphcap::fidelity {
namespace {

// One test per trace file, so that ctest replays the files side by side.
std::vector<std::string> trace_files() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(GRAPHCAP_FIDELITY_TRACES)) {
    if (entry.path().extension() == ".trace") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class RecordedH200Traces : public ::testing::TestWithParam<std::string> {};

TEST_P(RecordedH200Traces, EveryCallAnswersOnTheFakeAsOnTheH200) {
  std::ifstream in(std::filesystem::path(GRAPHCAP_FIDELITY_TRACES) / GetParam());
  const std::vector<Trace> traces = read_traces(in, GetParam());
  ASSERT_FALSE(traces.empty()) << "no programs in " << GetParam();
  std::size_t calls = 0;
  for (const Trace& trace : traces) {
    ASSERT_TRUE(trace.status.empty()) << "program " << trace.index << ": " << trace.status;
    FidelityFake fake;
    fake::FakeDriver& driver = fake.driver;
    const std::vector<Observation> got = run_program(trace.calls, driver, fake.image);
    calls += trace.calls.size();
    if (auto d = first_difference(trace.calls, trace.observations, got)) {
      ADD_FAILURE() << "program " << trace.index << " (seed " << trace.seed << ") call " << d->call
                    << ": " << trace.calls[d->call].text() << "\n  H200: " << d->expected.text()
                    << "\n  fake: " << d->got.text();
    }
    EXPECT_TRUE(driver.violations().empty())
        << "program " << trace.index << ": " << driver.violations().front();
  }
  std::printf("replayed %zu H200 programs (%zu calls) of %s on the fake\n", traces.size(), calls,
              GetParam().c_str());
}

INSTANTIATE_TEST_SUITE_P(Files, RecordedH200Traces, ::testing::ValuesIn(trace_files()),
                         [](const ::testing::TestParamInfo<std::string>& file) {
                           std::string name = file.param.substr(0, file.param.rfind('.'));
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace graphcap::fidelity
