#include <graphcap/device.h>

#include <array>
#include <cstring>
#include <string>

#include <graphcap/detail/allocation.h>
#include <graphcap/detail/buffer_state.h>
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/graph_state.h>
#include <graphcap/detail/module_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/detail/try.h>
#include <graphcap/module_image.h>

namespace graphcap {
namespace {

using detail::Allocation;
using detail::BufferState;
using detail::DeviceCore;
using detail::StreamCore;

constexpr std::size_t kMaxArgs = 64;

std::string dim_text(const Dim3& d) {
  std::string text = "(";
  text += std::to_string(d.x);
  text += ", ";
  text += std::to_string(d.y);
  text += ", ";
  text += std::to_string(d.z);
  text += ")";
  return text;
}

Result<void> query_limits(DriverApi& driver, CUdevice device, DeviceLimits& limits) {
  struct Query {
    CUdevice_attribute attribute;
    unsigned* out;
  };
  unsigned optin_shared = 0;
  const std::array<Query, 9> queries{{
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &limits.max_threads_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &limits.max_block.x},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &limits.max_block.y},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &limits.max_block.z},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &limits.max_grid.x},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &limits.max_grid.y},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &limits.max_grid.z},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &limits.max_shared_bytes},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &optin_shared},
  }};
  for (const Query& query : queries) {
    int value = 0;
    if (CUresult result = driver.cuDeviceGetAttribute(&value, query.attribute, device);
        result != CUDA_SUCCESS) {
      return Error::from_driver("cuDeviceGetAttribute", result).context("Device::open");
    }
    *query.out = value > 0 ? static_cast<unsigned>(value) : 0;
  }
  limits.max_shared_bytes = std::max(limits.max_shared_bytes, optin_shared);
  return {};
}

Result<void> check_dims(const LaunchDims& dims, const DeviceLimits& limits) {
  auto fail = [](std::string why) { return Error(Errc::invalid_argument, std::move(why)); };
  if (dims.grid.x == 0 || dims.grid.y == 0 || dims.grid.z == 0) {
    return fail("grid " + dim_text(dims.grid) + " has a zero dimension");
  }
  if (dims.block.x == 0 || dims.block.y == 0 || dims.block.z == 0) {
    return fail("block " + dim_text(dims.block) + " has a zero dimension");
  }
  if (dims.block.x > limits.max_block.x || dims.block.y > limits.max_block.y ||
      dims.block.z > limits.max_block.z) {
    return fail("block " + dim_text(dims.block) + " exceeds the device's " +
                dim_text(limits.max_block));
  }
  const unsigned long long threads =
      1ULL * dims.block.x * dims.block.y * dims.block.z;
  if (threads > limits.max_threads_per_block) {
    return fail("block of " + std::to_string(threads) + " threads exceeds the device's " +
                std::to_string(limits.max_threads_per_block));
  }
  if (dims.grid.x > limits.max_grid.x || dims.grid.y > limits.max_grid.y ||
      dims.grid.z > limits.max_grid.z) {
    return fail("grid " + dim_text(dims.grid) + " exceeds the device's " +
                dim_text(limits.max_grid));
  }
  if (dims.shared_bytes > limits.max_shared_bytes) {
    return fail(std::to_string(dims.shared_bytes) + " bytes of shared memory exceed the device's " +
                std::to_string(limits.max_shared_bytes));
  }
  return {};
}

// A slice from `pool`: a free one, else whatever the drop queue can release without waiting,
// else a new one from the driver when no recording forbids it.
Result<memory::Slice> take_slice(StreamCore& stream, memory::SlicePool& pool, std::size_t bytes) {
  const bool may_call = !stream.device().unsafe_calls_forbidden();
  if (!pool.armed() || !stream.window().recording()) {
    Result<memory::Slice> cached = pool.acquire(bytes, /*may_allocate=*/false);
    if (cached || cached.error().code() == Errc::invalid_argument) return cached;
    stream.drops().flush(may_call);
  }
  return pool.acquire(bytes, may_call);
}

