#include <graphcap/detail/device_core.h>

#include <graphcap/detail/event_state.h>

#include <algorithm>
#include <array>
#include <string>

#include <graphcap/detail/graph_state.h>
#include <graphcap/detail/module_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/log.h>
#include <graphcap/try.h>

namespace graphcap::detail {
namespace {

std::uint64_t next_device_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1);
}

void warn(const Error& error) { log(LogLevel::warn, error.message()); }

}  // namespace

DeviceCore::DeviceCore(DriverApi& driver, DeviceOptions options)
    : driver_(&driver),
      options_(options),
      graph_driver_(driver, options.measure_driver_memory),
      tracker_(capture::CaptureTracker::for_driver(driver)),
      id_(next_device_id()) {}

Result<std::shared_ptr<DeviceCore>> DeviceCore::open(DriverApi& driver, DeviceOptions options) {
  if (options.ordinal < 0) {
    return Error(Errc::invalid_argument,
                 "Device::open: ordinal " + std::to_string(options.ordinal) + " is negative");
  }
  if (options.capture_mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
      options.capture_mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      options.capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return Error(Errc::invalid_argument, "Device::open: unknown capture mode " +
                                             std::to_string(static_cast<int>(options.capture_mode)));
  }
  if (CUresult result = driver.cuInit(0); result != CUDA_SUCCESS) {
    return Error::from_driver("cuInit", result).context("Device::open");
  }
  int count = 0;
  if (CUresult result = driver.cuDeviceGetCount(&count); result != CUDA_SUCCESS) {
    return Error::from_driver("cuDeviceGetCount", result).context("Device::open");
  }
  if (options.ordinal >= count) {
    return Error(Errc::invalid_argument,
                 "Device::open: ordinal " + std::to_string(options.ordinal) + " but the driver has " +
                     std::to_string(count) + " device(s)",
                 CUDA_ERROR_INVALID_DEVICE);
  }
  auto core = std::make_shared<DeviceCore>(driver, options);
  if (CUresult result = driver.cuDeviceGet(&core->device_, options.ordinal); result != CUDA_SUCCESS) {
    return Error::from_driver("cuDeviceGet", result).context("Device::open");
  }
  if (CUresult result = driver.cuDevicePrimaryCtxRetain(&core->context_, core->device_);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuDevicePrimaryCtxRetain", result).context("Device::open");
  }
  core->context_retained_ = true;
  // From here on, a failure closes the core, which releases what was acquired.
  auto fail = [&](Error error) {
    core->close();
    return error.context("Device::open");
  };
  if (Result<void> bound = core->bind_thread(); !bound) return fail(bound.error());
  if (Result<void> limits = core->query_limits(); !limits) return fail(limits.error());
  return core;
}

Result<void> DeviceCore::query_limits() {
  struct Query {
    CUdevice_attribute attribute;
    unsigned* out;
  };
  unsigned optin_shared = 0;
  const std::array<Query, 9> queries{{
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &limits_.max_threads_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &limits_.max_block.x},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &limits_.max_block.y},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &limits_.max_block.z},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &limits_.max_grid.x},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &limits_.max_grid.y},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &limits_.max_grid.z},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &limits_.default_shared_bytes},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &optin_shared},
  }};
  for (const Query& query : queries) {
    int value = 0;
    if (CUresult result = driver_->cuDeviceGetAttribute(&value, query.attribute, device_);
        result != CUDA_SUCCESS) {
      return Error::from_driver("cuDeviceGetAttribute", result);
    }
    *query.out = value > 0 ? static_cast<unsigned>(value) : 0;
  }
  limits_.max_shared_bytes = std::max(limits_.default_shared_bytes, optin_shared);
  return {};
}

Result<void> DeviceCore::bind_thread_slow() {
  if (CUresult result = driver_->cuCtxSetCurrent(context_); result != CUDA_SUCCESS) {
    return Error::from_driver("cuCtxSetCurrent", result);
  }
  t_bound_device = id_;
  return {};
}

Result<void> DeviceCore::check_open(const char* operation) const {
  if (is_open()) return {};
  return Error(Errc::graph_state, std::string(operation) + ": the device is closed");
}

