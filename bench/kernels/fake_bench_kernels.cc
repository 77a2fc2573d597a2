// The fake bodies of the benchmark kernels (bench_kernels.h).
#include <cstdint>
#include <string>

#include <graphcap/fake/fake_driver.h>

#include "kernels/bench_kernels.h"

namespace graphcap::bench {

void register_bench_kernels(fake::FakeDriver& driver) {
  driver.register_typed_kernel<>(std::string(kEmptyKernel), [](fake::KernelContext&) {});
  driver.register_typed_kernel<std::uint32_t, std::uint64_t, std::uint32_t>(
      std::string(kValuesKernel), [](fake::KernelContext&) {});
  driver.register_typed_kernel<std::uint32_t>(std::string(kSinkKernel),
                                              [](fake::KernelContext&) {});
}

}  // namespace graphcap::bench
