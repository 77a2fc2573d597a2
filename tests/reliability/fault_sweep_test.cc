// The fault sweep (issues 6 and 15): every driver call a capture scenario makes, failed in turn,
// on every driver.
//
// The driver under test is make_test_driver()'s: a fresh FakeDriver per run in
// graphcap_reliability_tests, libcuda in graphcap_fault_sweep_cuda (gpu preset, label gpu_sweep).
// The device is opened on a FaultInjectingDriver around it, which injects the faults and logs and
// counts the calls and handles on both. Each scenario runs once to log the driver calls it makes
// (the counting run), then once per logged call with that call failing
// (FaultInjectingDriver::fail_call(entry, code, nth), nth computed from the counting run's log)
// with an error the real entry point can return. On libcuda the decorator settles queries (a
// query waits for its work first), so every run makes the same calls whatever the GPU's timing;
// GRAPHCAP_SWEEP_STRIDE=k injects only every kth call (a bounded subset). Like
// an application, a scenario stops at the first step that fails and closes any window it was in
// (end_capture, or abort_capture in prepare). A host shadow follows what each buffer holds after
// the steps that succeeded (an eager launch or write: its effect; a failed one: its output carries
// the failure; a recorded one: nothing until a replay, and the refusal if the recording is refused).
// After every injected run:
//   - exactly that call failed (the run followed the counting run's path up to it);
//   - no stream is left capturing: Stream::capture_state() and cuStreamIsCapturing through the
//     driver both say so;
//   - the failure was reported by name: an error the scenario saw (returned, queued and surfaced
//     by a sync, or carried by a buffer) names the failing entry point with its code, or a warning
//     through the log sink names it (destructor paths and the documented warning-only cuGraphUpload),
//     or, for an out-of-memory allocation, the pool's trim-and-retry recovered and the run's
//     results equal the fault-free run's;
//   - every read (in the scenario, and of every buffer afterwards) returns an error or exactly the
//     shadow's bytes: for every read the fault-free run also reached, the fault-free run's bytes;
//     a buffer the failure affected (whose shadow carries a failure) must read as an error;
//   - a fresh capture on the same device (or, where the scenario closed it, a new one on the same
//     driver) records, replays and reads back correctly;
//   - after the device closes no handle created through the decorator is live (its tracker
//     counts them on both drivers), except that a failed release call (destroy, free, unload)
//     leaves exactly its one handle, and a failed cuDevicePrimaryCtxRelease exactly its one
//     context reference; the harness then releases those (it holds a context reference of its
//     own, so nothing is reclaimed behind its back). On the fake, the fake's own count agrees
//     (only the harness's context reference is left, nothing was reclaimed) and it saw no
//     memory-safety violation;
//   - the device's free memory (cuMemGetInfo) after the run is what it was before, but for what
//     the driver keeps of its executables' memory (docs/cuda-driver-facts.md, "Device memory the
//     driver holds per executable": taken at instantiate, never given back, reused by later
//     executables): on the fake exactly (FakeDriver::executable_memory() says what it keeps); on
//     libcuda exactly after an injected failure (the fault-free counting run before it took what
//     the driver keeps, which the injected runs reuse), and within kMemorySlack in the counting
//     run itself (0 bytes retained after every failure). Each scenario prints the
//     most any of its runs retained.
// The number of injections and their outcomes are printed (docs/reliability.md records them).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/driver/entry_traits.h>
#include <graphcap/driver/error_names.h>
#include <graphcap/fake/fake_driver.h>
#include <graphcap/fake/fault_injecting_driver.h>
#include <graphcap/graph_cache.h>
#include <graphcap/graphcap.h>

#include "device_fixture.h"
#include "fault_fixture.h"
#include "kernels/test_kernels.h"
#include "matchers.h"
#include "test_driver.h"

namespace graphcap::testing::fault_sweep {
namespace {

// How much less free device memory the fault-free counting run may leave on libcuda: what the
// driver keeps of the first executables' memory, and its own lazily created state (none after an
// injected failure, and none on the fake but what it keeps for executables). The leaks that
// matter are found by the decorator's handle count; this is the cross-check that the driver
// itself got everything back.
constexpr std::size_t kMemorySlack = std::size_t{64} << 20;

// An error the real entry point can return: the first of its codes in entry_points.def (every
// entry point has some, chosen deliberately there).
std::optional<CUresult> first_listed_code(std::string_view entry) {
  const EntryTraits* traits = find_entry_traits(entry);
  if (traits == nullptr) return std::nullopt;
  return traits->codes.front();
}

// Calls that release one handle (entry_points.def's handle column): when one fails, the
// decorator does not forward it and that handle stays live. The kind of handle each releases.
// A stream-ordered release (cuMemFreeAsync) is made only inside the scenarios' captures, where it
// is a MEM_FREE node that releases nothing now (the tracker's rule too): its failure leaves none.
std::size_t fake::LiveHandles::*released_kind(std::string_view entry) {
  const EntryTraits* traits = find_entry_traits(entry);
  if (traits == nullptr || traits->handle != EntryHandle::releases) return nullptr;
  if (traits->order == EntryOrder::ordered) return nullptr;
  return fake::LiveHandles::field(traits->kind);
}

struct Injection {
  std::size_t index = 0;  // into the counting run's call log, from the window's start
  std::string entry;
  int nth = 0;
  CUresult code = CUDA_SUCCESS;
};

enum class Outcome { surfaced, warned, recovered };

using Values = std::vector<std::uint32_t>;

// What a buffer must read back as: the elements the operations that completed produced (where
// `known`), or, when `failed`, an error. A buffer with no shadow was never written.
struct Shadow {
  bool failed = false;
  Values values;
  std::vector<bool> known;
};

// Everything one run of a scenario holds: the driver, the device, what the scenario made, and a
// host shadow of what each kept buffer holds after the operations that succeeded.
class Session {
 public:
  Session(const Injection* injection, std::map<std::string, bool>* golden_errors)
      : test_driver(make_test_driver()),
        fake_driver(test_driver->fake()),
        driver(test_driver->api(), {.settle_queries = fake_driver == nullptr}),
        injection_(injection),
        golden_errors_(golden_errors) {
    const std::span<const std::byte> kernels = test_driver->kernel_image();
    image.assign(kernels.begin(), kernels.end());
    hold_context();
    free_before = free_memory();
    previous_sink_ = set_log_sink([this](LogLevel level, std::string_view message) {
      if (level <= LogLevel::warn) warnings.emplace_back(message);
    });
  }
  ~Session() {
    set_log_sink(previous_sink_);
    if (context_ != nullptr) (void)test_driver->api().cuDevicePrimaryCtxRelease(device_ordinal_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  bool counting() const { return injection_ == nullptr; }

  // The harness's own reference to the primary context, taken through the driver under test (not
  // the decorator, so it is neither logged nor failed): the context outlives the device's close,
  // handles a failed release left are released by the harness (release_leaked) rather than
  // reclaimed, and cuMemGetInfo can be asked before and after. On libcuda one more reference is
  // held for the whole process, so that the context is not rebuilt for every run.
  void hold_context() {
    DriverApi& api = test_driver->api();
    ASSERT_EQ(api.cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(api.cuDeviceGet(&device_ordinal_, 0), CUDA_SUCCESS);
    ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&context_, device_ordinal_), CUDA_SUCCESS);
    if (fake_driver == nullptr) {
      static const bool process_reference = [&] {
        CUcontext context = nullptr;
        return api.cuDevicePrimaryCtxRetain(&context, device_ordinal_) == CUDA_SUCCESS;
      }();
      EXPECT_TRUE(process_reference);
    }
  }
  // Makes the harness's context current on this thread (what the device left current may be
  // gone); false if there is none.
  bool make_current() {
    return context_ != nullptr && test_driver->api().cuCtxSetCurrent(context_) == CUDA_SUCCESS;
  }
  // The device's free memory, as cuMemGetInfo reports it (0 if it can't be asked).
  std::size_t free_memory() {
    std::size_t free = 0;
    std::size_t total = 0;
    if (!make_current() || test_driver->api().cuMemGetInfo(&free, &total) != CUDA_SUCCESS) {
      ADD_FAILURE() << "cuMemGetInfo could not be asked";
      return 0;
    }
    return free;
  }
  // Hold the fake's device back (queries report queued work as unfinished); a no-op on a GPU,
  // whose device runs behind the host anyway.
  void pause_device(bool paused) {
    if (fake_driver != nullptr) fake_driver->set_device_paused(paused);
  }
  Device& dev() { return *device; }
  Stream& main() { return device->stream(); }

  // Open the device and load the test kernels.
  bool open() {
    Result<std::unique_ptr<Device>> opened = Device::open(driver);
    if (!ok(opened)) return false;
    device = std::move(*opened);
    streams = {&device->stream()};
    Result<Module> loaded = device->load_module(image);
    if (!ok(loaded)) return false;
    module = *loaded;
    for (auto [kernel, name] : {std::pair{&add_one, "add_one"}, std::pair{&fill, "fill"},
                                std::pair{&copy, "copy"}}) {
      Result<Kernel> found = module.kernel(name);
      if (!ok(found)) return false;
      *kernel = *found;
    }
    return true;
  }

  // The device closes (the scenario's own step).
  void close() {
    graphs.clear();
    events.clear();
    device.reset();
  }

  // A step's result: true to go on. A failure is recorded and stops the scenario, as an
  // application stops a pass that failed.
  template <class T>
  bool ok(const Result<T>& result) {
    if (result) return true;
    errors.push_back(result.error());
    return false;
  }

  // A step the fault-free run expects to fail with `code` (a refusal the scenario provokes).
  // Any other outcome stops the scenario; an unexpected success is a divergence.
  template <class T>
  bool refused(const Result<T>& result, Errc code) {
    if (result) {
      ADD_FAILURE() << "a step the fault-free run saw refused succeeded";
      return false;
    }
    if (counting()) {
      EXPECT_EQ(result.error().code(), code) << to_string(result.error());
      return true;
    }
    errors.push_back(result.error());
    return result.error().code() == code && !names_injected(result.error());
  }

  // A direct driver call the scenario makes itself (around graphcap).
  bool driver_call(const char* entry, CUresult result) {
    if (result == CUDA_SUCCESS) return true;
    errors.push_back(Error::from_driver(entry, result));
    return false;
  }

  // Read `count` elements from element `first` of the kept buffer `name`: the shadow's bytes or
  // an error, never other bytes. In the body (label set), a read the fault-free run saw succeed
  // and this run sees fail stops the scenario.
  bool read(const std::string& label, const std::string& name, Stream& stream,
            std::size_t first = 0, std::optional<std::size_t> count = std::nullopt) {
    const Buffer& buffer = buffers.at(name);
    const std::size_t elements = count.value_or(buffer.size() / 4 - first);
    Result<std::vector<std::byte>> got =
        count ? device->read(buffer, first * 4, elements * 4, stream) : device->read(buffer, stream);
    auto shadow = shadows.find(name);
    if (got) {
      if (counting()) (*golden_errors_)[label] = false;
      if (shadow == shadows.end()) return true;  // never written: any bytes
      if (shadow->second.failed) {
        ADD_FAILURE() << label << ": " << name << " read back " << got->size()
                      << " bytes where it must carry a failure (stale bytes handed back as data)";
        return true;
      }
      const Values read = to_u32(*got);
      const Shadow& expected = shadow->second;
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < read.size(); ++i) {
        if (expected.known[first + i] && read[i] != expected.values[first + i]) ++wrong;
      }
      EXPECT_EQ(wrong, 0u) << label << ": " << name << " read back " << wrong
                           << " element(s) no completed operation produced (stale or wrong data)";
      return true;
    }
    errors.push_back(got.error());
    if (counting()) {
      (*golden_errors_)[label] = true;
      EXPECT_TRUE(shadow != shadows.end() && shadow->second.failed)
          << label << ": the fault-free run failed to read " << name << ": "
          << to_string(got.error());
      return true;
    }
    auto golden = golden_errors_->find(label);
    return golden != golden_errors_->end() && golden->second && !names_injected(got.error());
  }

