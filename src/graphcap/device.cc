// Device: opening and closing, streams, modules, waiting. The other operations live beside it:
// device_memory.cc (alloc, upload, write, read), device_launch.cc, device_capture.cc.
#include <graphcap/device.h>

#include <string>

#include <graphcap/detail/buffer_order.h>
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/module_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/handle_access.h>
#include <graphcap/memory/buffer_state.h>
#include <graphcap/module_image.h>
#include <graphcap/try.h>

namespace graphcap {

using detail::DeviceCore;
using detail::StreamCore;

Device::Device(std::shared_ptr<DeviceCore> core) : core_(std::move(core)) {}

Device::~Device() { core_->close(); }

Result<std::unique_ptr<Device>> Device::open(DriverApi& driver, DeviceOptions options) {
  GRAPHCAP_ASSIGN_OR_RETURN(std::shared_ptr<DeviceCore> core, DeviceCore::open(driver, options));
  Result<std::shared_ptr<StreamCore>> stream = core->create_stream();
  if (!stream) {
    core->close();
    return stream.error().context("Device::open");
  }
  std::unique_ptr<Device> device(new Device(core));
  device->streams_.push_back(HandleAccess::stream(std::move(*stream)));
  device->default_stream_ = device->streams_.front().get();
  return device;
}

Stream& Device::stream() { return *default_stream_; }

Result<Stream*> Device::create_stream() {
  GRAPHCAP_TRY(core_->check_open("create_stream"));
  GRAPHCAP_TRY(core_->bind_thread());
  GRAPHCAP_ASSIGN_OR_RETURN(std::shared_ptr<StreamCore> core, core_->create_stream());
  std::lock_guard lock(streams_mutex_);
  streams_.push_back(HandleAccess::stream(std::move(core)));
  return streams_.back().get();
}

DriverApi& Device::driver() const noexcept { return core_->driver(); }
int Device::ordinal() const noexcept { return core_->options().ordinal; }
const DeviceLimits& Device::limits() const noexcept { return core_->limits(); }

std::size_t Device::streams_left_to_driver() const noexcept {
  return core_->streams_left_to_driver();
}

MemoryStats Device::memory_stats(Stream& s) const {
  StreamCore& core = HandleAccess::core(s);
  std::lock_guard lock(core.mutex());
  return MemoryStats{core.device_pool().stats(), core.staging_pool().stats(),
                     core.drops().pending()};
}

Result<void> Device::check_stream(const Stream& s, const char* operation) const {
  // Every operation's first check: the usual outcome without building a Result on the way.
  if (core_->serves(HandleAccess::core(s).device())) [[likely]] return {};
  GRAPHCAP_TRY(core_->check_open(operation));
  if (const DeviceCore& other = HandleAccess::core(s).device(); &other != core_.get()) {
    return Error(Errc::invalid_argument,
                 std::string(operation) + ": the stream belongs to " + core_->another_device(other));
  }
  return {};
}

namespace {

// The rule of docs/capture-lifecycle.md, "Buffers on several streams", for `buffer` (owned by
// `owner`, of this device or, for a peer copy, of another) used on `stream`: a read must come after
// the last write on another stream; a write after every use on other streams since that write.
Result<void> check_order(const Buffer& buffer, const StreamCore& owner, StreamCore& stream,
                         const char* what, bool writes) {
  const memory::BufferState& state = *HandleAccess::state(buffer);
  if (state.failed_for_good()) [[unlikely]] {
    // Its memory is another graph's scratch (a graph pool's lent buffer of a window that made no
    // graph): a write could race that graph's queued replay, a read return its bytes.
    const std::optional<Error> failure = state.failure();
    return Error(Errc::graph_state,
                 std::string(what) + " can't be used: " + (failure ? failure->message() : ""));
  }
  if (&owner == &stream && detail::used_last_here(state, stream, writes)) [[likely]] {
    return {};  // the hot path: a stream using its own buffer, which it used last
  }
  GRAPHCAP_TRY(detail::check_buffer_order(state, stream, what, writes));
  if (&owner != &stream && owner.recording() && !stream.recording()) {
    return Error(Errc::invalid_argument,
                 std::string(what) + " belongs to a stream that is recording now; an eager use "
                 "on another stream could not be handed back to it (use it after end_capture, "
                 "or fork this stream into the recording)");
  }
  return {};
}

}  // namespace

Result<void> Device::check_buffer(const Buffer& buffer, const Stream& s, const char* what,
                                  bool writes) const {
  // Messages are built only on failure: this runs for every buffer of every launch.
  if (!buffer) return Error(Errc::invalid_argument, std::string(what) + " is an empty Buffer");
  // Every slice owner is a stream (StreamCore is the one memory::SliceOwner).
  const auto& owner = static_cast<const StreamCore&>(HandleAccess::state(buffer)->owner());
  if (&owner.device() != core_.get()) {
    return Error(Errc::invalid_argument,
                 std::string(what) + " is a buffer of " + core_->another_device(owner.device()));
  }
  return check_order(buffer, owner, HandleAccess::core(s), what, writes);
}

Result<void> Device::check_copy_buffer(const Buffer& buffer, const Stream& s, const char* what,
                                       bool writes) const {
  if (!buffer) return Error(Errc::invalid_argument, std::string(what) + " is an empty Buffer");
  const auto& owner = static_cast<const StreamCore&>(HandleAccess::state(buffer)->owner());
  const DeviceCore& other = owner.device();
  if (&other != core_.get()) {
    // A peer copy: the other device's memory, reached from this device's context.
    if (&other.driver() != &core_->driver() || other.options().ordinal == ordinal()) {
      return Error(Errc::invalid_argument,
                   std::string(what) + " is a buffer of " + core_->another_device(other) +
                       ", which is not a peer of this one (peer copies run between devices of "
                       "different ordinals on one driver)");
    }
    if (!other.is_open()) {
      return Error(Errc::graph_state, std::string(what) + " is a buffer of " + other.name() +
                                          ", which is closed");
    }
    if (!core_->peer_enabled(other)) {
      return Error(Errc::invalid_argument,
                   std::string(what) + " is a buffer of " + other.name() +
                       " and this copy runs on " + core_->name() + ", which has no peer access "
                       "to it: call enable_peer_access(" + other.name() + ") on " +
                       core_->name() + " first");
    }
  }
  return check_order(buffer, owner, HandleAccess::core(s), what, writes);
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
  return HandleAccess::module(std::move(state));
}

Result<void> Device::sync(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "sync"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  Result<void> waited = stream.synchronize("sync");
  if (!waited && waited.error().code() == Errc::graph_state) return waited;  // refused: nothing ran
  if (std::optional<Error> queued = stream.errors().take()) {
    if (waited) return queued->context("sync");
    // Both failed: the queued error came first; the wait's failure must not be lost either.
    return Error(queued->code(),
                 "sync: " + queued->message() + "; the wait for the stream then failed too: " +
                     waited.error().message(),
                 queued->driver_code());
  }
  return waited;
}

}  // namespace graphcap
