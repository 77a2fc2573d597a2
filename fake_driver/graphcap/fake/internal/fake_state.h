// FakeState: the whole simulated driver behind one mutex. FakeDriver forwards every DriverApi
// call through call(), which takes the lock, applies fault injection and logs the call; the
// entry-point implementations below run with the lock held, as do kernel bodies (KernelContext
// reaches back in here without re-locking).
//
// Its parts are implemented one concept per file: contexts.cc (init, devices, contexts and
// reclaiming), memory_calls.cc, stream_calls.cc, event_calls.cc, work_queue.cc (the lazy device:
// running queued work and graph launches), capture_calls.cc (capture sequences and the
// invalidation rules), graph_calls.cc (graphs and executables), module_calls.cc (modules, kernels,
// launches), observation.cc (what tests look at).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <unordered_map>
#include <vector>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/fake/fake_driver.h>
#include <graphcap/fake/internal/call_log.h>
#include <graphcap/fake/internal/device_memory.h>
#include <graphcap/fake/internal/fault_plan.h>
#include <graphcap/fake/internal/graph_model.h>
#include <graphcap/fake/internal/pinned_memory.h>
#include <graphcap/fake/internal/work.h>

namespace graphcap::fake {

class FakeState {
 public:
  explicit FakeState(FakeDriverOptions options);
  ~FakeState();
  FakeState(const FakeState&) = delete;
  FakeState& operator=(const FakeState&) = delete;

  // One DriverApi call: lock, fault injection (an injected code skips `run` and applies only
  // `on_injected`, the real failure's side effects), the call itself, the log.
  template <class Run, class OnInjected>
  CUresult call(std::string_view entry_point, Run&& run, OnInjected&& on_injected) {
    std::lock_guard<std::mutex> guard(mutex_);
    CUresult result = CUDA_SUCCESS;
    const std::optional<CUresult> injected = faults_.next(entry_point);
    if (injected) {
      on_injected();
      result = *injected;
    } else {
      result = run();
    }
    log_.record(entry_point, result, injected.has_value());
    return result;
  }
  template <class Run>
  CUresult call(std::string_view entry_point, Run&& run) {
    return call(entry_point, std::forward<Run>(run), [] {});
  }

  // ---- observation and control (each takes the lock) -----------------------------------------
  // `declared`: sizes and alignments (one each per parameter) give the layout; otherwise the
  // kernel has none and its launches are refused.
  void register_kernel(std::string name, bool declared, std::vector<std::size_t> sizes,
                       std::vector<std::size_t> alignments, KernelBody body);
  void fail_call(std::string_view entry_point, CUresult code, int nth);
  void fail_always(std::string_view entry_point, CUresult code);
  void clear_faults();
  std::vector<CallRecord> calls() const;
  std::size_t call_count(std::string_view entry_point) const;
  std::size_t total_calls() const;
  void clear_calls();
  // Not const: they resolve handles the way entry points do (per-thread state).
  LiveHandles live_handles();
  std::size_t reclaimed_handles() const;
  std::vector<std::string> violations() const;
  void clear_violations();
  std::size_t pending_operations(CUstream stream);
  void run_pending();
  void set_device_paused(bool paused);
  bool read_device(CUdeviceptr address, std::span<std::byte> out);
  bool write_device(CUdeviceptr address, std::span<const std::byte> bytes);

  // ---- entry points (lock held) -----------------------------------------------------------------
  CUresult init(unsigned flags);
  CUresult driver_get_version(int* version);
  CUresult device_get_count(int* count);
  CUresult device_get(CUdevice* device, int ordinal);
  CUresult device_get_name(char* name, int length, CUdevice device);
  CUresult device_get_attribute(int* value, CUdevice_attribute attribute, CUdevice device);
  CUresult primary_ctx_retain(CUcontext* context, CUdevice device);
  CUresult primary_ctx_release(CUdevice device);
  CUresult ctx_set_current(CUcontext context);
  CUresult ctx_get_current(CUcontext* context);
  CUresult ctx_synchronize();

  CUresult stream_create(CUstream* stream, unsigned flags);
  CUresult stream_destroy(CUstream stream);
  CUresult stream_synchronize(CUstream stream);
  CUresult stream_query(CUstream stream);
  CUresult stream_wait_event(CUstream stream, CUevent event, unsigned flags);
  CUresult begin_capture(CUstream stream, CUstreamCaptureMode mode);
  CUresult end_capture(CUstream stream, CUgraph* graph);
  CUresult is_capturing(CUstream stream, CUstreamCaptureStatus* status);
  CUresult get_capture_info(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id,
                            CUgraph* graph, const CUgraphNode** dependencies,
                            const CUgraphEdgeData** edge_data, std::size_t* dependency_count);
  CUresult exchange_capture_mode(CUstreamCaptureMode* mode);

  CUresult event_create(CUevent* event, unsigned flags);
  CUresult event_destroy(CUevent event);
  CUresult event_record(CUevent event, CUstream stream);
  CUresult event_query(CUevent event);
  CUresult event_synchronize(CUevent event);
  CUresult event_elapsed_time(float* milliseconds, CUevent start, CUevent end);

