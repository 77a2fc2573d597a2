// The real CUDA driver behind DriverApi: libcuda opened at run time (graphcap links no CUDA
// library), every entry point resolved through cuGetProcAddress_v2 by its base name at the CUDA
// version of its ABI (entry_points.def), from a driver of CUDA 13.0 (graphcap::kCudaVersion) or
// newer.
#pragma once

#include <memory>
#include <string>

#include <graphcap/driver/driver_api.h>
#include <graphcap/result.h>

namespace graphcap {

// The library load_cuda_driver() opens: the driver's soname, as the NVIDIA driver installs it.
inline constexpr const char* kCudaDriverLibrary = "libcuda.so.1";

// Opens libcuda.so.1. Errc::driver_not_found when the library, cuGetProcAddress_v2 or any entry
// point DriverApi needs is missing, or when the driver is older than CUDA 13.0; the message names
// what is missing and why. Never initializes CUDA (cuInit is the caller's first call).
Result<std::unique_ptr<DriverApi>> load_cuda_driver();

// The same from an explicit path or soname (tests load stub drivers this way).
Result<std::unique_ptr<DriverApi>> load_cuda_driver(const std::string& library);

}  // namespace graphcap
