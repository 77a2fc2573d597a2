// FaultInjectingDriver: each entry point asks the shared FaultPlan whether this call fails; a
// failed call runs its row of the undo table (fault_injecting_driver.h) instead of the call, a
// passing one is forwarded and tracked; either way the call is logged under its name.
#include <graphcap/fake/fault_injecting_driver.h>

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include <graphcap/fake/internal/call_log.h>
#include <graphcap/fake/internal/entry_tags.h>
#include <graphcap/fake/internal/fault_plan.h>

namespace graphcap::fake {
namespace {

// ---- handles created and released through the decorator ---------------------------------------

class Tracker {
 public:
  template <class Set, class H>
  void add(Set Tracker::*set, H handle) {
    if (handle == H{}) return;
    std::lock_guard<std::mutex> guard(mutex_);
    (this->*set).insert(handle);
  }
  template <class Set, class H>
  void remove(Set Tracker::*set, H handle) {
    std::lock_guard<std::mutex> guard(mutex_);
    (this->*set).erase(handle);
  }
  void retain(CUdevice device) {
    std::lock_guard<std::mutex> guard(mutex_);
    ++contexts[device];
  }
  void release(CUdevice device) {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = contexts.find(device);
    if (it != contexts.end() && --it->second == 0) contexts.erase(it);
  }

  LiveHandles count() const {
    std::lock_guard<std::mutex> guard(mutex_);
    LiveHandles live;
    for (const auto& [device, refs] : contexts) live.contexts += refs;
    live.streams = streams.size();
    live.events = events.size();
    live.modules = modules.size();
    live.graphs = graphs.size();
    live.execs = execs.size();
    live.device_allocations = device_allocations.size();
    live.host_allocations = host_allocations.size();
    return live;
  }

  // Forgets everything and releases it through `driver`, dependents first.
  std::size_t release_all(DriverApi& driver) {
    Tracker taken;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      taken.contexts.swap(contexts);
      taken.streams.swap(streams);
      taken.events.swap(events);
      taken.modules.swap(modules);
      taken.graphs.swap(graphs);
      taken.execs.swap(execs);
      taken.device_allocations.swap(device_allocations);
      taken.host_allocations.swap(host_allocations);
    }
    std::size_t released = 0;
    auto each = [&](const auto& handles, auto destroy) {
      for (auto handle : handles) {
        (void)(driver.*destroy)(handle);
        ++released;
      }
    };
    each(taken.execs, &DriverApi::cuGraphExecDestroy);
    each(taken.graphs, &DriverApi::cuGraphDestroy);
    each(taken.events, &DriverApi::cuEventDestroy);
    each(taken.streams, &DriverApi::cuStreamDestroy);
    each(taken.modules, &DriverApi::cuModuleUnload);
    each(taken.device_allocations, &DriverApi::cuMemFree);
    each(taken.host_allocations, &DriverApi::cuMemFreeHost);
    for (const auto& [device, refs] : taken.contexts) {
      for (std::size_t i = 0; i < refs; ++i) {
        (void)driver.cuDevicePrimaryCtxRelease(device);
        ++released;
      }
    }
    return released;
  }

  std::map<CUdevice, std::size_t> contexts;
  std::set<CUstream> streams;
  std::set<CUevent> events;
  std::set<CUmodule> modules;
  std::set<CUgraph> graphs;
  std::set<CUgraphExec> execs;
  std::set<CUdeviceptr> device_allocations;
  std::set<void*> host_allocations;

