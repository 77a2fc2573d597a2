// FakeDriver: a simulated CUDA driver behind DriverApi. Device memory is host memory behind fake
// device addresses (bounds- and liveness-checked), streams queue work that runs lazily (the
// slowest legal device: work runs when the host waits for it), kernels are registered host
// functions, and captures, graphs and executables follow the rules measured on an H200
// (docs/cuda-driver-facts.md; the rules one by one in docs/fake-driver.md). Thread-safe.
//
// Knows nothing of graphcap above DriverApi.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/driver/launch_dims.h>
#include <graphcap/fake/faults.h>

namespace graphcap::fake {

class FakeState;  // the simulated device, private to the implementation

// One declared kernel parameter: where it lies in the kernel's parameter buffer and how many bytes
// it has, as cuFuncGetParamInfo reports them for a real kernel.
struct KernelParamInfo {
  std::size_t offset = 0;
  std::size_t size = 0;
  friend bool operator==(const KernelParamInfo&, const KernelParamInfo&) = default;
};

// What a fake kernel body sees for one launch (eager, or one replay of a captured node).
class KernelContext {
 public:
  // A by-value parameter. T must be trivially copyable and exactly the declared size of the
  // parameter. A size mismatch or an index past the declared count is recorded as a violation
  // and gives T{}.
  template <class T>
  T value(std::size_t param) const {
    static_assert(std::is_trivially_copyable_v<T>);
    T out{};
    if (const std::byte* bytes = param_bytes(param, sizeof(T))) std::memcpy(&out, bytes, sizeof(T));
    return out;
  }

  // A device-pointer parameter (declared as 8 bytes) as host memory: `count` elements of T from
  // the address the parameter holds. The range must lie inside one live device allocation, and
  // inside one Buffer where graphcap lends Buffers out of it (DriverApi::annotate_buffer: a pooled
  // slice is checked against the Buffer's own size); a violation (freed, foreign or
  // out-of-bounds memory) is recorded, and the span covers scratch memory instead, so the body
  // runs on without touching anything real. Under FakeDriverOptions::strict the violation also
  // fails the launch, as the GPU's fault would. Ask for const elements (buffer<const float>)
  // where the body only reads: a span of non-const elements counts as written for the
  // programmatic-launch check (wait_for_predecessor).
  template <class T>
  std::span<T> buffer(std::size_t param, std::size_t count) const {
    static_assert(std::is_trivially_copyable_v<T>);
    std::byte* bytes = device_bytes(param, count * sizeof(T), alignof(T), !std::is_const_v<T>);
    return {reinterpret_cast<T*>(bytes), bytes ? count : 0};
  }

  const LaunchDims& dims() const noexcept { return dims_; }
  std::string_view kernel_name() const noexcept { return name_; }

  // The kernel's declared parameter layout (the launch supplied exactly these parameters).
  std::size_t param_count() const noexcept { return layout_.size(); }
  // The declared size of parameter `param`; 0 past the declared count.
  std::size_t param_size(std::size_t param) const noexcept {
    return param < layout_.size() ? layout_[param].size : 0;
  }
  // Offset and size of each parameter in the kernel's parameter buffer, in order.
  std::span<const KernelParamInfo> param_layout() const noexcept { return layout_; }

  // Make this execution fail as a device fault does: the calls that wait for this work on its
  // stream (cuStreamSynchronize, cuStreamQuery, cuEventSynchronize, cuCtxSynchronize) return
  // `code`. Under FakeDriverOptions::strict (the default) the fault is sticky, as on a GPU: every
  // wait of any stream returns it from then on, and every other call that uses a context fails
  // with it (docs/fake-driver.md, "Faults and violations"). Without strict it is the stream's
  // error, reported once by its next wait.
  void trap(CUresult code = CUDA_ERROR_LAUNCH_FAILED) const;

