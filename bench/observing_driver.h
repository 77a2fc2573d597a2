// ObservingDriver: a DriverApi that forwards every call to another one, counts them, and remembers
// the last executable an instantiate (cuGraphInstantiateWithParams or ...WithFlags) created.
//
// Why: the replay benchmarks compare Graph::replay() against cuGraphLaunch of the very same
// CUgraphExec on the very same stream, and graphcap's public API does not hand out the
// executable of a Graph. The device is opened on this driver, so it sees the instantiation. The
// count is the drv_calls probe: how many driver calls one replay makes.
//
// Both sides of the comparison call through this object (graphcap's replay reaches it through
// its DriverApi&, the raw side calls its cuGraphLaunch directly), so the forwarding costs both
// the same: one virtual call into it, a count, and one indirect call to the inner driver.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>

#include <graphcap/driver/driver_api.h>
#include <graphcap/driver/forwarding_driver.h>

namespace graphcap::bench {

// Counts every DriverApi call made through it, then forwards it (every entry point, from the
// table). Single-threaded use: the benchmarks run on one thread.
class CountingDriver : public ForwardingDriver {
 public:
  using ForwardingDriver::ForwardingDriver;

  // Every DriverApi call made through this object so far.
  std::size_t calls() const noexcept { return calls_; }
  // While timing: the nanoseconds spent inside the driver's calls are summed (two clock reads a
  // call; off, one branch). What a graphcap operation costs beyond them is its own work.
  void time_calls(bool on) noexcept { timing_ = on; }
  double driver_ns() const noexcept { return driver_ns_; }
  // The same, per entry point (its position in the table): which calls a difference is in.
  enum Entry : std::size_t {
#define GRAPHCAP_DRIVER_ENTRY(name, ...) k_##name,
#include <graphcap/driver/entry_points.def>
    kEntryCount
  };
  using EntryTimes = std::array<double, kEntryCount>;
  const EntryTimes& entry_ns() const noexcept { return entry_ns_; }

#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...)                         \
  CUresult name(GRAPHCAP_PARAMS(params)) override {                                        \
    ++calls_;                                                                              \
    if (!timing_) return ForwardingDriver::name(GRAPHCAP_ARGS(params));                   \
    const auto called_at_ = std::chrono::steady_clock::now();                                 \
    const CUresult result = ForwardingDriver::name(GRAPHCAP_ARGS(params));                 \
    const double took_ = std::chrono::duration<double, std::nano>(                          \
                             std::chrono::steady_clock::now() - called_at_)                 \
                             .count();                                                      \
    driver_ns_ += took_;                                                                   \
    entry_ns_[k_##name] += took_;                                                          \
    return result;                                                                         \
  }
#include <graphcap/driver/entry_points.def>

 private:
  std::size_t calls_ = 0;
  bool timing_ = false;
  double driver_ns_ = 0;
  EntryTimes entry_ns_{};
};

// Counts like CountingDriver, and watches the executables come and go.
class ObservingDriver final : public CountingDriver {
 public:
  using CountingDriver::CountingDriver;

  // The executable of the most recent successful instantiate (graphcap's end_capture goes through
  // cuGraphInstantiateWithParams; nullptr: none, or it has been destroyed since).
  CUgraphExec last_exec() const noexcept { return last_exec_; }

  CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                       unsigned long long flags) override {
    const CUresult result = CountingDriver::cuGraphInstantiateWithFlags(exec, graph, flags);
    if (result == CUDA_SUCCESS && exec != nullptr) last_exec_ = *exec;
    return result;
  }
  CUresult cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph graph,
                                        CUDA_GRAPH_INSTANTIATE_PARAMS* params) override {
    const CUresult result = CountingDriver::cuGraphInstantiateWithParams(exec, graph, params);
    if (result == CUDA_SUCCESS && exec != nullptr) last_exec_ = *exec;
    return result;
  }
  CUresult cuGraphExecDestroy(CUgraphExec exec) override {
    if (exec == last_exec_) last_exec_ = nullptr;
    return CountingDriver::cuGraphExecDestroy(exec);
  }
  // While swallowing, cuLaunchKernel returns CUDA_SUCCESS without reaching the driver: what is
  // left of a launch through graphcap is graphcap's own host work (LaunchOwn). Eager launches
  // only: a swallowed launch inside a recording would be missing from the driver's graph.
  void swallow_launches(bool on) noexcept { swallow_ = on; }
  CUresult cuLaunchKernel(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                          unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared,
                          CUstream stream, void** params, void** extra) override {
    if (swallow_) return CUDA_SUCCESS;
    return CountingDriver::cuLaunchKernel(f, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                                          shared, stream, params, extra);
  }

 private:
  CUgraphExec last_exec_ = nullptr;
  bool swallow_ = false;
};

}  // namespace graphcap::bench
