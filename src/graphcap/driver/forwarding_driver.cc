#include <graphcap/driver/forwarding_driver.h>

#include <graphcap/driver/driver_hooks.h>

namespace graphcap {

std::string ForwardingDriver::capture_invalidation(CUstream stream) {
  return detail::DriverHooks::capture_invalidation(*inner_, stream);
}

std::string ForwardingDriver::stream_fault(CUstream stream) {
  return detail::DriverHooks::stream_fault(*inner_, stream);
}

void ForwardingDriver::annotate_buffer(CUdeviceptr address, std::size_t bytes) noexcept {
  detail::DriverHooks::annotate_buffer(*inner_, address, bytes);
}

}  // namespace graphcap
