// cuda.h, then graphcap's public headers, in one nvcc C++20 translation unit. cuda.h's macros
// (cuMemAlloc -> cuMemAlloc_v2, ...) rename DriverApi's members here, consistently: it must still
// compile, and no mirrored name may be one of cuda.h's macros.
#include <cuda.h>

#include <graphcap/graphcap.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/driver/forwarding_driver.h>
#include <graphcap/fake/fake_driver.h>

namespace {

__host__ graphcap::CUresult init_through(graphcap::DriverApi& driver) { return driver.cuInit(0); }

__global__ void kernel_beside_graphcap(unsigned* out) { *out = graphcap::CUDA_SUCCESS; }

}  // namespace

int graphcap_nvcc_check_cuda_h_first() {
  graphcap::fake::FakeDriver fake;
  // Its methods, generated from entry_points.def, are renamed by cuda.h's macros like DriverApi's.
  graphcap::ForwardingDriver forwarding(fake);
  (void)&kernel_beside_graphcap;
  // A graphcap handle is a cuda.h handle.
  ::CUstream stream = graphcap::stream_legacy();
  return static_cast<int>(init_through(forwarding)) + (stream == CU_STREAM_LEGACY ? 0 : 1);
}
