// graphcap's public headers, then cuda.h, in one nvcc C++20 translation unit: the mirrored types
// in namespace graphcap must not clash with cuda.h's global ones.
#include <graphcap/graphcap.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/driver/forwarding_driver.h>
#include <graphcap/fake/fake_driver.h>

#include <cuda.h>

namespace {

// Touch the interfaces so the compiler instantiates what a user would.
__host__ graphcap::CUresult init_through(graphcap::DriverApi& driver) { return driver.cuInit(0); }

__global__ void kernel_beside_graphcap(unsigned* out) { *out = graphcap::CUDA_SUCCESS; }

}  // namespace

int graphcap_nvcc_check_graphcap_first() {
  graphcap::fake::FakeDriver fake;
  graphcap::ForwardingDriver forwarding(fake);
  (void)&kernel_beside_graphcap;
  return static_cast<int>(init_through(forwarding)) + static_cast<int>(::CUDA_SUCCESS);
}
