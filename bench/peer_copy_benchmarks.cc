// PeerCopy/bytes: a buffer of device 1 copied into one of device 0 on device 0's
// stream, three ways measured in the same iterations (rotating which goes first), each followed
// by a sync of device 0's stream: Device::copy (eager: its checks, the hand-back of the borrowed
// source to device 1's stream, four driver calls more than raw), raw cuMemcpyDtoDAsync of the same
// pointers, and a graph holding the recorded copy, replayed. Its own time is the eager copy's.
// Counters: eager_us, raw_us, replay_us (medians), eager_vs_raw. Needs 2 devices with peer access
// (skipped otherwise): to be measured on a 2-GPU machine; the fake's figures say nothing.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench_env.h"
#include "benchmarks.h"

namespace graphcap::bench {
namespace {

using Clock = std::chrono::steady_clock;

double median_of(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void peer_copy(benchmark::State& state, BenchEnv& env) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0));
  auto skip = [&state](const Error& error) { state.SkipWithError(to_string(error).c_str()); };
  Result<Device*> peer = env.peer_device();
  if (!peer) return skip(peer.error());
  Device& d0 = env.device();
  Device& d1 = **peer;
  Result<bool> can = d0.can_access_peer(d1);
  if (!can) return skip(can.error());
  if (!*can) return skip(Error(Errc::invalid_argument, "device 0 cannot access device 1's memory"));
  if (Result<void> enabled = d0.enable_peer_access(d1); !enabled) return skip(enabled.error());
  Result<Buffer> src = d1.alloc(bytes, d1.stream());
  if (!src) return skip(src.error());
  if (Result<void> filled = d1.fill(*src, std::uint8_t{7}, d1.stream()); !filled) {
    return skip(filled.error());
  }
  Result<Buffer> dst = d0.alloc(bytes, d0.stream());
  if (!dst) return skip(dst.error());
  // Device 0's stream after the fill on device 1 (the copy's order across the devices).
  Result<Event> filled = d1.create_event();
  if (!filled) return skip(filled.error());
  if (Result<void> ok = d1.record_event(*filled, d1.stream()); !ok) return skip(ok.error());
  if (Result<void> ok = d0.wait(d0.stream(), *filled); !ok) return skip(ok.error());
  // The recorded copy.
  if (Result<void> ok = d0.prepare_capture(d0.stream()); !ok) return skip(ok.error());
  if (Result<void> ok = d0.begin_capture(d0.stream()); !ok) return skip(ok.error());
  if (Result<void> ok = d0.copy(*dst, *src, d0.stream()); !ok) {
    (void)d0.abort_capture(d0.stream());
    return skip(ok.error());
  }
  Result<Graph> graph = d0.end_capture(d0.stream());
  if (!graph) return skip(graph.error());
  if (Result<void> ok = env.sync(); !ok) return skip(ok.error());

  std::vector<double> eager_ns, raw_ns, replay_ns;
  int rotation = 0;
  for (auto _ : state) {
    double times[3] = {0, 0, 0};
    for (int step = 0; step < 3; ++step) {
      const int side = (step + rotation) % 3;
      const Clock::time_point start = Clock::now();
      Result<void> outcome;
      if (side == 0) {
        outcome = d0.copy(*dst, *src, d0.stream());
      } else if (side == 1) {
        // d0's context is current: every graphcap call on d0 above bound it.
        if (CUresult result =
                env.driver().cuMemcpyDtoDAsync(dst->native_handle(), src->native_handle(), bytes,
                                               d0.stream().native_handle());
            result != CUDA_SUCCESS) {
          outcome = Error::from_driver("cuMemcpyDtoDAsync", result);
        }
      } else {
        outcome = graph->replay();
      }
      if (outcome) outcome = d0.sync(d0.stream());
      times[side] = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
      if (!outcome) {
        skip(outcome.error());
        break;
      }
    }
    if (state.error_occurred()) break;
    rotation = (rotation + 1) % 3;
    state.SetIterationTime(times[0] * 1e-9);
    eager_ns.push_back(times[0]);
    raw_ns.push_back(times[1]);
    replay_ns.push_back(times[2]);
  }
  const double eager_us = median_of(eager_ns) / 1000.0;
  const double raw_us = median_of(raw_ns) / 1000.0;
  state.counters["eager_us"] = eager_us;
  state.counters["raw_us"] = raw_us;
  state.counters["replay_us"] = median_of(replay_ns) / 1000.0;
  state.counters["eager_vs_raw"] = raw_us > 0 ? eager_us / raw_us : 0.0;
}

}  // namespace

void register_peer_copy_benchmarks(BenchEnv& env, const BenchPlan& plan) {
  for (const std::int64_t bytes : {std::int64_t{4096}, std::int64_t{16} << 20}) {
    const auto iterations = static_cast<std::int64_t>(std::max(1.0, 200 * plan.scale));
    benchmark::RegisterBenchmark("PeerCopy", [&env](benchmark::State& state) {
      peer_copy(state, env);
    })
        ->Arg(bytes)
        ->Iterations(iterations)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace graphcap::bench
