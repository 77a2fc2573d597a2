// A consumer of the installed package, written from the README and docs/testing-on-the-fake.md:
// graphcap's whole API from the umbrella header alone (every public class used once), the fake
// driver from its own headers, and the consumer's own kernels (consumer_kernels.cu). Exit status 0
// when every check holds; each line printed says what was checked.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <graphcap/fake/fake_driver.h>
#include <graphcap/fake/fault_injecting_driver.h>
#include <graphcap/graphcap.h>

using namespace graphcap;

namespace {

bool all_ok = true;
void expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  all_ok = all_ok && ok;
}

template <class T>
std::vector<T> as(const std::vector<std::byte>& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

template <class T>
Buffer upload(Device& device, Stream& s, const std::vector<T>& values) {
  return device.upload(std::as_bytes(std::span(values)), s).value();
}

// A decorator of the user's own: counts graph launches on the way to the driver.
class CountingDriver : public ForwardingDriver {
 public:
  using ForwardingDriver::ForwardingDriver;
  CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) override {
    ++launches;
    return ForwardingDriver::cuGraphLaunch(exec, stream);
  }
  int launches = 0;
};

// Everything graphcap holds is destroyed when this returns (the device last).
void run(fake::FakeDriver& fake) {
  // The fake (strict by default), through a user's decorator.
  const std::size_t kernels = fake::register_compiled_kernels(fake);
  expect(kernels >= 3, "the consumer's GRAPHCAP_KERNELs are registered (" +
                           std::to_string(kernels) + ")");
  CountingDriver counting(fake);
  DriverApi& driver = counting;
  DeviceOptions device_options;
  device_options.capture_mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  std::unique_ptr<Device> device = Device::open(driver, device_options).value();
  Stream& s = device->stream();
  Result<Stream*> side = device->create_stream();
  expect(side.has_value(), "a second stream");
  const DeviceLimits& limits = device->limits();
  expect(limits.max_threads_per_block == 1024, "the H200's limits");

  Module module = device->load_module(fake::compiled_kernels_image()).value();
  Kernel saxpy = module.kernel("saxpy").value();
  Kernel histogram = module.kernel("histogram").value();
  expect(saxpy.param_count() == 5 && saxpy.param_offset(1) == 8,
         "saxpy's layout comes from its signature");

  constexpr unsigned n = 1000;
  const LaunchDims dims{Dim3{4, 1, 1}, Dim3{128, 1, 1}, 0};  // fewer threads than n: grid-stride
  Buffer x = upload(*device, s, std::vector<float>(n, 2.0f));
  Buffer y = upload(*device, s, std::vector<float>(n, 1.0f));
  Buffer out = device->alloc(n * sizeof(float), s).value();
  out.set_label("out");
  Param<float> a = device->param(3.0f);

  // Record (warm-up + recording), replay, change the param.
  auto step = [&] {
    return device->launch(s, saxpy, dims,
                          {Arg::param(a), Arg::in(x), Arg::in(y), Arg::out(out), Arg::value(n)});
  };
  CaptureOptions options;  // the device's mode (THREAD_LOCAL) by default
  Result<Graph> recorded = device->record(s, step, options);
  expect(recorded.has_value(), "Device::record");
  Graph graph = std::move(recorded).value();
  const GraphReport& report = graph.report();
  expect(report.nodes(CU_GRAPH_NODE_TYPE_KERNEL) == 1, "one kernel node");
  expect(graph.dot().find("\\\"out\\\"") != std::string::npos, "dot() names the labelled buffer");
  expect(graph.set(a, 4.0f).has_value(), "Graph::set");
  expect(graph.replay().has_value(), "replay");
  expect(as<float>(device->read(out, s).value())[n - 1] == 9.0f, "out = 4 * 2 + 1");
  expect(counting.launches == 1, "the decorator saw the replay");

  // The same step recorded by hand, the recording inside a CaptureScope.
  device->prepare_capture(s).value();
  step().value();
  {
    CaptureScope scope(*device, s);
    step().value();
    Graph second = scope.end().value();
    expect(static_cast<bool>(second), "CaptureScope::end");
  }
  expect(s.capture_state() == CaptureState::no_capture, "the scope closed the recording");

  // Events: fork the histogram onto the side stream, join back.
  std::vector<unsigned> values(n);
  for (unsigned i = 0; i < n; ++i) values[i] = i;
  Buffer in_values = upload(*device, s, values);
  Buffer bins = upload(*device, s, std::vector<unsigned>(10, 0));
  Event ready = device->create_event().value();
  device->record_event(ready, s).value();
  device->wait(**side, ready).value();
  device->launch(**side, histogram, LaunchDims{Dim3{8, 1, 1}, Dim3{128, 1, 1}, 0},
                 {Arg::in(in_values), Arg::inout(bins), Arg::value(n), Arg::value(10u)})
      .value();
  Event done = device->create_event().value();
  device->record_event(done, **side).value();
  device->wait(s, done).value();
  device->sync(**side).value();
  expect(as<unsigned>(device->read(bins, s).value()) == std::vector<unsigned>(10, 100),
         "atomic_add: 100 values in each of 10 bins");

  // A cache of graphs over two sizes, sharing one pool of intermediates.
  GraphCacheOptions cache_options;
  cache_options.max_graphs = 4;
  GraphCache<unsigned> cache(*device, s, cache_options);
  for (unsigned size : {500u, 1000u, 500u}) {
    cache.run(size, [&] {
      return device->launch(s, saxpy, dims,
                            {Arg::param(a), Arg::in(x), Arg::in(y), Arg::out(out),
                             Arg::value(size)});
    }).value();
  }
  const GraphCacheStats stats = cache.stats();
  expect(stats.captures == 2 && stats.hits == 1, "GraphCache: 2 recordings, 1 replay");
  Result<GraphPool> pool = device->create_graph_pool(s);
  expect(pool.has_value() && pool->bytes_held() == 0, "an empty GraphPool");
  const MemoryStats memory = device->memory_stats(s);
  expect(memory.device.driver_allocations > 0, "memory_stats");

  // A refusal says why, as a value.
  Result<Graph> refused = device->record(s, [&]() -> Result<void> {
    if (Result<void> r = step(); !r) return r;
    return device->sync(s);
  });
  const Error& error = refused.error();
  expect(error.code() == Errc::graph_state && error.driver_code() == CUDA_SUCCESS,
         "a sync inside a recording is refused: " + to_string(error));

  Loop loop;
  expect(!loop, "an empty Loop");
  expect(graph.destroy().has_value(), "Graph::destroy");
}

}  // namespace