  CUresult mem_get_info(std::size_t* free, std::size_t* total);
  CUresult mem_alloc(CUdeviceptr* pointer, std::size_t bytes);
  CUresult mem_free(CUdeviceptr pointer);
  CUresult mem_alloc_async(CUdeviceptr* pointer, std::size_t bytes, CUstream stream);
  CUresult mem_free_async(CUdeviceptr pointer, CUstream stream);
  CUresult mem_alloc_host(void** pointer, std::size_t bytes);
  CUresult mem_free_host(void* pointer);
  CUresult memcpy_htod(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream stream);
  CUresult memcpy_dtoh(void* dst, CUdeviceptr src, std::size_t bytes, CUstream stream);
  CUresult memset_d8(CUdeviceptr dst, unsigned char value, std::size_t count, CUstream stream);

  CUresult module_load(CUmodule* module, const void* image);
  CUresult module_unload(CUmodule module);
  CUresult module_get_function(CUfunction* function, CUmodule module, const char* name);
  CUresult launch_kernel(CUfunction function, const LaunchDims& dims, CUstream stream,
                         void** params, void** extra);

  CUresult graph_get_nodes(CUgraph graph, CUgraphNode* nodes, std::size_t* count);
  CUresult graph_node_get_type(CUgraphNode node, CUgraphNodeType* type);
  CUresult graph_instantiate(CUgraphExec* exec, CUgraph graph, unsigned long long flags);
  CUresult graph_upload(CUgraphExec exec, CUstream stream);
  CUresult graph_launch(CUgraphExec exec, CUstream stream);
  CUresult graph_exec_update(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* info);
  CUresult graph_destroy(CUgraph graph);
  CUresult graph_exec_destroy(CUgraphExec exec);
  CUresult graph_dot_print(CUgraph graph, const char* path, unsigned flags);

  CUresult get_error_name(CUresult error, const char** name);
  CUresult get_error_string(CUresult error, const char** text);

  // Side effects of an injected failure (lock held): a stream-ordered operation on a capturing
  // stream invalidates its capture; cuStreamEndCapture still ends the capture.
  void injected_captured_operation(CUstream stream);
  void injected_end_capture(CUstream stream, CUgraph* graph);

  // ---- for KernelContext (lock held: only while a kernel body runs) ---------------------------
  const std::byte* kernel_param(const KernelContext& context, std::size_t param, std::size_t size);
  std::byte* kernel_buffer(const KernelContext& context, std::size_t param, std::size_t bytes,
                           std::size_t align);
  void kernel_trap(CUresult code);

 private:
  struct ThreadState {
    CUcontext context = nullptr;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  };

  struct Context {
    CUcontext handle = nullptr;
    int device = 0;
    unsigned refs = 0;
    std::uint64_t default_stream = 0;  // the legacy NULL stream of this context
  };

  struct StreamError {
    CUresult code;
    std::uint64_t seq;  // the queue position of the work that failed
  };

  struct Stream {
    std::uint64_t id = 0;
    CUstream handle = nullptr;  // the user's handle; nullptr for the NULL / per-thread streams
    int device = 0;
    unsigned flags = CU_STREAM_DEFAULT;
    bool legacy = false;  // the context's NULL stream
    std::uint64_t last_seq = 0;
    std::size_t pending = 0;
    std::optional<StreamError> error;
    std::uint64_t capture = 0;                  // capture sequence id, 0 when not capturing
    std::vector<std::size_t> frontier;          // nodes the next captured node depends on
    std::vector<CUgraphNode> frontier_handles;  // storage for cuStreamGetCaptureInfo
  };

  struct Event {
    CUevent handle = nullptr;
    int device = 0;
    unsigned flags = 0;
    enum class State { never, recorded, captured } state = State::never;
    // recorded outside capture
    std::uint64_t record_seq = 0;
    std::uint64_t stream = 0;
    bool done = false;
    std::uint64_t time_ns = 0;
    // recorded inside a capture
    std::uint64_t capture = 0;
    std::vector<std::size_t> nodes;
  };

  struct Module {
    CUmodule handle = nullptr;
    int device = 0;
    std::map<std::string, std::shared_ptr<const internal::KernelDef>> kernels;
    std::map<std::string, CUfunction> functions;
  };

  struct Function {
    CUmodule module = nullptr;
    std::shared_ptr<const internal::KernelDef> kernel;
  };

  struct Capture {
    std::uint64_t id = 0;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    std::thread::id thread;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CUgraph graph = nullptr;
    std::uint64_t origin = 0;
    std::set<std::uint64_t> members;  // stream ids, origin included
    int device = 0;
  };

  struct Exec {
    CUgraphExec handle = nullptr;
    int device = 0;
    unsigned long long flags = 0;
    CUgraph source = nullptr;
    std::shared_ptr<const internal::ExecBody> body;
    bool uploaded = false;
  };

  struct EventRecordWork {
    CUevent event;
  };
  struct GraphLaunchWork {
    std::shared_ptr<const internal::ExecBody> body;
    CUgraphExec exec;
  };
  using QueuedWork = std::variant<internal::NodeWork, EventRecordWork, GraphLaunchWork>;
  struct Op {
    std::uint64_t seq;
    std::uint64_t stream;
    const char* entry_point;
    QueuedWork work;
  };

