// FakeState: the whole simulated driver behind one mutex. FakeDriver forwards every DriverApi
// call through call(), which takes the lock, applies fault injection and logs the call; the
// entry-point implementations below run with the lock held, as do kernel bodies (KernelContext
// reaches back in here without re-locking).
//
// Its parts are implemented one concept per file: contexts.cc (init, devices, contexts and
// reclaiming), memory_calls.cc, stream_calls.cc, event_calls.cc, work_queue.cc (the lazy device:
// running queued work and graph launches), capture_calls.cc (capture sequences and the
// invalidation rules), graph_calls.cc (graphs and executables), module_calls.cc (modules, kernels,
// launches), peer_calls.cc (peer access between devices), vmm_calls.cc (virtual memory
// management), observation.cc (what tests look at).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <unordered_map>
#include <vector>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/entry_traits.h>
#include <graphcap/fake/fake_driver.h>
#include <graphcap/fake/internal/call_log.h>
#include <graphcap/fake/internal/device_memory.h>
#include <graphcap/fake/internal/executable_arena.h>
#include <graphcap/fake/internal/fault_plan.h>
#include <graphcap/fake/internal/graph_model.h>
#include <graphcap/fake/internal/pinned_memory.h>
#include <graphcap/fake/internal/race_check.h>
#include <graphcap/fake/internal/stream_order.h>
#include <graphcap/fake/internal/virtual_memory.h>
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
  // `stream`: the call's CUstream argument (for fail_when's predicates), nullptr if none.
  template <class Run, class OnInjected>
  CUresult call(std::string_view entry_point, CUstream stream, Run&& run,
                OnInjected&& on_injected) {
    std::lock_guard<std::mutex> guard(mutex_);
    current_entry_ = entry_point;  // a literal: names the call that invalidates a capture
    CUresult result = CUDA_SUCCESS;
    const std::optional<CUresult> injected = faults_.next(entry_point, stream);
    if (injected) {
      on_injected();
      result = *injected;
    } else {
      result = run();
    }
    log_.record(entry_point, result, injected.has_value());
    return result;
  }

  // ---- observation and control (each takes the lock) -----------------------------------------
  // `declared`: sizes and alignments (one each per parameter) give the layout; otherwise the
  // kernel has none and its launches are refused.
  void register_kernel(std::string name, bool declared, std::vector<std::size_t> sizes,
                       std::vector<std::size_t> alignments, KernelBody body);
  void fail_call(std::string_view entry_point, CUresult code, int nth);
  void fail_always(std::string_view entry_point, CUresult code);
  void fail_when(std::string_view entry_point, CUresult code, FaultPredicate predicate);
  void clear_faults();
  std::vector<std::string> unfired_faults() const;
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
  std::string capture_invalidation(CUstream stream);  // FakeDriver::capture_invalidation
  std::string stream_fault(CUstream stream);          // FakeDriver::stream_fault
  void annotate_buffer(CUdeviceptr address, std::size_t bytes) noexcept;
  void set_device_paused(bool paused);
  bool read_device(CUdeviceptr address, std::span<std::byte> out);
  bool write_device(CUdeviceptr address, std::span<const std::byte> bytes);
  std::size_t executable_memory(int device);  // FakeDriver::executable_memory

  // ---- entry points (lock held) -----------------------------------------------------------------
  // One per line of entry_points.def, named and typed as the entry point, implemented in the .cc of
  // its concept:  CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode);
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  CUresult name(GRAPHCAP_PARAMS(params));
#include <graphcap/driver/entry_points.def>

  // ---- injected failures (lock held) ------------------------------------------------------------
  // What an injected failure of entry point `Entry` does besides returning its code: the real
  // failure's side effects, and no others, as its traits in entry_points.def say. A stream-ordered
  // call on a capturing stream invalidates that capture; a failed cuStreamEndCapture still ends
  // the capture (*graph = NULL). `stream` and `output` are the call's stream and handle columns.
  template <class Entry, class Output>
  void injected(CUstream stream, Output output) {
    if constexpr (Entry::order == EntryOrder::ordered) injected_captured_operation(stream);
    if constexpr (Entry::capture == EntryCapture::ends) injected_end_capture(stream, output);
    (void)stream;
    (void)output;
  }

  // ---- for KernelContext (lock held: only while a kernel body runs) ---------------------------
  const std::byte* kernel_param(const KernelContext& context, std::size_t param, std::size_t size);
  // `writable`: the body asked for a span of non-const elements (it may write them).
  std::byte* kernel_buffer(const KernelContext& context, std::size_t param, std::size_t bytes,
                           std::size_t align, bool writable);
  void kernel_trap(CUresult code);
  void kernel_set_condition(const KernelContext& context, std::size_t param, unsigned value);
  void kernel_set_condition_handle(const KernelContext& context, CUgraphConditionalHandle handle,
                                   unsigned value);
  bool kernel_range(CUdeviceptr address, KernelContext::DeviceRange* range, std::string* why);
  void kernel_violation(const KernelContext& context, std::string_view text, CUresult code);
  bool kernel_faulted() const { return running_.trap.has_value(); }
  bool strict() const noexcept { return options_.strict; }
  std::uint64_t max_threads_per_launch() const noexcept { return options_.max_threads_per_launch; }
  void kernel_wait_for_predecessor();
  // The programmatic-launch check (PdlWatch) watches the running kernel's accesses.
  bool kernel_watches_accesses() const noexcept { return running_.pdl != nullptr; }
  // One access of parameter `param`'s memory, inside it: checked against the predecessors'
  // writes before wait_for_predecessor(), and (`writable`) kept as this kernel's writes.
  void kernel_watch_access(const KernelContext& context, std::size_t param, CUdeviceptr address,
                           std::size_t bytes, bool writable);
  // The race check records the running work's accesses (accesses_ is set).
  bool kernel_tracks_accesses() const noexcept { return accesses_ != nullptr; }
  void kernel_accessed(CUdeviceptr address, std::size_t bytes, bool writable) {
    if (accesses_ != nullptr) accesses_->add(address, bytes, writable);
  }

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
    std::set<int> peers;  // devices whose memory this context may access (cuCtxEnablePeerAccess)
  };

  struct StreamError {
    CUresult code;
    std::uint64_t seq;  // the queue position of the work that failed
    std::string fault;  // the violation that faulted it (strict), if any: stream_fault()
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
    // The last node captured through this stream in its capture since it began or last set its
    // dependencies (cuStreamUpdateCaptureDependencies, SET), if any: what a join must reach.
    std::vector<std::size_t> captured_last;
    // The race check: event waits (cuStreamWaitEvent outside capture) its operations from
    // `from_seq` on happen after; the clock is the awaited record's, filled when it runs.
    struct EventWait {
      std::uint64_t from_seq = 0;
      std::shared_ptr<internal::VectorClock> clock;
    };
    std::vector<EventWait> waits;
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
    // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: dynamic shared memory a launch may ask for
    // (the 48 KiB default until cuFuncSetAttribute raises it, up to the opt-in limit).
    int max_dynamic_shared = 49152;
  };

  struct Capture {
    std::uint64_t id = 0;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    std::thread::id thread;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CUgraph graph = nullptr;
    std::uint64_t origin = 0;
    std::set<std::uint64_t> members;  // stream ids, origin included
    // The last captured nodes of member streams destroyed while capturing: joined, or 904.
    std::vector<std::size_t> destroyed_members_last;
    int device = 0;
    bool to_graph = false;  // cuStreamBeginCaptureToGraph: its graph existed before it
    bool into_body = false;  // ... a conditional node's body graph
  };

  struct Exec {
    CUgraphExec handle = nullptr;
    int device = 0;
    unsigned long long flags = 0;
    CUgraph source = nullptr;
    std::shared_ptr<const internal::ExecBody> body;
    bool uploaded = false;
    std::size_t driver_bytes = 0;  // what the driver took for it at instantiate
    bool exclusive = false;        // counted in its graph's exclusive_execs
    bool memory = false;           // counted in its graph's memory_execs
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
    // Programmatic dependent launch, eagerly: this kernel's writes are kept for the programmatic
    // launch queued right after it (watch_writes), or this is that launch, after op
    // `programmatic_after`, still queued when it was launched (0: none).
    bool watch_writes = false;
    std::uint64_t programmatic_after = 0;
    // The race check: what the host had waited for when it enqueued this (null: check off).
    std::shared_ptr<const internal::VectorClock> host;
  };

  // The programmatic dependent launch contract around one kernel's execution (the fake's own
  // check: on a GPU a dependent that reads early just reads stale data). A kernel that a
  // programmatic launch follows records what it may write (every span of non-const elements it
  // takes); a programmatic kernel may touch none of its predecessors' writes before
  // KernelContext::wait_for_predecessor().
  struct ByteRange {
    CUdeviceptr begin = 0;
    std::size_t bytes = 0;
  };
  struct PredecessorWrites {
    std::string kernel;  // the predecessor's name, for the message
    std::vector<ByteRange> ranges;
  };
  struct PdlWatch {
    bool record_writes = false;
    PredecessorWrites written;                        // filled when record_writes
    std::vector<const PredecessorWrites*> before_wait;  // a programmatic kernel's predecessors
  };

  // What the work now executing is, for KernelContext's checks and messages, and how it failed.
  struct RunningKernel {
    const internal::KernelDef* kernel = nullptr;
    const internal::KernelWork* work = nullptr;
    std::string where;
    std::optional<CUresult> trap;
    std::string fault;    // the violation behind `trap`, under strict
    bool active = false;  // a node is executing: under strict a violation faults it
    PdlWatch* pdl = nullptr;
    bool waited = false;        // it called wait_for_predecessor()
    bool pdl_reported = false;  // one violation per execution
  };

  // ---- fake_state.cc: handles, threads, contexts ------------------------------------------------
  template <class Handle>
  Handle new_handle() {
    next_handle_ += 0x40;
    return reinterpret_cast<Handle>(static_cast<std::uintptr_t>(next_handle_));
  }
  ThreadState& this_thread();
  CUresult need_init() const;
  // The current context, for a call that uses it. After a fault under strict every such call
  // fails with the fault's code (measured: the H200 answers 700 to everything that touches the
  // context); need_context_to_release is for the calls that release a handle, which succeed
  // (cuGraphExecDestroy measured, the other destroys by the same rule: RAII stays clean).
  CUresult need_context(Context** context);
  CUresult need_context_to_release(Context** context);
  // A device allocation the host owns from now on, if the device has room.
  CUresult allocate_live(const Context& context, std::size_t bytes,
                         internal::DeviceMemory::Kind kind, CUdeviceptr* pointer);
  // Device memory in use on `device`: allocations, physical memory created for virtual memory
  // management, and the chunks the driver holds for executables (what cuMemGetInfo counts).
  std::size_t bytes_in_use(int device) const;
  // Whether `bytes` more fit on `device`.
  bool has_room(int device, std::size_t bytes) const;
  Context* find_context(CUcontext handle);
  void destroy_context(Context& context);
  Stream& new_stream(int device, CUstream handle, unsigned flags, bool legacy);
  void remove_stream(std::uint64_t id);

  // ---- stream_calls.cc ------------------------------------------------------------------------
  CUresult resolve_stream(CUstream handle, Context& context, Stream** stream);
  Stream* find_stream(CUstream handle);  // no errors, no context needed (may create nothing)
  Stream* stream_by_id(std::uint64_t id);
  // A stream not capturing waits on an event recorded in the active `capture`: it joins it,
  // depending on the event's nodes (a fork).
  void fork_into_capture(Stream& stream, Capture& capture, const Event& event);
  // cuGraphLaunch of `body` on `stream`: each WAIT_EVENT node waits as cuStreamWaitEvent would, so
  // an event last recorded in an active capture forks the stream into it.
  void join_captures_of_wait_nodes(Stream& stream, const internal::ExecBody& body);

  // ---- capture_calls.cc -------------------------------------------------------------------------
  Capture* capture_of(const Stream& stream);
  // Where a stream-ordered operation goes: *captured is set when it becomes a node. Errors:
  // 906 (legacy stream next to a capturing blocking stream), 901 (invalidated capture).
  CUresult route(Stream& stream, bool* captured);
  // The common start of every stream-ordered call: a current context, the stream, its route.
  CUresult enter_stream_call(CUstream handle, Context** context, Stream** stream, bool* captured);
  // A captured operation that fails invalidates the capture it was on (and the call that did it
  // is noted from the call log: note_invalidation).
  CUresult refuse(Stream& stream, CUresult code);
  CUresult refuse(Capture& capture, CUresult code);
  void note_invalidation(const Capture& capture, CUresult code);
  // A potentially unsafe call (CUDA's capture-mode rule): 900, invalidating the captures that
  // prohibit it, or CUDA_SUCCESS.
  // `only_active`: only active captures prohibit (cuGraphInstantiateWithFlags with bad flags).
  CUresult check_unsafe_call(bool only_active = false);
  // The capture is over: member streams back to NONE; its graph destroyed unless kept.
  void finish_capture(Capture& capture, bool keep_graph);
  // A failed cuStreamEndCapture: finish_capture, and a graph captured into is destroyed.
  void end_failed_capture(Capture& capture);
  // `programmatic`: a launch with PROGRAMMATIC_STREAM_SERIALIZATION, whose edges from kernel
  // predecessors become programmatic edges.
  void add_node(Stream& stream, internal::NodeWork work, bool programmatic = false);
  // The checks both ways of beginning a capture make (context, stream, mode, not capturing), and
  // the capture they open on `graph` (`to_graph`: the caller's graph, kept whatever the end).
  CUresult capture_entry(CUstream handle, CUstreamCaptureMode mode, Context** context,
                         Stream** stream);
  void open_capture(Stream& stream, const Context& context, CUstreamCaptureMode mode, CUgraph graph,
                    bool to_graph, std::vector<std::size_t> frontier);
  // The side effects of injected failures (see injected above).
  void injected_captured_operation(CUstream handle);
  void injected_end_capture(CUstream handle, CUgraph* graph);
  void refresh_frontier_handles(Stream& stream);
  // event_calls.cc: cuEventQuery/cuEventSynchronize of an event last recorded in a capture.
  CUresult captured_event(const Event& event);
  // memory_calls.cc: the DeviceMemory::Kind of the allocation holding `address`, -1 for none (what
  // a captured copy records of its device sides).
  int memory_kind(CUdeviceptr address);

  // ---- module_calls.cc: both launch entry points ------------------------------------------------
  struct LaunchAttributes {
    bool programmatic = false;  // PROGRAMMATIC_STREAM_SERIALIZATION
    int priority = 0;           // PRIORITY, clamped
    bool priority_given = false;
  };
  CUresult launch(CUfunction function, const LaunchDims& dims, CUstream handle, void** params,
                  void** extra, const LaunchAttributes& attributes, const char* entry_point);

  // ---- work_queue.cc ----------------------------------------------------------------------------
  void enqueue(Stream& stream, const char* entry_point, QueuedWork work);
  void run_until(std::uint64_t seq);
  void run_all();
  void execute(Op& op);
  // False when the work faulted (a kernel trap). `pdl`: the programmatic dependent launch
  // contract around a kernel (nullptr: none).
  bool execute_node(const internal::NodeWork& work, const std::string& where,
                    PdlWatch* pdl = nullptr);
  void execute_kernel(const internal::KernelWork& work, const std::string& where, PdlWatch* pdl);
  void check_before_wait(const KernelContext& context, std::size_t param, CUdeviceptr address,
                         std::size_t bytes);
  // The Buffers graphcap lent where a kernel's 8-byte parameters point at its launch (it is
  // checked against them when it runs: KernelWork::extents).
  std::vector<internal::BufferExtent> launch_extents(const internal::KernelWork& work);
  // Records a violation; while work executes under strict it also faults that work with `code`.
  void violation(std::string text, CUresult code = CUDA_ERROR_ILLEGAL_ADDRESS);
  // The executing work fails with `code` (the first failure wins), `text` saying why.
  void fault(CUresult code, std::string text);
  // The stream's pending fault, reported once, if it happened before `before_seq`.
  std::optional<CUresult> take_error(Stream& stream, std::uint64_t before_seq);
  void tick() { clock_ns_ += 1000; }

  // ---- graph_calls.cc ---------------------------------------------------------------------------
  void erase_graph(CUgraph handle);
  void erase_exec(CUgraphExec handle);
  // What instantiate reports besides its code (cuGraphInstantiateWithParams' result_out and
  // hErrNode_out).
  struct InstantiateReport {
    CUgraphInstantiateResult result = CUDA_GRAPH_INSTANTIATE_ERROR;
    CUgraphNode node = nullptr;
  };
  // Both instantiate entry points: the checks, the executable, and (UPLOAD) its upload on
  // `upload` (`with_params`: cuGraphInstantiateWithParams, which alone takes UPLOAD).
  CUresult instantiate(CUgraphExec* exec, CUgraph handle, unsigned long long flags,
                       CUstream upload, bool with_params, InstantiateReport* report);
  // What an executable of `graph` runs, its conditional nodes' bodies instantiated with it; or the
  // code instantiate answers, with its report (measured: memory nodes in a body are
  // CUDA_ERROR_INVALID_VALUE naming the body's memory node; a handle no node uses is
  // CUDA_ERROR_INVALID_VALUE naming none).
  CUresult instantiate_body(const internal::Graph& graph,
                            std::shared_ptr<const internal::ExecBody>* body,
                            InstantiateReport* report);

  // ---- vmm_calls.cc ---------------------------------------------------------------------------
  // The primary context of `device` is destroyed: its mappings, physical memory and reserved
  // ranges go (the number of handles reclaimed: each a leak of whoever made it).
  std::size_t reclaim_virtual_memory(int device);

  // ---- conditional_nodes.cc ---------------------------------------------------------------------
  CUresult add_conditional_node(internal::Graph& graph, std::vector<std::size_t> deps,
                                CUDA_CONDITIONAL_NODE_PARAMS& params, CUgraphNode* node);
  // Whether `handle` may steer a conditional node of `graph`: created on it or on a graph that
  // holds it (cuda.h: "this graph or one of its children"; measured on the H200), and used by no
  // node yet.
  bool handle_usable(const internal::Graph& graph, CUgraphConditionalHandle handle) const;
  // Runs an executable's nodes (a launch, or a conditional node's body) in order; false when the
  // work faulted (running_.trap says how).
  // `into`: where the nodes' accesses go as well (the conditional node or the launch that ran
  // them), nullptr when the race check is off.
  bool run_graph(const internal::ExecBody& body, CUgraphExec exec, int depth,
                 internal::AccessLog* into);
  bool run_conditional(const internal::ConditionalWork& node, CUgraphExec exec,
                       const std::string& where, int depth, internal::AccessLog* into);

  // ---- race_calls.cc: races, node order and baked addresses ------------------------------------
  // The order a launch runs `body`'s nodes in: its topological order, or under node_order_seed
  // a random one that respects the edges (into `storage`).
  const std::vector<std::size_t>& launch_order(const internal::ExecBody& body,
                                               std::vector<std::size_t>& storage);
  // How messages name node `index` of a launched graph (at conditional `depth`): "node 2 (kernel
  // 'scale')". The one place that names a node: what else the fake learns about an operation
  // (where it was recorded) belongs here.
  static std::string node_label(const internal::NodeData& node, std::size_t index, int depth);
  // After a launch ran `body`'s nodes in `order`: a violation for each pair of them that races
  // (each once per executable); false when that faulted the launch (strict).
  bool check_graph_races(const internal::ExecBody& body,
                         const std::vector<internal::AccessLog>& logs,
                         const std::vector<std::size_t>& order, CUgraphExec exec, int depth);
  // The 8-byte words of a captured kernel's parameters that lie in live device memory now: the
  // addresses a replay will pass as they are (KernelWork::held).
  std::vector<internal::HeldAddress> held_addresses(const internal::KernelWork& work);
  // A replayed kernel's held addresses that lie in no live memory now: a violation each.
  void check_baked(const internal::KernelWork& work, const std::string& where);
  // Eager races between streams: `op` of `stream` starts executing (its stream's clock takes
  // what it happens after); it wrote what `log` holds (a violation for each earlier write there
  // that nothing orders before it; the first one's text in *text); a record of `event` ran on
  // `stream`; `stream` waits for `event` from its next operation on; the host waited for a
  // stream's work so far, for an event's record, or for everything queued.
  void begin_eager(const Op& op, const Stream& stream);
  bool check_eager_writes(const Op& op, const Stream& stream, const internal::AccessLog& log,
                          std::string* text);
  void eager_record(const Op& op, CUevent event);
  void eager_wait(Stream& stream, CUevent event, const Event& awaited);
  void host_waited(const Stream& stream);
  void host_waited(CUevent event);
  void host_waited_all();
  std::string stream_name(const Stream& stream) const;
  // `body` (an instantiation of `graph`) with node `index` of `target` (`graph` or a body graph
  // nested in it) replaced by `work`: changed in place when nothing else holds it, else a copy;
  // nullptr when `target` holds no such kernel node.
  std::shared_ptr<const internal::ExecBody> with_kernel(
      const std::shared_ptr<const internal::ExecBody>& body, CUgraph graph, CUgraph target,
      std::size_t index, const internal::KernelWork& work);

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
  std::map<CUgraphConditionalHandle, internal::ConditionDef> conditions_;
  std::uint64_t next_condition_ = 1;
  // Each conditional node's body graphs: the array cuGraphAddNode hands out as phGraph_out.
  std::map<CUgraphNode, std::vector<CUgraph>> node_bodies_;
  // Conditional values, per executable (a launch assigns the defaults; kernels set them).
  std::map<std::pair<CUgraphExec, CUgraphConditionalHandle>, unsigned> condition_values_;
  CUgraphExec running_exec_ = nullptr;  // the executable whose nodes now run, if any
  const std::vector<internal::ConditionDef>* running_conditions_ = nullptr;

  internal::DeviceMemory device_memory_;
  internal::PinnedMemory pinned_memory_;
  internal::VirtualMemory virtual_memory_;
  internal::ExecutableArena executable_arena_;
  std::deque<Op> queue_;
  RunningKernel running_;
  // Where the running work's accesses go for the race check (nullptr: not recorded).
  internal::AccessLog* accesses_ = nullptr;
  std::mt19937_64 order_random_;  // node_order_seed's generator
  // The eager race check: each stream's clock (by id), the host's (shared by the operations it
  // enqueued since it last changed), each event's last executed record, records still queued
  // that event waits await (by seq), and the last writer of every range.
  std::map<std::uint64_t, internal::VectorClock> stream_clocks_;
  std::shared_ptr<const internal::VectorClock> host_clock_ =
      std::make_shared<const internal::VectorClock>();
  std::map<CUevent, internal::VectorClock> event_clocks_;
  std::multimap<std::uint64_t, std::shared_ptr<internal::VectorClock>> awaited_records_;
  internal::LastWrites last_writes_;
  // Eager programmatic launches: what each watched op wrote, until its dependent runs (by seq).
  std::map<std::uint64_t, PredecessorWrites> pdl_writes_;

  internal::FaultPlan faults_;
  internal::CallLog log_;
  std::string_view current_entry_;  // the entry point of the call in progress (under mutex_)
  // Per origin stream id: what invalidated the capture it last began (capture_invalidation).
  std::map<std::uint64_t, std::string> invalidations_;
  std::vector<std::string> violations_;
  // Under strict, the fault that ended the device (the first one): every later call that touches
  // a context fails with its code, and no queued work runs any more (docs/fake-driver.md, "Faults
  // and violations"). For the fake's lifetime, as for a GPU process.
  std::optional<CUresult> sticky_;
  std::string sticky_fault_;
  // Per stream id: the violation behind the fault its last failed wait reported (stream_fault).
  std::map<std::uint64_t, std::string> reported_faults_;
  std::size_t reclaimed_ = 0;
};

}  // namespace graphcap::fake
