// FakeDriver: forwards every call to FakeState (the lock, fault injection and the call log are
// FakeState::call's), and the observation and control methods likewise.
#include <graphcap/fake/fake_driver.h>

#include <graphcap/fake/internal/fake_state.h>
#include <graphcap/fake/internal/kernel_params.h>
#include <graphcap/fake/internal/module_image.h>

namespace graphcap::fake {

FakeDriver::FakeDriver(FakeDriverOptions options) : state_(std::make_unique<FakeState>(options)) {}

FakeDriver::~FakeDriver() = default;

void FakeDriver::register_kernel(std::string name, KernelBody body) {
  state_->register_kernel(std::move(name), false, {}, {}, std::move(body));
}

void FakeDriver::register_kernel(std::string name, std::vector<std::size_t> param_sizes,
                                 KernelBody body) {
  std::vector<std::size_t> alignments;
  alignments.reserve(param_sizes.size());
  for (std::size_t size : param_sizes) alignments.push_back(internal::natural_alignment(size));
  state_->register_kernel(std::move(name), true, std::move(param_sizes), std::move(alignments),
                          std::move(body));
}

void FakeDriver::register_kernel_layout(std::string name, std::vector<std::size_t> sizes,
                                        std::vector<std::size_t> alignments, KernelBody body) {
  state_->register_kernel(std::move(name), true, std::move(sizes), std::move(alignments),
                          std::move(body));
}

std::vector<std::byte> FakeDriver::module_image(
    std::initializer_list<std::string_view> kernels) const {
  return internal::build_module_image(kernels);
}

void FakeDriver::fail_call(std::string_view entry_point, CUresult code, int nth) {
  state_->fail_call(entry_point, code, nth);
}
void FakeDriver::fail_always(std::string_view entry_point, CUresult code) {
  state_->fail_always(entry_point, code);
}
void FakeDriver::fail_when(std::string_view entry_point, CUresult code, FaultPredicate predicate) {
  state_->fail_when(entry_point, code, std::move(predicate));
}
void FakeDriver::clear_faults() { state_->clear_faults(); }
std::vector<std::string> FakeDriver::unfired_faults() const { return state_->unfired_faults(); }

std::vector<CallRecord> FakeDriver::calls() const { return state_->calls(); }
std::size_t FakeDriver::call_count(std::string_view entry_point) const {
  return state_->call_count(entry_point);
}
std::size_t FakeDriver::total_calls() const { return state_->total_calls(); }
void FakeDriver::clear_calls() { state_->clear_calls(); }
LiveHandles FakeDriver::live_handles() const { return state_->live_handles(); }
std::size_t FakeDriver::reclaimed_handles() const { return state_->reclaimed_handles(); }
std::vector<std::string> FakeDriver::violations() const { return state_->violations(); }
void FakeDriver::clear_violations() { state_->clear_violations(); }
std::size_t FakeDriver::pending_operations(CUstream stream) const {
  return state_->pending_operations(stream);
}
void FakeDriver::run_pending() { state_->run_pending(); }
std::string FakeDriver::capture_invalidation(CUstream stream) {
  return state_->capture_invalidation(stream);
}
std::string FakeDriver::stream_fault(CUstream stream) { return state_->stream_fault(stream); }
void FakeDriver::annotate_buffer(CUdeviceptr address, std::size_t bytes) noexcept {
  state_->annotate_buffer(address, bytes);
}
void FakeDriver::set_device_paused(bool paused) { state_->set_device_paused(paused); }
bool FakeDriver::read_device(CUdeviceptr address, std::span<std::byte> out) const {
  return state_->read_device(address, out);
}
bool FakeDriver::write_device(CUdeviceptr address, std::span<const std::byte> bytes) {
  return state_->write_device(address, bytes);
}
std::size_t FakeDriver::executable_memory(int device) const {
  return state_->executable_memory(device);
}

// ---- DriverApi ---------------------------------------------------------------------------------

// Each entry point: FakeState::call takes the lock, injects a planned fault (then only the real
// failure's side effects happen: FakeState::injected, from the entry point's traits) or runs
// FakeState's method of the same name, and logs the call under the entry point's name.
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, traits)                         \
  CUresult FakeDriver::name(GRAPHCAP_PARAMS(params)) {                                          \
    return state_->call(                                                                        \
        #name, GRAPHCAP_TRAIT_STREAM(traits), [&] { return state_->name(GRAPHCAP_ARGS(params)); }, \
        [&] {                                                                                   \
          state_->injected<entry::name>(GRAPHCAP_TRAIT_STREAM(traits),                          \
                                        GRAPHCAP_TRAIT_HANDLE_PARAM(traits));                   \
        });                                                                                     \
  }
#include <graphcap/driver/entry_points.def>

}  // namespace graphcap::fake