  // What the kernel body now running is, for KernelContext's checks and messages.
  struct RunningKernel {
    const internal::KernelDef* kernel = nullptr;
    std::string where;
    std::optional<CUresult> trap;
  };

  // ---- fake_state.cc: handles, threads, contexts ------------------------------------------------
  template <class Handle>
  Handle new_handle() {
    next_handle_ += 0x40;
    return reinterpret_cast<Handle>(static_cast<std::uintptr_t>(next_handle_));
  }
  ThreadState& this_thread();
  CUresult need_init() const;
  CUresult need_context(Context** context);
  // A device allocation the host owns from now on, if the device has room.
  CUresult allocate_live(const Context& context, std::size_t bytes,
                         internal::DeviceMemory::Kind kind, CUdeviceptr* pointer);
  Context* find_context(CUcontext handle);
  void destroy_context(Context& context);
  Stream& new_stream(int device, CUstream handle, unsigned flags, bool legacy);
  void remove_stream(std::uint64_t id);

  // ---- stream_calls.cc ------------------------------------------------------------------------
  CUresult resolve_stream(CUstream handle, Context& context, Stream** stream);
  Stream* find_stream(CUstream handle);  // no errors, no context needed (may create nothing)
  Stream* stream_by_id(std::uint64_t id);

  // ---- capture_calls.cc -------------------------------------------------------------------------
  Capture* capture_of(const Stream& stream);
  // Where a stream-ordered operation goes: *captured is set when it becomes a node. Errors:
  // 906 (legacy stream next to a capturing blocking stream), 901 (invalidated capture).
  CUresult route(Stream& stream, bool* captured);
  // The common start of every stream-ordered call: a current context, the stream, its route.
  CUresult enter_stream_call(CUstream handle, Context** context, Stream** stream, bool* captured);
  // A captured operation that fails invalidates the capture it was on.
  CUresult refuse(Stream& stream, CUresult code);
  CUresult refuse(Capture& capture, CUresult code);
  // A potentially unsafe call (CUDA's capture-mode rule): 900, invalidating the captures that
  // prohibit it, or CUDA_SUCCESS.
  CUresult check_unsafe_call();
  // The capture is over: member streams back to NONE; its graph destroyed unless kept.
  void finish_capture(Capture& capture, bool keep_graph);
  void add_node(Stream& stream, internal::NodeWork work);
  void refresh_frontier_handles(Stream& stream);

  // ---- work_queue.cc ----------------------------------------------------------------------------
  void enqueue(Stream& stream, const char* entry_point, QueuedWork work);
  void run_until(std::uint64_t seq);
  void run_all();
  void execute(Op& op);
  // False when the work faulted (a kernel trap).
  bool execute_node(const internal::NodeWork& work, const std::string& where);
  void execute_kernel(const internal::KernelWork& work, const std::string& where);
  void violation(std::string text);
  // The stream's pending fault, reported once, if it happened before `before_seq`.
  std::optional<CUresult> take_error(Stream& stream, std::uint64_t before_seq);
  void tick() { clock_ns_ += 1000; }

  // ---- graph_calls.cc ---------------------------------------------------------------------------
  void erase_graph(CUgraph handle);
  void erase_exec(CUgraphExec handle);

  const std::uint64_t serial_;  // tells this instance's per-thread state from other instances'
  std::unordered_map<std::uint64_t, ThreadState> thread_states_;  // by thread_serial()
  const FakeDriverOptions options_;
  mutable std::mutex mutex_;

  bool initialized_ = false;
  std::uint64_t next_handle_ = 0x100000;
  std::uint64_t next_stream_id_ = 1;
  std::uint64_t next_capture_id_ = 1;
  std::uint64_t next_seq_ = 1;
  std::uint64_t clock_ns_ = 0;
  bool paused_ = false;

  std::vector<Context> contexts_;  // one primary context per device
  std::map<std::uint64_t, std::unique_ptr<Stream>> streams_;
  std::map<CUstream, std::uint64_t> user_streams_;
  std::map<std::pair<std::thread::id, int>, std::uint64_t> per_thread_streams_;
  std::map<CUevent, Event> events_;
  std::map<std::string, std::shared_ptr<const internal::KernelDef>> kernels_;
  std::map<CUmodule, Module> modules_;
  std::map<CUfunction, Function> functions_;
  std::map<std::uint64_t, Capture> captures_;
  std::map<CUgraph, internal::Graph> graphs_;
  std::map<CUgraphNode, std::pair<CUgraph, std::size_t>> nodes_;
  std::map<CUgraphExec, Exec> execs_;

  internal::DeviceMemory device_memory_;
  internal::PinnedMemory pinned_memory_;
  std::deque<Op> queue_;
  RunningKernel running_;

  internal::FaultPlan faults_;
  internal::CallLog log_;
  std::vector<std::string> violations_;
  std::size_t reclaimed_ = 0;
};

}  // namespace graphcap::fake
