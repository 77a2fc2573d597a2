#include <graphcap/detail/device_core.h>

#include <algorithm>
#include <string>

#include <graphcap/detail/graph_state.h>
#include <graphcap/detail/module_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/log.h>

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
      graph_driver_(driver),
      tracker_(CaptureTracker::for_driver(driver)),
      id_(next_device_id()) {}

Result<void> DeviceCore::bind_thread_slow() {
  if (CUresult result = driver_->cuCtxSetCurrent(context); result != CUDA_SUCCESS) {
    return Error::from_driver("cuCtxSetCurrent", result);
  }
  t_bound_device = id_;
  return {};
}

Result<void> DeviceCore::check_open(const char* operation) const {
  if (is_open()) return {};
  return Error(Errc::graph_state, std::string(operation) + ": the device is closed");
}

void DeviceCore::add_stream(std::shared_ptr<StreamCore> stream) {
  std::lock_guard lock(mutex_);
  streams_.push_back(std::move(stream));
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

void DeviceCore::defer(std::shared_ptr<GraphState> graph) {
  std::lock_guard lock(mutex_);
  deferred_graphs_.push_back(std::move(graph));
}

void DeviceCore::defer_unload(CUmodule module) {
  std::lock_guard lock(mutex_);
  deferred_unloads_.push_back(module);
}

void DeviceCore::collect_deferred() noexcept {
  if (unsafe_calls_forbidden()) return;
  std::vector<std::shared_ptr<GraphState>> graphs;
  std::vector<CUmodule> unloads;
  {
    std::lock_guard lock(mutex_);
    if (deferred_graphs_.empty() && deferred_unloads_.empty()) return;
    graphs.swap(deferred_graphs_);
    unloads.swap(deferred_unloads_);
  }
  std::vector<std::shared_ptr<GraphState>> still_deferred;
  for (auto& graph : graphs) {
    if (graph->stream().window().recording()) {
      still_deferred.push_back(std::move(graph));  // its own stream records: waiting would break it
    } else {
      graph->release();
    }
  }
  for (CUmodule module : unloads) {
    if (CUresult result = driver_->cuModuleUnload(module); result != CUDA_SUCCESS) {
      warn(Error::from_driver("cuModuleUnload", result));
    }
  }
  if (!still_deferred.empty()) {
    std::lock_guard lock(mutex_);
    for (auto& graph : still_deferred) deferred_graphs_.push_back(std::move(graph));
  }
}

void DeviceCore::close() noexcept {
  if (!open_.exchange(false)) return;
  if (Result<void> bound = bind_thread(); !bound) warn(bound.error().context("closing the device"));

  std::vector<std::shared_ptr<StreamCore>> streams;
  {
    std::lock_guard lock(mutex_);
    for (auto& stream : streams_) stream->gate().set(ReplayGate::kClosed);  // replays stop now
  }
  std::vector<std::weak_ptr<GraphState>> graphs;
  std::vector<std::weak_ptr<ModuleState>> modules;
  std::vector<std::shared_ptr<GraphState>> deferred_graphs;
  std::vector<CUmodule> deferred_unloads;
  {
    std::lock_guard lock(mutex_);
    streams.swap(streams_);
    graphs.swap(graphs_);
    modules.swap(modules_);
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
      warn(Error::from_driver("cuStreamSynchronize", result).context("closing the device"));
    }
  }
  for (auto& graph : deferred_graphs) graph->release();
  deferred_graphs.clear();
  for (auto& weak : graphs) {
    if (auto graph = weak.lock()) graph->release();
  }
  // 3. Modules, then the streams with their pools, then the context.
  for (CUmodule module : deferred_unloads) {
    if (CUresult result = driver_->cuModuleUnload(module); result != CUDA_SUCCESS) {
      warn(Error::from_driver("cuModuleUnload", result).context("closing the device"));
    }
  }
  for (auto& weak : modules) {
    if (auto module = weak.lock()) module->release();
  }
  for (auto& stream : streams) stream->close();
  streams.clear();
  if (context_retained_) {
    context_retained_ = false;
    if (CUresult result = driver_->cuDevicePrimaryCtxRelease(device); result != CUDA_SUCCESS) {
      warn(Error::from_driver("cuDevicePrimaryCtxRelease", result).context("closing the device"));
    }
  }
  if (t_bound_device == id_) t_bound_device = 0;
}

}  // namespace graphcap::detail