Result<void> check_range(const Buffer& buffer, std::size_t offset, std::size_t count,
                         const char* operation) {
  if (offset > buffer.size() || count > buffer.size() - offset) {  // no overflow: compare apart
    return Error(Errc::invalid_argument,
                 std::string(operation) + ": bytes [" + std::to_string(offset) + ", " +
                     std::to_string(offset) + " + " + std::to_string(count) +
                     ") lie outside the buffer of " + std::to_string(buffer.size()) + " bytes");
  }
  return {};
}

Result<std::shared_ptr<StreamCore>> create_stream_core(const std::shared_ptr<DeviceCore>& core) {
  CUstream handle = nullptr;
  if (CUresult result = core->driver().cuStreamCreate(&handle, CU_STREAM_NON_BLOCKING);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamCreate", result).context("create_stream");
  }
  auto stream = std::make_shared<StreamCore>(core, handle);
  core->add_stream(stream);
  return stream;
}

}  // namespace

Device::Device(std::shared_ptr<DeviceCore> core) : core_(std::move(core)) {}

Device::~Device() { core_->close(); }

Result<std::unique_ptr<Device>> Device::open(DriverApi& driver, DeviceOptions options) {
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
  if (CUresult result = driver.cuDeviceGet(&core->device, options.ordinal); result != CUDA_SUCCESS) {
    return Error::from_driver("cuDeviceGet", result).context("Device::open");
  }
  if (CUresult result = driver.cuDevicePrimaryCtxRetain(&core->context, core->device);
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuDevicePrimaryCtxRetain", result).context("Device::open");
  }
  core->context_retained_ = true;
  // From here on, a failure closes the core, which releases what was acquired.
  auto fail = [&](Error error) {
    core->close();
    return error;
  };
  if (Result<void> bound = core->bind_thread(); !bound) return fail(bound.error().context("Device::open"));
  if (Result<void> limits = query_limits(driver, core->device, core->limits); !limits) {
    return fail(limits.error());
  }
  Result<std::shared_ptr<StreamCore>> stream = create_stream_core(core);
  if (!stream) return fail(stream.error().context("Device::open"));
  std::unique_ptr<Device> device(new Device(core));
  device->streams_.push_back(std::make_unique<Stream>(std::move(*stream)));
  return device;
}

Stream& Device::stream() {
  std::lock_guard lock(streams_mutex_);
  return *streams_.front();
}

Result<Stream*> Device::create_stream() {
  GRAPHCAP_TRY(core_->check_open("create_stream"));
  GRAPHCAP_TRY(core_->bind_thread());
  GRAPHCAP_ASSIGN_OR_RETURN(std::shared_ptr<StreamCore> core, create_stream_core(core_));
  std::lock_guard lock(streams_mutex_);
  streams_.push_back(std::make_unique<Stream>(std::move(core)));
  return streams_.back().get();
}

DriverApi& Device::driver() const noexcept { return core_->driver(); }
int Device::ordinal() const noexcept { return core_->options().ordinal; }
const DeviceLimits& Device::limits() const noexcept { return core_->limits; }

MemoryStats Device::memory_stats(Stream& s) const {
  StreamCore& core = s.core();
  std::lock_guard lock(core.mutex());
  return MemoryStats{core.device_pool().stats(), core.staging_pool().stats(),
                     core.drops().pending()};
}

Result<void> Device::check_stream(const Stream& s, const char* operation) const {
  GRAPHCAP_TRY(core_->check_open(operation));
  if (&s.core().device() != core_.get()) {
    return Error(Errc::invalid_argument,
                 std::string(operation) + ": the stream belongs to another device");
  }
  return {};
}

Result<void> Device::check_buffer(const Buffer& buffer, const Stream& s, const char* what) const {
  // Messages are built only on failure: this runs for every buffer of every launch.
  if (!buffer) return Error(Errc::invalid_argument, std::string(what) + " is an empty Buffer");
  StreamCore& owner = buffer.state()->owner();
  if (&owner.device() != core_.get()) {
    return Error(Errc::invalid_argument, std::string(what) + " is a buffer of another device");
  }
  if (&owner != &s.core()) {
    return Error(Errc::invalid_argument,
                 std::string(what) + " belongs to another stream of this device (a buffer is "
                 "used on the stream that allocated it; copy it across)");
  }
  return {};
}