  bool names_injected(const Error& error) const {
    return injection_ != nullptr && error.message().find(injection_->entry) != std::string::npos;
  }

  void keep(const std::string& name, const Buffer& buffer, Stream& owner) {
    buffers[name] = buffer;
    owners[name] = &owner;
  }
  // Elements [first, first + values.size()) of `name` now hold `values`; a full write or an `out`
  // launch over the whole buffer replaces a failure, a partial one keeps it.
  void set(const std::string& name, const Values& values, std::size_t first = 0) {
    Shadow& shadow = shadow_of(name);
    for (std::size_t i = 0; i < values.size(); ++i) {
      shadow.values[first + i] = values[i];
      shadow.known[first + i] = true;
    }
  }
  Shadow& shadow_of(const std::string& name) {
    Shadow& shadow = shadows[name];
    const std::size_t size = buffers.at(name).size() / 4;
    if (shadow.values.size() != size) {
      shadow.values.assign(size, 0);
      shadow.known.assign(size, false);
    }
    return shadow;
  }
  void fail(const std::string& name) { shadows[name].failed = true; }
  void clear_failure(const std::string& name) { shadows[name].failed = false; }
  bool failed(const std::string& name) const {
    auto it = shadows.find(name);
    return it != shadows.end() && it->second.failed;
  }
  // The elements of `name` (a buffer the scenario fully wrote).
  const Values& values(const std::string& name) const { return shadows.at(name).values; }
  // A buffer a recorded operation writes: it carries the refusal if the recording is refused.
  void claim(const std::string& name) { claims.push_back(name); }

  std::unique_ptr<TestDriver> test_driver;  // the fake (fresh for this run) or libcuda
  fake::FakeDriver* fake_driver;            // the fake, or nullptr on libcuda
  fake::FaultInjectingDriver driver;        // what the device is opened on
  std::size_t free_before = 0;              // cuMemGetInfo when the run began
  std::vector<std::byte> image;
  std::unique_ptr<Device> device;
  Module module;
  Kernel add_one, fill, copy;
  std::vector<Stream*> streams;          // every stream the scenario used
  std::map<std::string, Buffer> buffers;  // read back after the run
  std::map<std::string, Stream*> owners;
  std::map<std::string, Shadow> shadows;
  std::vector<std::string> claims;  // of the recording now open
  std::vector<Graph> graphs;
  std::deque<Event> events;  // stable addresses: steps hold references
  std::vector<Error> errors;
  std::vector<std::string> warnings;