Result<std::shared_ptr<StreamCore>> DeviceCore::create_stream() {
  CUstream handle = nullptr;
  if (CUresult result = driver_->cuStreamCreate(&handle, CU_STREAM_NON_BLOCKING);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamCreate", result).context("create_stream");
  }
  auto stream = std::make_shared<StreamCore>(shared_from_this(), handle);
  std::lock_guard lock(mutex_);
  stream->set_index(next_stream_index_++);
  streams_.push_back(stream);
  return stream;
}

void DeviceCore::add_module(const std::shared_ptr<ModuleState>& module) {
  std::lock_guard lock(mutex_);
  std::erase_if(modules_, [](const auto& weak) { return weak.expired(); });
  modules_.push_back(module);
}

void DeviceCore::add_graph(const std::shared_ptr<GraphState>& graph) {
  std::lock_guard lock(mutex_);
  std::erase_if(graphs_, [](const auto& weak) { return weak.expired(); });
  graphs_.push_back(graph);
}

void DeviceCore::add_event(const std::shared_ptr<EventState>& event) {
  std::lock_guard lock(mutex_);
  std::erase_if(events_, [](const auto& weak) { return weak.expired(); });
  events_.push_back(event);
}

void DeviceCore::pinned_by_other_device(const std::shared_ptr<memory::Allocation>& memory) {
  std::lock_guard lock(mutex_);
  std::erase_if(pinned_elsewhere_, [](const auto& weak) { return weak.expired(); });
  pinned_elsewhere_.push_back(memory);
}

