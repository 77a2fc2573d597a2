// Graph memory: what a graph pool holds in each recording order, the device memory a
// set of bucket graphs holds against what the fake predicted, and the driver's own memory per
// executable. These measure bytes, not time (each reports its run time too); every figure is a
// counter, and each family runs one iteration (a byte count does not vary).
//
// PoolMemory/<layout>/<order>: 8 graphs of a decode-like step at batch sizes 128..1, each with one
// intermediate of batch * 64 KiB (the largest 8 MiB) written by a recorded copy, recorded into one pool largest first,
// smallest first or shuffled, on virtual memory (one reserved range: the default where the device
// supports it) or plain allocations. Counters: pooled_bytes (GraphPool::bytes_held),
// unpooled_bytes (the sum of the intermediates), largest_bytes, pooled_vs_largest,
// goal_bytes (1.05 x largest + one granule: the pool's goal on virtual memory), within_goal (1 or
// 0), virtual_memory (1 or 0), granularity, growths.
//
// Footprint/<keys>: a serving engine's bucket set, 8 keys (batch 1, 2, 4, ..., 128) or 67 (vLLM's
// capture sizes: 1, 2, 4 and 8..512 by 8), one graph per key through a GraphCache sharing one pool.
// A bucket's step: two intermediates of batch * 16 KiB, a memset of the first, 16 launches of
// `empty`, a copy of the first into the second and of its first batch * 4 KiB into the bucket's
// output (allocated before, as a server's are). Predicted: the same keys recorded on a fake device
// (FakeDriver with this device's total memory) by GraphCache::record_all, its footprint's pool
// bytes and driver bytes, the latter in whole 2 MiB chunks as the driver takes them (the outputs
// exist before the recording). Measured: the drop of this device's free
// memory (cuMemGetInfo) across recording the same keys here. Counters: predicted_bytes,
// measured_bytes, difference_bytes (measured - predicted), difference_vs_measured, tolerance_bytes
// (max(5% of measured, one 2 MiB granule): the prediction's bar), within_tolerance (1 or 0),
// predicted_pool_bytes, predicted_driver_bytes, measured_pool_bytes, measured_driver_bytes (the
// footprint here), own_bytes (the outputs, not in either), modelled_graphs. Run it in a process
// of its own, first (--benchmark_filter=Footprint): the driver keeps destroyed executables'
// memory and reuses it, which would hide this set's. The caches are kept to the end of the
// process for the same reason.
//
// DriverMemory/<node>/<n>: graphs of n nodes of one kind recorded by graphcap (kernel: launches
// of `empty`; memcpy: Device::copy device to device; memset: Device::fill; write: Device::write,
// a host-to-device copy from pinned staging), as many as the probe made (256 up to 10 nodes, 64
// up to 100, 8 beyond: the driver's 2 MiB chunks then blur a figure by at most 8, 32 and 256 KiB
// an executable). Counters: executables, measured_bytes_per_exec (the drop of free memory
// across their end_captures, each instantiating and uploading, / their number),
// taken_bytes_per_exec (across the instantiates alone, from the graphs' reports),
// model_bytes_per_exec
// (executable_driver_bytes), measured_vs_model, measured_sources (how many of the reports say
// "measured"). Kept to the end of the process, so later sizes take fresh memory; run it in a
// process of its own (--benchmark_filter=DriverMemory).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <graphcap/driver/executable_memory.h>
#include <graphcap/fake/fake_driver.h>
#include <graphcap/graph_cache.h>

#include "bench_env.h"
#include "benchmarks.h"
#include "kernels/bench_kernels.h"

namespace graphcap::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void skip(benchmark::State& state, const Error& error) {
  state.SkipWithError(to_string(error).c_str());
}

Result<std::size_t> free_memory(Device& device) {
  std::size_t free = 0;
  std::size_t total = 0;
  if (CUresult result = device.driver().cuMemGetInfo(&free, &total); result != CUDA_SUCCESS) {
    return Error::from_driver("cuMemGetInfo", result);
  }
  return free;
}

Result<std::size_t> total_memory(Device& device) {
  std::size_t free = 0;
  std::size_t total = 0;
  if (CUresult result = device.driver().cuMemGetInfo(&free, &total); result != CUDA_SUCCESS) {
    return Error::from_driver("cuMemGetInfo", result);
  }
  return total;
}