 private:
  const Injection* injection_;
  std::map<std::string, bool>* golden_errors_;  // per body read label: did the fault-free run fail
  LogSink previous_sink_;
  CUdevice device_ordinal_{};
  CUcontext context_ = nullptr;  // the harness's reference (hold_context)
};

Values plus(const Values& values, std::uint32_t k) {
  Values out = values;
  for (std::uint32_t& v : out) v += k;
  return out;
}

// An eager use of another stream's buffer whose hand-back event can't be created is refused before
// anything is enqueued (docs/capture-lifecycle.md, "Buffers on several streams"): like a refused
// argument, it marks nothing.
bool refused_before_issue(const Error& error) {
  return error.message().find("ordering a buffer of another stream") != std::string::npos;
}

// dst = src + 1 over n elements, on the device and, when it ran eagerly, in the shadow. A
// recorded launch (`eager` false) changes nothing now: it claims dst.
bool add_one(Session& s, const std::string& src, const std::string& dst, std::uint32_t n,
             Stream& stream, bool eager) {
  Result<void> launched =
      s.dev().launch(stream, s.add_one, dims_for(n),
                     {Arg::in(s.buffers.at(src)), Arg::out(s.buffers.at(dst)), Arg::value(n)});
  if (!eager) {
    s.claim(dst);
    return s.ok(launched);
  }
  if (!launched) {
    if (!refused_before_issue(launched.error())) s.fail(dst);  // a failed launch marks its output
    return s.ok(launched);
  }
  s.shadow_of(dst);
  Shadow& out = s.shadows.at(dst);
  const Values& in = s.values(src);
  for (std::uint32_t i = 0; i < n; ++i) {
    out.values[i] = in[i] + 1;
    out.known[i] = true;
  }
  if (n * 4 == s.buffers.at(dst).size()) s.clear_failure(dst);
  return true;
}

// fill(dst, value) eagerly: its output carries the failure if it fails.
bool fill(Session& s, const std::string& dst, std::uint32_t value, Stream& stream) {
  const auto n = static_cast<std::uint32_t>(s.buffers.at(dst).size() / 4);
  Result<void> filled = s.dev().launch(stream, s.fill, dims_for(n),
                                       {Arg::out(s.buffers.at(dst)), Arg::value(value), Arg::value(n)});
  if (!filled) {
    s.fail(dst);
    return s.ok(filled);
  }
  s.set(dst, Values(n, value));
  s.clear_failure(dst);
  return true;
}

bool upload(Session& s, const std::string& name, const Values& values, Stream& stream) {
  Result<Buffer> buffer = s.dev().upload(to_bytes(values), stream);
  if (!s.ok(buffer)) return false;
  s.keep(name, *buffer, stream);
  s.set(name, values);
  return true;
}

bool alloc(Session& s, const std::string& name, std::size_t elements, Stream& stream) {
  Result<Buffer> buffer = s.dev().alloc(elements * 4, stream);
  if (!s.ok(buffer)) return false;
  s.keep(name, *buffer, stream);
  return true;
}

// An eager write: a failed one marks the destination; a full one clears a failure.
bool write(Session& s, const std::string& name, const Values& values, Stream& stream,
           std::size_t first = 0) {
  Result<void> written = s.dev().write(s.buffers.at(name), first * 4, to_bytes(values), stream);
  if (!written) {
    s.fail(name);
    return s.ok(written);
  }
  s.set(name, values, first);
  if (first == 0 && values.size() * 4 == s.buffers.at(name).size()) s.clear_failure(name);
  return true;
}

// A recorded write: the destination is claimed (and carries the failure if it fails).
bool recorded_write(Session& s, const std::string& name, const Values& values, Stream& stream) {
  Result<void> written = s.dev().write(s.buffers.at(name), to_bytes(values), stream);
  s.claim(name);
  if (!written) s.fail(name);
  return s.ok(written);
}

// abort_capture: whatever the recording claimed carries the abandonment.
bool abort(Session& s, Stream& stream) {
  const bool recording = stream.capture_state() == CaptureState::capture;
  Result<void> aborted = s.dev().abort_capture(stream);
  if (recording) {
    for (const std::string& name : s.claims) s.fail(name);
  }
  s.claims.clear();
  return s.ok(aborted);
}

// end_capture: a graph, or a refusal (expected, or not) whose claims carry it.
bool end(Session& s, Stream& stream, std::optional<Errc> refusal = std::nullopt) {
  Result<Graph> graph = s.dev().end_capture(stream);
  if (!graph) {
    for (const std::string& name : s.claims) s.fail(name);
  }
  s.claims.clear();
  if (refusal) return s.refused(graph, *refusal);
  if (!s.ok(graph)) return false;
  s.graphs.push_back(std::move(*graph));
  return true;
}

struct Scenario {
  const char* name;
  // Before the injection window (not swept): usually opening the device.
  std::function<bool(Session&)> setup;
  // The window: every driver call made here is failed in turn. Returns false where it stopped.
  std::function<bool(Session&)> body;
};

// ---- the scenarios -----------------------------------------------------------------------------

constexpr std::uint32_t kN = 256;

// Warm-up then recording of `pass` (eager, then recorded), closed into a kept graph.
bool capture(Session& s, Stream& stream, const std::function<bool(bool eager)>& pass) {
  if (!s.ok(s.dev().prepare_capture(stream)) || !pass(true)) return false;
  if (!s.ok(s.dev().begin_capture(stream)) || !pass(false)) return false;
  return end(s, stream);
}

// Device::copy of the whole of `src` into `dst` (same size), eager or recorded, as add_one: a
// failed eager copy marks the destination, a recorded one claims it.
bool copy(Session& s, const std::string& src, const std::string& dst, Stream& stream, bool eager) {
  Result<void> copied = s.dev().copy(s.buffers.at(dst), s.buffers.at(src), stream);
  if (!eager) {
    s.claim(dst);
    return s.ok(copied);
  }
  if (!copied) {
    if (!refused_before_issue(copied.error())) s.fail(dst);
    return s.ok(copied);
  }
  s.set(dst, s.values(src));
  s.clear_failure(dst);
  return true;
}

// Device::fill of every 32-bit word of `dst` with `word` (cuMemsetD32Async), eager or recorded.
bool fill_words(Session& s, const std::string& dst, std::uint32_t word, Stream& stream,
                bool eager) {
  Result<void> filled = s.dev().fill(s.buffers.at(dst), word, stream);
  if (!eager) {
    s.claim(dst);
    return s.ok(filled);
  }
  if (!filled) {
    if (!refused_before_issue(filled.error())) s.fail(dst);
    return s.ok(filled);
  }
  s.set(dst, Values(s.buffers.at(dst).size() / 4, word));
  s.clear_failure(dst);
  return true;
}

// A replay of the last graph; `effect` applies it to the shadow when it was enqueued.
bool replay(Session& s, const std::function<void()>& effect) {
  if (!s.ok(s.graphs.back().replay())) return false;
  effect();
  return true;
}

// capture_replay's recorded pass, x -> y -> x, applied to the shadow.
void capture_replay_effect(Session& s) {
  s.set("y", plus(s.values("x"), 1));
  s.set("x", plus(s.values("x"), 2));
}

bool capture_replay(Session& s) {
  if (!upload(s, "x", iota_u32(kN), s.main()) || !alloc(s, "y", kN, s.main())) return false;
  auto pass = [&](bool eager) {
    return add_one(s, "x", "y", kN, s.main(), eager) && add_one(s, "y", "x", kN, s.main(), eager);
  };
  auto effect = [&] { capture_replay_effect(s); };
  if (!capture(s, s.main(), pass)) return false;
  if (!replay(s, effect) || !replay(s, effect)) return false;
  if (!s.ok(s.dev().sync(s.main()))) return false;
  return s.read("x after two replays", "x", s.main());
}

bool doomed_recording(Session& s) {
  if (!upload(s, "x", iota_u32(kN), s.main())) return false;
  if (!upload(s, "untouched", iota_u32(kN, 7), s.main())) return false;
  if (!s.ok(s.dev().prepare_capture(s.main()))) return false;
  if (!s.ok(s.dev().begin_capture(s.main()))) return false;
  const std::uint32_t seven = 7;
  Result<void> recorded = s.dev().launch(s.main(), s.fill, dims_for(kN),
                                         {Arg::out(s.buffers.at("x")), Arg::value(seven),
                                          Arg::value(kN)});
  s.claim("x");
  if (!s.ok(recorded)) return false;
  // A size the warm-up never allocated: refused, and the recording is doomed.
  if (!s.refused(s.dev().alloc(12345, s.main()), Errc::out_of_memory)) return false;
  if (!end(s, s.main(), Errc::doomed)) return false;
  if (!s.read("x after the refusal", "x", s.main())) return false;
  return s.read("untouched after the refusal", "untouched", s.main());
}

bool memory_node_refusal(Session& s) {
  if (!upload(s, "x", iota_u32(kN), s.main())) return false;
  if (!s.ok(s.dev().prepare_capture(s.main())) || !add_one(s, "x", "x", kN, s.main(), true)) {
    return false;
  }
  if (!s.ok(s.dev().begin_capture(s.main())) || !add_one(s, "x", "x", kN, s.main(), false)) {
    return false;
  }
  // Around graphcap's pools: a memory node on the capturing stream.
  CUdeviceptr rogue = 0;
  if (!s.driver_call("cuMemAllocAsync",
                     s.driver.cuMemAllocAsync(&rogue, 4096, s.main().native_handle()))) {
    return false;
  }
  if (!s.driver_call("cuMemFreeAsync", s.driver.cuMemFreeAsync(rogue, s.main().native_handle()))) {
    return false;
  }
  if (!end(s, s.main(), Errc::graph_state)) return false;
  return s.read("x after the refusal", "x", s.main());
}

bool ping_pong_150(Session& s) {
  constexpr std::uint32_t n = 64;
  if (!upload(s, "a", iota_u32(n), s.main())) return false;
  if (!upload(s, "b", Values(n, 0), s.main())) return false;
  auto pass = [&](bool eager) {
    for (int i = 0; i < 150; ++i) {
      const bool forward = i % 2 == 0;
      if (!add_one(s, forward ? "a" : "b", forward ? "b" : "a", n, s.main(), eager)) return false;
    }
    return true;
  };
  auto effect = [&] {
    s.set("b", plus(s.values("a"), 149));
    s.set("a", plus(s.values("a"), 150));
  };
  if (!capture(s, s.main(), pass)) return false;
  if (!replay(s, effect) || !replay(s, effect)) return false;
  if (!s.read("a after three passes", "a", s.main())) return false;
  if (!write(s, "a", iota_u32(n, 5000), s.main())) return false;
  if (!replay(s, effect)) return false;
  return s.read("a after the rewrite and a replay", "a", s.main());
}

bool eager_upload_launch_read(Session& s) {
  if (!upload(s, "a", iota_u32(kN), s.main())) return false;
  if (!alloc(s, "b", kN, s.main()) || !alloc(s, "c", kN, s.main())) return false;
  if (!add_one(s, "a", "b", kN, s.main(), true)) return false;
  if (!fill(s, "c", 0xABCD, s.main())) return false;
  Result<void> copied = s.dev().launch(s.main(), s.copy, dims_for(kN / 2),
                                       {Arg::in(s.buffers.at("b")), Arg::out(s.buffers.at("c")),
                                        Arg::value(kN / 2)});
  if (!copied) s.fail("c");
  if (!s.ok(copied)) return false;
  const Values b = s.values("b");
  s.set("c", Values(b.begin(), b.begin() + kN / 2));
  if (!s.read("c", "c", s.main())) return false;
  if (!write(s, "a", {9, 9, 9}, s.main(), 4)) return false;
  if (!s.read("part of a", "a", s.main(), 2, 8)) return false;
  {
    // A transient buffer dropped at once, and a new size after it.
    Result<Buffer> scratch = s.dev().upload(to_bytes(iota_u32(3000)), s.main());
    if (!s.ok(scratch)) return false;
  }
  if (!alloc(s, "d", 3000, s.main())) return false;
  if (!add_one(s, "b", "d", kN, s.main(), true)) return false;
  return s.ok(s.dev().sync(s.main()));
}

bool graph_destroy(Session& s) {
  if (!upload(s, "x", iota_u32(kN), s.main())) return false;
  auto pass = [&](bool eager) {
    // An intermediate, dropped inside the pass: inside the window, pinned by the graph.
    Result<Buffer> inner = s.dev().alloc(kN * 4, s.main());
    if (!s.ok(inner)) return false;
    s.keep("inner", *inner, s.main());
    const bool ok = add_one(s, "x", "inner", kN, s.main(), eager) &&
                    add_one(s, "inner", "x", kN, s.main(), eager);
    s.buffers.erase("inner");
    s.shadows.erase("inner");
    return ok;
  };
  if (!capture(s, s.main(), pass)) return false;
  s.pause_device(true);  // the replays are still queued when the graph goes
  for (int i = 0; i < 3; ++i) {
    if (!replay(s, [&] { s.set("x", plus(s.values("x"), 2)); })) return false;
  }
  if (!s.ok(s.graphs.back().destroy())) return false;
  s.pause_device(false);
  if (!s.ok(s.dev().sync(s.main()))) return false;
  if (!s.read("x after three replays", "x", s.main())) return false;
  return upload(s, "sentinel", Values(kN, 0xC0), s.main());
}

bool abort_capture(Session& s) {
  if (!upload(s, "x", iota_u32(kN), s.main())) return false;
  if (!s.ok(s.dev().prepare_capture(s.main())) || !add_one(s, "x", "x", kN, s.main(), true)) {
    return false;
  }
  if (!s.ok(s.dev().begin_capture(s.main())) || !add_one(s, "x", "x", kN, s.main(), false)) {
    return false;
  }
  if (!abort(s, s.main())) return false;
  return s.read("x after the abort", "x", s.main());
}

bool captured_write(Session& s) {
  if (!alloc(s, "target", kN, s.main()) || !alloc(s, "out", kN, s.main())) return false;
  auto pass = [&](bool eager) {
    if (eager) {
      return write(s, "target", iota_u32(kN, 40), s.main()) &&
             add_one(s, "target", "out", kN, s.main(), true);
    }
    return recorded_write(s, "target", iota_u32(kN, 40), s.main()) &&
           add_one(s, "target", "out", kN, s.main(), false);
  };
  if (!capture(s, s.main(), pass)) return false;
  if (!fill(s, "target", 0, s.main())) return false;
  if (!replay(s, [&] {
        s.set("target", iota_u32(kN, 40));
        s.set("out", iota_u32(kN, 41));
      })) {
    return false;
  }
  return s.read("out after the replay", "out", s.main());
}

bool second_stream(Session& s) {
  Result<Stream*> other = s.dev().create_stream();
  if (!s.ok(other)) return false;
  Stream& t = **other;
  s.streams.push_back(&t);
  if (!upload(s, "x on the second stream", iota_u32(kN), t)) return false;
  if (!upload(s, "y on the main stream", iota_u32(kN, 100), s.main())) return false;
  const std::string x = "x on the second stream";
  auto pass = [&](bool eager) {
    if (!add_one(s, x, x, kN, t, eager)) return false;
    // The main stream works eagerly meanwhile (launches are safe next to a recording).
    return eager || add_one(s, "y on the main stream", "y on the main stream", kN, s.main(), true);
  };
  if (!capture(s, t, pass)) return false;
  if (!replay(s, [&] { s.set(x, plus(s.values(x), 1)); })) return false;
  return s.read("x after one replay", x, t);
}

// Copies and word fills, eager and recorded: x -> y by copy, y += 1, x filled.
bool copies_and_fills(Session& s) {
  if (!upload(s, "x", iota_u32(kN), s.main()) || !alloc(s, "y", kN, s.main())) return false;
  auto pass = [&](bool eager) {
    return copy(s, "x", "y", s.main(), eager) && add_one(s, "y", "y", kN, s.main(), eager) &&
           fill_words(s, "x", 5u, s.main(), eager);
  };
  if (!capture(s, s.main(), pass)) return false;
  if (!write(s, "x", iota_u32(kN, 30), s.main())) return false;
  if (!replay(s, [&] {
        s.set("y", plus(s.values("x"), 1));
        s.set("x", Values(kN, 5u));
      })) {
    return false;
  }
  return s.read("y after the replay", "y", s.main()) && s.read("x after the replay", "x", s.main());
}

bool close_mid_recording(Session& s) {
  if (!upload(s, "x", iota_u32(kN), s.main())) return false;
  if (!s.ok(s.dev().prepare_capture(s.main())) || !add_one(s, "x", "x", kN, s.main(), true)) {
    return false;
  }
  if (!s.ok(s.dev().begin_capture(s.main())) || !add_one(s, "x", "x", kN, s.main(), false)) {
    return false;
  }
  s.close();
  return true;
}

bool close_with_everything_live(Session& s) {
  if (!capture_replay(s)) return false;
  // A replay still queued, a drop still pending, a second module: then the device goes.
  s.pause_device(true);
  if (!replay(s, [&] { capture_replay_effect(s); })) return false;
  {
    Result<Buffer> scratch = s.dev().alloc(4096, s.main());
    if (!s.ok(scratch)) return false;
    if (!s.ok(s.dev().launch(s.main(), s.add_one, dims_for(kN),
                             {Arg::in(s.buffers.at("x")), Arg::out(*scratch), Arg::value(kN)}))) {
      return false;
    }
  }
  Result<Module> second = s.dev().load_module(s.image);
  if (!s.ok(second)) return false;
  s.close();
  return true;
}

bool open_and_load(Session& s) {
  if (!s.open()) return false;
  if (!upload(s, "x", iota_u32(kN), s.main())) return false;
  if (!add_one(s, "x", "x", kN, s.main(), true)) return false;
  return s.read("x", "x", s.main());
}

bool open_device(Session& s) { return s.open(); }
bool nothing(Session&) { return true; }

// Re-recording into the kept graph of capture_replay's pass: reading a and writing b instead
// (`grow`: and b -> b again, another topology: re-instantiated). On success the graph replays
// the new pass; on a refusal it still replays the old one, and b carries the refusal.
bool rerecord(Session& s, bool grow) {
  if (!upload(s, "x", iota_u32(kN), s.main()) || !alloc(s, "y", kN, s.main())) return false;
  auto pass = [&](bool eager) {
    return add_one(s, "x", "y", kN, s.main(), eager) && add_one(s, "y", "x", kN, s.main(), eager);
  };
  if (!capture(s, s.main(), pass)) return false;
  if (!upload(s, "a", iota_u32(kN, 1000), s.main()) || !alloc(s, "b", kN, s.main())) {
    return false;
  }
  auto next = [&](bool eager) {
    return add_one(s, "a", "b", kN, s.main(), eager) &&
           (!grow || add_one(s, "b", "b", kN, s.main(), eager));
  };
  if (!s.ok(s.dev().prepare_capture(s.main())) || !next(true)) return false;
  if (!s.ok(s.dev().begin_capture(s.main())) || !next(false)) return false;
  Result<void> closed = s.dev().end_capture(s.main(), s.graphs.back());
  if (!closed) {
    for (const std::string& name : s.claims) s.fail(name);
  }
  s.claims.clear();
  const bool rerecorded = s.ok(closed);
  auto effect = [&] {
    if (!rerecorded) return capture_replay_effect(s);
    s.set("b", plus(s.values("a"), grow ? 2 : 1));
    s.clear_failure("b");
  };
  if (!replay(s, effect)) return false;
  if (!s.ok(s.dev().sync(s.main()))) return false;
  if (!s.read("x after the re-recording's replay", "x", s.main())) return false;
  return rerecorded && s.read("b after the re-recording's replay", "b", s.main());
}

bool rerecord_update(Session& s) { return rerecord(s, false); }
bool rerecord_reinstantiate(Session& s) { return rerecord(s, true); }

// A fill of x taking a Param, recorded; Graph::set changes it (or, failing, changes nothing).
bool param_set(Session& s) {
  if (!alloc(s, "x", kN, s.main()) || !alloc(s, "z", kN, s.main())) return false;
  Param<std::uint32_t> value = s.dev().param<std::uint32_t>(5);
  auto pass = [&](bool eager) {
    for (const char* name : {"x", "z"}) {
      Result<void> launched =
          s.dev().launch(s.main(), s.fill, dims_for(kN),
                         {Arg::out(s.buffers.at(name)), Arg::param(value), Arg::value(kN)});
      if (!eager) {
        s.claim(name);
      } else if (launched) {
        s.set(name, Values(kN, 5));
        s.clear_failure(name);
      } else {
        s.fail(name);
      }
      if (!s.ok(launched)) return false;
    }
    return true;
  };
  if (!capture(s, s.main(), pass)) return false;
  const bool set = s.ok(s.graphs.back().set(value, 9u));
  auto effect = [&] {
    s.set("x", Values(kN, set ? 9 : 5));
    s.set("z", Values(kN, set ? 9 : 5));
  };
  if (!replay(s, effect)) return false;
  if (!s.ok(s.dev().sync(s.main()))) return false;
  if (!s.read("x after the set", "x", s.main())) return false;
  return set && s.read("z after the set", "z", s.main());
}

// One recording of `pool`: src -> tmp -> dst over n elements, tmp an intermediate; into
// `into` when given (re-recording it).
bool pool_capture(Session& s, GraphPool& pool, const std::string& src, const std::string& dst,
                  std::uint32_t n, Graph* into) {
  auto pass = [&](bool eager) {
    Result<Buffer> tmp = s.dev().alloc(n * 4, s.main());
    if (!s.ok(tmp)) return false;
    s.keep("tmp", *tmp, s.main());
    const bool ran = add_one(s, src, "tmp", n, s.main(), eager) &&
                     add_one(s, "tmp", dst, n, s.main(), eager);
    s.buffers.erase("tmp");  // dropped inside the pass: an intermediate
    s.owners.erase("tmp");
    s.shadows.erase("tmp");
    s.claims.erase(std::remove(s.claims.begin(), s.claims.end(), std::string("tmp")),
                   s.claims.end());
    return ran;
  };
  CaptureOptions options;
  options.pool = &pool;
  if (!s.ok(s.dev().prepare_capture(s.main(), options)) || !pass(true)) return false;
  if (!s.ok(s.dev().begin_capture(s.main())) || !pass(false)) return false;
  if (into == nullptr) return end(s, s.main());
  Result<void> closed = s.dev().end_capture(s.main(), *into);
  if (!closed) {
    for (const std::string& name : s.claims) s.fail(name);
  }
  s.claims.clear();
  return s.ok(closed);
}

// Two graphs of `pool`, the second sharing the first's intermediate: each x -> tmp -> y, with
// tmp allocated and dropped inside the pass (x1 reads into graph 0, x2 into graph 1).
bool pool_graphs(Session& s, GraphPool& pool) {
  for (const char* suffix : {"1", "2"}) {
    const std::string x = std::string("x") + suffix, y = std::string("y") + suffix;
    if (!upload(s, x, iota_u32(kN, suffix[0] == '1' ? 0 : 500), s.main()) ||
        !alloc(s, y, kN, s.main())) {
      return false;
    }
  }
  for (const char* suffix : {"1", "2"}) {
    const std::string x = std::string("x") + suffix, y = std::string("y") + suffix;
    if (!pool_capture(s, pool, x, y, suffix[0] == '1' ? kN : kN / 2, nullptr)) return false;
  }
  return true;
}

// The two graphs replay, the second then the first; y1 = `x1` + 2 and y2 = x2 + 2 (half).
bool replay_pool_graphs(Session& s, const std::string& x1) {
  auto effect = [&](const std::string& x, const std::string& y, std::uint32_t n) {
    Values out = plus(s.values(x), 2);
    out.resize(n);
    s.set(y, out);
    s.clear_failure(y);
  };
  if (!s.ok(s.graphs[1].replay())) return false;
  effect("x2", "y2", kN / 2);
  if (!s.ok(s.graphs[0].replay())) return false;
  effect(x1, "y1", kN);
  if (!s.ok(s.dev().sync(s.main()))) return false;
  return s.read("y1 after the pool's replays", "y1", s.main()) &&
         s.read("y2 after the pool's replays", "y2", s.main(), 0, kN / 2);
}

bool graph_pool(Session& s) {
  Result<GraphPool> pool = s.dev().create_graph_pool(s.main());
  if (!s.ok(pool) || !pool_graphs(s, *pool)) return false;
  return replay_pool_graphs(s, "x1");
}

// The many-graph life of a pool. Its two graphs; the first re-recorded into itself
// (the same topology on another input: exec update) inside the pool; then a pool window whose
// recording keeps a buffer the pool lent it, aborted (the buffer carries an error for good: it
// is the graphs' scratch); then both graphs replay. A failure anywhere leaves each graph
// replaying what it recorded last, and the kept buffer never reads as data.
bool pool_rerecord_abort(Session& s) {
  Result<GraphPool> pool = s.dev().create_graph_pool(s.main());
  if (!s.ok(pool) || !pool_graphs(s, *pool)) return false;
  if (!upload(s, "x3", iota_u32(kN, 9000), s.main())) return false;
  const bool rerecorded = pool_capture(s, *pool, "x3", "y1", kN, &s.graphs[0]);
  CaptureOptions options;
  options.pool = &*pool;
  if (!s.ok(s.dev().prepare_capture(s.main(), options))) return false;
  if (!s.ok(s.dev().begin_capture(s.main()))) return false;
  if (!alloc(s, "kept", kN / 2, s.main())) return false;  // lent by the pool, kept
  if (!add_one(s, "x2", "kept", kN / 2, s.main(), false)) return false;
  if (!abort(s, s.main())) return false;
  if (!replay_pool_graphs(s, rerecorded ? "x3" : "x1")) return false;
  // Checked apart from the shadows' reads: its error is the expected outcome, not a failure.
  if (s.dev().read(s.buffers.at("kept"), s.main())) {
    ADD_FAILURE() << "a buffer lent to an aborted pool recording read back as data";
  }
  s.buffers.erase("kept");
  s.owners.erase("kept");
  s.shadows.erase("kept");
  return true;
}

// A pool's growth and shrink inside the window. Three graphs recorded smallest first, each
// needing more than is mapped (a growth at its begin_capture: cuMemCreate, cuMemMap,
// cuMemSetAccess), the largest destroyed (its tail unmapped and released), the other two replayed,
// then a larger one recorded again (growth again) and all of them replayed. A failure anywhere
// leaves what it was told: each graph that exists replays what it recorded, and nothing is held
// once the device closes.
bool pool_growth_shrink(Session& s) {
  Result<GraphPool> pool = s.dev().create_graph_pool(s.main());
  if (!s.ok(pool)) return false;
  const std::size_t granularity = pool->stats().granularity == 0 ? std::size_t{2} << 20
                                                                  : pool->stats().granularity;
  // An intermediate pad of `bytes` (no operation touches it: it only takes its place in the
  // layout), then tmp = x + 1 past it, y = tmp + 1: the graph uses the pool up to bytes + tmp.
  auto capture = [&](const std::string& y, std::size_t bytes) -> bool {
    auto pass = [&](bool eager) {
      Result<Buffer> pad = s.dev().alloc(bytes, s.main());
      if (!s.ok(pad)) return false;
      Result<Buffer> tmp = s.dev().alloc(kN * 4, s.main());
      if (!s.ok(tmp)) return false;
      s.keep("tmp", *tmp, s.main());
      const bool ran = add_one(s, "x", "tmp", kN, s.main(), eager) &&
                       add_one(s, "tmp", y, kN, s.main(), eager);
      s.buffers.erase("tmp");
      s.owners.erase("tmp");
      s.shadows.erase("tmp");
      s.claims.erase(std::remove(s.claims.begin(), s.claims.end(), std::string("tmp")),
                     s.claims.end());
      return ran;
    };
    CaptureOptions options;
    options.pool = &*pool;
    if (!s.ok(s.dev().prepare_capture(s.main(), options)) || !pass(true)) return false;
    if (!s.ok(s.dev().begin_capture(s.main())) || !pass(false)) return false;
    return end(s, s.main());
  };
  auto replay_all = [&](const std::vector<std::string>& outputs) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (!s.ok(s.graphs[i].replay())) return false;
      s.set(outputs[i], plus(s.values("x"), 2));
      s.clear_failure(outputs[i]);
    }
    if (!s.ok(s.dev().sync(s.main()))) return false;
    for (const std::string& y : outputs) {
      if (!s.read(y + " after the pool's replays", y, s.main())) return false;
    }
    return true;
  };
  if (!upload(s, "x", iota_u32(kN, 40), s.main())) return false;
  for (const char* y : {"y1", "y2", "y3"}) {
    if (!alloc(s, y, kN, s.main())) return false;
  }
  if (!capture("y1", granularity / 2) || !capture("y2", granularity + granularity / 2) ||
      !capture("y3", 2 * granularity + granularity / 2)) {
    return false;
  }
  if (s.counting() && pool->stats().virtual_memory) {
    EXPECT_EQ(pool->stats().growths, 3u) << "each recording grew the pool";
  }
  if (!replay_all({"y1", "y2", "y3"})) return false;
  if (!s.ok(s.graphs.back().destroy())) return false;  // the tail goes back
  s.graphs.pop_back();
  if (s.counting() && pool->stats().virtual_memory) {
    EXPECT_EQ(pool->stats().shrinks, 1u) << "the largest graph's tail went back";
  }
  if (!replay_all({"y1", "y2"})) return false;
  if (!capture("y3", 3 * granularity)) return false;  // grown again
  return replay_all({"y1", "y2", "y3"});
}