  // ---- for bodies that check their own accesses (GRAPHCAP_KERNEL's do) ----------------------
  // The device memory `address` lies in: the Buffer graphcap annotated there, or else its live
  // allocation. `host` is the host memory of its first byte. False when the address lies in no
  // live memory; `why` then ends a sentence about it ("is in freed memory (...)").
  struct DeviceRange {
    std::byte* host = nullptr;
    CUdeviceptr base = 0;
    std::size_t size = 0;
    bool buffer = false;  // an annotated Buffer (a pooled slice), not a whole allocation
    bool mapping = false;  // the allocation is a VMM mapping (and the accessible ones after it)
    CUdeviceptr allocation = 0;
    std::size_t allocation_size = 0;
  };
  bool device_range(CUdeviceptr address, DeviceRange* range, std::string* why) const;
  // Why [address, address + bytes) does not fit in `range` (which holds address): "0x... (4
  // bytes) runs 4 bytes past the end of the Buffer at 0x... of 64 bytes (in allocation ...)".
  static std::string overrun(const DeviceRange& range, CUdeviceptr address, std::size_t bytes);
  // Record a violation by this kernel: "<where>: kernel '<name>' <text>". Under
  // FakeDriverOptions::strict the launch fails with `code` (the fault the GPU would report).
  void violation(std::string_view text, CUresult code = CUDA_ERROR_ILLEGAL_ADDRESS) const;
  // Whether this execution has faulted (a trap, or a violation under strict): a GPU would have
  // stopped the kernel.
  bool faulted() const;
  // Whether violations fail the launch (FakeDriverOptions::strict).
  bool strict() const;
  // FakeDriverOptions::max_threads_per_launch.
  std::uint64_t max_threads_per_launch() const;
  // Whether the programmatic-launch check (wait_for_predecessor) watches this execution's
  // accesses: a body that checks its own accesses then reports each access that lies inside its
  // memory through watch_access (GRAPHCAP_KERNEL's ptr<T> does; buffer() does it itself).
  bool watches_accesses() const;
  // One access of [address, address + bytes), inside parameter `param`'s memory; `writable`: the
  // body may write it (a ptr<T> of non-const T).
  void watch_access(std::size_t param, CUdeviceptr address, std::size_t bytes,
                    bool writable) const;
  // Whether the race check (FakeDriverOptions::detect_races) records this execution's accesses:
  // a body that checks its own accesses then reports the ranges it touched inside its memory
  // through accessed() (GRAPHCAP_KERNEL's ptr<T> does, once per launch, its ranges merged;
  // buffer() does it itself). `writable`: the body may write them (a ptr<T> of non-const T).
  bool tracks_accesses() const;
  void accessed(CUdeviceptr address, std::size_t bytes, bool writable) const;
  // cudaGraphSetConditional(handle, value): set_condition below, for a handle the body holds.
  void set_condition_handle(CUgraphConditionalHandle handle, unsigned value) const;

  // cudaGraphSetConditional(handle, value) for the conditional handle held by parameter `param`
  // (a CUgraphConditionalHandle, 8 bytes): from the next check of its node on, the node runs (or
  // reruns) its body while `value` is not 0. Only a kernel of a graph launch whose graph (or a
  // body in it) created the handle may set it; anything else is recorded as a violation.
  void set_condition(std::size_t param, unsigned value) const;

  // cudaGridDependencySynchronize(): a kernel launched programmatically (cuLaunchKernelEx with
  // PROGRAMMATIC_STREAM_SERIALIZATION, eager or as a programmatic edge of a graph) may begin before
  // its kernel predecessor has finished, and sees what that predecessor wrote only after this call.
  // Taking a buffer() (or, in a GRAPHCAP_KERNEL, touching memory through a ptr<T>) that overlaps
  // memory the predecessor took for writing before calling it is recorded as a violation, which
  // fails nothing even under strict (the H200 read stale data there and went on:
  // docs/cuda-driver-facts.md, "Programmatic dependent launch and priorities"). A no-op for any
  // other launch, as on CUDA. graphcap::kernel::wait_for_predecessor() calls it from a
  // GRAPHCAP_KERNEL.
  void wait_for_predecessor() const;

 private:
  friend class FakeState;
  // `buffer` is the launch's parameter buffer: each parameter at its offset in `layout`.
  KernelContext(FakeState& state, std::string_view name, const LaunchDims& dims,
                std::span<const KernelParamInfo> layout, std::span<const std::byte> buffer)
      : state_(&state), name_(name), dims_(dims), layout_(layout), buffer_(buffer) {}

