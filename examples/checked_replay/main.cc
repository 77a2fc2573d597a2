// checked_replay: a replay that faults, and the operation that faulted found by
// Graph::replay_checked (docs/debugging.md walks through it).
//
// A three-kernel step is recorded; a per-replay parameter then gets a count past the end of a
// buffer (the deliberate bug), and the replay faults. A fault is sticky: the device's context
// reports it to every call from then on (the GPU's for the whole process, measured on the H200;
// the fake's for the FakeDriver). All the replay's error says is that the stream faulted. So the
// program does what an engine would: it starts again (here: re-executes itself with --check),
// records the same step, sets the same value, and calls replay_checked instead of replay, which
// runs the graph's operations one by one and names the one that faults: its node, its kernel, its
// line in this file, its arguments and the driver's error. Exit status 0 when it named `splat`. The
// fake driver by default; --driver=cuda on a GPU (a GRAPHCAP_GPU build).
#include <graphcap/fake/fake_driver.h>
#include <graphcap/graphcap.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#if CHECKED_REPLAY_CUDA_KERNELS
#include <graphcap/embedded/checked_replay_kernels.h>
#endif

using namespace graphcap;

namespace {

constexpr std::uint32_t kN = 1024;

struct Step {
  Device& device;
  Stream& s;
  Kernel increment, splat;
  Buffer x, y, z;
  Param<std::uint32_t> count;

  Result<void> operator()() {
    const LaunchDims dims{{4, 1, 1}, {256, 1, 1}};
    if (Result<void> r =
            device.launch(s, increment, dims, {Arg::in(x), Arg::out(y), Arg::value(kN)});
        !r)
      return r;
    if (Result<void> r =
            device.launch(s, splat, dims, {Arg::out(y), Arg::value(2.0f), Arg::param(count)});
        !r)
      return r;
    return device.launch(s, increment, dims, {Arg::in(y), Arg::out(z), Arg::value(kN)});
  }
};

}  // namespace

int main(int argc, char** argv) {
  bool on_gpu = false;
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    on_gpu = on_gpu || std::string_view(argv[i]) == "--driver=cuda";
    check = check || std::string_view(argv[i]) == "--check";
  }
  fake::FakeDriver fake;
  fake::register_compiled_kernels(fake);
  std::vector<std::byte> image = fake::compiled_kernels_image();
  std::unique_ptr<DriverApi> cuda;
  if (on_gpu) {
#if CHECKED_REPLAY_CUDA_KERNELS
    cuda = load_cuda_driver().value();
    image.assign(embedded::checked_replay_kernels().begin(),
                 embedded::checked_replay_kernels().end());
#else
    std::fprintf(stderr, "checked_replay: built without GRAPHCAP_GPU: no CUDA kernels\n");
    return 1;
#endif
  }
  DriverApi& driver = cuda ? *cuda : static_cast<DriverApi&>(fake);

  std::unique_ptr<Device> device = Device::open(driver).value();
  Stream& s = device->stream();
  Module module = device->load_module(image).value();
  std::vector<float> ones(kN, 1.0f);
  Step step{*device,
            s,
            module.kernel("increment").value(),
            module.kernel("splat").value(),
            device->upload(std::as_bytes(std::span(ones)), s).value(),
            device->alloc(kN * sizeof(float), s).value(),
            device->alloc(kN * sizeof(float), s).value(),
            device->param(kN)};
  Graph graph = device->record(s, step).value();
  // The bug: a count past y's end. The fake checks every access against its Buffer; on a GPU a
  // write a little past a buffer lands in the pool's own memory, so the count is far past there.
  graph.set(step.count, on_gpu ? (1u << 30) : kN + 16).value();

  if (!check) {
    graph.replay().value();  // enqueued: the fault surfaces at the next wait
    Result<std::vector<std::byte>> read = device->read(step.z, s);
    if (read) {
      std::printf("the replay did not fault\n");
      return 1;
    }
    std::printf("replay: %s\n", to_string(read.error()).c_str());
    // Nothing more can run on this device: start again, checking.
    std::printf("starting again with --check\n");
    std::fflush(stdout);
    std::string self = argv[0];
    std::vector<char*> args = {self.data()};
    std::string check_flag = "--check";
    std::string driver_flag = "--driver=cuda";
    args.push_back(check_flag.data());
    if (on_gpu) args.push_back(driver_flag.data());
    args.push_back(nullptr);
    execv(self.c_str(), args.data());
    std::perror("execv");
    return 1;
  }

  Result<void> checked = graph.replay_checked();
  if (checked) {
    std::printf("replay_checked found no fault\n");
    return 1;
  }
  std::printf("replay_checked: %s\n", to_string(checked.error()).c_str());
  const bool named =
      checked.error().message().find("node 1 of 3 failed: kernel splat at ") != std::string::npos;
  std::printf("%s: the operation that faults is named\n", named ? "ok" : "WRONG");
  return named ? 0 : 1;
}