Result<Module> Device::load_module(std::span<const std::byte> image) {
  GRAPHCAP_TRY(core_->check_open("load_module"));
  GRAPHCAP_ASSIGN_OR_RETURN(CheckedImage checked, check_module_image(image));
  GRAPHCAP_TRY(core_->bind_thread());
  CUmodule module = nullptr;
  if (CUresult result = core_->driver().cuModuleLoadData(&module, checked.driver_image());
      result != CUDA_SUCCESS) {
    return Error::from_driver("cuModuleLoadData", result).context("load_module");
  }
  auto state = std::make_shared<detail::ModuleState>(core_, module);
  core_->add_module(state);
  return Module(std::move(state));
}

Result<Buffer> Device::alloc(std::size_t bytes, Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "alloc"));
  if (bytes == 0) return Error(Errc::invalid_argument, "alloc: zero bytes requested");
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = s.core();
  std::lock_guard lock(stream.mutex());
  Result<memory::Slice> slice = take_slice(stream, stream.device_pool(), bytes);
  if (!slice) {
    Error error = std::move(slice).error().context("alloc");
    if (stream.window().recording()) stream.window().doom(error);
    return error;
  }
  // Shares the StreamCore with the public Stream: the allocation keeps it alive.
  auto allocation = std::make_shared<Allocation>(
      std::shared_ptr<StreamCore>(s.core().shared_from_this()), *slice);
  if (stream.window().recording()) stream.window().touch(allocation);
  return Buffer(std::make_shared<BufferState>(std::move(allocation), bytes));
}

Result<Buffer> Device::upload(std::span<const std::byte> bytes, Stream& s) {
  GRAPHCAP_ASSIGN_OR_RETURN(Buffer buffer, alloc(bytes.size(), s));
  GRAPHCAP_TRY(write(buffer, bytes, s));
  return buffer;
}

Result<void> Device::write(const Buffer& dst, std::span<const std::byte> bytes, Stream& s) {
  return write(dst, 0, bytes, s);
}

Result<void> Device::write(const Buffer& dst, std::size_t offset, std::span<const std::byte> bytes,
                           Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "write"));
  if (Result<void> ok = check_buffer(dst, s, "the destination"); !ok) return ok.error().context("write");
  GRAPHCAP_TRY(check_range(dst, offset, bytes.size(), "write"));
  if (bytes.empty()) return {};
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = s.core();
  capture::Window& window = stream.window();
  std::lock_guard lock(stream.mutex());
  Result<memory::Slice> slice = take_slice(stream, stream.staging_pool(), bytes.size());
  if (!slice) {
    Error error = std::move(slice).error().context("write (staging)");
    dst.state()->fail(error);  // the write that should have produced its bytes failed
    if (window.recording()) {
      window.claim(dst.state());
      window.doom(error);
    }
    return error;
  }
  auto staging =
      std::make_shared<Allocation>(std::shared_ptr<StreamCore>(stream.shared_from_this()), *slice);
  std::memcpy(slice->host_ptr(), bytes.data(), bytes.size());
  const CUresult result = core_->driver().cuMemcpyHtoDAsync(dst.device_ptr() + offset, slice->host_ptr(),
                                                            bytes.size(), stream.handle());
  const std::uint64_t use = stream.drops().next_use();
  staging->used_at(use);
  dst.state()->memory()->used_at(use);
  if (window.recording()) {
    window.touch(staging);
    window.touch(dst.state()->memory());
    window.claim(dst.state());
  }
  if (result != CUDA_SUCCESS) {
    Error error = Error::from_driver("cuMemcpyHtoDAsync", result).context("write");
    dst.state()->fail(error);
    if (window.recording()) window.doom(error);
    return error;
  }
  if (window.recording()) {
    window.recorded(CU_GRAPH_NODE_TYPE_MEMCPY);
    if (offset == 0 && bytes.size() == dst.size()) window.produce(dst.state());
  }
  // A full write replaces what the buffer carried; a recorded one has written nothing yet.
  if (offset == 0 && bytes.size() == dst.size() && !window.recording()) {
    dst.state()->clear_failure();
  }
  return {};
}

