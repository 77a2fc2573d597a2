// DriverHooks: graphcap's own door to DriverApi's private hooks (the driver's accounts of an
// invalidated capture and of a stream's fault, and the annotation of each Buffer graphcap lends).
// They are not CUDA entry points and no part of the API; driver_api.h says what each means.
// Internal (not installed).
#pragma once

#include <cstddef>
#include <string>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/driver_api.h>

namespace graphcap::detail {

struct DriverHooks {
  static std::string capture_invalidation(DriverApi& driver, CUstream stream) {
    return driver.capture_invalidation(stream);
  }
  static std::string stream_fault(DriverApi& driver, CUstream stream) {
    return driver.stream_fault(stream);
  }
  static void annotate_buffer(DriverApi& driver, CUdeviceptr address, std::size_t bytes) noexcept {
    driver.annotate_buffer(address, bytes);
  }
};

}  // namespace graphcap::detail
