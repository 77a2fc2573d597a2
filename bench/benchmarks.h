// The benchmark families of graphcap-bench (benchmarks.cc has the method of each).
#pragma once

namespace graphcap::bench {

class BenchEnv;

struct BenchPlan {
  double scale = 1.0;  // multiplies every fixed iteration count (--scale)
};

// Registers every family on `env` (which must outlive the run), for 1/10/100/1000/10000 nodes:
//   ReplayHost/n, RawGraphLaunch/n    host time of one Graph::replay() / raw cuGraphLaunch,
//                                     batches of 32 (8 at 1000 nodes) between syncs
//   ReplayHostSingle/n, RawGraphLaunchSingle/n   the same, one call between syncs
//   EagerPass/n, ReplayPass/n         wall time of a pass of n launches + sync, eager / replayed
//   CaptureCost/n, RawCapture/n       graphcap's prepare+warm-up+begin+end / raw capture
void register_benchmarks(BenchEnv& env, const BenchPlan& plan);

// The many-graphs families (many_graphs_benchmarks.cc), for 10/100/1000/10000 nodes:
//   ExecUpdate/n, ReInstantiate/n, RawExecUpdate/n   closing a re-recording of n launches:
//       end_capture(s, into) (exec update) / end_capture(s) (instantiate + upload) / raw
//       cuStreamEndCapture + cuGraphExecUpdate; also the whole re-record (begin..close)
//   ParamSet/n, RawKernelNodeSetParams/n, ParamWrite/n   changing a scalar taken by n nodes:
//       Graph::set / n raw cuGraphExecKernelNodeSetParams / one Device::write of the value
//   ServingStartupLazy/t, ServingStartupUpFront/t   a serving run's start-up through a GraphCache:
//       lazy recording against recording all 8 buckets up front, 64 requests touching t buckets
void register_many_graphs_benchmarks(BenchEnv& env, const BenchPlan& plan);

// Graph memory (graph_memory_benchmarks.cc), byte counts as counters:
//   PoolMemory/<virtual|plain>/<largest_first|smallest_first|shuffled>   what a pool of 8 bucket
//       graphs holds in each recording order, on virtual memory or plain allocations
//   Footprint/<8|67>   a bucket set's device memory as the fake predicted it, against the drop of
//       free memory when the same keys are recorded on this device (run it alone and first)
//   DriverMemory/<kernel|memcpy|memset|write>/n   the driver's memory per executable of n nodes,
//       measured against the model (run it alone)
void register_graph_memory_benchmarks(BenchEnv& env, const BenchPlan& plan);

// Device-side loops (loop_benchmarks.cc): WhileLoop/K, a step of 34 empty launches and
// a countdown kernel that decides on the device whether another step follows, run until it says
// stop (K steps) three ways side by side: replay + read the stop flag + sync per step (the only
// way without conditional nodes), one replay of a graph holding a WHILE loop over the step, and
// K blind replays of the step graph (the lower bound). Counters per step (us): wall and host
// time of each way, and the ratios the issue sets goals for.
void register_loop_benchmarks(BenchEnv& env, const BenchPlan& plan);

// Branches and programmatic dependent launch (branch_benchmarks.cc):
//   PdlChain/n/blocks   a chain of n kernels (16, 64) of `blocks` blocks (1, 8, 132, 256): device
//       time (CUDA events) of graphcap's programmatic chain replayed, the raw programmatic chain
//       replayed, graphcap's plain chain replayed, and both eagerly; ratios pdl_vs_raw and
//       plain_vs_pdl (the goals)
//   BranchCost/k   device time of a replay of a setter + k kernels, + IF taken / skipped, + an
//       empty IF, + a SWITCH of 4 bodies of k, a raw IF of one body skipped; host replay time
void register_branch_benchmarks(BenchEnv& env, const BenchPlan& plan);

// Peer copies (peer_copy_benchmarks.cc), needs 2 devices (skipped otherwise):
//   PeerCopy/bytes   device 1's buffer into device 0's: Device::copy + sync (eager) against raw
//                    cuMemcpyDtoDAsync + cuStreamSynchronize of the same pointers, and the copy
//                    recorded and replayed + sync; counters eager_us, raw_us, replay_us,
//                    eager_vs_raw
void register_peer_copy_benchmarks(BenchEnv& env, const BenchPlan& plan);

// Growth (growth_benchmarks.cc): Growth/<path>/n at 10/100/1,000/10,000 nodes, one
// operation per iteration timed alone (capture, raw_capture, update_close, raw_update_close, set,
// dot, replay, raw_replay, cache_hit, eager, raw_eager); counters us, ns_per_node, and for
// capture instantiate_us and upload_us. Each timed operation is a non-inlined
// graphcap::bench::growth_op_<path>, for callgrind's --toggle-collect.
void register_growth_benchmarks(BenchEnv& env, const BenchPlan& plan);

// Startup (startup_benchmarks.cc): Startup/<side>/<keys>/<launches>/<threads>, a bucket set of
// `keys` graphs of `launches` launches brought up (recorded, instantiated, uploaded) by the raw
// driver serially, on threads whole and in phases, and by GraphCache::record_all; counters ms,
// ms_per_graph, held_mib (and raw_phases' capture_ms, instantiate_ms, upload_ms).
void register_startup_benchmarks(BenchEnv& env, const BenchPlan& plan);

// RaceCheck/<distinct|inplace>/n (race_check_benchmarks.cc), at 100 and 1,000 nodes: one replay
// of a chain of n kernel nodes on a fake with FakeDriverOptions::detect_races and on one without;
// counters off_us, on_us, on_vs_off. The fake only.
void register_race_check_benchmarks(BenchEnv& env, const BenchPlan& plan);

}  // namespace graphcap::bench