Result<std::vector<std::byte>> Device::read(const Buffer& src, Stream& s) {
  return read(src, 0, src.size(), s);
}

Result<std::vector<std::byte>> Device::read(const Buffer& src, std::size_t offset,
                                            std::size_t count, Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "read"));
  if (Result<void> ok = check_buffer(src, s, "the source"); !ok) return ok.error().context("read");
  GRAPHCAP_TRY(check_range(src, offset, count, "read"));
  if (count == 0) return std::vector<std::byte>{};
  StreamCore& stream = s.core();
  if (stream.window().recording()) {
    return Error(Errc::graph_state,
                 "read: the stream is recording; a read waits for the stream, which would "
                 "invalidate the recording (read before begin_capture or after end_capture)");
  }
  if (core_->unsafe_calls_forbidden()) {
    return Error(Errc::graph_state,
                 "read: a recording is open in global mode (or on this thread); waiting for a "
                 "stream now would invalidate it");
  }
  if (std::optional<Error> failure = src.failure()) return *failure;
  GRAPHCAP_TRY(core_->bind_thread());
  std::shared_ptr<Allocation> staging;
  {
    std::lock_guard lock(stream.mutex());
    GRAPHCAP_ASSIGN_OR_RETURN(memory::Slice slice,
                              take_slice(stream, stream.staging_pool(), count));
    staging = std::make_shared<Allocation>(
        std::shared_ptr<StreamCore>(stream.shared_from_this()), slice);
    const CUresult result = core_->driver().cuMemcpyDtoHAsync(
        slice.host_ptr(), src.device_ptr() + offset, count, stream.handle());
    const std::uint64_t use = stream.drops().next_use();
    staging->used_at(use);
    src.state()->memory()->used_at(use);
    if (result != CUDA_SUCCESS) {
      return Error::from_driver("cuMemcpyDtoHAsync", result).context("read");
    }
  }
  GRAPHCAP_TRY(stream.synchronize("read"));
  if (std::optional<Error> queued = stream.take_error()) return queued->context("read");
  if (std::optional<Error> failure = src.failure()) return *failure;
  const auto* data = static_cast<const std::byte*>(staging->slice().host_ptr());
  return std::vector<std::byte>(data, data + count);
}

