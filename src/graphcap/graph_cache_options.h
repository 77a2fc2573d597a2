// What a GraphCache is made with (GraphCacheOptions, RecordAllOptions) and what it reports
// (GraphCacheStats, GraphCacheFootprint): graph_cache.h says what each one governs.
#pragma once

#include <cstddef>
#include <optional>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/graph_pool.h>

namespace graphcap {

struct GraphCacheOptions {
  std::size_t byte_budget = 0;  // device bytes of the cached graphs, at most (0: no limit)
  std::size_t max_graphs = 0;   // graphs kept, at most (0: no limit)
  unsigned give_up_after = 4;   // refused recordings of one key in a row, then it runs eagerly
  GraphPoolOptions pool;        // how the shared pool is made (below)
  bool share_pool = true;       // record every graph into one GraphPool on the cache's stream
  // Each recording's capture mode; unset: the device's DeviceOptions::capture_mode.
  std::optional<CUstreamCaptureMode> mode;
  // A refused recording is run()'s error (last_refusal()'s), not a fallback: for tests and
  // engines that must know every key replays. The step ran once (the warm-up), and the stream is
  // left as run found it. The key is tried again on its next run.
  bool fail_on_refusal = false;
};

struct GraphCacheStats {
  std::size_t hits = 0;       // runs that replayed (a replay that failed is not counted)
  std::size_t captures = 0;   // graphs instantiated (first recordings, and re-recordings whose
                              // update the driver refused)
  std::size_t updates = 0;    // re-recordings applied by exec update
  std::size_t fallbacks = 0;  // runs whose step ran eagerly: a refused recording, or a key given up
  std::size_t refusals = 0;   // recordings refused (fallen back, or returned by fail_on_refusal)
  std::size_t reruns = 0;     // fallbacks that ran the step a second time, eagerly (a refused
                              // recorded run kept a buffer it allocated: a result the step allocates)
  std::size_t evictions = 0;  // graphs dropped for the budget or the count
  std::size_t bytes = 0;      // device bytes of the cached graphs now (footprint().total())
};

// How GraphCache::record_all brings a key set up.
struct RecordAllOptions {
  // Host threads at work at once, the calling one included. It runs every key on the cache's
  // stream (prepare, the warm-up, the recorded run, the close with its refusals, as run() does),
  // and threads - 1 workers instantiate and upload, each on a stream of its own, the graphs it
  // closed, while it records the next keys (PendingGraph, InstantiateWorkers). 1: one key at a
  // time, each instantiated before the next is run (run()'s order).
  unsigned threads = 1;
};

// The device memory a cache's graphs account for now (GraphCache::footprint).
struct GraphCacheFootprint {
  std::size_t graphs = 0;
  bool pool_on_virtual_memory = false;  // the shared pool's layout (GraphPoolStats)
  std::size_t pool_bytes = 0;    // the shared pool's device memory (counted once)
  std::size_t own_bytes = 0;     // the graphs' own device memory: outputs and state they pin
  std::size_t driver_bytes = 0;  // the driver's memory for the graphs' executables
  std::size_t modelled_graphs = 0;  // of the graphs, those whose driver bytes are the model's
  std::size_t total() const noexcept { return pool_bytes + own_bytes + driver_bytes; }
};

}  // namespace graphcap
