// graphcap-bench: what graphcap costs on top of the CUDA driver (benchmarks.cc has the method).
//
//   graphcap-bench [--driver=fake|cuda] [--scale=F] [--measure-driver-memory=0|1]
//                  [Google Benchmark flags]
//
// --driver=fake (default): the simulated driver; what remains above it is graphcap's own cost.
// --driver=cuda: libcuda on the first GPU, with the kernels nvcc built (needs GRAPHCAP_GPU=ON).
// --scale=F: multiply every iteration count by F (default 1).
// --measure-driver-memory=0: the benchmark device skips the cuMemGetInfo pair around a large
// executable's instantiate (DeviceOptions::measure_driver_memory; default 1, as a device opens).
// Unless given, --benchmark_repetitions=5 and --benchmark_display_aggregates_only=true are
// added, so the console shows mean/median/stddev/cv rows and the closing summary uses medians.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench_env.h"
#include "benchmarks.h"
#include "summary_reporter.h"

namespace {

using graphcap::bench::BenchEnv;
using graphcap::bench::BenchPlan;
using graphcap::bench::DriverKind;

constexpr const char* kUsage =
    "graphcap-bench: graphcap's replay, pass and capture costs against the raw driver.\n"
    "\n"
    "  --driver=fake|cuda   the simulated driver (default) or libcuda on GPU 0 (needs a build\n"
    "                       with -DGRAPHCAP_GPU=ON, which embeds the CUDA kernels)\n"
    "  --scale=F            multiply every benchmark's fixed iteration count by F (default 1)\n"
    "  --measure-driver-memory=0|1\n"
    "                       DeviceOptions::measure_driver_memory of the benchmark device (default 1)\n"
    "\n"
    "Google Benchmark's flags follow (--benchmark_filter, --benchmark_out, ...). Unless given,\n"
    "--benchmark_repetitions=5 --benchmark_display_aggregates_only=true are added.\n\n";

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

struct Options {
  DriverKind driver = DriverKind::fake;
  BenchPlan plan;
  graphcap::DeviceOptions device;
  bool help = false;
};

// Takes graphcap-bench's own flags out of argv; false (after a message) on a bad one.
bool parse_own_flags(std::vector<char*>& args, Options& options) {
  std::vector<char*> rest;
  for (char* arg : args) {
    const std::string_view text(arg);
    if (starts_with(text, "--driver=")) {
      const std::string_view value = text.substr(std::strlen("--driver="));
      if (value == "fake") {
        options.driver = DriverKind::fake;
      } else if (value == "cuda") {
        options.driver = DriverKind::cuda;
      } else {
        std::fprintf(stderr, "graphcap-bench: --driver must be fake or cuda, not '%s'\n", arg);
        return false;
      }
    } else if (starts_with(text, "--scale=")) {
      char* end = nullptr;
      const char* value = arg + std::strlen("--scale=");
      options.plan.scale = std::strtod(value, &end);
      if (end == value || *end != '\0' || !(options.plan.scale > 0.0)) {
        std::fprintf(stderr, "graphcap-bench: --scale needs a positive number, not '%s'\n", value);
        return false;
      }
    } else if (starts_with(text, "--measure-driver-memory=")) {
      const std::string_view value = text.substr(std::strlen("--measure-driver-memory="));
      if (value != "0" && value != "1") {
        std::fprintf(stderr, "graphcap-bench: --measure-driver-memory must be 0 or 1, not '%s'\n",
                     arg);
        return false;
      }
      options.device.measure_driver_memory = value == "1";
    } else {
      if (text == "--help" || text == "-h") options.help = true;
      rest.push_back(arg);
    }
  }
  args = std::move(rest);
  return true;
}

bool has_flag(const std::vector<char*>& args, std::string_view name) {
  for (const char* arg : args) {
    if (starts_with(arg, name)) return true;
  }
  return false;
}

// A flag's value as given ("" when absent).
std::string flag_value(const std::vector<char*>& args, std::string_view name) {
  std::string value;
  for (const char* arg : args) {
    const std::string_view text(arg);
    if (starts_with(text, name) && text.size() > name.size() && text[name.size()] == '=') {
      value = std::string(text.substr(name.size() + 1));
    }
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args(argv + 1, argv + argc);
  Options options;
  if (!parse_own_flags(args, options)) return 2;
  if (options.help) std::fputs(kUsage, stdout);

  // Defaults: medians across repetitions.
  static char repetitions[] = "--benchmark_repetitions=5";
  static char aggregates[] = "--benchmark_display_aggregates_only=true";
  if (!has_flag(args, "--benchmark_repetitions")) args.push_back(repetitions);
  if (!has_flag(args, "--benchmark_display_aggregates_only") &&
      !has_flag(args, "--benchmark_report_aggregates_only")) {
    args.push_back(aggregates);
  }
  const std::string format = flag_value(args, "--benchmark_format");
  const std::string color = flag_value(args, "--benchmark_color");
  const std::string tabular = flag_value(args, "--benchmark_counters_tabular");

  std::vector<char*> bench_argv;
  bench_argv.push_back(argv[0]);
  bench_argv.insert(bench_argv.end(), args.begin(), args.end());
  bench_argv.push_back(nullptr);
  int bench_argc = static_cast<int>(bench_argv.size()) - 1;
  benchmark::Initialize(&bench_argc, bench_argv.data());
  if (benchmark::ReportUnrecognizedArguments(bench_argc, bench_argv.data())) return 2;

  graphcap::Result<std::unique_ptr<BenchEnv>> env = BenchEnv::open(options.driver, options.device);
  if (!env) {
    std::fprintf(stderr, "graphcap-bench: %s\n", graphcap::to_string(env.error()).c_str());
    return 1;
  }
  benchmark::AddCustomContext("graphcap_driver", (*env)->driver_name());
  benchmark::AddCustomContext("graphcap_device", (*env)->device_description());
  benchmark::AddCustomContext("graphcap_scale", std::to_string(options.plan.scale));
  benchmark::AddCustomContext("graphcap_measure_driver_memory",
                              options.device.measure_driver_memory ? "1" : "0");
  graphcap::bench::register_benchmarks(**env, options.plan);

  // The summary rides on the console format; other formats get the library's own reporter.
  std::unique_ptr<graphcap::bench::SummaryReporter> summary;
  if (format.empty() || format == "console") {
    const bool tty = isatty(STDOUT_FILENO) != 0;
    const bool want_color = color == "true" || color == "yes" || color == "1" ||
                            ((color.empty() || color == "auto") && tty);
    const bool want_tabular = !(tabular == "false" || tabular == "no" || tabular == "0");
    int output = benchmark::ConsoleReporter::OO_None;
    if (want_color) output |= benchmark::ConsoleReporter::OO_Color;
    if (want_tabular) output |= benchmark::ConsoleReporter::OO_Tabular;
    summary = std::make_unique<graphcap::bench::SummaryReporter>(
        static_cast<benchmark::ConsoleReporter::OutputOptions>(output), (*env)->driver_name(),
        (*env)->device_description(), options.driver == DriverKind::cuda);
  }
  benchmark::RunSpecifiedBenchmarks(summary.get());
  benchmark::Shutdown();
  return 0;
}