 private:
  mutable std::mutex mutex_;
};

bool capturing(DriverApi& driver, CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return driver.cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS &&
         status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

// What a call that succeeded created or released. None, unless an overload says otherwise.
template <class Entry, class... Args>
void track(DriverApi&, Tracker&, Entry, const Args&...) {}
void track(DriverApi&, Tracker& t, entry::cuDevicePrimaryCtxRetain, CUcontext*, CUdevice device) {
  t.retain(device);
}
void track(DriverApi&, Tracker& t, entry::cuDevicePrimaryCtxRelease, CUdevice device) {
  t.release(device);
}
void track(DriverApi&, Tracker& t, entry::cuStreamCreate, CUstream* stream, unsigned) {
  if (stream != nullptr) t.add(&Tracker::streams, *stream);
}
void track(DriverApi&, Tracker& t, entry::cuStreamDestroy, CUstream stream) {
  t.remove(&Tracker::streams, stream);
}
void track(DriverApi&, Tracker& t, entry::cuEventCreate, CUevent* event, unsigned) {
  if (event != nullptr) t.add(&Tracker::events, *event);
}
void track(DriverApi&, Tracker& t, entry::cuEventDestroy, CUevent event) {
  t.remove(&Tracker::events, event);
}
void track(DriverApi&, Tracker& t, entry::cuModuleLoadData, CUmodule* module, const void*) {
  if (module != nullptr) t.add(&Tracker::modules, *module);
}
void track(DriverApi&, Tracker& t, entry::cuModuleUnload, CUmodule module) {
  t.remove(&Tracker::modules, module);
}
void track(DriverApi&, Tracker& t, entry::cuStreamEndCapture, CUstream, CUgraph* graph) {
  if (graph != nullptr) t.add(&Tracker::graphs, *graph);
}
void track(DriverApi&, Tracker& t, entry::cuGraphDestroy, CUgraph graph) {
  t.remove(&Tracker::graphs, graph);
}
void track(DriverApi&, Tracker& t, entry::cuGraphInstantiateWithFlags, CUgraphExec* exec, CUgraph,
           unsigned long long) {
  if (exec != nullptr) t.add(&Tracker::execs, *exec);
}
void track(DriverApi&, Tracker& t, entry::cuGraphExecDestroy, CUgraphExec exec) {
  t.remove(&Tracker::execs, exec);
}
void track(DriverApi&, Tracker& t, entry::cuMemAlloc, CUdeviceptr* pointer, std::size_t) {
  if (pointer != nullptr) t.add(&Tracker::device_allocations, *pointer);
}
void track(DriverApi& driver, Tracker& t, entry::cuMemAllocAsync, CUdeviceptr* pointer,
           std::size_t, CUstream stream) {
  // Recorded into a capture it is a MEM_ALLOC node of the graph, not an allocation of ours.
  if (pointer != nullptr && !capturing(driver, stream)) {
    t.add(&Tracker::device_allocations, *pointer);
  }
}
void track(DriverApi&, Tracker& t, entry::cuMemFree, CUdeviceptr pointer) {
  t.remove(&Tracker::device_allocations, pointer);
}
void track(DriverApi&, Tracker& t, entry::cuMemFreeAsync, CUdeviceptr pointer, CUstream) {
  t.remove(&Tracker::device_allocations, pointer);
}
void track(DriverApi&, Tracker& t, entry::cuMemAllocHost, void** pointer, std::size_t) {
  if (pointer != nullptr) t.add(&Tracker::host_allocations, *pointer);
}
void track(DriverApi&, Tracker& t, entry::cuMemFreeHost, void* pointer) {
  t.remove(&Tracker::host_allocations, pointer);
}

// ---- the undo table (fault_injecting_driver.h): what a failed call does ------------------------

// Stream-ordered calls: a failure while their stream captures invalidates the capture.
template <class Entry>
constexpr bool kStreamOrdered =
    std::is_same_v<Entry, entry::cuLaunchKernel> || std::is_same_v<Entry, entry::cuMemcpyHtoDAsync> ||
    std::is_same_v<Entry, entry::cuMemcpyDtoHAsync> || std::is_same_v<Entry, entry::cuMemsetD8Async> ||
    std::is_same_v<Entry, entry::cuMemAllocAsync> || std::is_same_v<Entry, entry::cuMemFreeAsync> ||
    std::is_same_v<Entry, entry::cuEventRecord> || std::is_same_v<Entry, entry::cuStreamWaitEvent> ||
    std::is_same_v<Entry, entry::cuGraphLaunch> || std::is_same_v<Entry, entry::cuGraphUpload>;

// The default: not forwarded (no effect); a stream-ordered call invalidates its stream's capture
// the way a real refused call does: cuStreamQuery of a capturing stream is 900 and invalidates
// it in every capture mode (docs/cuda-driver-facts.md, "What invalidates a capture").
template <class Entry, class... Args>
CUresult injected(DriverApi& driver, Entry, CUresult code, const Args&... args) {
  if constexpr (kStreamOrdered<Entry>) {
    const CUstream stream = internal::stream_argument(args...);
    if (capturing(driver, stream)) (void)driver.cuStreamQuery(stream);
  }
  return code;
}
// The capture must end: forward, discard the graph, report the failure with a NULL graph.
CUresult injected(DriverApi& driver, entry::cuStreamEndCapture, CUresult code, CUstream stream,
                  CUgraph* graph) {
  CUgraph ended = nullptr;
  if (driver.cuStreamEndCapture(stream, &ended) == CUDA_SUCCESS && ended != nullptr) {
    (void)driver.cuGraphDestroy(ended);
  }
  if (graph != nullptr) *graph = nullptr;
  return code;
}
// Waits: the wait happens, then the failure is reported.
CUresult injected(DriverApi& driver, entry::cuStreamSynchronize, CUresult code, CUstream stream) {
  (void)driver.cuStreamSynchronize(stream);
  return code;
}
CUresult injected(DriverApi& driver, entry::cuEventSynchronize, CUresult code, CUevent event) {
  (void)driver.cuEventSynchronize(event);
  return code;
}
CUresult injected(DriverApi& driver, entry::cuCtxSynchronize, CUresult code) {
  (void)driver.cuCtxSynchronize();
  return code;
}

// ---- forwarding a call that is not failed --------------------------------------------------------

template <class Entry, class Call, class... Args>
CUresult forward(DriverApi&, const FaultInjectingOptions&, Entry, Call&& call, const Args&...) {
  return call();
}
template <class Call>
CUresult forward(DriverApi& driver, const FaultInjectingOptions& options, entry::cuEventQuery,
                 Call&& call, CUevent event) {
  if (options.settle_queries) (void)driver.cuEventSynchronize(event);
  return call();
}
template <class Call>
CUresult forward(DriverApi& driver, const FaultInjectingOptions& options, entry::cuStreamQuery,
                 Call&& call, CUstream stream) {
  if (options.settle_queries) (void)driver.cuStreamSynchronize(stream);
  return call();
}

}  // namespace

struct FaultInjectingDriver::State {
  explicit State(FaultInjectingOptions o) : options(o), log(o.record_calls) {}