int main() {
  std::vector<std::string> logged;
  LogSink previous = set_log_sink([&](LogLevel level, std::string_view message) {
    if (level <= LogLevel::warn) logged.emplace_back(message);
  });
  fake::FakeDriver fake;
  run(fake);
  expect(fake.live_handles().total() == 0, "every driver handle released");

  // The strict fake: one element past a Buffer fails the next sync, naming the violation. The
  // fault is sticky (as on a GPU, where the process is done with the GPU), so on a fake of its own.
  {
    fake::FakeDriver strict;
    fake::register_compiled_kernels(strict);
    std::unique_ptr<Device> device = Device::open(strict).value();
    Stream& s = device->stream();
    Module module = device->load_module(fake::compiled_kernels_image()).value();
    Kernel overrun = module.kernel("overrun").value();
    Buffer small = device->alloc(16 * sizeof(unsigned), s).value();
    device->launch(s, overrun, LaunchDims{}, {Arg::inout(small), Arg::value(16u)}).value();
    Result<void> synced = device->sync(s);
    expect(!synced && synced.error().driver_code() == CUDA_ERROR_ILLEGAL_ADDRESS &&
               synced.error().message().find("past the end of the Buffer") != std::string::npos,
           "the overrun fails the sync: " +
               (synced ? std::string("(ok)") : synced.error().message()));
    expect(strict.violations().size() == 1, "the fake lists it");
  }

  // Fault injection, over a fake here (over libcuda on a GPU).
  fake::FakeDriver other;
  fake::FaultInjectingDriver faults(other);
  faults.fail_call("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY);
  {
    std::unique_ptr<Device> faulty = Device::open(faults).value();
    Result<Buffer> denied = faulty->alloc(1 << 20, faulty->stream());
    expect(!denied && denied.error().code() == Errc::out_of_memory &&
               denied.error().driver_code() == CUDA_ERROR_OUT_OF_MEMORY,
           "an injected cuMemAlloc failure: " + (denied ? std::string() : denied.error().message()));
  }

  // No libcuda here: load_cuda_driver says so as a value (on a GPU machine it loads).
  Result<std::unique_ptr<DriverApi>> cuda = load_cuda_driver();
  expect(cuda.has_value() || cuda.error().code() == Errc::driver_not_found,
         "load_cuda_driver: " + (cuda ? std::string("loaded") : cuda.error().message()));
  expect(describe_cu_result(CUDA_ERROR_ILLEGAL_ADDRESS).find("CUDA_ERROR_ILLEGAL_ADDRESS") == 0,
         "CUDA's error names");
  set_log_sink(previous);
  std::printf("%s\n", all_ok ? "consumer: all checks passed" : "consumer: FAILED");
  return all_ok ? 0 : 1;
}