// ---- events and fork/join --------------------------------------------------------------

// A step that must name its graphcap operation when it fails (besides the entry point: checked
// for every injection by outcome_of).
template <class T>
bool named_step(Session& s, const Result<T>& result, const char* operation) {
  if (!result) {
    EXPECT_THAT(result.error().message(), ::testing::HasSubstr(operation))
        << "a failed " << operation << " does not name the operation";
  }
  return s.ok(result);
}

// Device::create_event, kept by the session (dropped before the device closes).
Event* new_event(Session& s) {
  Result<Event> event = s.dev().create_event();
  if (!named_step(s, event, "create_event")) return nullptr;
  s.events.push_back(std::move(*event));
  return &s.events.back();
}

Stream* new_stream(Session& s) {
  Result<Stream*> made = s.dev().create_stream();
  if (!s.ok(made)) return nullptr;
  s.streams.push_back(*made);
  return *made;
}

// `to` is ordered after everything enqueued on `from` so far: record an event there, wait for it.
bool order(Session& s, Event& event, Stream& from, Stream& to) {
  return named_step(s, s.dev().record_event(event, from), "record") &&
         named_step(s, s.dev().wait(to, event), "wait");
}

// Eager work on two streams ordered by events: x (main) -> y (side) on the side stream, after
// the side stream waits for the upload; y -> x by copy on the main stream after it waits for the
// side stream; then both streams use what the other wrote (each read ordered by an event).
bool events_across_streams(Session& s) {
  Stream* side = new_stream(s);
  if (side == nullptr) return false;
  if (!upload(s, "x", iota_u32(kN), s.main()) || !alloc(s, "y", kN, *side)) return false;
  Event* forward = new_event(s);
  if (forward == nullptr) return false;
  Event* back = new_event(s);
  if (back == nullptr) return false;
  if (!order(s, *forward, s.main(), *side)) return false;
  if (!add_one(s, "x", "y", kN, *side, true)) return false;           // borrows x from main
  if (!order(s, *back, *side, s.main())) return false;
  if (!copy(s, "y", "x", s.main(), true)) return false;               // borrows y from side
  if (!s.read("x after the round trip", "x", s.main())) return false;
  if (!s.read("y on the main stream", "y", s.main())) return false;
  // Once more the other way, reusing both events (each wait takes the last record).
  if (!order(s, *forward, s.main(), *side)) return false;
  if (!fill_words(s, "x", 9u, *side, true)) return false;              // writes main's buffer
  if (!order(s, *back, *side, s.main())) return false;
  if (!add_one(s, "x", "x", kN, s.main(), true)) return false;
  return s.read("x after the second round", "x", s.main());
}

