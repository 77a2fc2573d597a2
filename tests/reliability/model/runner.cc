#include "model/runner.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <gtest/gtest.h>

namespace graphcap::testing::model {

std::optional<std::uint64_t> env_number(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  return std::strtoull(text, nullptr, 0);
}

std::uint64_t sequence_count(bool on_fake, SequenceCounts counts) {
  if (env_number("GRAPHCAP_SEED")) return 1;
#ifdef GRAPHCAP_MODEL_UNDER_SANITIZER
  const std::uint64_t fallback = on_fake ? counts.sanitizer : counts.gpu;
#else
  const std::uint64_t fallback = on_fake ? counts.fake : counts.gpu;
#endif
  return env_number("GRAPHCAP_RANDOM_SEQUENCES").value_or(fallback);
}

std::uint64_t run_sequences(std::uint64_t count, const std::function<SequenceEnd(std::uint64_t seed)>& run,
                            const std::string& context) {
  const std::optional<std::uint64_t> only = env_number("GRAPHCAP_SEED");
  std::uint64_t ran = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t seed = only ? *only : i + 1;
    const SequenceEnd end = run(seed);
    ++ran;
    if (only) std::printf("seed %llu:\n%s", static_cast<unsigned long long>(seed), end.log.c_str());
    if (!end.divergence.empty()) {
      ADD_FAILURE() << "seed " << seed << context << " diverged from the model: " << end.divergence
                    << "\nrerun it with GRAPHCAP_SEED=" << seed << "; the sequence:\n" << end.log;
      break;
    }
  }
  ::testing::Test::RecordProperty("sequences", static_cast<int>(ran));
  return ran;
}

std::vector<int> Reaches::list() const {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(names_.size()); ++i) {
    if (has(i)) out.push_back(i);
  }
  return out;
}

std::string Reaches::text() const {
  std::string out;
  for (int i : list()) out += (out.empty() ? "" : ",") + std::string(names_[static_cast<std::size_t>(i)]);
  return out.empty() ? "none" : out;
}

Reaches Reaches::from_env() const {
  const char* text = std::getenv("GRAPHCAP_MODEL_REACHES");
  if (text == nullptr || *text == '\0') return *this;
  const std::string_view wanted(text);
  if (wanted == "all") return Reaches(names_, (std::uint64_t{1} << names_.size()) - 1);
  std::uint64_t bits = 0;
  std::stringstream in{std::string(wanted)};
  for (std::string name; std::getline(in, name, ',');) {
    bool found = false;
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == name) {
        bits |= std::uint64_t{1} << i;
        found = true;
      }
    }
    if (!found) std::fprintf(stderr, "GRAPHCAP_MODEL_REACHES: no reach named %s\n", name.c_str());
  }
  return Reaches(names_, bits);
}

std::uint64_t Outcomes::seen(std::string_view prefix) const {
  std::uint64_t n = 0;
  for (const auto& [what, times] : counts_) {
    if (std::string_view(what).substr(0, prefix.size()) == prefix) n += times;
  }
  return n;
}

std::uint64_t Outcomes::of(const std::string& what) const {
  const auto found = counts_.find(what);
  return found == counts_.end() ? 0 : found->second;
}

void Outcomes::print(std::string_view model) const {
  for (const auto& [what, n] : counts_) {
    std::printf("[ %-8.*s ]   %-90s %8llu\n", static_cast<int>(model.size()), model.data(),
                what.c_str(), static_cast<unsigned long long>(n));
  }
}

}  // namespace graphcap::testing::model