  const std::byte* param_bytes(std::size_t param, std::size_t size) const;
  std::byte* device_bytes(std::size_t param, std::size_t bytes, std::size_t align,
                          bool writable) const;

  FakeState* state_;
  std::string_view name_;
  LaunchDims dims_;
  std::span<const KernelParamInfo> layout_;
  std::span<const std::byte> buffer_;
  mutable std::vector<std::vector<std::byte>> scratch_;
};

using KernelBody = std::function<void(KernelContext&)>;

struct FakeDriverOptions {
  // Devices 0 .. device_count-1, each with its primary context, its own window of device
  // addresses (a pointer tells its device) and device_memory_bytes of memory.
  int device_count = 1;
  // Whether every pair of distinct devices may access each other's memory (cuDeviceCanAccessPeer
  // says 1, and cuCtxEnablePeerAccess succeeds once); false: 0 and CUDA_ERROR_PEER_ACCESS_UNSUPPORTED.
  bool peer_access = true;
  std::size_t device_memory_bytes = std::size_t{1} << 30;  // per device; cuMemGetInfo's total
  std::size_t pinned_host_bytes = std::size_t{256} << 20;  // cuMemAllocHost's limit
  // Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap, ...), as the H200
  // supports it (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED 1, granularity 2 MiB).
  // false: a device without it: the attribute is 0, and cuMemCreate and
  // cuMemGetAllocationGranularity are CUDA_ERROR_NOT_SUPPORTED.
  bool virtual_memory = true;
  int driver_version = 13000;
  bool record_calls = true;  // keep the ordered call log (counts are always kept)
  // A WHILE node that runs its body this many times in one launch is reported as a violation
  // and the launch fails with CUDA_ERROR_LAUNCH_TIMEOUT: on a GPU such a loop would not end.
  std::size_t max_loop_iterations = 100000;
  // A GRAPHCAP_KERNEL runs its body once per thread of the grid, one thread after another: a
  // launch of more threads than this is reported as a violation and fails with
  // CUDA_ERROR_LAUNCH_TIMEOUT instead of running for hours (a grid-stride loop covers any n with
  // fewer threads). Bodies registered by hand run once per launch and are not limited.
  std::uint64_t max_threads_per_launch = std::uint64_t{1} << 26;
  // A violation in executing work (a kernel touching out-of-bounds, freed or foreign memory, a
  // copy of such memory, a kernel of an unloaded module, ...) fails it the way the GPU's fault
  // does: the work's stream reports CUDA_ERROR_ILLEGAL_ADDRESS (CUDA_ERROR_MISALIGNED_ADDRESS for
  // a misaligned access) at its next synchronisation, and a graph launch stops there; the fault
  // is also recorded in violations() and named by stream_fault(). false: violations are only
  // recorded (for tests that study them); the work runs on.
  bool strict = true;
  // Races (docs/fake-driver.md, "Races, node order and baked pointers"): two nodes of a launched
  // graph that no path of edges orders, touching overlapping device bytes with at least one
  // write, are a violation whose text contains "race" and names both nodes and the bytes; so are
  // two streams that no event or host wait orders writing the same bytes eagerly. Under strict
  // a race fails the work as a fault does (CUDA_ERROR_LAUNCH_FAILED).
  bool detect_races = true;
  // 0: a graph launch runs its nodes in creation order (where the edges allow). Otherwise each
  // launch (and each run of a conditional body) runs them in a random order that respects the
  // edges, drawn from a generator seeded with this value: an order dependence shows as wrong
  // bytes, the same ones on every run of the test.
  std::uint64_t node_order_seed = 0;
};

class FakeDriver : public DriverApi {
 public:
  explicit FakeDriver(FakeDriverOptions options = {});
  ~FakeDriver() override;
  FakeDriver(const FakeDriver&) = delete;
  FakeDriver& operator=(const FakeDriver&) = delete;

