// NCCL inside graphcap recordings, one Device per GPU. One communicator per device
// (ncclCommInitAll); each step is an all-reduce (sum) of every device's send buffer into its
// receive buffer, issued on that device's graphcap stream (Stream::handle()). Recorded once into
// each device's graph, with Device::record_external declaring the buffers NCCL reads and writes
// (so they are checked, pinned by the graph and claimed if a recording is refused, exactly like a
// graphcap launch's), then replayed N times with new inputs; the sums are checked every time.
//
//   nccl_allreduce                 check: 20 replays, exit 0 when every sum matches
//   nccl_allreduce --bench [steps] per-step time (median of 15 runs of `steps` steps) of the
//                                  graphs replayed vs the same all-reduces issued eagerly
//
// Needs 2+ GPUs: with fewer it prints why and exits 77 (ctest's SKIP_RETURN_CODE). NVLink
// multicast (NVLS) stays off: NCCL_NVLS_ENABLE=0 unless the environment already says otherwise.
// NCCL switches the thread's current device inside its calls; Device::context_changed() after
// them makes graphcap's next call restore its device's context.
#include <cuda.h>  // before graphcap's headers: they then use cuda.h's types

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <graphcap/graphcap.h>

namespace {

using graphcap::Arg;
using graphcap::Buffer;
using graphcap::Device;
using graphcap::Errc;
using graphcap::Error;
using graphcap::Graph;
using graphcap::Result;

constexpr std::size_t kCount = 1 << 20;  // floats per device (4 MiB)
constexpr int kReplays = 20;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "nccl_allreduce: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T check(Result<T> result, const std::string& what) {
  if (!result) fail(what + ": " + result.error().message());
  return std::move(*result);
}
void check(Result<void> result, const std::string& what) {
  if (!result) fail(what + ": " + result.error().message());
}
void check_nccl(ncclResult_t result, const char* what) {
  if (result != ncclSuccess) fail(std::string(what) + ": " + ncclGetErrorString(result));
}

std::span<const std::byte> bytes_of(const std::vector<float>& v) {
  return std::as_bytes(std::span(v));
}

// Device d's input for step `step`: small integers, so float sums are exact.
std::vector<float> input(int d, int step) {
  std::vector<float> v(kCount);
  for (std::size_t i = 0; i < kCount; ++i) v[i] = float((d + 1) * ((i + step) % 97));
  return v;
}

struct Rank {
  std::unique_ptr<Device> device;
  graphcap::Stream* stream = nullptr;
  Buffer send, recv;
  ncclComm_t comm = nullptr;
  Graph graph;
};

// One step on every device, inside one NCCL group. Declares each device's buffers first (an input
// carrying a failure: nothing is issued), then issues. A failed NCCL call makes every receive
// buffer carry the failure.
Result<void> all_reduce(std::vector<Rank>& ranks) {
  for (Rank& r : ranks) {
    if (Result<void> declared =
            r.device->record_external(*r.stream, {Arg::in(r.send), Arg::out(r.recv)});
        !declared) {
      return declared;
    }
  }
  ncclResult_t result = ncclGroupStart();
  for (Rank& r : ranks) {
    if (result != ncclSuccess) break;
    result = ncclAllReduce(reinterpret_cast<const void*>(r.send.device_ptr()),
                           reinterpret_cast<void*>(r.recv.device_ptr()), kCount, ncclFloat,
                           ncclSum, r.comm, reinterpret_cast<cudaStream_t>(r.stream->handle()));
  }
  const ncclResult_t ended = ncclGroupEnd();
  if (result == ncclSuccess) result = ended;
  Device::context_changed();  // NCCL set the current device as it went
  if (result != ncclSuccess) {
    const Error failure(Errc::driver, std::string("ncclAllReduce: ") + ncclGetErrorString(result));
    for (Rank& r : ranks) (void)r.device->record_external(*r.stream, {Arg::out(r.recv)}, failure);
    return failure;
  }
  return {};
}

void check_sums(std::vector<Rank>& ranks, int step) {
  std::vector<float> want(kCount, 0.0f);
  for (std::size_t d = 0; d < ranks.size(); ++d) {
    const std::vector<float> in = input(static_cast<int>(d), step);
    for (std::size_t i = 0; i < kCount; ++i) want[i] += in[i];
  }
  for (std::size_t d = 0; d < ranks.size(); ++d) {
    std::vector<std::byte> bytes = check(ranks[d].device->read(ranks[d].recv, *ranks[d].stream),
                                         "read device " + std::to_string(d) + "'s sum");
    if (std::memcmp(bytes.data(), want.data(), bytes.size()) != 0) {
      fail("step " + std::to_string(step) + ": device " + std::to_string(d) + "'s sum is wrong");
    }
  }
}

void write_inputs(std::vector<Rank>& ranks, int step) {
  for (std::size_t d = 0; d < ranks.size(); ++d) {
    check(ranks[d].device->write(ranks[d].send, bytes_of(input(static_cast<int>(d), step)),
                                 *ranks[d].stream),
          "write device " + std::to_string(d) + "'s input");
  }
}

