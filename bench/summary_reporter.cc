#include "summary_reporter.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <utility>

namespace graphcap::bench {
namespace {

constexpr int kNodeCounts[] = {1, 10, 100, 1000, 10000};

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

// printf into a std::string: the table is a handful of lines.
template <class... Args>
std::string format(const char* pattern, Args... args) {
  char buffer[256];
  std::snprintf(buffer, sizeof(buffer), pattern, args...);
  return buffer;
}

std::string time_us(double microseconds) {
  if (microseconds >= 1000.0) return format("%.2f ms", microseconds / 1000.0);
  if (microseconds >= 100.0) return format("%.0f us", microseconds);
  if (microseconds >= 10.0) return format("%.1f us", microseconds);
  return format("%.2f us", microseconds);
}

}  // namespace

SummaryReporter::SummaryReporter(OutputOptions options, std::string driver, std::string device,
                                 bool judge_targets)
    : ConsoleReporter(options),
      driver_(std::move(driver)),
      device_(std::move(device)),
      judge_targets_(judge_targets) {}

void SummaryReporter::ReportRuns(const std::vector<Run>& runs) {
  ConsoleReporter::ReportRuns(runs);
  for (const Run& run : runs) {
    if (run.counters.empty()) continue;  // skipped with an error: nothing to summarize
    const std::string key = run.run_name.function_name + "/" + run.run_name.args;
    std::map<std::string, double> counters;
    for (const auto& [name, counter] : run.counters) counters[name] = counter.value;
    Entry& entry = entries_[key];
    if (run.run_type == Run::RT_Iteration) {
      entry.runs.push_back(std::move(counters));
      repetitions_ = std::max<long long>(repetitions_, static_cast<long long>(run.repetitions));
    } else if (run.aggregate_name == "median") {
      entry.median = std::move(counters);
      repetitions_ = std::max<long long>(repetitions_, static_cast<long long>(run.repetitions));
    }
  }
}

bool SummaryReporter::value(const std::string& family, int nodes, const std::string& counter,
                            double& out) const {
  return value_named(family + "/" + std::to_string(nodes), counter, out);
}

bool SummaryReporter::value_named(const std::string& key, const std::string& counter,
                                  double& out) const {
  const auto found = entries_.find(key);
  if (found == entries_.end()) return false;
  const Entry& entry = found->second;
  if (const auto it = entry.median.find(counter); it != entry.median.end()) {
    out = it->second;
    return true;
  }
  std::vector<double> values;
  for (const auto& run : entry.runs) {
    if (const auto it = run.find(counter); it != run.end()) values.push_back(it->second);
  }
  if (values.empty()) return false;
  out = median_of(std::move(values));
  return true;
}

bool SummaryReporter::value_of_any(std::initializer_list<const char*> families, int nodes,
                                   const std::string& counter, double& out) const {
  for (const char* family : families) {
    if (value(family, nodes, counter, out)) return true;
  }
  return false;
}

void SummaryReporter::Finalize() {
  ConsoleReporter::Finalize();
  if (entries_.empty()) return;
  std::ostream& out = GetOutputStream();
  out << "\n"
      << "graphcap-bench summary: driver " << driver_ << " (" << device_ << "), medians of "
      << repetitions_ << " repetition" << (repetitions_ == 1 ? "" : "s") << "\n";
  if (!judge_targets_) {
    out << "On the fake driver the raw side is the fake itself: the differences are graphcap's "
           "own overhead only.\nThe goals (docs/performance.md) apply to the real driver (H200); "
           "they are not judged here.\n";
  }

  const char* verdict_header = judge_targets_ ? "  target" : "";
  // `cache_target`: the GraphCache goal (a hit within +50 ns of raw cuGraphLaunch) instead of
  // the replay goal (within 1.05x or +100 ns).
  const auto replay_table = [&](const char* graphcap_family, const char* raw_family,
                                const char* title, bool cache_target = false) {
    bool printed = false;
    for (const int n : kNodeCounts) {
      double ours = 0, raw = 0, ratio = 0, over = 0;
      if (!value_of_any({graphcap_family, raw_family}, n, "graphcap_ns", ours) ||
          !value_of_any({graphcap_family, raw_family}, n, "raw_ns", raw) ||
          !value_of_any({graphcap_family, raw_family}, n, "ratio", ratio) ||
          !value_of_any({graphcap_family, raw_family}, n, "over_raw_ns", over)) {
        continue;
      }
      if (!printed) {
        const char* target = cache_target ? "; target <= +50 ns" : "; target <= 1.05x or <= +100 ns";
        out << "\n" << title << (judge_targets_ ? target : "") << "\n"
            << format("  %5s  %10s  %10s  %7s  %9s%s\n", "nodes", "graphcap", "raw", "ratio",
                      "over raw", verdict_header);
        printed = true;
      }
      const bool met = cache_target ? over <= 50.0 : (ratio <= 1.05 || over <= 100.0);
      out << format("  %5d  %7.0f ns  %7.0f ns  %6.3fx  %+6.0f ns%s\n", n, ours, raw, ratio,
                    over, judge_targets_ ? (met ? "  met" : "  MISSED") : "");
    }
  };
  replay_table("ReplayHost", "RawGraphLaunch",
               "Replay host cost per call, batches between syncs (Graph::replay vs cuGraphLaunch)");
  replay_table("ReplayHostSingle", "RawGraphLaunchSingle",
               "Replay host cost per call, one call between syncs (Graph::replay vs cuGraphLaunch)");
  replay_table("CacheHit", "RawGraphLaunchForCache",
               "GraphCache hit per call, 8 keys, batches between syncs (GraphCache::run vs "
               "cuGraphLaunch)",
               true);
  replay_table("CacheHitSingle", "RawGraphLaunchForCacheSingle",
               "GraphCache hit per call, 8 keys, one call between syncs (GraphCache::run vs "
               "cuGraphLaunch)",
               true);

  bool printed = false;
  for (const int n : kNodeCounts) {
    double eager = 0, raw_eager = 0, replayed = 0, speedup = 0, raw_speedup = 0;
    if (!value_of_any({"EagerPass", "ReplayPass"}, n, "eager_us", eager) ||
        !value_of_any({"EagerPass", "ReplayPass"}, n, "raw_eager_us", raw_eager) ||
        !value_of_any({"EagerPass", "ReplayPass"}, n, "replay_us", replayed) ||
        !value_of_any({"EagerPass", "ReplayPass"}, n, "speedup", speedup) ||
        !value_of_any({"EagerPass", "ReplayPass"}, n, "raw_speedup", raw_speedup)) {
      continue;
    }
    if (!printed) {
      out << "\nPass wall time, launches + sync (eager through Device::launch, eager through raw "
             "cuLaunchKernel, Graph::replay)"
          << (judge_targets_ ? "; target >= 8x at 100 nodes" : "") << "\n"
          << format("  %5s  %10s  %10s  %10s  %8s  %8s%s\n", "nodes", "eager", "raw eager",
                    "replayed", "speedup", "raw/rep", verdict_header);
      printed = true;
    }
    std::string verdict;
    if (judge_targets_ && n == 100) verdict = speedup >= 8.0 ? "  met" : "  MISSED";
    out << format("  %5d  %10s  %10s  %10s  %7.1fx  %7.1fx%s\n", n, time_us(eager).c_str(),
                  time_us(raw_eager).c_str(), time_us(replayed).c_str(), speedup, raw_speedup,
                  verdict.c_str());
  }

  printed = false;
  for (const int n : kNodeCounts) {
    double incl = 0, excl = 0, raw = 0, ratio_incl = 0, ratio_excl = 0;
    if (!value_of_any({"CaptureCost", "RawCapture"}, n, "incl_us", incl) ||
        !value_of_any({"CaptureCost", "RawCapture"}, n, "excl_us", excl) ||
        !value_of_any({"CaptureCost", "RawCapture"}, n, "raw_us", raw) ||
        !value_of_any({"CaptureCost", "RawCapture"}, n, "ratio_incl", ratio_incl) ||
        !value_of_any({"CaptureCost", "RawCapture"}, n, "ratio_excl", ratio_excl)) {
      continue;
    }
    if (!printed) {
      out << "\nCapture cost (graphcap prepare + warm-up + begin..end vs raw begin..upload)"
          << (judge_targets_ ? "; target <= 1.10x at 100 nodes, without warm-up" : "") << "\n"
          << format("  %5s  %12s  %12s  %10s  %11s  %11s%s\n", "nodes", "with warm-up",
                    "begin..end", "raw", "ratio(with)", "ratio(b..e)", verdict_header);
      printed = true;
    }
    std::string verdict;
    if (judge_targets_ && n == 100) verdict = ratio_excl <= 1.10 ? "  met" : "  MISSED";
    out << format("  %5d  %12s  %12s  %10s  %10.2fx  %10.2fx%s\n", n, time_us(incl).c_str(),
                  time_us(excl).c_str(), time_us(raw).c_str(), ratio_incl, ratio_excl,
                  verdict.c_str());
  }
  printed = false;
  for (const int n : kNodeCounts) {
    const auto families = {"ExecUpdate", "ReInstantiate", "RawExecUpdate"};
    double update = 0, reinst = 0, raw = 0, vs_raw = 0, reinst_vs = 0, whole_vs = 0;
    if (!value_of_any(families, n, "close_update_us", update) ||
        !value_of_any(families, n, "close_reinst_us", reinst) ||
        !value_of_any(families, n, "close_raw_us", raw) ||
        !value_of_any(families, n, "update_vs_raw", vs_raw) ||
        !value_of_any(families, n, "reinst_vs_update", reinst_vs) ||
        !value_of_any(families, n, "whole_reinst_vs_update", whole_vs)) {
      continue;
    }
    if (!printed) {
      out << "\nClosing a re-recording: end_capture(s, into) (exec update) vs end_capture(s) "
             "(instantiate + upload) vs raw cuStreamEndCapture + cuGraphExecUpdate"
          << (judge_targets_ ? "; target update <= 1.10x raw, reinst/update >= 12x at 100, "
                               ">= 9x at 1000"
                             : "")
          << "\n"
          << format("  %5s  %10s  %10s  %10s  %9s  %12s  %12s%s\n", "nodes", "update",
                    "reinst", "raw update", "upd/raw", "reinst/upd", "whole r/u", verdict_header);
      printed = true;
    }
    std::string verdict;
    if (judge_targets_ && (n == 100 || n == 1000)) {
      const bool met = vs_raw <= 1.10 && reinst_vs >= (n == 100 ? 12.0 : 9.0);
      verdict = met ? "  met" : "  MISSED";
    }
    out << format("  %5d  %10s  %10s  %10s  %8.2fx  %11.1fx  %11.1fx%s\n", n,
                  time_us(update).c_str(), time_us(reinst).c_str(), time_us(raw).c_str(), vs_raw,
                  reinst_vs, whole_vs, verdict.c_str());
  }

  printed = false;
  for (const int n : kNodeCounts) {
    const auto families = {"ParamSet", "RawKernelNodeSetParams", "ParamWrite"};
    double set = 0, raw = 0, write = 0, per_node = 0, vs_raw = 0;
    if (!value_of_any(families, n, "set_us", set) || !value_of_any(families, n, "raw_us", raw) ||
        !value_of_any(families, n, "write_us", write) ||
        !value_of_any(families, n, "set_ns_per_node", per_node) ||
        !value_of_any(families, n, "set_vs_raw", vs_raw)) {
      continue;
    }
    if (!printed) {
      out << "\nPer-replay parameter: Graph::set over n nodes vs n raw "
             "cuGraphExecKernelNodeSetParams vs one Device::write of the value"
          << (judge_targets_ ? "; target <= 1 us per node and <= 1.10x raw" : "") << "\n"
          << format("  %5s  %10s  %10s  %10s  %9s  %8s%s\n", "nodes", "set", "raw", "write",
                    "set/node", "set/raw", verdict_header);
      printed = true;
    }
    std::string verdict;
    if (judge_targets_) verdict = per_node <= 1000.0 && vs_raw <= 1.10 ? "  met" : "  MISSED";
    out << format("  %5d  %10s  %10s  %10s  %6.0f ns  %7.2fx%s\n", n, time_us(set).c_str(),
                  time_us(raw).c_str(), time_us(write).c_str(), per_node, vs_raw,
                  verdict.c_str());
  }
  printed = false;
  for (const char* layout : {"virtual", "plain"}) {
    for (const char* order : {"largest_first", "smallest_first", "shuffled"}) {
      const std::string key = std::string("PoolMemory/") + layout + "/" + order + "/";
      double pooled = 0, unpooled = 0, largest = 0, ratio = 0, goal = 0, within = 0, range = 0;
      if (!value_named(key, "pooled_bytes", pooled) ||
          !value_named(key, "unpooled_bytes", unpooled) ||
          !value_named(key, "largest_bytes", largest) ||
          !value_named(key, "pooled_vs_largest", ratio) ||
          !value_named(key, "goal_bytes", goal) || !value_named(key, "within_goal", within) ||
          !value_named(key, "virtual_memory", range)) {
        continue;
      }
      if (!printed) {
        out << "\nGraph pool: intermediates of 8 graphs at batch sizes 128..1 in each recording "
               "order; goal on virtual memory <= 1.05x the largest + one granule\n"
            << format("  %-7s  %-14s  %10s  %10s  %10s  %7s  %s\n", "layout", "order", "pooled",
                      "no pool", "largest", "ratio", "goal");
        printed = true;
      }
      const char* verdict = range == 0 ? "(plain allocations)" : within != 0 ? "met" : "MISSED";
      out << format("  %-7s  %-14s  %7.0f KiB  %7.0f KiB  %7.0f KiB  %6.2fx  %s\n",
                    range != 0 ? "virtual" : layout, order, pooled / 1024, unpooled / 1024,
                    largest / 1024, ratio, verdict);
    }
  }
  printed = false;
  for (const int keys : {8, 67}) {
    double predicted = 0, measured = 0, difference = 0, tolerance = 0, within = 0;
    if (!value("Footprint", keys, "predicted_bytes", predicted) ||
        !value("Footprint", keys, "measured_bytes", measured) ||
        !value("Footprint", keys, "difference_bytes", difference) ||
        !value("Footprint", keys, "tolerance_bytes", tolerance) ||
        !value("Footprint", keys, "within_tolerance", within)) {
      continue;
    }
    if (!printed) {
      out << "\nFootprint: a bucket set's device memory, predicted on the fake vs the drop of free "
             "memory here; goal within max(5%, 2 MiB)\n"
          << format("  %4s  %11s  %11s  %11s  %s\n", "keys", "predicted", "measured",
                    "difference", "goal");
      printed = true;
    }
    out << format("  %4d  %7.2f MiB  %7.2f MiB  %7.2f MiB  %s\n", keys, predicted / 1048576,
                  measured / 1048576, difference / 1048576, within != 0 ? "met" : "MISSED");
  }
  printed = false;
  for (const char* node : {"kernel", "memcpy", "memset", "write"}) {
    for (const int n : {1, 10, 100, 1000, 10000}) {
      const std::string family = std::string("DriverMemory/") + node;
      double measured = 0, model = 0;
      if (!value(family, n, "measured_bytes_per_exec", measured) ||
          !value(family, n, "model_bytes_per_exec", model)) {
        continue;
      }
      if (!printed) {
        out << "\nThe driver's memory per executable, measured vs the model\n"
            << format("  %-7s  %6s  %11s  %11s\n", "node", "nodes", "measured", "model");
        printed = true;
      }
      out << format("  %-7s  %6d  %7.1f KiB  %7.1f KiB\n", node, n, measured / 1024,
                    model / 1024);
    }
  }
  // Growth: each path's cost per node (per call for replay and the hit) at
  // 10..10,000 nodes, the growth from 1,000 to 10,000 (goal <= 1.5x), and graphcap over raw
  // where the family has a raw side.
  printed = false;
  static const char* const kGrowthPaths[] = {
      "capture", "raw_capture", "update_close", "raw_update_close", "set", "dot",
      "replay",  "raw_replay",  "cache_hit",    "eager",            "raw_eager"};
  for (const char* path : kGrowthPaths) {
    const std::string family = std::string("Growth/") + path;
    const bool per_call = std::string(path).find("replay") != std::string::npos ||
                          std::string(path) == "cache_hit";
    const char* counter = per_call ? "us" : "ns_per_node";
    double cost[4] = {0, 0, 0, 0};
    bool any = false;
    int index = 0;
    for (const int n : {10, 100, 1000, 10000}) {
      any = value(family, n, counter, cost[index]) || any;
      if (per_call) cost[index] *= 1000.0;  // ns per call
      ++index;
    }
    if (!any) continue;
    if (!printed) {
      out << "\nGrowth: ns per node (per call for replay and the hit) at 10 / 100 / 1,000 / "
             "10,000 nodes"
          << (judge_targets_ ? "; target 10,000 within 1.5x of 1,000" : "") << "\n"
          << format("  %-17s  %9s  %9s  %9s  %9s  %8s%s\n", "path", "10", "100", "1000",
                    "10000", "10k/1k", verdict_header);
      printed = true;
    }
    const double growth = cost[2] > 0 ? cost[3] / cost[2] : 0.0;
    std::string verdict;
    if (judge_targets_ && cost[2] > 0 && cost[3] > 0) {
      verdict = growth <= 1.5 ? "  met" : "  MISSED";
    }
    out << format("  %-17s  %9.1f  %9.1f  %9.1f  %9.1f  %7.2fx%s\n", path, cost[0], cost[1],
                  cost[2], cost[3], growth, verdict.c_str());
  }
  printed = false;
  static const char* const kGrowthPairs[][2] = {
      {"capture", "raw_capture"}, {"update_close", "raw_update_close"}, {"eager", "raw_eager"},
      {"replay", "raw_replay"},   {"cache_hit", "raw_replay"}};
  for (const auto& pair : kGrowthPairs) {
    double ratio[4] = {0, 0, 0, 0};
    bool any = false;
    int index = 0;
    for (const int n : {10, 100, 1000, 10000}) {
      double ours = 0, raw = 0;
      if (value(std::string("Growth/") + pair[0], n, "us", ours) &&
          value(std::string("Growth/") + pair[1], n, "us", raw) && raw > 0) {
        ratio[index] = ours / raw;
        any = true;
      }
      ++index;
    }
    if (!any) continue;
    if (!printed) {
      out << "\nGrowth: graphcap over raw, one operation (medians of each side)\n"
          << format("  %-32s  %7s  %7s  %7s  %7s\n", "path / raw", "10", "100", "1000",
                    "10000");
      printed = true;
    }
    out << format("  %-32s  %6.3fx  %6.3fx  %6.3fx  %6.3fx\n",
                  (std::string(pair[0]) + " / " + pair[1]).c_str(), ratio[0], ratio[1], ratio[2],
                  ratio[3]);
  }
  out.flush();
}

}  // namespace graphcap::bench