// A recording on the main stream that forks a side stream (it waits on an event recorded in the
// recording), launches there beside a fill on the main stream, and joins back; warmed up eagerly
// with the same steps, then replayed twice.
bool fork_join_recording(Session& s) {
  Stream* side = new_stream(s);
  if (side == nullptr) return false;
  if (!upload(s, "x", iota_u32(kN), s.main()) || !alloc(s, "y", kN, s.main()) ||
      !alloc(s, "z", kN, s.main())) {
    return false;
  }
  Event* fork = new_event(s);
  if (fork == nullptr) return false;
  Event* join = new_event(s);
  if (join == nullptr) return false;
  auto pass = [&](bool eager) {
    return order(s, *fork, s.main(), *side) &&
           add_one(s, "x", "y", kN, *side, eager) &&      // side: y = x + 1
           fill_words(s, "z", 3u, s.main(), eager) &&     // beside it on main: z = 3
           order(s, *join, *side, s.main()) &&
           add_one(s, "y", "y", kN, s.main(), eager);     // joined: y = x + 2
  };
  if (!capture(s, s.main(), pass)) return false;
  if (side->capture_state() != CaptureState::no_capture) {
    ADD_FAILURE() << "the side stream is still in the recording after end_capture";
    return false;
  }
  auto effect = [&] {
    s.set("y", plus(s.values("x"), 2));
    s.set("z", Values(kN, 3u));
  };
  if (!write(s, "x", iota_u32(kN, 1000), s.main())) return false;
  if (!replay(s, effect) || !replay(s, effect)) return false;
  return s.read("y after the replays", "y", s.main()) && s.read("z after the replays", "z", s.main());
}

