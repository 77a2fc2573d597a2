// The shapes of work the safe-life model (random_safe_life_test.cc) reaches, one function each,
// on the shared model world (model/world.h). Each shape draws its streams, buffers and variant
// from the world, states what every call must answer under the rules of docs/capture-lifecycle.md,
// graph_cache.h and graph_pool.h, keeps the host model of every buffer it touches, and checks the
// world's invariants after its calls. Each leaves every stream out of capture.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/world.h"

namespace graphcap::testing::safe_life {

using model::World;

// What a sequence may reach, one defect class each, every one switchable (GRAPHCAP_MODEL_REACHES).
enum Reach : int {
  fork_join,            // a recording forks both other streams from the origin, joins them back
  fork_from_side,       // ... a side stream forked from the other side stream (0 -> 1 -> 2)
  join_through_side,    // ... a side stream joined through the other side stream (2 -> 1 -> 0)
  aborts_mid_fork,      // abort_capture, a refused end_capture, a CaptureScope left, mid-fork
  branches,             // nested WHILE/IF bodies, recorded and replayed
  branch_faults,        // ... a driver failure injected into the innermost body
  record_steps,         // Device::record with steps that succeed or return an error
  record_throws,        // ... steps that throw (in the warm-up, while recorded)
  record_branch_open,   // ... a step that leaves a branch open (end_capture refuses)
  scope_throws,         // a CaptureScope unwound by an exception
  scope_begin_refused,  // a CaptureScope whose begin is refused (by the driver, beside a recording)
  pool_forks_vmm,       // forked recordings into a virtual-memory GraphPool, dropped in any order
  pool_forks_plain,     // ... into a plain-allocation GraphPool
  cache_steps,          // GraphCache steps that write kept buffers (record, hit, fall back)
  cache_results,        // GraphCache steps that allocate their results
  evictions_vmm,        // GraphCache evictions (count, byte budget), any order, virtual memory
  evictions_plain,      // ... plain allocations
  host_sync_order,      // Device::sync as ordering across streams
  kReachCount,
};
const std::vector<std::string_view>& reach_names();

void fork_chain(World& world);
void abort_mid_fork(World& world);
void branch_fault(World& world);
void record_or_scope(World& world);
void pool_fork(World& world);
void cache_result(World& world);
void budget_eviction(World& world);
void host_sync(World& world);

// Shared by the shapes: a call that must succeed.
template <class T>
bool ok(World& world, const Result<T>& result, const std::string& what) {
  return world.expect(result, std::nullopt, what);
}
// A message's stream: " on stream <s>".
inline std::string on(int s) { return " on stream " + std::to_string(s); }
// The other two streams than `o`, in a random order.
std::pair<int, int> others(World& world, int o);

}  // namespace graphcap::testing::safe_life