// ---- PoolMemory -----------------------------------------------------------------------------------

enum class Order { largest_first, smallest_first, shuffled };

std::vector<std::uint32_t> batches(Order order) {
  switch (order) {
    case Order::largest_first: return {128, 96, 64, 48, 32, 16, 8, 1};
    case Order::smallest_first: return {1, 8, 16, 32, 48, 64, 96, 128};
    case Order::shuffled: break;
  }
  return {32, 1, 128, 16, 64, 8, 96, 48};
}

void pool_memory(benchmark::State& state, BenchEnv& env, bool virtual_memory, Order order) {
  constexpr std::size_t kRowBytes = 65536;
  Device& device = env.device();
  Stream& s = env.stream();
  double pooled = 0, unpooled = 0, largest = 0, granularity = 0, growths = 0, uses_range = 0;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    GraphPoolOptions options;
    options.virtual_memory = virtual_memory;
    Result<GraphPool> pool = device.create_graph_pool(s, options);
    if (!pool) return skip(state, pool.error());
    std::vector<Graph> graphs;
    unpooled = largest = 0;
    for (const std::uint32_t batch : batches(order)) {
      const std::vector<std::byte> bytes(batch * kRowBytes, std::byte{1});
      auto pass = [&]() -> Result<void> {
        Result<Buffer> tmp = device.alloc(bytes.size(), s);
        if (!tmp) return tmp.error();
        return device.write(*tmp, bytes, s);
      };
      CaptureOptions capture;
      capture.pool = &*pool;
      if (Result<void> r = device.prepare_capture(s, capture); !r) return skip(state, r.error());
      if (Result<void> r = pass(); !r) {
        (void)device.abort_capture(s);
        return skip(state, r.error());
      }
      if (Result<void> r = device.begin_capture(s); !r) {
        (void)device.abort_capture(s);
        return skip(state, r.error());
      }
      if (Result<void> r = pass(); !r) {
        (void)device.abort_capture(s);
        return skip(state, r.error());
      }
      Result<Graph> graph = device.end_capture(s);
      if (!graph) return skip(state, graph.error());
      unpooled += static_cast<double>(bytes.size());
      largest = std::max(largest, static_cast<double>(bytes.size()));
      graphs.push_back(std::move(*graph));
    }
    const GraphPoolStats stats = pool->stats();
    pooled = static_cast<double>(stats.bytes_held);
    granularity = static_cast<double>(stats.granularity);
    growths = static_cast<double>(stats.growths);
    uses_range = stats.virtual_memory ? 1.0 : 0.0;
    state.SetIterationTime(ms_since(start) / 1000.0);
    graphs.clear();
    (void)env.sync();
  }
  const double goal = 1.05 * largest + granularity;
  state.counters["graphs"] = 8;
  state.counters["pooled_bytes"] = pooled;
  state.counters["unpooled_bytes"] = unpooled;
  state.counters["largest_bytes"] = largest;
  state.counters["pooled_vs_largest"] = largest > 0 ? pooled / largest : 0.0;
  state.counters["goal_bytes"] = uses_range != 0 ? goal : 0.0;
  state.counters["within_goal"] = uses_range != 0 && pooled <= goal ? 1.0 : 0.0;
  state.counters["virtual_memory"] = uses_range;
  state.counters["granularity"] = granularity;
  state.counters["growths"] = growths;
}

// ---- Footprint ------------------------------------------------------------------------------------

std::vector<std::uint32_t> bucket_set(int keys) {
  if (keys == 8) return {1, 2, 4, 8, 16, 32, 64, 128};
  std::vector<std::uint32_t> sizes = {1, 2, 4};  // vLLM's cudagraph capture sizes
  for (std::uint32_t b = 8; b <= 512; b += 8) sizes.push_back(b);
  return sizes;
}