Result<void> Device::launch(Stream& s, const Kernel& kernel, LaunchDims dims,
                            std::initializer_list<Arg> args) {
  GRAPHCAP_TRY(check_stream(s, "launch"));
  if (!kernel) return Error(Errc::invalid_argument, "launch: an empty Kernel");
  // Names the launch in messages; built only when one is needed (this is the eager hot path).
  auto what = [&kernel] { return "launch of " + kernel.name(); };
  if (&kernel.module()->device() != core_.get()) {
    return Error(Errc::invalid_argument, what() + ": the kernel's module belongs to another device");
  }
  if (kernel.module()->released()) {
    return Error(Errc::graph_state, what() + ": its module was unloaded");
  }
  if (Result<void> ok = check_dims(dims, core_->limits); !ok) return ok.error().context(what());
  if (args.size() > kMaxArgs) {
    return Error(Errc::invalid_argument, what() + ": " + std::to_string(args.size()) +
                                             " arguments (at most " + std::to_string(kMaxArgs) + ")");
  }
  std::size_t index = 0;
  for (const Arg& arg : args) {
    if (const Buffer* buffer = arg.buffer()) {
      if (Result<void> ok = check_buffer(*buffer, s, "it"); !ok) {
        return ok.error().context(what() + ": argument " + std::to_string(index));
      }
    }
    ++index;
  }
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = s.core();
  capture::Window& window = stream.window();
  std::lock_guard lock(stream.mutex());

  // An input that carries a failure: the launch would compute from bytes no operation produced.
  index = 0;
  for (const Arg& arg : args) {
    if (arg.reads()) {
      if (std::optional<Error> failure = arg.buffer()->failure()) {
        Error error(Errc::failed_buffer,
                    what() + ": argument " + std::to_string(index) +
                        " carries an error, so the launch was skipped: " + failure->message(),
                    failure->driver_code());
        for (const Arg& out : args) {
          if (out.writes()) {
            out.buffer()->state()->fail(error);
            if (window.recording()) window.claim(out.buffer()->state());
          }
        }
        if (window.recording()) window.doom(error);
        return error;
      }
    }
    ++index;
  }

  // Filled up to args.size() only (no zeroing of the unused tail on every launch).
  std::array<CUdeviceptr, kMaxArgs> pointers;
  std::array<void*, kMaxArgs + 1> params;
  params[args.size()] = nullptr;  // nullptr-terminated: see FakeDriver::register_kernel
  index = 0;
  for (const Arg& arg : args) {
    if (const Buffer* buffer = arg.buffer()) {
      pointers[index] = buffer->device_ptr();
      params[index] = &pointers[index];
    } else {
      params[index] = const_cast<std::byte*>(arg.bytes());
    }
    ++index;
  }
  const CUresult result = core_->driver().cuLaunchKernel(
      kernel.function(), dims.grid.x, dims.grid.y, dims.grid.z, dims.block.x, dims.block.y,
      dims.block.z, dims.shared_bytes, stream.handle(), params.data(), nullptr);
  const std::uint64_t use = stream.drops().next_use();
  for (const Arg& arg : args) {
    if (const Buffer* buffer = arg.buffer()) {
      buffer->state()->memory()->used_at(use);
      if (window.recording()) {
        window.touch(buffer->state()->memory());
        if (arg.reads()) window.read(buffer->state());
        if (arg.writes()) window.claim(buffer->state());
        if (arg.access() == Arg::Access::out) window.produce(buffer->state());
      }
    }
  }
  if (result != CUDA_SUCCESS) {
    Error error = Error::from_driver("cuLaunchKernel", result).context(what());
    for (const Arg& arg : args) {
      if (arg.writes()) arg.buffer()->state()->fail(error);
    }
    if (window.recording()) window.doom(error);
    return error;
  }
  if (window.recording()) window.recorded(CU_GRAPH_NODE_TYPE_KERNEL);
  // An `out` binding produces the buffer's contents: whatever it carried is replaced. A recorded
  // launch has produced nothing yet: the failure stays until a write or an eager launch.
  for (const Arg& arg : args) {
    if (arg.access() == Arg::Access::out && !window.recording()) {
      arg.buffer()->state()->clear_failure();
    }
  }
  return {};
}

Result<void> Device::sync(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "sync"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = s.core();
  Result<void> waited = stream.synchronize("sync");
  if (!waited && waited.error().code() == Errc::graph_state) return waited;  // refused: nothing ran
  if (std::optional<Error> queued = stream.take_error()) return queued->context("sync");
  return waited;
}

Result<void> Device::prepare_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "prepare_capture"));
  StreamCore& stream = s.core();
  std::lock_guard lock(stream.mutex());
  return stream.window().prepare();
}

Result<void> Device::begin_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "begin_capture"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = s.core();
  std::lock_guard lock(stream.mutex());
  return stream.window().begin();
}

Result<Graph> Device::end_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "end_capture"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = s.core();
  Result<capture::Closed> closed = [&] {
    std::lock_guard lock(stream.mutex());
    return stream.window().end(core_->options().upload_on_capture);
  }();
  core_->collect_deferred();
  if (!closed) return closed.error();
  auto state = std::make_shared<detail::GraphState>(
      std::shared_ptr<StreamCore>(stream.shared_from_this()), std::move(closed->graph.executable),
      std::move(closed->pins), std::move(closed->buffers), closed->graph.report);
  core_->add_graph(state);
  return Graph(std::move(state));
}

Result<void> Device::abort_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "abort_capture"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = s.core();
  Result<void> aborted = [&] {
    std::lock_guard lock(stream.mutex());
    return stream.window().abort();
  }();
  core_->collect_deferred();
  return aborted;
}

}  // namespace graphcap
