// What tests observe and control: faults, the call log, live handles, violations, the queue,
// and checked direct access to simulated memory. Each takes the lock.
#include <graphcap/fake/internal/fake_state.h>

#include <cstring>

#include <graphcap/driver/error_names.h>

namespace graphcap::fake {

void FakeState::fail_call(std::string_view entry_point, CUresult code, int nth) {
  std::lock_guard<std::mutex> guard(mutex_);
  faults_.fail_call(entry_point, code, nth);
}

void FakeState::fail_always(std::string_view entry_point, CUresult code) {
  std::lock_guard<std::mutex> guard(mutex_);
  faults_.fail_always(entry_point, code);
}

void FakeState::fail_when(std::string_view entry_point, CUresult code, FaultPredicate predicate) {
  std::lock_guard<std::mutex> guard(mutex_);
  faults_.fail_when(entry_point, code, std::move(predicate));
}

void FakeState::clear_faults() {
  std::lock_guard<std::mutex> guard(mutex_);
  faults_.clear();
}

std::vector<std::string> FakeState::unfired_faults() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return faults_.unfired();
}

std::vector<CallRecord> FakeState::calls() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return log_.records();
}

std::size_t FakeState::call_count(std::string_view entry_point) const {
  std::lock_guard<std::mutex> guard(mutex_);
  return log_.count(entry_point);
}

std::size_t FakeState::total_calls() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return log_.total();
}

void FakeState::clear_calls() {
  std::lock_guard<std::mutex> guard(mutex_);
  log_.clear();
}

LiveHandles FakeState::live_handles() {
  std::lock_guard<std::mutex> guard(mutex_);
  LiveHandles live;
  for (const Context& context : contexts_) live.contexts += context.refs;
  live.streams = user_streams_.size();
  live.events = events_.size();
  live.modules = modules_.size();
  for (const auto& [handle, graph] : graphs_) live.graphs += graph.under_capture ? 0 : 1;
  live.execs = execs_.size();
  device_memory_.for_each([&](internal::DeviceMemory::Allocation& allocation) {
    live.device_allocations += allocation.host_allocated ? 1 : 0;
  });
  live.host_allocations = pinned_memory_.count();
  live.address_ranges = virtual_memory_.reservation_count();
  live.memory_handles = virtual_memory_.handle_count();
  live.mappings = virtual_memory_.mappings().size();
  return live;
}

std::size_t FakeState::executable_memory(int device) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (device < 0 || device >= static_cast<int>(contexts_.size())) return 0;
  return executable_arena_.held(device);
}

std::size_t FakeState::reclaimed_handles() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return reclaimed_;
}

std::vector<std::string> FakeState::violations() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return violations_;
}

void FakeState::clear_violations() {
  std::lock_guard<std::mutex> guard(mutex_);
  violations_.clear();
}

std::size_t FakeState::pending_operations(CUstream handle) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (handle == nullptr) return queue_.size();
  const Stream* stream = find_stream(handle);
  return stream == nullptr ? 0 : stream->pending;
}

void FakeState::run_pending() {
  std::lock_guard<std::mutex> guard(mutex_);
  run_all();
}

void FakeState::set_device_paused(bool paused) {
  std::lock_guard<std::mutex> guard(mutex_);
  paused_ = paused;
}

bool FakeState::read_device(CUdeviceptr address, std::span<std::byte> out) {
  std::lock_guard<std::mutex> guard(mutex_);
  std::string why;
  const std::byte* bytes = device_memory_.access(address, out.size(), &why);
  if (bytes == nullptr) return false;
  if (!out.empty()) std::memcpy(out.data(), bytes, out.size());
  return true;
}

bool FakeState::write_device(CUdeviceptr address, std::span<const std::byte> in) {
  std::lock_guard<std::mutex> guard(mutex_);
  std::string why;
  std::byte* bytes = device_memory_.access(address, in.size(), &why);
  if (bytes == nullptr) return false;
  if (!in.empty()) std::memcpy(bytes, in.data(), in.size());
  return true;
}

CUresult FakeState::cuGetErrorName(CUresult error, const char** name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *name = cu_result_name(error);
  return *name == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult FakeState::cuGetErrorString(CUresult error, const char** text) {
  if (text == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *text = cu_result_string(error);
  return *text == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

}  // namespace graphcap::fake