  // ---- kernels ----------------------------------------------------------------------------
  // A fake kernel is a host function registered by name (a module image names it, see
  // module_image). As a cubin does, its registration declares the kernel's parameter layout:
  // cuLaunchKernel reads exactly the declared parameters, each of its declared size, from
  // kernelParams (an array of exactly that many pointers, no terminator, as CUDA documents; NULL
  // for a kernel without parameters) or from the `extra` buffer (each parameter at its offset).
  // Registering a name again replaces the kernel for modules loaded from then on.

  // The layout of these parameter types, laid out as CUDA does: each parameter at the next
  // multiple of its alignof. Pass a device pointer as CUdeviceptr (or any 8-byte pointer type).
  //   driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, std::uint32_t>("add_one", body);
  template <class... Params>
  void register_typed_kernel(std::string name, KernelBody body) {
    static_assert((std::is_trivially_copyable_v<Params> && ...),
                  "kernel parameters are passed by value as bytes: trivially copyable types only");
    static_assert(((sizeof(Params) > 0) && ...));
    register_kernel_layout(std::move(name), {sizeof(Params)...}, {alignof(Params)...},
                           std::move(body));
  }
  // The layout given by parameter sizes in bytes, each parameter at its natural alignment (the
  // largest power of two dividing its size, at most 8). For a struct passed by value whose
  // alignof is smaller than that (a char after which comes a 12-byte struct of floats, say),
  // use register_typed_kernel, which knows the alignment.
  void register_kernel(std::string name, std::vector<std::size_t> param_sizes, KernelBody body);
  // A kernel WITHOUT a declared layout: the fake cannot know how many parameters a launch passes,
  // so every cuLaunchKernel of it is refused with CUDA_ERROR_INVALID_VALUE and a violation naming
  // the kernel (nothing is read from kernelParams). Deprecated, so that code registering one
  // does not compile quietly (and not at all under -Werror): declare the layout instead.
  [[deprecated(
      "a kernel registered without its parameter layout can never be launched: declare the "
      "layout with register_typed_kernel<Params...>(name, body) or register_kernel(name, "
      "param_sizes, body), or write the kernel once with GRAPHCAP_KERNEL (<graphcap/kernel.h>) "
      "and register_compiled_kernels")]]
  void register_kernel(std::string name, KernelBody body);

  // A module image naming these kernels, for cuModuleLoadData. It is NUL-terminated PTX-like
  // text (".version" and one ".entry name" line each), so a real driver rejects it cleanly.
  std::vector<std::byte> module_image(std::initializer_list<std::string_view> kernels) const;

  // ---- fault injection ----------------------------------------------------------------------
  // Each of fail_call, fail_always and fail_when throws std::invalid_argument for a name that is
  // not an entry point of entry_points.def (cuda.h's name without a version suffix), arming
  // nothing: a misspelt name would arm a fault that never fires.
  // The nth next call of `entry_point` (1 = the very next) returns `code`. An injected failure
  // has the side effects the real failure has and no others: none for most entry points; a
  // failed cuStreamEndCapture still ends the capture (NULL graph, stream back to NONE); an
  // operation captured on a stream invalidates that stream's capture.
  void fail_call(std::string_view entry_point, CUresult code, int nth = 1);
  // Every call of `entry_point` from now on returns `code`, until clear_faults().
  void fail_always(std::string_view entry_point, CUresult code);
  // Every call of `entry_point` ("" = of any entry point) for which `predicate` is true returns
  // `code`, until clear_faults(). The predicate runs with the fake's lock held: it must not call
  // the driver. (<graphcap/fake/faults.h>: the vocabulary FaultInjectingDriver shares.)
  void fail_when(std::string_view entry_point, CUresult code, FaultPredicate predicate);
  void clear_faults();
  // The fail_call faults armed and not yet fired (cleared by clear_faults), each a sentence that
  // starts with the entry point. Empty at the end of a fault test that tested what it meant to:
  // a fault armed on an entry point the code never calls stays here.
  std::vector<std::string> unfired_faults() const;

