// libFuzzer target: launch arguments and buffer ranges. The input is decoded into a short program
// of calls on a fake-driver device: allocations of arbitrary sizes, writes and reads at arbitrary
// offsets and counts, launches with arbitrary dims and up to 70 arguments of arbitrary kinds
// (in/out/inout buffers, which may be empty, of another stream or of another device; values of
// 1 to 64 bytes) of registered, empty or foreign kernels, capture lifecycle calls in any order,
// syncs, drops, replays and destroys. Nothing may crash or trip a sanitizer, and:
//   - a read or write range outside its buffer is Errc::invalid_argument, whatever the arithmetic;
//     a read that succeeds returns exactly the bytes asked for;
//   - a launch with a zero or over-limit dimension, too much shared memory or more than 64
//     arguments is Errc::invalid_argument;
//   - a launch whose arguments don't fit the kernel's signature (count, or any argument's size:
//     a buffer is 8 bytes) is Errc::invalid_argument naming a parameter or argument, and marks
//     none of its buffers; one whose arguments fit is never refused for them;
//   - every call ends in success or one of the Errc its contract allows;
//   - after each input no stream is left capturing (by graphcap or by the driver);
//   - the fake records no violation but the fake kernels' own stray accesses (expected: they get
//     arbitrary arguments).
// Every input fuzzes a live device: the fake is not strict (a stray access is recorded, not a
// fault that would leave the context failed for every later input), and should the context ever
// report a sticky fault all the same, the world is made anew before the next input.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fuzzer/FuzzedDataProvider.h>

#include <graphcap/fake/fake_driver.h>
#include <graphcap/graphcap.h>

namespace {

using namespace graphcap;

[[noreturn]] void broken(const char* invariant, const std::string& detail = {}) {
  std::fprintf(stderr, "launch_args invariant broken: %s %s\n", invariant, detail.c_str());
  std::abort();
}

template <class T>
void allowed(const Result<T>& result, std::initializer_list<Errc> codes, const char* what) {
  if (result) return;
  for (Errc code : codes) {
    if (result.error().code() == code) return;
  }
  broken(what, to_string(result.error()));
}

// A kernel that reads an element count (param 1) and adds one to that many u32 (param 0): the
// fake checks the range against the buffer and records, rather than performs, a stray access.
void touch(fake::KernelContext& k) {
  const auto n = k.value<std::uint32_t>(1) % 4096;
  for (std::uint32_t& v : k.buffer<std::uint32_t>(0, n)) v += 1;
}

struct World {
  World() {
    set_log_sink([](LogLevel, std::string_view) {});
    // Device::launch checks the arguments against each kernel's signature (a missing, extra or
    // wrong-sized argument is an error) before the fake, which reads exactly the declared
    // parameters, sees the launch.
    driver.register_typed_kernel<CUdeviceptr, std::uint32_t>("touch", touch);
    driver.register_kernel("sized", {8, 4}, touch);
    driver.register_typed_kernel<>("nothing", [](fake::KernelContext&) {});
    driver.register_kernel("mixed", {1, 8, 2, 8, 16, 64}, [](fake::KernelContext&) {});
    device = open();
    other = open();
    Result<Stream*> second = device->create_stream();
    if (!second) broken("create_stream", to_string(second.error()));
    streams = {&device->stream(), *second};
    const std::vector<std::byte> image =
        driver.module_image({"touch", "sized", "nothing", "mixed"});
    Result<Module> mine = device->load_module(image);
    Result<Module> theirs = other->load_module(image);
    if (!mine || !theirs) broken("the modules load");
    for (const char* name : {"touch", "sized", "nothing", "mixed"}) {
      kernels.push_back(*mine->kernel(name));
      if (!kernels.back().has_param_layout()) broken("the fake reports every declared layout");
    }
    kernels.push_back(*theirs->kernel("touch"));  // of another device
    kernels.push_back(Kernel{});                  // empty
    Result<Buffer> foreign_buffer = other->alloc(256, other->stream());
    if (!foreign_buffer) broken("the foreign buffer allocates");
    foreign = *foreign_buffer;
  }

  std::unique_ptr<Device> open() {
    Result<std::unique_ptr<Device>> opened = Device::open(driver);
    if (!opened) broken("the device opens", to_string(opened.error()));
    return std::move(*opened);
  }

