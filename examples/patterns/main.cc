// patterns: the capture patterns an engine combines, each once, each checked. Two graphs sharing
// their intermediates' memory (a GraphPool), a side stream forked into a recording and joined
// back through events (inside a CaptureScope), the recording's Graphviz DOT, a graph re-recorded
// in place (exec update), and a failure injected into a replay (FaultInjectingDriver) that the
// outputs then carry until a replay succeeds. Uses decode_loop's kernels (axpy, copy). Exit
// status 0 when every check holds.
//
//   patterns [--driver=fake|cuda] [--dot]
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <graphcap/fake/fault_injecting_driver.h>
#include <graphcap/graphcap.h>

#include "example_support.h"

namespace {

using namespace graphcap;
using example::check;

constexpr std::uint32_t kN = 4096;

std::vector<std::uint32_t> read_u32(Device& device, const Buffer& buffer, Stream& s) {
  const std::vector<std::byte> bytes = check(device.read(buffer, s), "read");
  std::vector<std::uint32_t> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

int run(bool cuda, bool print_dot) {
  example::DecodeDriver driver(cuda, "patterns");
  fake::FaultInjectingDriver faults(driver.api());  // passes every call through until told not to
  std::unique_ptr<Device> device = check(Device::open(faults), "Device::open");
  Stream& s = device->stream();
  Stream& side = *check(device->create_stream(), "create_stream");
  Module module = check(device->load_module(driver.image()), "load_module");
  Kernel axpy = check(module.kernel("axpy"), "kernel axpy");
  Kernel copy = check(module.kernel("copy"), "kernel copy");
  const LaunchDims dims{{kN / 256, 1, 1}, {256, 1, 1}, 0};
  std::vector<std::uint32_t> ones(kN, 1);
  Buffer x = check(device->upload(std::as_bytes(std::span(ones)), s), "upload");
  Buffer y = check(device->alloc(kN * 4, s), "alloc");
  Buffer z = check(device->alloc(kN * 4, s), "alloc");
  x.set_label("x");
  y.set_label("y");
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    std::printf("%s %s\n", ok ? "ok:   " : "WRONG:", what);
    failures += ok ? 0 : 1;
  };

  // 1. Two graphs in one pool: each step's intermediate is lent from the same memory.
  GraphPool pool = check(device->create_graph_pool(s), "create_graph_pool");
  CaptureOptions pooled;
  pooled.pool = &pool;
  auto step_with = [&](std::uint32_t a, const Buffer& out) {
    return [&, a]() -> Result<void> {
      Result<Buffer> tmp = device->alloc(kN * 4, s);  // an intermediate of the step
      if (!tmp) return tmp.error();
      Result<void> copied =
          device->launch(s, copy, dims, {Arg::in(x), Arg::out(*tmp), Arg::value(kN)});
      if (!copied) return copied;
      return device->launch(s, axpy, dims,
                            {Arg::in(*tmp), Arg::in(x), Arg::out(out), Arg::value(a),
                             Arg::value(kN)});
    };
  };
  Graph first = check(device->record(s, step_with(2, y), pooled), "record (pool, first)");
  Graph second = check(device->record(s, step_with(3, z), pooled), "record (pool, second)");
  expect(pool.intermediates() == 1 && second.report().pool_shared_bytes == kN * 4,
         "two pooled graphs share one intermediate");

  // 2. Fork and join inside a recording, the recording held by a CaptureScope.
  Event forked = check(device->create_event(), "create_event");
  Event joined = check(device->create_event(), "create_event");
  auto fork_join = [&]() -> Result<void> {
    if (Result<void> r = device->record_event(forked, s); !r) return r;
    if (Result<void> r = device->wait(side, forked); !r) return r;
    Result<void> copied =
        device->launch(side, copy, dims, {Arg::in(y), Arg::out(z), Arg::value(kN)});
    if (!copied) return copied;
    if (Result<void> r = device->record_event(joined, side); !r) return r;
    return device->wait(s, joined);
  };
  check(device->prepare_capture(s), "prepare_capture");
  check(fork_join(), "the warm-up");
  Graph branched;
  {
    CaptureScope scope(*device, s);  // leaving the scope without end() would abort the recording
    check(fork_join(), "the recorded fork and join");
    branched = check(scope.end(), "CaptureScope::end");
  }
  const std::string dot = branched.dot();
  expect(dot.find("cluster_stream1") != std::string::npos &&
             dot.find("\\\"y\\\"") != std::string::npos,
         "the DOT shows the side stream and the labelled buffer");
  if (print_dot) std::printf("%s", dot.c_str());

  // 3. Re-record the first graph in place with another coefficient: an exec update.
  check(device->prepare_capture(s, pooled), "prepare_capture (re-record)");
  check(step_with(5, y)(), "the re-record's warm-up");
  check(device->begin_capture(s), "begin_capture (re-record)");
  check(step_with(5, y)(), "the re-recorded step");
  check(device->end_capture(s, first), "end_capture into the first graph");
  expect(first.report().updated, "re-recorded by exec update (same topology)");
  check(first.replay(), "replay");
  expect(read_u32(*device, y, s) == std::vector<std::uint32_t>(kN, 6), "y = 5 * 1 + 1");

  // 4. A failed replay: returned, queued on the stream, carried by what the graph writes.
  faults.fail_call("cuGraphLaunch", CUDA_ERROR_LAUNCH_FAILED);
  Result<void> failed = second.replay();
  expect(!failed && failed.error().driver_code() == CUDA_ERROR_LAUNCH_FAILED,
         "the injected cuGraphLaunch failure is the replay's error");
  (void)device->sync(s);  // the queued copy of it, reported once
  expect(!device->read(z, s), "z carries the failure instead of stale bytes");
  check(second.replay(), "replay again");
  check(branched.replay(), "replay the fork and join");
  expect(read_u32(*device, z, s) == std::vector<std::uint32_t>(kN, 6), "z = y after the join");
  if (fake::FakeDriver* f = driver.fake()) {
    expect(f->violations().empty(), "no violation on the fake");
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool cuda = false, dot = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--driver=cuda") {
      cuda = true;
    } else if (arg == "--dot") {
      dot = true;
    } else if (arg != "--driver=fake") {
      std::fprintf(stderr, "usage: patterns [--driver=fake|cuda] [--dot]\n");
      return 2;
    }
  }
  return example::run_main("patterns", [&] { return run(cuda, dot); });
}
