// GRAPHCAP_KERNEL on the host compiler (<graphcap/kernel.h>): a kernel's CUDA source compiled
// into a fake kernel. The parameter layout comes from the signature; the body runs once per
// thread of the launch's grid, sequentially (block by block, thread by thread, x fastest), with
// graphcap::kernel::thread_idx() and friends answering as CUDA's built-ins do; a ptr<T> parameter
// is the device pointer the launch passed, and each access through it is checked against the
// device memory it points into (the Buffer graphcap lent there, or the driver allocation).
// Include <graphcap/kernel.h>, not this header.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/fake/fake_driver.h>

namespace graphcap::kernel {

struct Index3 {
  unsigned x = 0, y = 0, z = 0;
};

namespace detail {

// Where the running thread is in its launch (one per host thread: fakes on several threads run
// kernels at once, each under its own driver's lock).
struct ThreadPosition {
  Index3 thread, block, block_dim{1, 1, 1}, grid_dim{1, 1, 1};
  const fake::KernelContext* context = nullptr;  // the launch running, if any
};
inline thread_local ThreadPosition position;

// One pointer parameter of a launch: the device memory it points into, and whether an access
// outside that memory was recorded yet (the first one per parameter and launch is: a wrong
// pointer in a grid of a million threads makes one violation, not a million).
struct PointerParam {
  const fake::KernelContext* context = nullptr;
  std::size_t index = 0;
  std::string_view name;  // as the signature spells it
  bool resolved = false;  // the address lies in live memory, described by `range`
  // The programmatic-launch check watches this launch's accesses (KernelContext::
  // watches_accesses): every access takes the slow path, which reports it.
  bool watched = false;
  // The race check records this launch's accesses (KernelContext::tracks_accesses): each one
  // grows the range it touches (one read, one written), and a range that stops growing is
  // reported (KernelContext::accessed).
  bool tracked = false;
  struct Span {
    CUdeviceptr begin = 0, end = 0;
  };
  Span reading, writing;
  void note(CUdeviceptr address, std::size_t bytes, bool write) {
    Span& span = write ? writing : reading;
    if (address <= span.end && address + bytes >= span.begin && span.end != 0) [[likely]] {
      if (address < span.begin) span.begin = address;
      if (address + bytes > span.end) span.end = address + bytes;
      return;
    }
    restart(span, address, bytes, write);
  }
  // Reports `span` and starts a new one at [address, address + bytes). Cold.
  void restart(Span& span, CUdeviceptr address, std::size_t bytes, bool write);
  // Reports both ranges (the launch is over).
  void flush();
  fake::KernelContext::DeviceRange range;
  std::string why;        // otherwise why not
  bool reported = false;
  std::vector<std::byte> scratch;  // what a refused access reads and writes
};

// An access off the fast path: a watched one inside the memory (reported to the
// programmatic-launch check, then the memory), or else refused as below. Cold.
std::byte* slow_access(PointerParam* param, CUdeviceptr address, std::size_t bytes,
                       std::size_t align, bool writable);

// A refused access: recorded as a violation (the first of its parameter in the launch), and
// scratch memory to read and write instead. `param` null: a ptr the body made itself (null,
// or default-constructed). Cold: only for accesses outside the memory.
std::byte* refuse_access(PointerParam* param, CUdeviceptr address, std::size_t bytes,
                         std::size_t align);

}  // namespace detail

// What CUDA's threadIdx, blockIdx, blockDim and gridDim are for the thread running the body.
inline Index3 thread_idx() noexcept { return detail::position.thread; }
inline Index3 block_idx() noexcept { return detail::position.block; }
inline Index3 block_dim() noexcept { return detail::position.block_dim; }
inline Index3 grid_dim() noexcept { return detail::position.grid_dim; }

// A device pointer parameter (T* under nvcc). Holds the device address the launch passed; every
// dereference checks [address, address + sizeof(T)) against the memory the parameter points into
// and its alignment. Arithmetic and comparisons are a pointer's; no conversion to T*.
template <class T>
class ptr {
 public:
  using element_type = T;

  ptr() = default;
  ptr(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): as T* converts
  template <class U>
    requires std::is_convertible_v<U*, T*>
  ptr(const ptr<U>& other) noexcept  // NOLINT(google-explicit-constructor): as U* to T*
      : address_(other.address_), param_(other.param_) {}

  T& operator*() const
    requires(!std::is_void_v<T>)
  {
    return *at(address_);
  }
  T* operator->() const
    requires(!std::is_void_v<T>)
  {
    return at(address_);
  }
  template <std::integral I>
  T& operator[](I index) const
    requires(!std::is_void_v<T>)
  {
    return *at(offset(index));
  }