// One serving bucket's step on `device`: its intermediates, a memset, 16 empty launches, copies.
Result<void> bucket_step(Device& device, Stream& s, const Kernel& empty, const Buffer& out,
                         std::uint32_t batch) {
  const std::size_t bytes = std::size_t{batch} * 16384;
  Result<Buffer> a = device.alloc(bytes, s);
  if (!a) return a.error();
  Result<Buffer> b = device.alloc(bytes, s);
  if (!b) return b.error();
  if (Result<void> r = device.fill(*a, std::uint8_t{7}, s); !r) return r;
  for (int i = 0; i < 16; ++i) {
    if (Result<void> r = device.launch(s, empty, BenchEnv::kEmptyDims, {}); !r) return r;
  }
  if (Result<void> r = device.copy(*b, *a, s); !r) return r;
  return device.copy(out, 0, *b, 0, out.size(), s);
}

// Outputs for every bucket (batch * 4 KiB each), allocated before the recordings.
Result<std::vector<Buffer>> outputs(Device& device, Stream& s,
                                    const std::vector<std::uint32_t>& keys) {
  std::vector<Buffer> out;
  for (std::uint32_t batch : keys) {
    Result<Buffer> buffer = device.alloc(std::size_t{batch} * 4096, s);
    if (!buffer) return buffer.error();
    out.push_back(std::move(*buffer));
  }
  return out;
}

// A fake device to plan on: the bench kernels, this device's memory.
struct PlanningDevice {
  std::unique_ptr<fake::FakeDriver> driver;
  std::unique_ptr<Device> device;
  std::vector<std::byte> image;
  Module module;
  Kernel empty;

  static Result<std::unique_ptr<PlanningDevice>> open(std::size_t device_memory) {
    auto planning = std::make_unique<PlanningDevice>();
    fake::FakeDriverOptions options;
    options.record_calls = false;
    options.device_memory_bytes = device_memory;
    planning->driver = std::make_unique<fake::FakeDriver>(options);
    fake::register_compiled_kernels(*planning->driver);
    planning->image = planning->driver->module_image({kEmptyKernel});
    Result<std::unique_ptr<Device>> device = Device::open(*planning->driver);
    if (!device) return device.error().context("the planning fake");
    planning->device = std::move(*device);
    Result<Module> module = planning->device->load_module(planning->image);
    if (!module) return module.error();
    planning->module = std::move(*module);
    Result<Kernel> empty = planning->module.kernel(kEmptyKernel);
    if (!empty) return empty.error();
    planning->empty = std::move(*empty);
    return planning;
  }
};

// What a set of keys recorded leaves alive (to the end of the process: see the file's comment).
struct KeptSet {
  std::unique_ptr<PlanningDevice> planning;
  std::vector<Buffer> planned_outputs;
  std::unique_ptr<GraphCache<std::uint32_t>> planned;
  std::vector<Buffer> measured_outputs;
  std::unique_ptr<GraphCache<std::uint32_t>> measured;
};
std::vector<std::unique_ptr<KeptSet>>& kept_sets() {
  static std::vector<std::unique_ptr<KeptSet>> kept;
  return kept;
}

