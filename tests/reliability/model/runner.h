// What every random model of tests/reliability shares around its sequences: how many run (the
// environment, or a default for the build), the loop that runs them and reports the first
// divergence, which shapes of work a sequence may reach (each switchable, so a shape awaiting a
// fix can be left out and turned on again), the outcome counts that show what the sequences
// reached, and a quiet log sink while they run.
//
// GRAPHCAP_SEED=<seed> reruns one sequence (printing it); GRAPHCAP_RANDOM_SEQUENCES=<n> sets how
// many run; GRAPHCAP_MODEL_REACHES=all (or a comma-separated list of reach names) sets the shapes
// a model that has reaches runs, whatever its defaults leave out.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <graphcap/log.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GRAPHCAP_MODEL_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GRAPHCAP_MODEL_UNDER_SANITIZER 1
#endif
#endif

namespace graphcap::testing::model {

std::optional<std::uint64_t> env_number(const char* name);

// How many sequences a model runs by default: an optimised build on the fake, a sanitizer build
// (the CI share), a real driver.
struct SequenceCounts {
  std::uint64_t fake = 10000;
  std::uint64_t sanitizer = 200;
  std::uint64_t gpu = 300;
};
// GRAPHCAP_SEED's one sequence, else GRAPHCAP_RANDOM_SEQUENCES, else the build's default.
std::uint64_t sequence_count(bool on_fake, SequenceCounts counts);

// How one sequence ended: the first divergence from the model (empty when it held) and the log of
// its calls.
struct SequenceEnd {
  std::string divergence;
  std::string log;
};
// Runs `count` sequences, seeds 1 to count (GRAPHCAP_SEED: that one, its log printed), each by
// `run`. The first divergence fails the test with its seed (`context` after it), how to rerun it
// and the sequence, and ends the loop. Returns how many ran (recorded as the test's "sequences").
std::uint64_t run_sequences(std::uint64_t count, const std::function<SequenceEnd(std::uint64_t seed)>& run,
                            const std::string& context = "");

// A set of named shapes (bit i: reach i of `names`).
class Reaches {
 public:
  Reaches(std::vector<std::string_view> names, std::uint64_t bits) : names_(std::move(names)), bits_(bits) {}
  bool has(int reach) const { return (bits_ >> reach & 1u) != 0; }
  std::uint64_t bits() const { return bits_; }
  std::vector<int> list() const;
  std::string text() const;
  // GRAPHCAP_MODEL_REACHES over this set: "all", or names separated by commas; unset: as is.
  Reaches from_env() const;

 private:
  std::vector<std::string_view> names_;
  std::uint64_t bits_ = 0;
};

// How often each call ended each way, over every sequence of the process: a model's coverage.
class Outcomes {
 public:
  void count(const std::string& what, std::uint64_t times = 1) { counts_[what] += times; }
  std::uint64_t seen(std::string_view prefix) const;  // every outcome it begins
  std::uint64_t of(const std::string& what) const;     // that outcome alone
  void print(std::string_view model) const;

 private:
  std::map<std::string, std::uint64_t> counts_;
};

// Warnings (a cache giving up, an injected failure graphcap only logs) are expected while the
// sequences run: silenced for the scope.
class QuietLog {
 public:
  QuietLog() : previous_(set_log_sink([](LogLevel, std::string_view) {})) {}
  ~QuietLog() { set_log_sink(previous_); }
  QuietLog(const QuietLog&) = delete;
  QuietLog& operator=(const QuietLog&) = delete;

 private:
  LogSink previous_;
};

}  // namespace graphcap::testing::model