  // 64 MiB of device and pinned memory: larger requests are the driver's out-of-memory, and the
  // fake's host-memory backing stays small. Not strict: a strict fake turns the first stray
  // access of `touch` into a fault sticky for the context, and every later input would fuzz a
  // device that answers nothing but that fault.
  fake::FakeDriver driver{fake::FakeDriverOptions{.device_memory_bytes = std::size_t{64} << 20,
                                                  .pinned_host_bytes = std::size_t{64} << 20,
                                                  .record_calls = false,
                                                  .strict = false}};
  std::unique_ptr<Device> device;
  std::unique_ptr<Device> other;
  std::vector<Stream*> streams;
  std::vector<Kernel> kernels;
  Buffer foreign;
};

// Never destroyed at exit: closing a device during static destruction would reach the fake
// driver's (and graphcap's) thread_local state after the main thread's thread_local destructors
// ran. Made anew (between inputs) when its context failed for good.
World*& world_instance() {
  static World* instance = new World;
  return instance;
}
World& world() { return *world_instance(); }
void renew_world() {
  static std::size_t renewed = 0;
  std::fprintf(stderr, "launch_args: the context failed for good; a new world (%zu)\n", ++renewed);
  delete world_instance();
  world_instance() = new World;
}

// Device::launch takes an initializer_list: one instantiation per argument count.
constexpr std::size_t kMaxFuzzArgs = 70;
using LaunchFn = Result<void> (*)(Device&, Stream&, const Kernel&, LaunchDims,
                                  const std::vector<Arg>&);
template <std::size_t... I>
Result<void> launch_n(Device& device, Stream& s, const Kernel& kernel, LaunchDims dims,
                      const std::vector<Arg>& args) {
  if constexpr (sizeof...(I) == 0) {
    (void)args;
    return device.launch(s, kernel, dims, {});
  } else {
    return device.launch(s, kernel, dims, {args[I]...});
  }
}
template <std::size_t... N>
constexpr std::array<LaunchFn, sizeof...(N)> launch_table(std::index_sequence<N...>) {
  return {[]<std::size_t... I>(std::index_sequence<I...>) -> LaunchFn {
    return &launch_n<I...>;
  }(std::make_index_sequence<N>{})...};
}
constexpr auto kLaunch = launch_table(std::make_index_sequence<kMaxFuzzArgs + 1>{});

template <std::size_t Bytes>
struct Blob {
  alignas(8) unsigned char bytes[Bytes];
};

Arg value_arg(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0: return Arg::value(in.ConsumeIntegral<std::uint8_t>());
    case 1: return Arg::value(in.ConsumeIntegral<std::uint16_t>());
    case 2: return Arg::value(in.ConsumeIntegral<std::uint32_t>());
    case 3: return Arg::value(in.ConsumeIntegral<std::uint64_t>());
    case 4: {
      Blob<16> blob{};
      in.ConsumeData(blob.bytes, sizeof(blob.bytes));
      return Arg::value(blob);
    }
    default: {
      Blob<64> blob{};
      in.ConsumeData(blob.bytes, sizeof(blob.bytes));
      return Arg::value(blob);
    }
  }
}

// Sizes and offsets: mostly small, sometimes anywhere in size_t (overflow hunting).
std::size_t size_like(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return in.ConsumeIntegralInRange<std::size_t>(0, 64);
    case 1: return in.ConsumeIntegralInRange<std::size_t>(0, 70000);
    case 2: return std::numeric_limits<std::size_t>::max() - in.ConsumeIntegralInRange<std::size_t>(0, 300);
    default: return in.ConsumeIntegral<std::size_t>();
  }
}

unsigned dim_like(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return in.ConsumeIntegralInRange<unsigned>(0, 4);
    case 1: return in.ConsumeIntegralInRange<unsigned>(1, 2048);
    case 2: return std::numeric_limits<unsigned>::max() - in.ConsumeIntegralInRange<unsigned>(0, 2);
    default: return in.ConsumeIntegral<unsigned>();
  }
}

bool dims_valid(const LaunchDims& d, const DeviceLimits& l) {
  const Dim3 g = d.grid, b = d.block;
  if (g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0) return false;
  if (b.x > l.max_block.x || b.y > l.max_block.y || b.z > l.max_block.z) return false;
  if (1ULL * b.x * b.y * b.z > l.max_threads_per_block) return false;
  if (g.x > l.max_grid.x || g.y > l.max_grid.y || g.z > l.max_grid.z) return false;
  return d.shared_bytes <= l.max_shared_bytes;
}

// A buffer with the stream that owns it (-1: an empty handle or another device's).
struct Owned {
  Buffer buffer;
  int stream = -1;
};

struct Program {
  World& w;
  FuzzedDataProvider& in;
  std::vector<Owned> buffers;
  std::vector<Graph> graphs;

  int pick_stream() { return in.ConsumeIntegralInRange<int>(0, 1); }
  Stream& stream(int index) { return *w.streams[static_cast<std::size_t>(index)]; }