// GraphCache: one key's miss (prepare, the warm-up, begin, the recording, end:
// instantiate and upload, into the cache's graph pool) and then its hit, then the cache goes (its
// graph and pool destroyed inside the window). The step: tmp = x + 1, y = tmp + 1, x = y + 1,
// with tmp an intermediate dropped inside the step. After each run the cache's invariants hold:
//   - a hit replayed (hits + 1) and did not call the step; a miss called the step eagerly exactly
//     once (the warm-up; a fallback does not run it again) and then either kept a graph
//     (captures + 1, recorded, its pinned bytes in stats().bytes), fell back (fallbacks + 1, no
//     graph, last_refusal() names why: surfaced like an error), or returned the error of the
//     step's warm-up or of prepare_capture (no counter moved, no graph);
//   - a run that reported success left no failure on what the step wrote (a refused recording
//     keeps the warm-up's results), and every later read is exactly the shadow's bytes.
bool graph_cache(Session& s) {
  if (!upload(s, "x", iota_u32(kN), s.main()) || !alloc(s, "y", kN, s.main())) return false;
  constexpr int kKey = 7;
  int eager_calls = 0;
  int recorded_calls = 0;
  auto step = [&]() -> Result<void> {
    const bool eager = s.main().capture_state() != CaptureState::capture;
    ++(eager ? eager_calls : recorded_calls);
    Result<Buffer> tmp = s.dev().alloc(kN * 4, s.main());
    if (!s.ok(tmp)) return tmp.error();
    s.keep("tmp", *tmp, s.main());
    const bool ran = add_one(s, "x", "tmp", kN, s.main(), eager) &&
                     add_one(s, "tmp", "y", kN, s.main(), eager) &&
                     add_one(s, "y", "x", kN, s.main(), eager);
    s.buffers.erase("tmp");  // dropped inside the step: an intermediate
    s.owners.erase("tmp");
    s.shadows.erase("tmp");
    if (!ran) return s.errors.back();
    return {};
  };
  GraphCache<int> cache(s.dev(), s.main());
  bool every_run_succeeded = true;
  auto run = [&]() -> bool {
    const GraphCacheStats before = cache.stats();
    const bool hit = cache.recorded(kKey);
    eager_calls = recorded_calls = 0;
    Result<void> ran = cache.run(kKey, step);
    s.claims.clear();  // the cache's windows don't claim: the warm-up produced those bytes
    const GraphCacheStats after = cache.stats();
    EXPECT_EQ(after.updates, 0u);
    EXPECT_EQ(after.evictions, 0u);
    if (hit) {
      EXPECT_EQ(after.hits, before.hits + (ran ? 1 : 0)) << "a replay that failed is no hit";
      EXPECT_EQ(after.captures, before.captures);
      EXPECT_EQ(after.fallbacks, before.fallbacks);
      EXPECT_EQ(eager_calls + recorded_calls, 0) << "a hit calls no step";
      if (ran) {
        s.set("y", plus(s.values("x"), 2));
        s.set("x", plus(s.values("x"), 3));
      }
    } else {
      EXPECT_EQ(after.hits, before.hits);
      EXPECT_LE(eager_calls, 1) << "a miss runs the step eagerly at most once";
      EXPECT_LE(recorded_calls, 1);
      const bool captured = after.captures == before.captures + 1;
      const bool fell_back = after.fallbacks == before.fallbacks + 1;
      EXPECT_FALSE(captured && fell_back);
      if (ran) {
        EXPECT_TRUE(captured || fell_back) << "a miss that succeeded recorded or fell back";
        EXPECT_EQ(eager_calls, 1) << "the warm-up was the run's execution, exactly once";
      } else {
        EXPECT_FALSE(captured || fell_back) << "a run that failed counts no capture or fallback";
      }
      EXPECT_EQ(cache.recorded(kKey), captured);
      if (fell_back) {
        // The fallback hides the refusal from run()'s result; the cache keeps it to be asked.
        if (cache.last_refusal() == nullptr) {
          ADD_FAILURE() << "a fallback with no last_refusal()";
        } else {
          s.errors.push_back(*cache.last_refusal());
        }
      }
    }
    std::size_t pinned = 0;
    if (const Graph* graph = cache.graph(kKey)) pinned = graph->report().pinned_bytes;
    (void)pinned;
    // The bytes are the device memory the cached graph accounts for and the pool's; a
    // miss that kept no graph leaves the pool holding nothing (once the stream passed its
    // recording, which the flushes at the window's close and the settled queries see).
    const GraphCacheFootprint footprint = cache.footprint();
    EXPECT_EQ(after.bytes, footprint.total());
    if (const Graph* graph = cache.graph(kKey)) {
      const GraphMemory& memory = graph->report().memory;
      EXPECT_EQ(footprint.own_bytes + footprint.driver_bytes,
                memory.own_bytes + memory.driver_bytes);
    } else if (cache.pool() != nullptr && s.ok(s.dev().sync(s.main()))) {
      // (A piece whose unmap failed stays mapped until the next shrink or the pool's close.)
      const bool unmap_failed = std::any_of(s.warnings.begin(), s.warnings.end(), [](const auto& w) {
        return w.find("cuMemUnmap") != std::string::npos;
      });
      if (!unmap_failed) {
        EXPECT_EQ(cache.pool()->bytes_held(), 0u) << "a refused miss left pool memory mapped";
      }
    }
    EXPECT_EQ(cache.size(), 1u);
    if (!ran) {
      s.errors.push_back(ran.error());
      every_run_succeeded = false;
      return false;
    }
    for (const char* name : {"x", "y"}) {
      EXPECT_FALSE(s.buffers.at(name).failure().has_value())
          << "the run reported success but " << name << " carries a failure: "
          << to_string(*s.buffers.at(name).failure());
    }
    return true;
  };
  if (!run() || !run()) return false;  // the miss, then the hit (or, after a fallback, a miss)
  if (!s.ok(s.dev().sync(s.main()))) return false;
  if (!s.read("x after the cache's runs", "x", s.main()) ||
      !s.read("y after the cache's runs", "y", s.main())) {
    return false;
  }
  if (every_run_succeeded && !cache.recorded(kKey)) {
    // Both runs fell back (each refusal was surfaced above): the key was tried again.
    EXPECT_EQ(cache.stats().fallbacks, 2u);
  }
  cache.clear();  // the graph waits for its replay and goes; then the pool
  return s.ok(s.dev().sync(s.main()));
}

