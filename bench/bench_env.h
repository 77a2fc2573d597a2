// BenchEnv: what every benchmark runs against: the driver (the fake by default, libcuda with
// --driver=cuda), an ObservingDriver in front of it, one open Device, the benchmark kernels, and
// a cache of captured graphs of n empty launches (captured once, replayed by every benchmark
// that needs them).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <graphcap/graphcap.h>

#include "observing_driver.h"

namespace graphcap::fake {
class FakeDriver;
}

namespace graphcap::bench {

enum class DriverKind { fake, cuda };

// A graph of n launches of `empty` on the device's stream, and its executable.
struct CapturedGraph {
  Graph graph;
  CUgraphExec exec = nullptr;  // the CUgraphExec graph.replay() launches
};

class BenchEnv {
 public:
  // Opens the driver, the device and the kernels. The error names what is missing.
  static Result<std::unique_ptr<BenchEnv>> open(DriverKind kind,
                                                DeviceOptions device_options = {});
  ~BenchEnv();
  BenchEnv(const BenchEnv&) = delete;
  BenchEnv& operator=(const BenchEnv&) = delete;

  DriverKind kind() const noexcept { return kind_; }
  // "fake" or "cuda"; and a description of the device for the report's context.
  const char* driver_name() const noexcept;
  const std::string& device_description() const noexcept { return description_; }

  // The driver the device was opened on (the ObservingDriver). Out of line on purpose: a raw
  // call through it is an indirect call, as graphcap's own calls are.
  DriverApi& driver() noexcept;
  const ObservingDriver& observer() const noexcept { return *observer_; }
  // Sum the time spent inside driver calls from now (observer().driver_ns()), or stop.
  void time_driver_calls(bool on) noexcept { observer_->time_calls(on); }
  // cuLaunchKernel answers CUDA_SUCCESS without the driver (ObservingDriver::swallow_launches).
  void swallow_launches(bool on) noexcept { observer_->swallow_launches(on); }
  fake::FakeDriver* fake() noexcept { return fake_.get(); }

  Device& device() noexcept { return *device_; }
  Stream& stream() noexcept { return device_->stream(); }
  const Kernel& empty_kernel() const noexcept { return empty_; }
  const Kernel& sink_kernel() const noexcept { return sink_; }
  const Kernel& countdown_kernel() const noexcept { return countdown_; }
  // The benchmark kernels' module, for the families that look their own kernels up.
  const Module& module() const noexcept { return module_; }
  static constexpr LaunchDims kEmptyDims{Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0};

  // One eager launch of `empty` through graphcap (Device::launch).
  Result<void> launch_empty();
  // One raw launch of `empty` through the driver (cuLaunchKernel).
  CUresult raw_launch_empty();
  // The raw side's counterpart of graphcap's warm-up before a re-recording (prepare_capture, an
  // eager pass, a sync): n raw launches of `empty` and a cuStreamSynchronize, untimed, so each
  // side's close follows the same device and host work (the driver's update of an executable
  // measured 19-38% slower at 10,000 nodes right after graphcap's warm-up than the raw side's
  // with none; performance.md).
  CUresult raw_eager_pass(int n);
  // The raw side's recording: cuStreamBeginCapture on the stream and n raw launches of `empty`
  // into it. The begin's error, else the last failed launch's code (CUDA_SUCCESS: all captured);
  // the capture is left open either way but for a failed begin.
  Result<CUresult> raw_begin_with_launches(int n);

  // One eager launch of `values` through graphcap, with its three scalar arguments (checked
  // against the kernel's signature), and the same launch through raw cuLaunchKernel.
  Result<void> launch_values();
  CUresult raw_launch_values();

  // The cached graph of n empty launches: captured on first use (prepare, warm-up, begin,
  // n launches, end), checked to hold n kernel nodes.
  Result<CapturedGraph*> graph(int n);

  // Device 1 on the same driver (peer copies): opened on first use; an error when the
  // driver has one device (the fake bench driver has 2).
  Result<Device*> peer_device();

  // Device 0 opened again on the driver beneath the observer (whose counters are one thread's),
  // with `empty` of its own: for the families whose graphcap side starts threads (Startup).
  // Opened on first use; use it alone (the two devices' recordings don't see each other's).
  Result<Device*> unobserved_device();
  const Kernel& unobserved_empty() const noexcept { return unobserved_empty_; }

  // Everything queued on the stream has run; a queued error surfaces here.
  Result<void> sync() { return device_->sync(stream()); }

 private:
  BenchEnv() = default;

  DriverKind kind_ = DriverKind::fake;
  std::unique_ptr<fake::FakeDriver> fake_;
  std::unique_ptr<DriverApi> cuda_;
  std::unique_ptr<ObservingDriver> observer_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Device> peer_;
  std::unique_ptr<Device> unobserved_;
  Module unobserved_module_;
  Kernel unobserved_empty_;
  std::vector<std::byte> fake_image_;
  std::span<const std::byte> image_;  // the kernels' image, as loaded
  Module module_;
  Kernel empty_;
  Kernel values_;
  Kernel sink_;
  Kernel countdown_;
  std::string description_;
  std::map<int, std::unique_ptr<CapturedGraph>> graphs_;
};

}  // namespace graphcap::bench