  // A buffer: one of ours, an empty handle, or another device's.
  Owned pick_buffer() {
    const std::size_t choice = in.ConsumeIntegralInRange<std::size_t>(0, buffers.size() + 1);
    if (choice < buffers.size()) return buffers[choice];
    return choice == buffers.size() ? Owned{} : Owned{w.foreign, -1};
  }

  void alloc() {
    const std::size_t bytes =
        in.ConsumeBool() ? in.ConsumeIntegralInRange<std::size_t>(0, 1 << 16) : size_like(in);
    const int s = pick_stream();
    Result<Buffer> made = w.device->alloc(bytes, stream(s));
    allowed(made, {Errc::invalid_argument, Errc::out_of_memory, Errc::graph_state}, "alloc");
    if (bytes == 0 && made) broken("a zero-byte allocation is refused");
    if (made) {
      if (made->size() != bytes) broken("a buffer has the size asked for");
      if (buffers.size() < 8) buffers.push_back(Owned{*made, s});
    }
  }

  void write() {
    const Owned b = pick_buffer();
    const int s = pick_stream();
    const std::size_t offset = size_like(in);
    const std::vector<std::byte> bytes =
        in.ConsumeBytes<std::byte>(in.ConsumeIntegralInRange<std::size_t>(0, 4096));
    Result<void> written = w.device->write(b.buffer, offset, bytes, stream(s));
    allowed(written, {Errc::invalid_argument, Errc::graph_state, Errc::out_of_memory}, "write");
    const std::size_t size = b.buffer.size();
    if (b.stream == s && (offset > size || bytes.size() > size - offset)) {
      if (written || written.error().code() != Errc::invalid_argument) {
        broken("a write outside its buffer is invalid_argument");
      }
    }
  }

  void read() {
    const Owned b = pick_buffer();
    const int s = pick_stream();
    const std::size_t offset = size_like(in);
    const std::size_t count = size_like(in);
    Result<std::vector<std::byte>> got = w.device->read(b.buffer, offset, count, stream(s));
    allowed(got, {Errc::invalid_argument, Errc::graph_state, Errc::failed_buffer, Errc::doomed,
                  Errc::driver, Errc::out_of_memory},
            "read");
    const std::size_t size = b.buffer.size();
    if (b.stream == s && (offset > size || count > size - offset)) {
      if (got || got.error().code() != Errc::invalid_argument) {
        broken("a read outside its buffer is invalid_argument");
      }
    }
    if (got && got->size() != count) broken("a read returns the bytes asked for");
  }

  void launch() {
    const std::size_t which = in.ConsumeIntegralInRange<std::size_t>(0, w.kernels.size() - 1);
    const Kernel& kernel = w.kernels[which];
    const bool own_kernel = which < 4;  // not the foreign or the empty one
    LaunchDims dims;
    dims.grid = {dim_like(in), dim_like(in), dim_like(in)};
    dims.block = {dim_like(in), dim_like(in), dim_like(in)};
    dims.shared_bytes = in.ConsumeBool() ? 0 : dim_like(in);
    const std::size_t count = in.ConsumeIntegralInRange<std::size_t>(0, kMaxFuzzArgs);
    std::vector<Buffer> bound;  // keeps the bound buffers alive: Arg points at them
    bound.reserve(count);
    std::vector<Arg> args;
    for (std::size_t i = 0; i < count; ++i) {
      switch (in.ConsumeIntegralInRange<int>(0, 3)) {
        case 0: bound.push_back(pick_buffer().buffer); args.push_back(Arg::in(bound.back())); break;
        case 1: bound.push_back(pick_buffer().buffer); args.push_back(Arg::out(bound.back())); break;
        case 2: bound.push_back(pick_buffer().buffer); args.push_back(Arg::inout(bound.back())); break;
        default: args.push_back(value_arg(in)); break;
      }
    }
    // Does the launch fit the kernel's signature? And which buffers carried a failure before.
    bool fits = count == kernel.param_count();
    for (std::size_t i = 0; fits && i < count; ++i) {
      const std::size_t given = args[i].buffer() != nullptr ? sizeof(CUdeviceptr) : args[i].size();
      fits = given == kernel.param_size(i);
    }
    std::vector<bool> failed_before;
    for (const Buffer& b : bound) failed_before.push_back(b.failure().has_value());
    Result<void> launched = kLaunch[count](*w.device, stream(pick_stream()), kernel, dims, args);
    allowed(launched, {Errc::invalid_argument, Errc::failed_buffer, Errc::graph_state, Errc::driver},
            "launch");
    if (own_kernel && (!dims_valid(dims, w.device->limits()) || count > 64)) {
      if (launched || launched.error().code() != Errc::invalid_argument) {
        broken("a launch with impossible dims or too many arguments is invalid_argument");
      }
    }
    if (own_kernel && count <= 64) {
      const bool refused_by_signature =
          !launched && launched.error().code() == Errc::invalid_argument &&
          launched.error().message().find(" takes ") != std::string::npos;
      const bool refused_by_count =
          !launched && launched.error().code() == Errc::invalid_argument &&
          launched.error().message().find("has no ") != std::string::npos;
      if (!fits && dims_valid(dims, w.device->limits()) && launched) {
        broken("a launch that doesn't fit the kernel's signature is refused");
      }
      if (!fits && !launched && launched.error().code() == Errc::driver) {
        broken("a launch that doesn't fit the signature never reaches the driver",
               to_string(launched.error()));
      }
      if (fits && (refused_by_signature || refused_by_count)) {
        broken("a launch that fits the signature is not refused for it",
               to_string(launched.error()));
      }
      if (refused_by_signature || refused_by_count) {
        for (std::size_t i = 0; i < bound.size(); ++i) {
          if (bound[i].failure().has_value() != failed_before[i]) {
            broken("a launch refused by the signature marks no buffer");
          }
        }
      }
    }
  }