void DeviceCore::kept_slice_freed() noexcept {
  if (kept_after_close_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (const std::size_t left = streams_left_to_driver(); left != 0) {
    // The context's end would destroy those streams, and destroying one crashed the driver: the
    // device keeps its reference for the process's life.
    log(LogLevel::warn, name() + " closed with " + std::to_string(left) + " stream(s) left to "
                        "the driver (a conditional body whose capture was invalidated): its "
                        "primary context is kept for the process's life (its end would destroy "
                        "them, which crashes the driver)");
    return;
  }
  if (CUresult result = driver_->cuDevicePrimaryCtxRelease(device_); result != CUDA_SUCCESS) {
    warn(Error::from_driver("cuDevicePrimaryCtxRelease", result)
             .context("releasing a closed device's context after the last graph of another device "
                      "let go of its memory"));
  }
}

void DeviceCore::defer(std::shared_ptr<GraphState> graph) {
  std::lock_guard lock(mutex_);
  deferred_graphs_.push_back(std::move(graph));
  has_deferred_.store(true, std::memory_order_release);
}

void DeviceCore::defer_unload(CUmodule module) {
  std::lock_guard lock(mutex_);
  deferred_unloads_.push_back(module);
  has_deferred_.store(true, std::memory_order_release);
}

void DeviceCore::collect_deferred() noexcept {
  if (unsafe_calls_forbidden()) return;
  std::vector<std::shared_ptr<GraphState>> graphs;
  std::vector<CUmodule> unloads;
  // Buffers dropped while a recording forbade querying their fences (graph pools' views among
  // them, whose memory a pool gives back only then), and any a queue still holds: polled only
  // when some queue said it holds drops (a queue left holding some says so again).
  if (drops_waiting_.exchange(false, std::memory_order_acq_rel)) {
    std::vector<std::shared_ptr<StreamCore>> streams;
    try {
      std::lock_guard lock(mutex_);
      streams = streams_;
    } catch (...) {
      // Out of memory for the copy: the drops wait for their streams' next operation.
      drops_waiting_.store(true, std::memory_order_release);
    }
    for (const auto& stream : streams) stream->flush_drops();
  }
  // Nothing deferred (the usual close): no lock. Set under the lock with what it announces.
  if (!has_deferred_.load(std::memory_order_acquire)) return;
  {
    std::lock_guard lock(mutex_);
    has_deferred_.store(false, std::memory_order_relaxed);
    if (deferred_graphs_.empty() && deferred_unloads_.empty()) return;
    graphs.swap(deferred_graphs_);
    unloads.swap(deferred_unloads_);
  }
  std::vector<std::shared_ptr<GraphState>> still_deferred;
  for (auto& graph : graphs) {
    // Its own stream records, or a recording opened meanwhile: waiting now would break it.
    if (graph->stream().recording() || !graph->try_release()) {
      still_deferred.push_back(std::move(graph));
    }
  }
  std::vector<CUmodule> still_unloading;
  for (CUmodule module : unloads) {
    capture::CaptureTracker::UnsafeCall call = tracker_->enter_unsafe_call();
    if (!call) {
      still_unloading.push_back(module);
      continue;
    }
    if (CUresult result = driver_->cuModuleUnload(module); result != CUDA_SUCCESS) {
      warn(Error::from_driver("cuModuleUnload", result));
    }
  }
  if (!still_deferred.empty() || !still_unloading.empty()) {
    std::lock_guard lock(mutex_);
    for (auto& graph : still_deferred) deferred_graphs_.push_back(std::move(graph));
    for (CUmodule module : still_unloading) deferred_unloads_.push_back(module);
    has_deferred_.store(true, std::memory_order_release);
  }
}

void DeviceCore::close() noexcept {
  if (!open_.exchange(false)) return;
  if (Result<void> bound = bind_thread(); !bound) warn(bound.error().context("closing the device"));

  std::vector<std::shared_ptr<StreamCore>> streams;
  // Held strongly until released below: a recording closed in step 1 drops what it kept alive,
  // and a module or graph dying there would find the device closed and skip its own release.
  std::vector<std::shared_ptr<GraphState>> graphs;
  std::vector<std::shared_ptr<ModuleState>> modules;
  std::vector<std::shared_ptr<EventState>> events;
  std::vector<std::shared_ptr<GraphState>> deferred_graphs;
  std::vector<CUmodule> deferred_unloads;
  std::vector<std::weak_ptr<memory::Allocation>> pinned_elsewhere;
  {
    std::lock_guard lock(mutex_);
    pinned_elsewhere.swap(pinned_elsewhere_);
    for (auto& stream : streams_) stream->gate().set(capture::ReplayGate::kClosed);  // replays stop
    streams.swap(streams_);
    for (auto& weak : graphs_) {
      if (auto graph = weak.lock()) graphs.push_back(std::move(graph));
    }
    for (auto& weak : modules_) {
      if (auto module = weak.lock()) modules.push_back(std::move(module));
    }
    for (auto& weak : events_) {
      if (auto event = weak.lock()) events.push_back(std::move(event));
    }
    graphs_.clear();
    modules_.clear();
    events_.clear();
    deferred_graphs.swap(deferred_graphs_);
    deferred_unloads.swap(deferred_unloads_);
  }

  // 1. Never leave a stream capturing.
  for (auto& stream : streams) {
    std::lock_guard lock(stream->mutex());
    stream->window().force_close();
  }
  // 2. Wait for everything in flight, then release graphs (their waits are now instant).
  for (auto& stream : streams) {
    if (CUresult result = driver_->cuStreamSynchronize(stream->handle()); result != CUDA_SUCCESS) {
      log(teardown_level(result),
          Error::from_driver("cuStreamSynchronize", result).context("closing the device").message());
    }
  }
  for (auto& graph : deferred_graphs) graph->release();
  deferred_graphs.clear();
  for (auto& graph : graphs) graph->release();
  graphs.clear();
  // 3. Modules, then the streams with their pools, then the context.
  for (CUmodule module : deferred_unloads) {
    if (CUresult result = driver_->cuModuleUnload(module); result != CUDA_SUCCESS) {
      warn(Error::from_driver("cuModuleUnload", result).context("closing the device"));
    }
  }
  for (auto& module : modules) module->release();
  modules.clear();
  for (auto& event : events) event->release();
  events.clear();
  // 4. Memory other devices' graphs still pin (peer copies) stays allocated, and with it the
  // context, until those graphs let go: a graph keeps alive everything it replays against. Held
  // here until the streams are closed, so each is either kept or freed with its stream.
  std::vector<std::shared_ptr<memory::Allocation>> kept;
  for (const auto& weak : pinned_elsewhere) {
    if (std::shared_ptr<memory::Allocation> memory = weak.lock()) {
      static_cast<StreamCore&>(memory->owner()).keep_at_close(memory->slice());
      kept.push_back(std::move(memory));
    }
  }
  kept_after_close_.fetch_add(static_cast<int>(kept.size()) + 1, std::memory_order_acq_rel);
  for (auto& stream : streams) stream->close();
  streams.clear();
  kept.clear();  // a graph that let go meanwhile frees its slice now
  if (context_retained_) {
    context_retained_ = false;
    kept_slice_freed();  // the close's own count: the context goes now, or with the last kept slice
  }
  if (t_bound_device == id_) t_bound_device = 0;
}

}  // namespace graphcap::detail