// An IF/ELSE steered by a recorded kernel and a programmatic launch in one recording: the
// conditional-node entry points (the handle, the node, the bodies' captures), cuLaunchKernelEx
// (eager and recorded) and cuGraphInstantiateWithParams. On libcuda the recording holds no branch
// (y = x + 1 is recorded plainly): an injected failure of a launch captured into a body
// invalidates the body's capture, and every way out of an invalidated body, destroying its stream
// included, crashed the H200's driver (docs/cuda-driver-facts.md, P18-P21). The branches are swept
// on the fake.
bool branches_and_programmatic(Session& s) {
  const bool branches = s.fake_driver != nullptr;
  if (!upload(s, "x", iota_u32(kN), s.main()) || !alloc(s, "y", kN, s.main())) return false;
  Result<Kernel> set_condition = s.module.kernel("set_condition");
  Result<Kernel> pdl = s.module.kernel("pdl_add_one");
  if (!s.ok(set_condition) || !s.ok(pdl)) return false;
  // x = y + 1, launched programmatically (the kernel waits for its predecessor first).
  auto programmatic = [&](bool eager) {
    const std::uint32_t wait = 1;
    Result<void> launched = s.dev().launch(
        s.main(), *pdl, dims_for(kN),
        {Arg::in(s.buffers.at("y")), Arg::out(s.buffers.at("x")), Arg::value(kN),
         Arg::value(wait)},
        LaunchOptions{.programmatic = true, .priority = std::nullopt});
    if (!eager) {
      s.claim("x");
      return s.ok(launched);
    }
    if (!launched) {
      if (!refused_before_issue(launched.error())) s.fail("x");
      return s.ok(launched);
    }
    s.set("x", plus(s.values("y"), 1));
    s.clear_failure("x");
    return true;
  };
  if (!s.ok(s.dev().prepare_capture(s.main())) || !add_one(s, "x", "y", kN, s.main(), true) ||
      !programmatic(true)) {
    return false;
  }
  if (!s.ok(s.dev().begin_capture(s.main()))) return false;
  if (!branches) {
    if (!add_one(s, "x", "y", kN, s.main(), false) || !programmatic(false) || !end(s, s.main())) {
      return false;
    }
    auto effect = [&] { capture_replay_effect(s); };
    if (!replay(s, effect) || !s.ok(s.dev().sync(s.main()))) return false;
    return s.read("x after a replay", "x", s.main()) && s.read("y after a replay", "y", s.main());
  }
  Result<Condition> c = s.dev().condition(s.main());
  if (!s.ok(c)) return false;
  const std::uint32_t taken = 1;
  if (!s.ok(s.dev().launch(s.main(), *set_condition, LaunchDims{},
                           {Arg::condition(*c), Arg::value(taken)}))) {
    return false;
  }
  // IF (taken) { y = x + 1 } ELSE { y = 7 }.
  if (!s.ok(s.dev().begin_if(s.main(), *c)) || !add_one(s, "x", "y", kN, s.main(), false)) {
    return false;
  }
  if (!s.ok(s.dev().begin_else(s.main(), *c))) return false;
  const std::uint32_t seven = 7;
  Result<void> filled = s.dev().launch(
      s.main(), s.fill, dims_for(kN), {Arg::out(s.buffers.at("y")), Arg::value(seven), Arg::value(kN)});
  s.claim("y");
  if (!s.ok(filled) || !s.ok(s.dev().end_if(s.main(), *c)) || !programmatic(false)) return false;
  if (!end(s, s.main())) return false;
  auto effect = [&] { capture_replay_effect(s); };  // y = x + 1, x = y + 1
  if (!replay(s, effect) || !replay(s, effect)) return false;
  if (!s.ok(s.dev().sync(s.main()))) return false;
  return s.read("x after two replays", "x", s.main()) && s.read("y after two replays", "y", s.main());
}

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> all = {
      {"capture_replay", open_device, capture_replay},
      {"doomed_recording", open_device, doomed_recording},
      {"memory_node_refusal", open_device, memory_node_refusal},
      {"ping_pong_150", open_device, ping_pong_150},
      {"eager_upload_launch_read", open_device, eager_upload_launch_read},
      {"graph_destroy", open_device, graph_destroy},
      {"abort_capture", open_device, abort_capture},
      {"captured_write", open_device, captured_write},
      {"second_stream", open_device, second_stream},
      {"close_mid_recording", open_device, close_mid_recording},
      {"close_with_everything_live", open_device, close_with_everything_live},
      {"open_and_load", nothing, open_and_load},
      {"rerecord_update", open_device, rerecord_update},
      {"rerecord_reinstantiate", open_device, rerecord_reinstantiate},
      {"param_set", open_device, param_set},
      {"graph_pool", open_device, graph_pool},
      {"pool_rerecord_abort", open_device, pool_rerecord_abort},
      {"pool_growth_shrink", open_device, pool_growth_shrink},
      {"copies_and_fills", open_device, copies_and_fills},
      {"events_across_streams", open_device, events_across_streams},
      {"fork_join_recording", open_device, fork_join_recording},
      {"graph_cache", open_device, graph_cache},
      {"branches_and_programmatic", open_device, branches_and_programmatic},
  };
  return all;
}

// ---- the checks after a run ----------------------------------------------------------------------

// Leave any window the scenario stopped in, as an application's error path does: the refusal
// marks what the recording claimed.
void leave_open_windows(Session& s) {
  if (!s.device) return;
  for (Stream* stream : s.streams) {
    if (stream->capture_state() == CaptureState::capture) {
      (void)end(s, *stream);  // a graph, when the failure was elsewhere; else a refusal
      // A refusal that leaves the recording open (a branch or loop still open): abandon it.
      if (stream->capture_state() == CaptureState::capture) (void)abort(s, *stream);
    } else if (stream->capture_state() == CaptureState::prepare) {
      (void)abort(s, *stream);
    }
  }
}

void expect_fresh_capture(Session& s, Stream& stream, const std::string& where) {
  SCOPED_TRACE("fresh capture on " + where);
  if (!s.add_one) {  // the scenario stopped before it loaded the kernels
    Result<Module> module = s.dev().load_module(s.image);
    ASSERT_THAT(module, IsOk());
    Result<Kernel> kernel = module->kernel("add_one");
    ASSERT_THAT(kernel, IsOk());
    s.add_one = *kernel;
  }
  Result<Buffer> x = s.dev().upload(to_bytes(iota_u32(64)), stream);
  ASSERT_THAT(x, IsOk());
  auto launch = [&] {
    const std::uint32_t n = 64;
    return s.dev().launch(stream, s.add_one, dims_for(n), {Arg::in(*x), Arg::out(*x), Arg::value(n)});
  };
  ASSERT_THAT(s.dev().prepare_capture(stream), IsOk());
  ASSERT_THAT(launch(), IsOk());
  ASSERT_THAT(s.dev().begin_capture(stream), IsOk());
  ASSERT_THAT(launch(), IsOk());
  Result<Graph> graph = s.dev().end_capture(stream);
  ASSERT_THAT(graph, IsOk());
  ASSERT_THAT(graph->replay(), IsOk());
  Result<std::vector<std::byte>> read = s.dev().read(*x, stream);
  ASSERT_THAT(read, IsOk());
  EXPECT_EQ(to_u32(*read), iota_u32(64, 2));
}

// The state checks on a device still open: no stream capturing, queued errors surfaced, every
// buffer its shadow's bytes or an error, and a fresh capture works on every stream.
void check_open_device(Session& s) {
  for (Stream* stream : s.streams) {
    EXPECT_EQ(stream->capture_state(), CaptureState::no_capture);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    EXPECT_EQ(s.driver.cuStreamIsCapturing(stream->native_handle(), &status), CUDA_SUCCESS);
    EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE) << "a stream was left capturing";
  }
  for (Stream* stream : s.streams) {
    if (Result<void> synced = s.dev().sync(*stream); !synced) s.errors.push_back(synced.error());
  }
  for (const auto& [name, buffer] : s.buffers) {
    (void)buffer;
    (void)s.read("final " + name, name, *s.owners.at(name));
  }
  for (std::size_t i = 0; i < s.streams.size(); ++i) {
    expect_fresh_capture(s, *s.streams[i], "stream " + std::to_string(i));
  }
}

// Drop everything, close, and count the handles the run left.
void close_and_count(Session& s, const Injection* injection) {
  s.graphs.clear();
  s.events.clear();
  s.buffers.clear();
  s.add_one = s.fill = s.copy = Kernel{};
  s.module = Module{};
  // Streams the device leaves to the driver (a conditional body's, its capture invalidated) stay.
  const std::size_t left = s.device ? s.device->streams_left_to_driver() : 0;
  s.device.reset();
  const fake::LiveHandles live = s.driver.live_handles();
  fake::LiveHandles expected;
  expected.streams = left;
  const std::size_t kept_context = left != 0 ? 1 : 0;  // its end would destroy them
  expected.contexts = kept_context;
  // A graph pool whose piece could not be unmapped keeps it and unmaps it again at its next
  // shrink or when it closes (memory/virtual_range.h): that failed release leaves nothing.
  if (injection != nullptr && injection->entry != "cuMemUnmap") {
    if (std::size_t fake::LiveHandles::*kind = released_kind(injection->entry)) expected.*kind = 1;
  }
  EXPECT_EQ(live, expected)
      << "handles live after the device closed (expected only the one a failed release leaves)";
  // The harness cleans up; its context reference kept those handles valid.
  EXPECT_TRUE(s.make_current());
  EXPECT_EQ(s.driver.release_leaked(), expected.total() - left - kept_context);
  if (s.fake_driver != nullptr) {
    // The fake counts every handle itself: only the harness's context reference is left.
    fake::LiveHandles harness;
    harness.contexts = 1 + kept_context;
    harness.streams = left;
    EXPECT_EQ(s.fake_driver->live_handles(), harness);
    EXPECT_EQ(s.fake_driver->reclaimed_handles(), 0u);
    EXPECT_THAT(s.fake_driver->violations(), ::testing::IsEmpty());
  }
}

// The device memory the run did not give back (cuMemGetInfo before and after), but what the
// driver keeps of its executables' memory, checked to be none (the counting run on libcuda: within
// kMemorySlack); returns it for the report. `driver_kept` is what the driver keeps, where known.
std::size_t check_memory(Session& s, const Injection* injection, std::size_t* driver_kept) {
  const std::size_t after = s.free_memory();
  std::size_t lost = after < s.free_before ? s.free_before - after : 0;
  if (s.fake_driver != nullptr) {
    *driver_kept = s.fake_driver->executable_memory();  // a fresh fake per run: all this run's
    lost = lost > *driver_kept ? lost - *driver_kept : 0;
    EXPECT_EQ(lost, 0u) << "free device memory fell by " << lost
                        << " bytes over the run (cuMemGetInfo), beyond the " << *driver_kept
                        << " the driver keeps of its executables' memory";
  } else if (injection != nullptr) {
    EXPECT_EQ(lost, 0u) << "free device memory fell by " << lost << " bytes over the run "
                        << "(cuMemGetInfo), after the counting run took what the driver keeps";
  } else {
    *driver_kept = lost;  // the first run: what the driver keeps, and its own lazy state
    EXPECT_LE(lost, kMemorySlack)
        << "free device memory fell by " << lost << " bytes over the run (cuMemGetInfo)";
  }
  return injection != nullptr ? lost : 0;
}

// The bytes the current scenario's runs retained, for its line of the report.
struct ScenarioMemory {
  std::size_t retained = 0;     // most, after an injected failure
  std::size_t driver_kept = 0;  // most the driver kept of its executables' memory
};
ScenarioMemory& scenario_memory() {
  static ScenarioMemory memory;
  return memory;
}

