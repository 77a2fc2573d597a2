#include "bench_env.h"

#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include <graphcap/fake/fake_driver.h>

#include "kernels/bench_kernels.h"

#if GRAPHCAP_BENCH_CUDA_KERNELS
#include <graphcap/embedded/graphcap_bench_kernels_fatbin.h>
#endif

namespace graphcap::bench {

Result<std::unique_ptr<BenchEnv>> BenchEnv::open(DriverKind kind, DeviceOptions device_options) {
  std::unique_ptr<BenchEnv> env(new BenchEnv());
  env->kind_ = kind;
  DriverApi* inner = nullptr;
  std::span<const std::byte> image;
  if (kind == DriverKind::fake) {
    fake::FakeDriverOptions options;
    options.record_calls = false;  // the call log is a test aid; it would cost every call
    options.device_count = 2;      // PeerCopy's second device; the rest use device 0
    env->fake_ = std::make_unique<fake::FakeDriver>(options);
    fake::register_compiled_kernels(*env->fake_);
    env->fake_image_ = env->fake_->module_image({kEmptyKernel, kValuesKernel, kSinkKernel,
                                                 kCountdownKernel, kChainKernel,
                                                 kSetConditionKernel});
    image = env->fake_image_;
    inner = env->fake_.get();
  } else {
#if GRAPHCAP_BENCH_CUDA_KERNELS
    Result<std::unique_ptr<DriverApi>> loaded = load_cuda_driver();
    if (!loaded) return loaded.error().context("--driver=cuda");
    env->cuda_ = std::move(*loaded);
    image = embedded::graphcap_bench_kernels_fatbin();
    inner = env->cuda_.get();
#else
    return Error(Errc::driver_not_found,
                 "--driver=cuda: this graphcap-bench was built without GRAPHCAP_GPU, so it holds "
                 "no CUDA kernels; configure with -DGRAPHCAP_GPU=ON (the gpu preset) on a machine "
                 "with nvcc, then run it there");
#endif
  }
  env->observer_ = std::make_unique<ObservingDriver>(*inner);
  env->image_ = image;

  Result<std::unique_ptr<Device>> device = Device::open(*env->observer_, device_options);
  if (!device) return device.error().context("opening the benchmark device");
  env->device_ = std::move(*device);
  Result<Module> module = env->device_->load_module(image);
  if (!module) return module.error().context("loading the benchmark kernels");
  env->module_ = std::move(*module);
  Result<Kernel> empty = env->module_.kernel(kEmptyKernel);
  if (!empty) return empty.error().context("finding the benchmark kernel 'empty'");
  env->empty_ = std::move(*empty);
  Result<Kernel> values = env->module_.kernel(kValuesKernel);
  if (!values) return values.error().context("finding the benchmark kernel 'values'");
  env->values_ = std::move(*values);
  Result<Kernel> sink = env->module_.kernel(kSinkKernel);
  if (!sink) return sink.error().context("finding the benchmark kernel 'sink'");
  env->sink_ = std::move(*sink);
  Result<Kernel> countdown = env->module_.kernel(kCountdownKernel);
  if (!countdown) return countdown.error().context("finding the benchmark kernel 'countdown'");
  env->countdown_ = std::move(*countdown);

  char name[256] = {};
  int version = 0;
  DriverApi& driver = env->device_->driver();
  CUdevice ordinal = 0;
  if (driver.cuDeviceGet(&ordinal, env->device_->ordinal()) == CUDA_SUCCESS &&
      driver.cuDeviceGetName(name, static_cast<int>(sizeof(name) - 1), ordinal) == CUDA_SUCCESS) {
    env->description_ = name;
  } else {
    env->description_ = "unknown device";
  }
  if (driver.cuDriverGetVersion(&version) == CUDA_SUCCESS) {
    env->description_ += ", CUDA driver API " + std::to_string(version / 1000) + "." +
                         std::to_string(version % 1000 / 10);
  }
  return env;
}

BenchEnv::~BenchEnv() {
  graphs_.clear();  // each Graph waits for its replays, then frees its executable
  empty_ = Kernel();
  values_ = Kernel();
  sink_ = Kernel();
  countdown_ = Kernel();
  module_ = Module();
  unobserved_empty_ = Kernel();
  unobserved_module_ = Module();
  unobserved_.reset();
  peer_.reset();
  device_.reset();
  observer_.reset();
  cuda_.reset();
  fake_.reset();
}

const char* BenchEnv::driver_name() const noexcept {
  return kind_ == DriverKind::fake ? "fake" : "cuda";
}

DriverApi& BenchEnv::driver() noexcept { return *observer_; }

Result<Device*> BenchEnv::peer_device() {
  if (peer_) return peer_.get();
  int count = 0;
  if (CUresult result = driver().cuDeviceGetCount(&count); result != CUDA_SUCCESS) {
    return Error::from_driver("cuDeviceGetCount", result).context("peer_device");
  }
  if (count < 2) {
    return Error(Errc::invalid_argument, "needs 2 devices, the driver has " +
                                             std::to_string(count) + " (run on a 2-GPU machine)");
  }
  DeviceOptions options;
  options.ordinal = 1;
  Result<std::unique_ptr<Device>> device = Device::open(*observer_, options);
  if (!device) return device.error().context("opening device 1");
  peer_ = std::move(*device);
  return peer_.get();
}

Result<Device*> BenchEnv::unobserved_device() {
  if (unobserved_) return unobserved_.get();
  Result<std::unique_ptr<Device>> device = Device::open(observer_->inner(), DeviceOptions{});
  if (!device) return device.error().context("opening device 0 beneath the observer");
  Result<Module> module = (*device)->load_module(image_);
  if (!module) return module.error().context("loading the benchmark kernels beneath the observer");
  Result<Kernel> empty = module->kernel(kEmptyKernel);
  if (!empty) return empty.error().context("finding the benchmark kernel 'empty'");
  unobserved_ = std::move(*device);
  unobserved_module_ = std::move(*module);
  unobserved_empty_ = std::move(*empty);
  return unobserved_.get();
}

Result<void> BenchEnv::launch_empty() {
  return device_->launch(stream(), empty_, kEmptyDims, {});
}

CUresult BenchEnv::raw_launch_empty() {
  return driver().cuLaunchKernel(empty_.native_handle(), kEmptyDims.grid.x, kEmptyDims.grid.y,
                                 kEmptyDims.grid.z, kEmptyDims.block.x, kEmptyDims.block.y,
                                 kEmptyDims.block.z, kEmptyDims.shared_bytes,
                                 stream().native_handle(), nullptr, nullptr);
}

CUresult BenchEnv::raw_eager_pass(int n) {
  for (int i = 0; i < n; ++i) {
    if (const CUresult r = raw_launch_empty(); r != CUDA_SUCCESS) return r;
  }
  return driver().cuStreamSynchronize(stream().native_handle());
}

Result<CUresult> BenchEnv::raw_begin_with_launches(int n) {
  if (CUresult r = driver().cuStreamBeginCapture(stream().native_handle(), CU_STREAM_CAPTURE_MODE_GLOBAL);
      r != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamBeginCapture", r);
  }
  CUresult launched = CUDA_SUCCESS;
  for (int i = 0; i < n; ++i) {
    if (CUresult r = raw_launch_empty(); r != CUDA_SUCCESS) launched = r;
  }
  return launched;
}

namespace {
constexpr std::uint32_t kValueA = 1;
constexpr std::uint64_t kValueB = 2;
constexpr std::uint32_t kValueC = 3;
}  // namespace

Result<void> BenchEnv::launch_values() {
  return device_->launch(stream(), values_, kEmptyDims,
                         {Arg::value(kValueA), Arg::value(kValueB), Arg::value(kValueC)});
}

CUresult BenchEnv::raw_launch_values() {
  std::uint32_t a = kValueA;
  std::uint64_t b = kValueB;
  std::uint32_t c = kValueC;
  void* params[] = {&a, &b, &c};
  return driver().cuLaunchKernel(values_.native_handle(), kEmptyDims.grid.x, kEmptyDims.grid.y,
                                 kEmptyDims.grid.z, kEmptyDims.block.x, kEmptyDims.block.y,
                                 kEmptyDims.block.z, kEmptyDims.shared_bytes,
                                 stream().native_handle(), params, nullptr);
}

Result<CapturedGraph*> BenchEnv::graph(int n) {
  if (auto found = graphs_.find(n); found != graphs_.end()) return found->second.get();
  const std::string what = "capturing a graph of " + std::to_string(n) + " empty launches";
  Stream& s = stream();
  if (Result<void> prepared = device_->prepare_capture(s); !prepared) {
    return prepared.error().context(what);
  }
  for (int pass = 0; pass < 2; ++pass) {  // the warm-up, then the recording
    if (pass == 1) {
      if (Result<void> begun = device_->begin_capture(s); !begun) return begun.error().context(what);
    }
    for (int i = 0; i < n; ++i) {
      if (Result<void> launched = launch_empty(); !launched) {
        (void)device_->abort_capture(s);
        return launched.error().context(what);
      }
    }
  }
  Result<Graph> ended = device_->end_capture(s);
  if (!ended) return ended.error().context(what);
  auto captured = std::make_unique<CapturedGraph>();
  captured->graph = std::move(*ended);
  captured->exec = observer_->last_exec();
  const GraphReport& report = captured->graph.report();
  if (report.node_count != static_cast<std::size_t>(n) ||
      report.nodes(CU_GRAPH_NODE_TYPE_KERNEL) != static_cast<std::size_t>(n)) {
    return Error(Errc::graph_state, what + ": the graph holds " +
                                        std::to_string(report.node_count) + " nodes, " +
                                        std::to_string(report.nodes(CU_GRAPH_NODE_TYPE_KERNEL)) +
                                        " of them kernels");
  }
  if (captured->exec == nullptr) {
    return Error(Errc::graph_state, what + ": no instantiate was seen");
  }
  if (Result<void> synced = sync(); !synced) return synced.error().context(what);
  CapturedGraph* out = captured.get();
  graphs_.emplace(n, std::move(captured));
  return out;
}

}  // namespace graphcap::bench