  std::optional<CUresult> next(std::string_view entry_point, CUstream stream) {
    std::lock_guard<std::mutex> guard(mutex);
    return plan.next(entry_point, stream);
  }
  void record(std::string_view entry_point, CUresult result, bool injected) {
    std::lock_guard<std::mutex> guard(mutex);
    log.record(entry_point, result, injected);
  }

  const FaultInjectingOptions options;
  mutable std::mutex mutex;  // plan and log
  internal::FaultPlan plan;
  internal::CallLog log;
  Tracker tracker;  // locks itself
};

FaultInjectingDriver::FaultInjectingDriver(DriverApi& inner, FaultInjectingOptions options)
    : ForwardingDriver(inner), state_(std::make_unique<State>(options)) {}

FaultInjectingDriver::~FaultInjectingDriver() = default;

void FaultInjectingDriver::fail_call(std::string_view entry_point, CUresult code, int nth) {
  std::lock_guard<std::mutex> guard(state_->mutex);
  state_->plan.fail_call(entry_point, code, nth);
}
void FaultInjectingDriver::fail_always(std::string_view entry_point, CUresult code) {
  std::lock_guard<std::mutex> guard(state_->mutex);
  state_->plan.fail_always(entry_point, code);
}
void FaultInjectingDriver::fail_when(std::string_view entry_point, CUresult code,
                                     FaultPredicate predicate) {
  std::lock_guard<std::mutex> guard(state_->mutex);
  state_->plan.fail_when(entry_point, code, std::move(predicate));
}
void FaultInjectingDriver::clear_faults() {
  std::lock_guard<std::mutex> guard(state_->mutex);
  state_->plan.clear();
}

std::vector<CallRecord> FaultInjectingDriver::calls() const {
  std::lock_guard<std::mutex> guard(state_->mutex);
  return state_->log.records();
}
std::size_t FaultInjectingDriver::call_count(std::string_view entry_point) const {
  std::lock_guard<std::mutex> guard(state_->mutex);
  return state_->log.count(entry_point);
}
std::size_t FaultInjectingDriver::total_calls() const {
  std::lock_guard<std::mutex> guard(state_->mutex);
  return state_->log.total();
}
void FaultInjectingDriver::clear_calls() {
  std::lock_guard<std::mutex> guard(state_->mutex);
  state_->log.clear();
}
LiveHandles FaultInjectingDriver::live_handles() const { return state_->tracker.count(); }
std::size_t FaultInjectingDriver::release_leaked() { return state_->tracker.release_all(inner()); }

// ---- DriverApi ---------------------------------------------------------------------------------

#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params)                                 \
  CUresult FaultInjectingDriver::name(GRAPHCAP_PARAMS(params)) {                                \
    DriverApi& wrapped = inner();                                                                \
    const std::optional<CUresult> code =                                                         \
        state_->next(#name, internal::stream_argument(GRAPHCAP_ARGS(params)));                  \
    CUresult result = CUDA_SUCCESS;                                                              \
    if (code) {                                                                                  \
      result = injected(wrapped, entry::name{}, *code GRAPHCAP_TRAILING_ARGS(params));           \
    } else {                                                                                     \
      result = forward(                                                                          \
          wrapped, state_->options, entry::name{},                                              \
          [&] { return wrapped.name(GRAPHCAP_ARGS(params)); } GRAPHCAP_TRAILING_ARGS(params));   \
      if (result == CUDA_SUCCESS) {                                                              \
        track(wrapped, state_->tracker, entry::name{} GRAPHCAP_TRAILING_ARGS(params));          \
      }                                                                                          \
    }                                                                                            \
    state_->record(#name, result, code.has_value());                                             \
    return result;                                                                               \
  }
#include <graphcap/driver/entry_points.def>

}  // namespace graphcap::fake
