// FaultInjectingDriver: each entry point asks the shared FaultPlan whether this call fails; a
// failed call runs its row of the undo table (fault_injecting_driver.h) instead of the call, a
// passing one is forwarded and tracked; either way the call is logged under its name. The undo
// rules and the tracking follow from each entry point's traits (entry_points.def).
#include <graphcap/fake/fault_injecting_driver.h>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include <graphcap/fake/internal/call_log.h>
#include <graphcap/driver/entry_traits.h>
#include <graphcap/fake/internal/fault_plan.h>

namespace graphcap::fake {
namespace {

// ---- handles created and released through the decorator ---------------------------------------

// A handle as the tracker keys it: pointers and integers (CUdeviceptr, the device of a context).
template <class H>
std::uintptr_t key_of(H handle) {
  if constexpr (std::is_pointer_v<H>) {
    return reinterpret_cast<std::uintptr_t>(handle);
  } else {
    return static_cast<std::uintptr_t>(handle);
  }
}
template <class H>
H handle_of(std::uintptr_t key) {
  if constexpr (std::is_pointer_v<H>) {
    return reinterpret_cast<H>(key);
  } else {
    return static_cast<H>(key);
  }
}

// Live handles by kind (entry_traits.h's HandleKind), each with its count: contexts count
// retains, every other handle is there once. An address range (a reservation, a mapping) keeps its
// size too: its release takes (address, size).
class Tracker {
 public:
  static constexpr std::size_t kKinds = kHandleKindCount;

  void add(HandleKind kind, std::uintptr_t key, std::size_t extent = 0) {
    std::lock_guard<std::mutex> guard(mutex_);
    Held& held = handles_[index(kind)][key];
    held.count = kind == HandleKind::contexts ? held.count + 1 : 1;
    held.extent = extent;
  }
  void remove(HandleKind kind, std::uintptr_t key) {
    std::lock_guard<std::mutex> guard(mutex_);
    auto& handles = handles_[index(kind)];
    auto it = handles.find(key);
    if (it != handles.end() && --it->second.count == 0) handles.erase(it);
  }

  LiveHandles count() const {
    std::lock_guard<std::mutex> guard(mutex_);
    LiveHandles live;
    for (std::size_t kind = 1; kind < kKinds; ++kind) {
      for (const auto& [key, held] : handles_[kind]) {
        live.*LiveHandles::field(static_cast<HandleKind>(kind)) += held.count;
      }
    }
    return live;
  }

  // Forgets everything and releases it through `driver`, dependents first (the kinds in reverse:
  // mappings, physical memory, address ranges, allocations, executables, graphs, modules, events,
  // streams, then context references), each with the release entry_points.def names for its kind.
  // A stream whose capture into a conditional body was begun and never ended is forgotten, not
  // destroyed: destroying one whose capture was invalidated crashed the driver (SIGSEGV); and so
  // is the context reference, whose end would destroy it.
  std::size_t release_all(DriverApi& driver) {
    std::array<std::map<std::uintptr_t, Held>, kKinds> taken;
    std::map<std::uintptr_t, std::uintptr_t> into;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      taken.swap(handles_);
      into.swap(into_);
    }
    std::size_t released = 0;
    bool kept_stream = false;
    for (const auto& [key, held] : taken[index(HandleKind::streams)]) {
      kept_stream = kept_stream || into.count(key) != 0;
    }
    for (std::size_t kind = kKinds - 1; kind >= 1; --kind) {
      if (static_cast<HandleKind>(kind) == HandleKind::contexts && kept_stream) continue;
      for (const auto& [key, held] : taken[kind]) {
        if (static_cast<HandleKind>(kind) == HandleKind::streams && into.count(key) != 0) continue;
        for (std::size_t i = 0; i < held.count; ++i) {
          release(driver, static_cast<HandleKind>(kind), key, held.extent);
          ++released;
        }
      }
    }
    return released;
  }

 private:
  struct Held {
    std::size_t count = 0;
    std::size_t extent = 0;  // an address range's size
  };
  static std::size_t index(HandleKind kind) { return static_cast<std::size_t>(kind); }

  // The release of `kind`: one parameter (the handle), or an address range's (address, size).
  template <class Entry, class... Params>
  static bool release_with(DriverApi& driver, HandleKind kind, std::uintptr_t key,
                           std::size_t extent, CUresult (DriverApi::*destroy)(Params...)) {
    if constexpr (Entry::handle == EntryHandle::releases && sizeof...(Params) == 1) {
      if (kind == Entry::kind) {
        (void)(driver.*destroy)(handle_of<Params...>(key));
        return true;
      }
    } else if constexpr (Entry::handle == EntryHandle::releases &&
                         std::is_same_v<std::tuple<Params...>,
                                        std::tuple<CUdeviceptr, std::size_t>>) {
      if (kind == Entry::kind) {
        (void)(driver.*destroy)(static_cast<CUdeviceptr>(key), extent);
        return true;
      }
    }
    (void)driver, (void)kind, (void)key, (void)extent, (void)destroy;
    return false;
  }
  static void release(DriverApi& driver, HandleKind kind, std::uintptr_t key,
                      std::size_t extent) {
    (void)(false
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  || release_with<entry::name>(driver, kind, key, extent, &DriverApi::name)
#include <graphcap/driver/entry_points.def>
    );
  }

  mutable std::mutex mutex_;
  std::array<std::map<std::uintptr_t, Held>, kKinds> handles_;