void footprint(benchmark::State& state, BenchEnv& env, int keys) {
  Device& device = env.device();
  Stream& s = env.stream();
  const std::vector<std::uint32_t> set = bucket_set(keys);
  double predicted = 0, measured = 0, predicted_pool = 0, predicted_driver = 0,
         measured_pool = 0, measured_driver = 0, own = 0, modelled = 0;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    auto kept = std::make_unique<KeptSet>();
    // The plan, on the fake.
    Result<std::size_t> total = total_memory(device);
    if (!total) return skip(state, total.error());
    Result<std::unique_ptr<PlanningDevice>> planning = PlanningDevice::open(*total);
    if (!planning) return skip(state, planning.error());
    kept->planning = std::move(*planning);
    Device& fake_device = *kept->planning->device;
    Stream& fake_stream = fake_device.stream();
    Result<std::vector<Buffer>> planned_out = outputs(fake_device, fake_stream, set);
    if (!planned_out) return skip(state, planned_out.error());
    kept->planned_outputs = std::move(*planned_out);
    kept->planned = std::make_unique<GraphCache<std::uint32_t>>(fake_device, fake_stream);
    Result<GraphCacheFootprint> plan = kept->planned->record_all(set, [&](std::uint32_t batch) {
      const std::size_t index = static_cast<std::size_t>(
          std::find(set.begin(), set.end(), batch) - set.begin());
      return bucket_step(fake_device, fake_stream, kept->planning->empty,
                         kept->planned_outputs[index], batch);
    });
    if (!plan) return skip(state, plan.error());
    // The same keys here, around cuMemGetInfo.
    Result<std::vector<Buffer>> measured_out = outputs(device, s, set);
    if (!measured_out) return skip(state, measured_out.error());
    kept->measured_outputs = std::move(*measured_out);
    if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());
    Result<std::size_t> before = free_memory(device);
    if (!before) return skip(state, before.error());
    kept->measured = std::make_unique<GraphCache<std::uint32_t>>(device, s);
    Result<GraphCacheFootprint> here = kept->measured->record_all(set, [&](std::uint32_t batch) {
      const std::size_t index = static_cast<std::size_t>(
          std::find(set.begin(), set.end(), batch) - set.begin());
      return bucket_step(device, s, env.empty_kernel(), kept->measured_outputs[index], batch);
    });
    if (!here) return skip(state, here.error());
    if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());
    Result<std::size_t> after = free_memory(device);
    if (!after) return skip(state, after.error());
    const std::size_t driver_chunks =
        (plan->driver_bytes + kDriverMemoryChunk - 1) / kDriverMemoryChunk * kDriverMemoryChunk;
    predicted = static_cast<double>(plan->pool_bytes + driver_chunks);
    measured = *before > *after ? static_cast<double>(*before - *after) : 0.0;
    predicted_pool = static_cast<double>(plan->pool_bytes);
    predicted_driver = static_cast<double>(plan->driver_bytes);
    measured_pool = static_cast<double>(here->pool_bytes);
    measured_driver = static_cast<double>(here->driver_bytes);
    own = static_cast<double>(plan->own_bytes);
    modelled = static_cast<double>(plan->modelled_graphs);
    state.SetIterationTime(ms_since(start) / 1000.0);
    kept_sets().push_back(std::move(kept));
  }
  const double tolerance = std::max(0.05 * measured, static_cast<double>(kDriverMemoryChunk));
  state.counters["keys"] = static_cast<double>(set.size());
  state.counters["predicted_bytes"] = predicted;
  state.counters["measured_bytes"] = measured;
  state.counters["difference_bytes"] = measured - predicted;
  state.counters["difference_vs_measured"] = measured > 0 ? (measured - predicted) / measured : 0.0;
  state.counters["tolerance_bytes"] = tolerance;
  state.counters["within_tolerance"] = std::abs(measured - predicted) <= tolerance ? 1.0 : 0.0;
  state.counters["predicted_pool_bytes"] = predicted_pool;
  state.counters["predicted_driver_bytes"] = predicted_driver;
  state.counters["measured_pool_bytes"] = measured_pool;
  state.counters["measured_driver_bytes"] = measured_driver;
  state.counters["own_bytes"] = own;
  state.counters["modelled_graphs"] = modelled;
}

// ---- DriverMemory ---------------------------------------------------------------------------------

enum class Node { kernel, memcpy, memset, write };

const char* node_name(Node node) {
  switch (node) {
    case Node::kernel: return "kernel";
    case Node::memcpy: return "memcpy";
    case Node::memset: return "memset";
    case Node::write: return "write";
  }
  return "?";
}

std::vector<Graph>& kept_graphs() {
  static std::vector<Graph> kept;
  return kept;
}