  template <std::integral I>
  friend ptr operator+(ptr p, I n) noexcept
    requires(!std::is_void_v<T>)
  {
    p.address_ = p.offset(n);
    return p;
  }
  template <std::integral I>
  friend ptr operator+(I n, ptr p) noexcept
    requires(!std::is_void_v<T>)
  {
    return p + n;
  }
  template <std::integral I>
  friend ptr operator-(ptr p, I n) noexcept
    requires(!std::is_void_v<T>)
  {
    p.address_ = p.offset(-static_cast<long long>(n));
    return p;
  }
  friend std::ptrdiff_t operator-(const ptr& a, const ptr& b) noexcept
    requires(!std::is_void_v<T>)
  {
    return static_cast<std::ptrdiff_t>(a.address_ - b.address_) /
           static_cast<std::ptrdiff_t>(sizeof(T));
  }
  template <std::integral I>
  ptr& operator+=(I n) noexcept {
    return *this = *this + n;
  }
  template <std::integral I>
  ptr& operator-=(I n) noexcept {
    return *this = *this - n;
  }
  ptr& operator++() noexcept { return *this += 1; }
  ptr& operator--() noexcept { return *this -= 1; }
  ptr operator++(int) noexcept {
    ptr old = *this;
    *this += 1;
    return old;
  }
  ptr operator--(int) noexcept {
    ptr old = *this;
    *this -= 1;
    return old;
  }

  explicit operator bool() const noexcept { return address_ != 0; }
  friend bool operator==(const ptr& a, const ptr& b) noexcept { return a.address_ == b.address_; }
  friend auto operator<=>(const ptr& a, const ptr& b) noexcept { return a.address_ <=> b.address_; }
  friend bool operator==(const ptr& a, std::nullptr_t) noexcept { return a.address_ == 0; }

  // The device address (what the GPU's pointer holds).
  CUdeviceptr device_address() const noexcept { return address_; }

 private:
  template <class U>
  friend class ptr;
  template <class P>
  friend struct param_of;

  ptr(CUdeviceptr address, detail::PointerParam* param) noexcept
      : address_(address), param_(param) {}

  template <class I>
  CUdeviceptr offset(I n) const noexcept {
    // Wraps as the GPU's pointer arithmetic does; the access check catches what lands outside.
    return address_ + static_cast<CUdeviceptr>(static_cast<long long>(n)) * sizeof(T);
  }
  T* at(CUdeviceptr address) const {
    if (param_ != nullptr && param_->resolved && !param_->watched) [[likely]] {
      const fake::KernelContext::DeviceRange& range = param_->range;
      const CUdeviceptr from = address - range.base;  // wraps below the base: refused below
      if (from <= range.size && sizeof(T) <= range.size - from && address % alignof(T) == 0)
          [[likely]] {
        if (param_->tracked) param_->note(address, sizeof(T), !std::is_const_v<T>);
        return reinterpret_cast<T*>(range.host + from);
      }
    }
    return reinterpret_cast<T*>(
        detail::slow_access(param_, address, sizeof(T), alignof(T), !std::is_const_v<T>));
  }

  CUdeviceptr address_ = 0;
  detail::PointerParam* param_ = nullptr;
};

// A plain host-memory add (the fake runs one thread at a time): returns the old value, as
// atomicAdd does.
template <class T>
T atomic_add(T* address, std::type_identity_t<T> value) {
  const T old = *address;
  *address = static_cast<T>(old + value);
  return old;
}
template <class T>
T atomic_add(ptr<T> address, std::type_identity_t<T> value) {
  return atomic_add(&*address, value);
}

// cudaGraphSetConditional, on the fake: sets a conditional handle of the running graph.
void set_condition(CUgraphConditionalHandle handle, unsigned value);

// cudaGridDependencySynchronize, on the fake: KernelContext::wait_for_predecessor() of the
// running launch (the predecessor's writes may be read from here on).
void wait_for_predecessor();

// cudaTriggerProgrammaticLaunchCompletion, on the fake: nothing. The fake's device is sequential:
// a programmatic dependent runs after its predecessor's body, whatever the trigger says.
inline void trigger_dependents() noexcept {}

// How a kernel parameter's type is passed: a ptr<T> as an 8-byte device pointer, anything else
// by value as the bytes of its type.
template <class P>
struct param_of {
  static_assert(!std::is_pointer_v<P>,
                "GRAPHCAP_KERNEL: a raw pointer parameter: write graphcap::kernel::ptr<T> (it is T* "
                "under nvcc), so that the fake checks every access through it against the Buffer "
                "it points into");
  static_assert(!std::is_reference_v<P>, "GRAPHCAP_KERNEL: kernel parameters are passed by value");
  static_assert(std::is_trivially_copyable_v<P>,
                "GRAPHCAP_KERNEL: kernel parameters are copied bytewise: trivially copyable types "
                "only");
  using layout = P;  // what register_typed_kernel lays out
  static constexpr bool is_pointer = false;
  static P get(const fake::KernelContext& context, std::size_t index, detail::PointerParam&) {
    return context.value<P>(index);
  }
};
template <class T>
struct param_of<ptr<T>> {
  using layout = CUdeviceptr;
  static constexpr bool is_pointer = true;
  static ptr<T> get(const fake::KernelContext& context, std::size_t index,
                    detail::PointerParam& param) {
    return ptr<T>(context.value<CUdeviceptr>(index), &param);
  }
};

}  // namespace graphcap::kernel

