// Fake against fake in CI: programs of a seed that changes with each commit (the commit's hash,
// read when CMake configures: tests/CMakeLists.txt), each generated on one fresh fake and run on
// another, must answer the same call by call. The seed is fixed per commit, so a failure repeats
// on the same commit; GRAPHCAP_FIDELITY_SEED=N overrides it to reproduce another's failure (the
// message names the seed and program: `graphcap-fidelity --driver=fake --seed=N --start=I
// --programs=1 --record=DIR` writes it).
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "fake_model.h"
#include "generator.h"
#include "replay.h"

namespace graphcap::fidelity {
namespace {

std::uint64_t ci_seed() {
  if (const char* seed = std::getenv("GRAPHCAP_FIDELITY_SEED")) return std::stoull(seed);
  return GRAPHCAP_FIDELITY_CI_SEED;
}

void expect_deterministic(const GeneratorOptions& options, std::uint64_t programs) {
  for (std::uint64_t index = 0; index < programs; ++index) {
    FidelityFake model, again;
    const Trace trace = generate(options, index, model.driver, model.image);
    const std::vector<Observation> replayed = run_program(trace.calls, again.driver, again.image);
    if (auto d = first_difference(trace.calls, trace.observations, replayed)) {
      ADD_FAILURE() << "seed " << options.seed << " program " << index << " (calls "
                    << options.min_calls << ":" << options.max_calls << ") call " << d->call
                    << ": " << trace.calls[d->call].text() << "\n  first fake:  "
                    << d->expected.text() << "\n  second fake: " << d->got.text();
    }
  }
}

TEST(FidelityDeterminism, ProgramsOfThisCommitsSeedAnswerTheSameOnTwoFreshFakes) {
  GeneratorOptions options;
  options.seed = ci_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(options.seed));
  expect_deterministic(options, 240);
}

TEST(FidelityDeterminism, LongProgramsOfThisCommitsSeedAnswerTheSameOnTwoFreshFakes) {
  GeneratorOptions options;
  options.seed = ci_seed() + 1;
  options.min_calls = 80;
  options.max_calls = 400;
  std::printf("seed %llu\n", static_cast<unsigned long long>(options.seed));
  expect_deterministic(options, 60);
}

}  // namespace
}  // namespace graphcap::fidelity