void driver_memory(benchmark::State& state, BenchEnv& env, Node node, int n) {
  const int kExecutables = n <= 10 ? 256 : n <= 100 ? 64 : 8;
  Device& device = env.device();
  Stream& s = env.stream();
  double measured = 0, taken = 0, model = 0, measured_sources = 0;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    Result<Buffer> a = device.alloc(4096, s);
    Result<Buffer> b = device.alloc(4096, s);
    if (!a || !b) return skip(state, !a ? a.error() : b.error());
    const std::vector<std::byte> bytes(256, std::byte{3});
    auto step = [&]() -> Result<void> {
      for (int i = 0; i < n; ++i) {
        Result<void> r;
        switch (node) {
          case Node::kernel: r = env.launch_empty(); break;
          case Node::memcpy: r = device.copy(*b, 0, *a, 0, 256, s); break;
          case Node::memset: r = device.fill(*a, std::uint8_t{1}, s); break;
          case Node::write: r = device.write(*a, bytes, s); break;
        }
        if (!r) return r;
      }
      return {};
    };
    if (Result<void> synced = env.sync(); !synced) return skip(state, synced.error());
    std::vector<Graph> graphs;
    std::size_t closing = 0;
    for (int e = 0; e < kExecutables; ++e) {
      if (Result<void> r = device.prepare_capture(s); !r) return skip(state, r.error());
      if (Result<void> r = step(); !r) {
        (void)device.abort_capture(s);
        return skip(state, r.error());
      }
      if (Result<void> r = device.begin_capture(s); !r) {
        (void)device.abort_capture(s);
        return skip(state, r.error());
      }
      if (Result<void> r = step(); !r) {
        (void)device.abort_capture(s);
        return skip(state, r.error());
      }
      Result<std::size_t> before = free_memory(device);
      if (!before) return skip(state, before.error());
      Result<Graph> graph = device.end_capture(s);
      if (!graph) return skip(state, graph.error());
      Result<std::size_t> after = free_memory(device);
      if (!after) return skip(state, after.error());
      closing += *before > *after ? *before - *after : 0;
      graphs.push_back(std::move(*graph));
    }
    measured = static_cast<double>(closing) / kExecutables;
    taken = 0;
    measured_sources = 0;
    for (const Graph& graph : graphs) {
      const GraphMemory& memory = graph.report().memory;
      taken += static_cast<double>(memory.driver_taken_bytes) / kExecutables;
      model = static_cast<double>(memory.driver_model_bytes);
      if (memory.driver_source == DriverBytesSource::measured) ++measured_sources;
    }
    state.SetIterationTime(ms_since(start) / 1000.0);
    for (Graph& graph : graphs) kept_graphs().push_back(std::move(graph));
  }
  state.counters["nodes"] = n;
  state.counters["executables"] = kExecutables;
  state.counters["measured_bytes_per_exec"] = measured;
  state.counters["taken_bytes_per_exec"] = taken;
  state.counters["model_bytes_per_exec"] = model;
  state.counters["measured_vs_model"] = model > 0 ? measured / model : 0.0;
  state.counters["measured_sources"] = measured_sources;
}

}  // namespace

void register_graph_memory_benchmarks(BenchEnv& env, const BenchPlan& plan) {
  (void)plan;  // byte counts: one iteration and one repetition each, whatever the flags
  // Footprint and DriverMemory first: they measure fresh driver memory.
  for (const int keys : {8, 67}) {
    benchmark::RegisterBenchmark("Footprint", [&env, keys](benchmark::State& state) {
      footprint(state, env, keys);
    })
        ->Arg(keys)
        ->Iterations(1)
        ->Repetitions(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  for (const Node node : {Node::kernel, Node::memcpy, Node::memset, Node::write}) {
    const std::vector<int> sizes = node == Node::kernel ? std::vector<int>{1, 10, 100, 1000, 10000}
                                                        : std::vector<int>{1, 100, 1000};
    for (const int n : sizes) {
      benchmark::RegisterBenchmark((std::string("DriverMemory/") + node_name(node)).c_str(),
                                   [&env, node, n](benchmark::State& state) {
                                     driver_memory(state, env, node, n);
                                   })
          ->Arg(n)
          ->Iterations(1)
          ->Repetitions(1)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (const bool virtual_memory : {true, false}) {
    for (const Order order : {Order::largest_first, Order::smallest_first, Order::shuffled}) {
      const std::string name = std::string("PoolMemory/") +
                               (virtual_memory ? "virtual/" : "plain/") +
                               (order == Order::largest_first    ? "largest_first"
                                : order == Order::smallest_first ? "smallest_first"
                                                                 : "shuffled");
      benchmark::RegisterBenchmark(name.c_str(),
                                   [&env, virtual_memory, order](benchmark::State& state) {
                                     pool_memory(state, env, virtual_memory, order);
                                   })
          ->Iterations(1)
          ->Repetitions(1)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace graphcap::bench