 public:
  // Captures into an existing graph (cuStreamBeginCaptureToGraph: a conditional node's body) end
  // with that graph, which is the node's (or the caller's), not a new handle.
  void captures_into(CUstream stream, CUgraph graph) {
    std::lock_guard<std::mutex> guard(mutex_);
    into_[key_of(stream)] = key_of(graph);
  }
  // `stream`'s capture ended with `graph`: false when that graph is not a new one.
  bool ended_new(CUstream stream, CUgraph graph) {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = into_.find(key_of(stream));
    if (it == into_.end()) return true;
    const bool fresh = it->second != key_of(graph);
    into_.erase(it);
    return fresh;
  }

 private:
  std::map<std::uintptr_t, std::uintptr_t> into_;  // stream -> the graph it captures into
};

bool capturing(DriverApi& driver, CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return driver.cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS &&
         status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

// What a call that succeeded created or released (its handle column): `handle` is the parameter
// the column names, `extent` the created range's size (0 when the column names none). A
// stream-ordered call on a capturing stream is a graph node: nothing now.
template <class Entry, class Handle, class Extent>
void track(DriverApi& driver, Tracker& tracker, CUstream stream, Handle handle, Extent extent) {
  if constexpr (Entry::handle != EntryHandle::none) {
    if constexpr (Entry::order == EntryOrder::ordered) {
      if (capturing(driver, stream)) return;
    }
    const auto size = static_cast<std::size_t>(extent);
    if constexpr (Entry::handle == EntryHandle::creates && std::is_pointer_v<Handle>) {
      if (handle != nullptr) tracker.add(Entry::kind, key_of(*handle), size);
    } else if constexpr (Entry::handle == EntryHandle::creates) {
      // A context, retained on the device `handle`; a mapping, at the address `handle`.
      tracker.add(Entry::kind, key_of(handle), size);
    } else {
      tracker.remove(Entry::kind, key_of(handle));
    }
  }
  (void)driver, (void)tracker, (void)stream, (void)handle, (void)extent;
}

// What a capture into an existing graph begins and ends (beside track: the handle column cannot
// say that such an end creates nothing).
template <class Entry, class... Args>
void note(Tracker&, Entry, const Args&...) {}
template <class... Rest>
void note(Tracker& tracker, entry::cuStreamBeginCaptureToGraph, CUstream stream, CUgraph graph,
          const Rest&...) {
  tracker.captures_into(stream, graph);
}
void note(Tracker& tracker, entry::cuStreamEndCapture, CUstream stream, CUgraph* graph) {
  if (graph != nullptr && *graph != nullptr && !tracker.ended_new(stream, *graph)) {
    tracker.remove(HandleKind::graphs, key_of(*graph));
  }
}

// ---- the undo table (fault_injecting_driver.h): what a failed call does ------------------------

// From the entry point's traits. By default the call is not forwarded (no effect), except:
//   ends     the capture must end: forward it, discard the graph (unless the capture was into an
//            existing graph, a conditional body: that one is the node's), report the failure with
//            a NULL graph (`output` is the graph parameter);
//   waits    the wait happens (`call` forwards the call), then the failure is reported;
//   ordered  on a capturing stream, the capture is invalidated the way a real refused call does:
//            cuStreamQuery of a capturing stream is 900 and invalidates it in every capture mode
//            (docs/cuda-driver-facts.md, "What invalidates a capture"), adding nothing to it.
template <class Entry, class Call, class Output>
CUresult injected(DriverApi& driver, Tracker& tracker, CUresult code, Call&& call,
                  CUstream stream, Output output) {
  if constexpr (Entry::capture == EntryCapture::ends) {
    CUgraph ended = nullptr;
    if (driver.cuStreamEndCapture(stream, &ended) == CUDA_SUCCESS && ended != nullptr &&
        tracker.ended_new(stream, ended)) {
      (void)driver.cuGraphDestroy(ended);
    }
    if (output != nullptr) *output = nullptr;
  } else if constexpr (Entry::host == EntryHost::waits) {
    (void)call();
  } else if constexpr (Entry::order == EntryOrder::ordered) {
    if (capturing(driver, stream)) (void)driver.cuStreamQuery(stream);
  }
  (void)driver, (void)tracker, (void)call, (void)stream, (void)output;
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
std::vector<std::string> FaultInjectingDriver::unfired_faults() const {
  std::lock_guard<std::mutex> guard(state_->mutex);
  return state_->plan.unfired();
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

#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, traits)                          \
  CUresult FaultInjectingDriver::name(GRAPHCAP_PARAMS(params)) {                                 \
    DriverApi& wrapped = inner();                                                                 \
    const std::optional<CUresult> code = state_->next(#name, GRAPHCAP_TRAIT_STREAM(traits));     \
    auto call = [&] { return wrapped.name(GRAPHCAP_ARGS(params)); };                              \
    CUresult result = CUDA_SUCCESS;                                                               \
    if (code) {                                                                                   \
      result = injected<entry::name>(wrapped, state_->tracker, *code, call,                       \
                                     GRAPHCAP_TRAIT_STREAM(traits),                               \
                                     GRAPHCAP_TRAIT_HANDLE_PARAM(traits));                        \
    } else {                                                                                      \
      result = forward(wrapped, state_->options, entry::name{},                                   \
                       call GRAPHCAP_TRAILING_ARGS(params));                                      \
      if (result == CUDA_SUCCESS) {                                                               \
        track<entry::name>(wrapped, state_->tracker, GRAPHCAP_TRAIT_STREAM(traits),               \
                           GRAPHCAP_TRAIT_HANDLE_PARAM(traits),                                   \
                           GRAPHCAP_TRAIT_HANDLE_EXTENT(traits));                                 \
        note(state_->tracker, entry::name{} GRAPHCAP_TRAILING_ARGS(params));                      \
      }                                                                                           \
    }                                                                                             \
    state_->record(#name, result, code.has_value());                                              \
    return result;                                                                                \
  }
#include <graphcap/driver/entry_points.def>

}  // namespace graphcap::fake
