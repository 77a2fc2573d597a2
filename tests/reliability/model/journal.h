// The record of one random sequence: the log of its calls (printed when it diverges or is rerun
// with GRAPHCAP_SEED), its first divergence from the model, and the outcome of every call,
// counted into the model's Outcomes (runner.h), which show what the sequences reached.
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

#include <graphcap/graphcap.h>

#include "model/runner.h"

namespace graphcap::testing::model {

class Journal {
 public:
  explicit Journal(Outcomes& outcomes) : outcomes_(&outcomes) {}

  std::ostringstream& log() { return log_; }
  std::string log_text() const { return log_.str(); }
  // The first divergence is the sequence's; every one is logged.
  void diverge(const std::string& what);
  bool diverged() const { return !divergence_.empty(); }
  const std::string& divergence() const { return divergence_; }

  // Counts the outcome and compares it with the model's (nullopt: success).
  template <class T>
  bool expect(const Result<T>& result, std::optional<Errc> expected, const std::string& what) {
    const std::optional<Errc> got = result ? std::nullopt : std::optional<Errc>(result.error().code());
    const std::string text = result ? std::string("ok") : to_string(result.error());
    log_ << "  " << what << " -> " << text << "\n";
    outcomes_->count(what + " -> " + (got ? to_string(*got) : std::string("ok")));
    if (got == expected) return true;
    diverge(what + ": expected " + (expected ? to_string(*expected) : std::string("ok")) +
            ", got " + text);
    return false;
  }
  // Any outcome is right (after an injected fault): counted and logged only.
  template <class T>
  bool note(const Result<T>& result, const std::string& what) {
    log_ << "  " << what << " -> " << (result ? std::string("ok") : to_string(result.error())) << "\n";
    outcomes_->count(what + " -> " + (result ? std::string("ok") : std::string("failed")));
    return static_cast<bool>(result);
  }
  // The same, counted by its code, for a model that checks only safety once a fault fired.
  template <class T>
  void note_after_fault(const Result<T>& result, const std::string& what) {
    log_ << "  " << what << " -> " << (result ? std::string("ok") : to_string(result.error())) << "\n";
    outcomes_->count(what + " (after a fault) -> " +
                     (result ? std::string("ok") : to_string(result.error().code())));
  }
  void count(const std::string& what, std::uint64_t times = 1) { outcomes_->count(what, times); }

 private:
  Outcomes* outcomes_;
  std::ostringstream log_;
  std::string divergence_;
};

}  // namespace graphcap::testing::model