  // ---- observation --------------------------------------------------------------------------
  std::vector<CallRecord> calls() const;  // in call order
  std::size_t call_count(std::string_view entry_point) const;
  std::size_t total_calls() const;
  void clear_calls();
  LiveHandles live_handles() const;
  // Handles still alive when their primary context was destroyed (released for the last time):
  // the driver reclaims them, but each one is a leak of whoever created it.
  std::size_t reclaimed_handles() const;
  // Memory-safety violations seen by kernel bodies, copies and replays: freed, foreign or
  // out-of-bounds device memory, parameter mismatches. Each a sentence naming what and where.
  std::vector<std::string> violations() const;
  void clear_violations();
  // Queued work not yet run: on one stream, or on every stream when `stream` is null.
  std::size_t pending_operations(CUstream stream = nullptr) const;
  // Run all queued work now, as if the device caught up.
  void run_pending();
  // While paused, cuStreamQuery and cuEventQuery of unfinished work report CUDA_ERROR_NOT_READY
  // instead of letting the device catch up; waits still run the work.
  void set_device_paused(bool paused);

  // The device memory the driver holds for executables on `device`: taken at instantiate in
  // 2 MiB chunks the executables share, and kept when they are destroyed (later ones reuse it),
  // as on the H200 (docs/cuda-driver-facts.md, "Device memory the driver holds per executable").
  // cuMemGetInfo counts it as used.
  std::size_t executable_memory(int device = 0) const;

  // Direct, checked access to simulated device memory, for tests. False if the range is not
  // inside one live allocation.
  bool read_device(CUdeviceptr address, std::span<std::byte> out) const;
  bool write_device(CUdeviceptr address, std::span<const std::byte> bytes);

  // ---- DriverApi ----------------------------------------------------------------------------
  const char* name() const noexcept override { return "fake"; }
  // From the call log: the call that invalidated the capture sequence last begun on `stream`,
  // its number in the log (1-based, as calls() counts since the last clear_calls), its thread
  // (numbered in the order threads first called this fake: thread 1 is the first) and the
  // recording's own thread, and what it returned: "the fake's call log: call 12 (cuMemAlloc,
  // from thread 2; the recording began on thread 1) returned
  // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidated the capture". Empty when that capture
  // was not invalidated (or `stream` is unknown). Kept until the stream begins another capture.
  std::string capture_invalidation(CUstream stream) override;
  // The violation behind the fault the last failed wait on `stream` reported: "cuLaunchKernel:
  // kernel 'fill' parameter 0 (dst): 0x... (4 bytes) runs 4 bytes past the end of the Buffer at
  // 0x... of 64 bytes (...)". Empty when that stream reported no fault (or it was a trap).
  std::string stream_fault(CUstream stream) override;
  // graphcap's memory layer: the Buffers it lends (DriverApi::annotate_buffer). Kernel accesses
  // (KernelContext::buffer, GRAPHCAP_KERNEL's pointers) are checked against the Buffer of their
  // launch (copies against the allocation: graphcap checks its copies against its Buffers).
  void annotate_buffer(CUdeviceptr address, std::size_t bytes) noexcept override;

  // One override per line of entry_points.def, named and typed as the entry point.
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  CUresult name(GRAPHCAP_PARAMS(params)) override;
#include <graphcap/driver/entry_points.def>

 private:
  void register_kernel_layout(std::string name, std::vector<std::size_t> sizes,
                              std::vector<std::size_t> alignments, KernelBody body);

  std::unique_ptr<FakeState> state_;
};

// ---- kernels written once (GRAPHCAP_KERNEL, <graphcap/kernel.h>) -------------------------------
// Registers every GRAPHCAP_KERNEL linked into the program on `driver` (register_typed_kernel,
// each by its name, its layout from its signature), replacing kernels registered under those
// names before. Returns how many. A kernel in a static library is linked only when something
// pulls its object file in: link kernel libraries whole (CMake's graphcap_fake_kernels() does),
// or their kernels are missing (and a module naming them fails to load: CUDA_ERROR_INVALID_IMAGE).
std::size_t register_compiled_kernels(FakeDriver& driver);
// The names of every GRAPHCAP_KERNEL linked into the program, sorted.
std::vector<std::string> compiled_kernel_names();
// A module image (for cuModuleLoadData, Device::load_module) naming every GRAPHCAP_KERNEL linked
// into the program: on the fake, what the GPU build's fatbin of the same sources is.
std::vector<std::byte> compiled_kernels_image();

}  // namespace graphcap::fake