void sync_all(std::vector<Rank>& ranks) {
  for (Rank& r : ranks) check(r.device->sync(*r.stream), "sync");
}

// Median seconds per step of `runs` timed runs of `steps` steps each.
template <class Step>
double median_per_step(std::vector<Rank>& ranks, int steps, int runs, Step&& step) {
  std::vector<double> per_step;
  for (int run = 0; run < runs; ++run) {
    sync_all(ranks);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) step();
    sync_all(ranks);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    per_step.push_back(took.count() / steps);
  }
  std::sort(per_step.begin(), per_step.end());
  return per_step[per_step.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const bool bench = argc > 1 && std::strcmp(argv[1], "--bench") == 0;
  const int bench_steps = bench && argc > 2 ? std::max(1, std::atoi(argv[2])) : 100;
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);

  std::unique_ptr<graphcap::DriverApi> cuda = check(graphcap::load_cuda_driver(), "loading libcuda");
  if (cuda->cuInit(0) != graphcap::CUDA_SUCCESS) fail("cuInit failed");
  int count = 0;
  if (cuda->cuDeviceGetCount(&count) != graphcap::CUDA_SUCCESS) fail("cuDeviceGetCount failed");
  if (count < 2) {
    std::printf("nccl_allreduce: skipped: needs 2+ GPUs, this machine has %d\n", count);
    return 77;
  }

  std::vector<Rank> ranks(static_cast<std::size_t>(count));
  std::vector<int> ordinals(static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d) {
    Rank& r = ranks[static_cast<std::size_t>(d)];
    graphcap::DeviceOptions options;
    options.ordinal = d;
    r.device = check(Device::open(*cuda, options), "open device " + std::to_string(d));
    r.stream = &r.device->stream();
    r.send = check(r.device->alloc(kCount * sizeof(float), *r.stream), "alloc send");
    r.recv = check(r.device->alloc(kCount * sizeof(float), *r.stream), "alloc recv");
    ordinals[static_cast<std::size_t>(d)] = d;
  }
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(count));
  check_nccl(ncclCommInitAll(comms.data(), count, ordinals.data()), "ncclCommInitAll");
  Device::context_changed();
  for (int d = 0; d < count; ++d) ranks[static_cast<std::size_t>(d)].comm = comms[static_cast<std::size_t>(d)];

  // Eagerly first (NCCL connects its peers on the first collective: never inside a recording).
  write_inputs(ranks, 0);
  check(all_reduce(ranks), "the eager all-reduce");
  check_sums(ranks, 0);

  // Record: every device's window open, one step issued into all of them, every window closed.
  graphcap::CaptureOptions capture;
  capture.mode = graphcap::CU_STREAM_CAPTURE_MODE_RELAXED;  // NCCL's own calls during capture
  for (Rank& r : ranks) check(r.device->prepare_capture(*r.stream, capture), "prepare_capture");
  check(all_reduce(ranks), "the warm-up all-reduce");
  for (Rank& r : ranks) check(r.device->begin_capture(*r.stream), "begin_capture");
  check(all_reduce(ranks), "the recorded all-reduce");
  for (Rank& r : ranks) r.graph = check(r.device->end_capture(*r.stream), "end_capture");

  // Replays: new inputs each time (written on each device's stream, ordered before its replay).
  for (int step = 1; step <= kReplays; ++step) {
    write_inputs(ranks, step);
    for (Rank& r : ranks) check(r.graph.replay(), "replay");
    check_sums(ranks, step);
  }
  const graphcap::GraphReport& report = ranks[0].graph.report();
  std::printf("nccl_allreduce: %d devices, %zu floats each, all-reduce (sum) recorded into each "
              "device's graph\n", count, kCount);
  std::printf("  device 0's graph: %zu nodes (%zu kernel), external work: %s\n", report.node_count,
              report.nodes(graphcap::CU_GRAPH_NODE_TYPE_KERNEL), report.external_work ? "yes" : "no");
  std::printf("  %d replays, every sum matches the host's\n", kReplays);

  if (bench) {
    const int runs = 15;
    const double eager = median_per_step(ranks, bench_steps, runs, [&] {
      check(all_reduce(ranks), "eager all-reduce");
    });
    const double replayed = median_per_step(ranks, bench_steps, runs, [&] {
      for (Rank& r : ranks) check(r.graph.replay(), "replay");
    });
    std::printf("  per step (median of %d runs of %d steps): eager %.1f us, graphs replayed %.1f us"
                " (%.2fx)\n", runs, bench_steps, eager * 1e6, replayed * 1e6, eager / replayed);
  }

  for (Rank& r : ranks) r.graph = Graph();
  for (Rank& r : ranks) ncclCommDestroy(r.comm);
  Device::context_changed();
  return 0;
}
