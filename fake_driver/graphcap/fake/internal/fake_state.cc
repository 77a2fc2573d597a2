// FakeState's construction, per-thread state and the context checks every entry point starts with.
#include <graphcap/fake/internal/fake_state.h>

#include <atomic>
#include <unordered_map>

namespace graphcap::fake {
namespace {

std::uint64_t next_serial() {
  static std::atomic<std::uint64_t> serial{0};
  return ++serial;
}

}  // namespace

FakeState::FakeState(FakeDriverOptions options)
    : serial_(next_serial()),
      options_(options),
      device_memory_(options.device_count, options.device_memory_bytes),
      pinned_memory_(options.pinned_host_bytes),
      virtual_memory_(options.device_count),
      executable_arena_(options.device_count),
      log_(options.record_calls) {
  order_random_.seed(options_.node_order_seed);
  const int devices = options_.device_count > 0 ? options_.device_count : 0;
  contexts_.resize(static_cast<std::size_t>(devices));
  for (int device = 0; device < devices; ++device) {
    Context& context = contexts_[static_cast<std::size_t>(device)];
    context.handle = new_handle<CUcontext>();
    context.device = device;
    context.default_stream = new_stream(device, nullptr, CU_STREAM_DEFAULT, true).id;
  }
}

FakeState::~FakeState() = default;

// The current context and capture mode are per thread, as in CUDA, and per FakeDriver instance.
// thread_local (not a map keyed by std::thread::id, whose values are reused after a thread ends)
// so that a new thread always starts with no context and GLOBAL mode.
namespace {

// A number for the calling thread, unique for the process's life (a std::thread::id can be reused
// by a later thread, which must start with CUDA's fresh per-thread state). A plain integer, so it
// stays readable while static objects are destroyed at exit (a FakeDriver may be one of them).
std::uint64_t thread_serial() {
  static std::atomic<std::uint64_t> next{1};
  thread_local std::uint64_t serial = 0;
  if (serial == 0) serial = next.fetch_add(1);
  return serial;
}

}  // namespace

FakeState::ThreadState& FakeState::this_thread() {
  // Kept in the state itself (under its mutex), not in a thread_local container that may already
  // be destroyed when a static Device closes at exit.
  return thread_states_[thread_serial()];
}

CUresult FakeState::need_init() const {
  return initialized_ ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult FakeState::need_context(Context** context) {
  if (CUresult r = need_context_to_release(context); r != CUDA_SUCCESS) return r;
  if (sticky_) return *sticky_;  // the device faulted: nothing that uses a context works
  return CUDA_SUCCESS;
}

CUresult FakeState::need_context_to_release(Context** context) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  const CUcontext current = this_thread().context;
  if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  Context* found = find_context(current);
  if (found == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  // A primary context released for the last time is destroyed; cuda.h documents 709 for a
  // current context in that state.
  if (found->refs == 0) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *context = found;
  return CUDA_SUCCESS;
}

FakeState::Context* FakeState::find_context(CUcontext handle) {
  for (Context& context : contexts_) {
    if (context.handle == handle) return &context;
  }
  return nullptr;
}

FakeState::Stream& FakeState::new_stream(int device, CUstream handle, unsigned flags, bool legacy) {
  auto stream = std::make_unique<Stream>();
  stream->id = next_stream_id_++;
  stream->handle = handle;
  stream->device = device;
  stream->flags = flags;
  stream->legacy = legacy;
  Stream& ref = *stream;
  streams_.emplace(ref.id, std::move(stream));
  if (handle != nullptr) user_streams_.emplace(handle, ref.id);
  return ref;
}

void FakeState::remove_stream(std::uint64_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  if (it->second->handle != nullptr) user_streams_.erase(it->second->handle);
  streams_.erase(it);
  stream_clocks_.erase(id);
}

}  // namespace graphcap::fake