namespace graphcap::fake {

// One GRAPHCAP_KERNEL of the program (a static object per kernel, listed at start-up).
struct CompiledKernel {
  const char* name;
  const char* signature;  // the parameter list as written: "(ptr<const float> x, float a)"
  void (*register_on)(FakeDriver& driver, const CompiledKernel& kernel);
  const CompiledKernel* next = nullptr;
};

// register_compiled_kernels, compiled_kernel_names, compiled_kernels_image: fake_driver.h.

namespace detail {

// Adds `kernel` to the program's list (GRAPHCAP_KERNEL's static initializer). Thread-safe.
bool list_compiled_kernel(CompiledKernel& kernel) noexcept;

// The parameters' names, from the signature's text: the last identifier of each.
std::vector<std::string> param_names(std::string_view signature);

// Runs `body` once per thread of the launch `context` describes.
template <class... P, std::size_t... I>
void run_threads(void (*body)(P...), const KernelContext& context,
                 const std::vector<std::string>& names, std::index_sequence<I...>) {
  using kernel::detail::PointerParam;
  std::array<PointerParam, sizeof...(P) == 0 ? 1 : sizeof...(P)> pointers{};
  auto bind = [&](std::size_t index, PointerParam& param) {
    param.context = &context;
    param.index = index;
    if (index < names.size()) param.name = names[index];
    CUdeviceptr address = context.value<CUdeviceptr>(index);
    param.resolved = context.device_range(address, &param.range, &param.why);
    param.watched = param.resolved && context.watches_accesses();
    param.tracked = param.resolved && context.tracks_accesses();
  };
  ((kernel::param_of<P>::is_pointer ? bind(I, pointers[I]) : void()), ...);
  (void)bind;  // a kernel without parameters binds none
  const std::tuple<P...> args{kernel::param_of<P>::get(context, I, pointers[I])...};

  kernel::detail::ThreadPosition& position = kernel::detail::position;
  struct Restore {
    kernel::detail::ThreadPosition& position;
    kernel::detail::ThreadPosition saved;
    ~Restore() { position = saved; }
  } restore{position, position};
  const LaunchDims& dims = context.dims();
  const std::uint64_t blocks = std::uint64_t{dims.grid.x} * dims.grid.y * dims.grid.z;
  const std::uint64_t per_block = std::uint64_t{dims.block.x} * dims.block.y * dims.block.z;
  if (blocks > context.max_threads_per_launch() / per_block) {
    context.violation("launches " + std::to_string(blocks) + " blocks of " +
                          std::to_string(per_block) +
                          " threads, more than the fake runs one by one "
                          "(FakeDriverOptions::max_threads_per_launch, " +
                          std::to_string(context.max_threads_per_launch()) +
                          "): launch fewer threads (a grid-stride loop covers any n)",
                      CUDA_ERROR_LAUNCH_TIMEOUT);
    context.trap(CUDA_ERROR_LAUNCH_TIMEOUT);
    return;
  }
  position.grid_dim = {dims.grid.x, dims.grid.y, dims.grid.z};
  position.block_dim = {dims.block.x, dims.block.y, dims.block.z};
  position.context = &context;
  const bool stop_at_fault = context.strict();
  for (unsigned bz = 0; bz < dims.grid.z; ++bz) {
    for (unsigned by = 0; by < dims.grid.y; ++by) {
      for (unsigned bx = 0; bx < dims.grid.x; ++bx) {
        position.block = {bx, by, bz};
        for (unsigned tz = 0; tz < dims.block.z; ++tz) {
          for (unsigned ty = 0; ty < dims.block.y; ++ty) {
            for (unsigned tx = 0; tx < dims.block.x; ++tx) {
              position.thread = {tx, ty, tz};
              body(std::get<I>(args)...);
            }
            // A fault stops the kernel (on a GPU the whole grid ends); checked per row.
            if (stop_at_fault && context.faulted()) goto done;
          }
        }
      }
    }
  }
done:
  for (PointerParam& param : pointers) {
    if (param.tracked) param.flush();
  }
}

// The fake kernel of a GRAPHCAP_KERNEL body: registered with the signature's layout.
template <auto Body>
void register_compiled(FakeDriver& driver, const CompiledKernel& kernel) {
  [&]<class... P>(void (*)(P...)) {
    driver.register_typed_kernel<typename graphcap::kernel::param_of<P>::layout...>(
        kernel.name, [names = param_names(kernel.signature)](KernelContext& context) {
          run_threads(Body, context, names, std::index_sequence_for<P...>{});
        });
  }(Body);
}

}  // namespace detail
}  // namespace graphcap::fake