struct Totals {
  std::size_t injections = 0;
  // Bytes, over any one run after an injected failure (cuMemGetInfo before and after, but what
  // the driver keeps of its executables' memory).
  std::size_t most_memory_lost = 0;
  std::size_t most_driver_kept = 0;  // what the driver kept of its executables' memory, most
  std::map<Outcome, std::size_t> outcomes;
  std::map<std::string, std::size_t> by_entry;
  std::map<std::string, std::map<Outcome, std::size_t>> outcome_by_entry;
};

Totals& totals() {
  static Totals t;
  return t;
}

const char* to_text(Outcome outcome) {
  switch (outcome) {
    case Outcome::surfaced: return "surfaced";
    case Outcome::warned: return "warned";
    case Outcome::recovered: return "recovered";
  }
  return "?";
}

// How the injected failure was reported, if at all.
std::optional<Outcome> outcome_of(const Session& s, const Injection& injection,
                                  const std::vector<fake::CallRecord>& window) {
  bool named = false;
  bool code_named = false;
  for (const Error& error : s.errors) {
    if (s.names_injected(error)) {
      named = true;
      code_named = code_named ||
                   error.message().find(cu_result_name(injection.code)) != std::string::npos;
    }
  }
  if (named) {
    EXPECT_TRUE(code_named) << "the error naming " << injection.entry << " does not name "
                            << cu_result_name(injection.code);
    return Outcome::surfaced;
  }
  for (const std::string& warning : s.warnings) {
    if (warning.find(injection.entry) != std::string::npos) return Outcome::warned;
  }
  if ((injection.entry == "cuMemAlloc" || injection.entry == "cuMemAllocHost") &&
      s.errors.empty()) {
    // The pool gave its cached slices back and retried: the same entry succeeded right after.
    for (std::size_t i = injection.index + 1; i < window.size(); ++i) {
      if (window[i].entry_point == injection.entry) {
        if (window[i].result == CUDA_SUCCESS) return Outcome::recovered;
        break;
      }
    }
  }
  return std::nullopt;
}

// One run: setup, the window (with the injection, if any), the error path, the checks.
// Returns the window's calls (for the counting run).
std::vector<fake::CallRecord> run_scenario(const Scenario& scenario, const Injection* injection,
                                          std::map<std::string, bool>& golden_errors) {
  Session s(injection, &golden_errors);
  if (!scenario.setup(s)) {
    ADD_FAILURE() << "setup failed: " << (s.errors.empty() ? "" : to_string(s.errors.back()));
    return {};
  }
  const std::size_t start = s.driver.calls().size();
  if (injection != nullptr) s.driver.fail_call(injection->entry, injection->code, injection->nth);
  const bool completed = scenario.body(s);
  s.pause_device(false);
  leave_open_windows(s);
  const std::vector<fake::CallRecord> log = s.driver.calls();
  std::vector<fake::CallRecord> window(log.begin() + static_cast<std::ptrdiff_t>(start), log.end());
  s.driver.clear_faults();

  if (injection == nullptr) {
    EXPECT_TRUE(completed) << "the fault-free run stopped: "
                           << (s.errors.empty() ? "" : to_string(s.errors.back()));
    EXPECT_THAT(s.warnings, ::testing::IsEmpty());
  } else {
    // Exactly the targeted call failed: the run followed the counting run's path up to it.
    std::size_t injected = 0;
    for (std::size_t i = 0; i < window.size(); ++i) {
      if (!window[i].injected) continue;
      ++injected;
      EXPECT_EQ(i, injection->index);
      EXPECT_EQ(window[i].entry_point, injection->entry);
    }
    EXPECT_EQ(injected, 1u) << "the injected call never happened (the run diverged)";
  }

  const bool closed_in_body = s.device == nullptr;
  if (!closed_in_body) check_open_device(s);

  if (injection != nullptr) {
    if (std::optional<Outcome> outcome = outcome_of(s, *injection, window)) {
      ++totals().outcomes[*outcome];
      ++totals().outcome_by_entry[injection->entry][*outcome];
    } else {
      std::string seen;
      for (const Error& error : s.errors) seen += "\n  error: " + to_string(error);
      for (const std::string& warning : s.warnings) seen += "\n  warning: " + warning;
      ADD_FAILURE() << "the failure of " << injection->entry << " was not reported by name"
                    << (completed ? " (the scenario completed)" : "") << seen;
    }
  }

  close_and_count(s, injection);
  if (closed_in_body) {
    // A new device on the same driver captures and replays, and closes clean.
    if (s.open()) {
      expect_fresh_capture(s, s.main(), "a new device");
    } else {
      ADD_FAILURE() << "a new device would not open: " << to_string(s.errors.back());
    }
    s.add_one = s.fill = s.copy = Kernel{};
    s.module = Module{};
    s.device.reset();
    EXPECT_EQ(s.driver.live_handles().total(), 0u);
    if (s.fake_driver != nullptr) {
      EXPECT_EQ(s.fake_driver->reclaimed_handles(), 0u);
    }
  }
  std::size_t driver_kept = 0;
  const std::size_t lost = check_memory(s, injection, &driver_kept);
  totals().most_memory_lost = std::max(totals().most_memory_lost, lost);
  totals().most_driver_kept = std::max(totals().most_driver_kept, driver_kept);
  scenario_memory().retained = std::max(scenario_memory().retained, lost);
  scenario_memory().driver_kept = std::max(scenario_memory().driver_kept, driver_kept);
  return window;
}

class FaultSweep : public ::testing::TestWithParam<std::size_t> {};

TEST_P(FaultSweep, EveryDriverCallFailsInTurn) {
  const Scenario& scenario = scenarios()[GetParam()];
  scenario_memory() = ScenarioMemory{};
  std::map<std::string, bool> golden_errors;
  const std::vector<fake::CallRecord> window = [&] {
    SCOPED_TRACE(std::string(scenario.name) + ": the fault-free counting run");
    return run_scenario(scenario, nullptr, golden_errors);
  }();
  ASSERT_FALSE(window.empty());
  if (::testing::Test::HasFailure()) return;
  if (std::getenv("GRAPHCAP_SWEEP_PRINT_CALLS") != nullptr) {
    for (std::size_t i = 0; i < window.size(); ++i) {
      std::printf("[ sweep    ] %s call %zu: %s\n", scenario.name, i, window[i].entry_point.c_str());
    }
  }

  // GRAPHCAP_SWEEP_STRIDE=k: inject only every kth call of the window (a bounded subset).
  std::size_t stride = 1;
  if (const char* text = std::getenv("GRAPHCAP_SWEEP_STRIDE")) {
    stride = std::max<std::size_t>(1, std::strtoul(text, nullptr, 10));
  }
  std::map<std::string, int> seen;
  std::size_t injections = 0;
  for (std::size_t i = 0; i < window.size(); ++i) {
    const std::string& entry = window[i].entry_point;
    const int nth = ++seen[entry];
    const std::optional<CUresult> code = first_listed_code(entry);
    ASSERT_TRUE(code.has_value()) << "no injected code chosen for " << entry;
    if (i % stride != 0) continue;
    const Injection injection{i, entry, nth, *code};
    SCOPED_TRACE(std::string(scenario.name) + ": call " + std::to_string(i) + " of " +
                 std::to_string(window.size()) + ", " + entry + " #" + std::to_string(nth) +
                 " failing with " + std::to_string(static_cast<int>(*code)));
    (void)run_scenario(scenario, &injection, golden_errors);
    ++injections;
    ++totals().by_entry[entry];
    if (::testing::Test::HasFailure()) break;  // the first failing injection is the one to read
  }
  totals().injections += injections;
  std::printf("[ sweep    ] %s on %s: %zu driver calls in the window, %zu injections; "
              "most device memory a failed run retained: %zu bytes (the driver kept %zu bytes "
              "of its executables' memory)\n",
              scenario.name, make_test_driver()->api().name(), window.size(), injections,
              scenario_memory().retained, scenario_memory().driver_kept);
  RecordProperty("injections", static_cast<int>(injections));
}

INSTANTIATE_TEST_SUITE_P(Scenarios, FaultSweep,
                         ::testing::Range<std::size_t>(0, scenarios().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& param_info) {
                           return std::string(scenarios()[param_info.param].name);
                         });

// The totals, printed once every scenario ran (when the sweep runs in one process).
class SweepReport : public ::testing::Environment {
 public:
  void TearDown() override {
    const Totals& t = totals();
    if (t.injections == 0) return;
    std::printf("[ sweep    ] total: %zu injections:", t.injections);
    for (const auto& [outcome, count] : t.outcomes) std::printf(" %zu %s", count, to_text(outcome));
    std::printf("; most device memory a failed run retained (cuMemGetInfo): %zu bytes; most the "
                "driver kept of its executables' memory: %zu bytes\n",
                t.most_memory_lost, t.most_driver_kept);
    for (const auto& [entry, count] : t.by_entry) {
      std::printf("[ sweep    ]   %-28s %5zu:", entry.c_str(), count);
      if (auto it = t.outcome_by_entry.find(entry); it != t.outcome_by_entry.end()) {
        for (const auto& [outcome, n] : it->second) std::printf(" %zu %s", n, to_text(outcome));
      }
      std::printf("\n");
    }
  }
};

[[maybe_unused]] ::testing::Environment* const sweep_report =
    ::testing::AddGlobalTestEnvironment(new SweepReport);

}  // namespace
}  // namespace graphcap::testing::fault_sweep
