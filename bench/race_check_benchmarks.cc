// RaceCheck/<shape>/n: what FakeDriverOptions::detect_races costs a replay on the fake. Two fakes,
// one with the check and one without, each replaying the same graph of n kernel nodes built at
// the driver API (cuStreamBeginCapture on a raw stream), alternating in the same iterations;
// each replay is one cuGraphLaunch and a cuStreamSynchronize. Shapes: `distinct` (a chain whose
// node i reads buffer i-1 and writes buffer i: every range is touched by two nodes) and
// `inplace` (every node reads and writes the same buffer: the sweep compares every pair of
// nodes). Counters: off_us, on_us (medians of one replay) and on_vs_off. The fake only: with
// --driver=cuda the family is skipped (a GPU has no race check).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <graphcap/fake/fake_driver.h>

#include "bench_env.h"
#include "benchmarks.h"

namespace graphcap::bench {
namespace {

using Clock = std::chrono::steady_clock;

// One fake with a captured graph of n `chain` launches, ready to replay.
class ChainReplay {
 public:
  ChainReplay(bool detect_races, int n, bool inplace) : fake_(options(detect_races)) {
    fake::register_compiled_kernels(fake_);
    ok_ = fake_.cuInit(0) == CUDA_SUCCESS &&
          fake_.cuDevicePrimaryCtxRetain(&context_, 0) == CUDA_SUCCESS &&
          fake_.cuCtxSetCurrent(context_) == CUDA_SUCCESS;
    image_ = fake_.module_image({"chain"});
    ok_ = ok_ && fake_.cuModuleLoadData(&module_, image_.data()) == CUDA_SUCCESS &&
          fake_.cuModuleGetFunction(&chain_, module_, "chain") == CUDA_SUCCESS &&
          fake_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
    const int buffers = inplace ? 1 : n + 1;
    buffers_.resize(static_cast<std::size_t>(buffers));
    for (CUdeviceptr& buffer : buffers_) ok_ = ok_ && fake_.cuMemAlloc(&buffer, 64) == CUDA_SUCCESS;
    ok_ = ok_ && fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS;
    for (int i = 0; ok_ && i < n; ++i) {
      CUdeviceptr prev = buffers_[inplace ? 0 : static_cast<std::size_t>(i)];
      CUdeviceptr mine = buffers_[inplace ? 0 : static_cast<std::size_t>(i) + 1];
      unsigned wait = 0;
      void* params[] = {&prev, &mine, &wait};
      ok_ = fake_.cuLaunchKernel(chain_, 1, 1, 1, 32, 1, 1, 0, stream_, params, nullptr) ==
            CUDA_SUCCESS;
    }
    CUgraph graph = nullptr;
    ok_ = fake_.cuStreamEndCapture(stream_, &graph) == CUDA_SUCCESS && ok_;
    ok_ = ok_ && fake_.cuGraphInstantiateWithFlags(&exec_, graph, 0) == CUDA_SUCCESS;
    if (graph != nullptr) fake_.cuGraphDestroy(graph);
  }
  ~ChainReplay() {
    if (exec_ != nullptr) fake_.cuGraphExecDestroy(exec_);
    for (CUdeviceptr buffer : buffers_) {
      if (buffer != 0) fake_.cuMemFree(buffer);
    }
    if (stream_ != nullptr) fake_.cuStreamDestroy(stream_);
    if (module_ != nullptr) fake_.cuModuleUnload(module_);
    if (context_ != nullptr) fake_.cuDevicePrimaryCtxRelease(0);
  }
  bool ok() const noexcept { return ok_; }
  bool clean() const { return fake_.violations().empty(); }
  // One replay and its sync; false on a failure.
  bool replay() {
    return fake_.cuGraphLaunch(exec_, stream_) == CUDA_SUCCESS &&
           fake_.cuStreamSynchronize(stream_) == CUDA_SUCCESS;
  }

 private:
  static fake::FakeDriverOptions options(bool detect_races) {
    fake::FakeDriverOptions options;
    options.detect_races = detect_races;
    options.record_calls = false;
    return options;
  }
  fake::FakeDriver fake_;
  bool ok_ = false;
  CUcontext context_ = nullptr;
  std::vector<std::byte> image_;
  CUmodule module_ = nullptr;
  CUfunction chain_ = nullptr;
  CUstream stream_ = nullptr;
  std::vector<CUdeviceptr> buffers_;
  CUgraphExec exec_ = nullptr;
};

double median_of(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void race_check(benchmark::State& state, bool inplace) {
  const int n = static_cast<int>(state.range(0));
  ChainReplay off(false, n, inplace);
  ChainReplay on(true, n, inplace);
  if (!off.ok() || !on.ok()) return state.SkipWithError("building the chain graph failed");
  std::vector<double> off_us, on_us;
  bool first = true;
  for (auto _ : state) {
    // Which fake goes first alternates, so neither always runs on a warmer cache.
    ChainReplay* order[2] = {first ? &off : &on, first ? &on : &off};
    for (ChainReplay* replay : order) {
      const auto start = Clock::now();
      if (!replay->replay()) return state.SkipWithError("a replay failed");
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      (replay == &on ? on_us : off_us).push_back(us);
    }
    first = !first;
  }
  if (!on.clean()) return state.SkipWithError("the checked replay found a race in a chain");
  const double off_median = median_of(off_us);
  const double on_median = median_of(on_us);
  state.counters["off_us"] = off_median;
  state.counters["on_us"] = on_median;
  state.counters["on_vs_off"] = off_median > 0 ? on_median / off_median : 0.0;
}

}  // namespace

void register_race_check_benchmarks(BenchEnv& env, const BenchPlan& plan) {
  if (env.kind() != DriverKind::fake) return;
  const auto iterations = static_cast<benchmark::IterationCount>(std::max(1.0, 20 * plan.scale));
  for (const bool inplace : {false, true}) {
    benchmark::RegisterBenchmark(inplace ? "RaceCheck/inplace" : "RaceCheck/distinct",
                                 [inplace](benchmark::State& state) { race_check(state, inplace); })
        ->Arg(100)
        ->Arg(1000)
        ->Iterations(iterations)
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace graphcap::bench