  void lifecycle() {
    Stream& s = stream(pick_stream());
    switch (in.ConsumeIntegralInRange<int>(0, 3)) {
      case 0: allowed(w.device->prepare_capture(s), {Errc::graph_state}, "prepare_capture"); break;
      case 1: allowed(w.device->begin_capture(s), {Errc::graph_state, Errc::driver}, "begin_capture"); break;
      case 2: {
        Result<Graph> graph = w.device->end_capture(s);
        allowed(graph, {Errc::graph_state, Errc::doomed, Errc::driver}, "end_capture");
        if (graph && graphs.size() < 4) graphs.push_back(std::move(*graph));
        break;
      }
      default: allowed(w.device->abort_capture(s), {Errc::graph_state}, "abort_capture"); break;
    }
  }

  void run() {
    for (int step = 0; step < 48 && in.remaining_bytes() > 0; ++step) {
      switch (in.ConsumeIntegralInRange<int>(0, 9)) {
        case 0: alloc(); break;
        case 1: write(); break;
        case 2: read(); break;
        case 3: case 4: launch(); break;
        case 5: lifecycle(); break;
        case 6: allowed(w.device->sync(stream(pick_stream())), {Errc::graph_state, Errc::driver}, "sync"); break;
        case 7:
          if (!buffers.empty()) buffers.erase(buffers.begin() + static_cast<std::ptrdiff_t>(
                                                   in.ConsumeIntegralInRange<std::size_t>(0, buffers.size() - 1)));
          break;
        case 8:
          if (!graphs.empty()) {
            allowed(graphs[in.ConsumeIntegralInRange<std::size_t>(0, graphs.size() - 1)].replay(),
                    {Errc::graph_state, Errc::driver}, "replay");
          }
          break;
        default:
          if (!graphs.empty()) {
            Graph& graph = graphs[in.ConsumeIntegralInRange<std::size_t>(0, graphs.size() - 1)];
            allowed(graph.destroy(), {Errc::driver}, "destroy");
          }
          break;
      }
    }
    // Leave every window, and check nothing is left capturing.
    for (Stream* s : w.streams) {
      if (s->capture_state() != CaptureState::no_capture) {
        allowed(w.device->abort_capture(*s), {}, "abort_capture at the end");
      }
      CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
      if (w.driver.cuStreamIsCapturing(s->native_handle(), &status) != CUDA_SUCCESS ||
          status != CU_STREAM_CAPTURE_STATUS_NONE) {
        broken("no stream is left capturing");
      }
    }
    graphs.clear();
    buffers.clear();
    for (Stream* s : w.streams) (void)w.device->sync(*s);
    // Stray accesses of the fake kernels are recorded, not performed: expected here (the kernels
    // get arbitrary arguments), and not to pile up across inputs. Any other violation (a copy of
    // freed memory, an end of an invalidated body's capture, ...) is graphcap's.
    for (const std::string& violation : w.driver.violations()) {
      if (violation.find("kernel '") == std::string::npos) broken("a fake violation", violation);
    }
    w.driver.clear_violations();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  Program program{world(), in, {}, {}};
  program.run();
  // A fault sticky for the context (nothing answers but it any more): the next input gets a
  // live device.
  if (world().driver.cuCtxSynchronize() != CUDA_SUCCESS) renew_world();
  return 0;
}
