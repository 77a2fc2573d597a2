// SummaryReporter: the console reporter, plus a short table at the end for a person: per node
// count, graphcap against raw (replay host cost, pass wall time, capture cost), the ratios, and
// on the real driver whether each goal (docs/performance.md) is met. Values are the medians across
// repetitions (the "median" aggregate when repetitions > 1; otherwise the single run).
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace graphcap::bench {

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  SummaryReporter(OutputOptions options, std::string driver, std::string device,
                  bool judge_targets);

  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

 private:
  struct Entry {
    std::vector<std::map<std::string, double>> runs;  // counters of each repetition
    std::map<std::string, double> median;             // the median aggregate, if reported
  };
  // The median of `counter` for "Family/n"; false when it was not measured.
  bool value(const std::string& family, int nodes, const std::string& counter, double& out) const;
  // The median of `counter` for the run named `key` ("Family/args").
  bool value_named(const std::string& key, const std::string& counter, double& out) const;
  // The first family of `families` that measured `counter` at `nodes`.
  bool value_of_any(std::initializer_list<const char*> families, int nodes,
                    const std::string& counter, double& out) const;

  std::string driver_;
  std::string device_;
  bool judge_targets_;
  long long repetitions_ = 0;
  std::map<std::string, Entry> entries_;
};

}  // namespace graphcap::bench
