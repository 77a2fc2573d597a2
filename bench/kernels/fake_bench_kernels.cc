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
  driver.register_typed_kernel<CUgraphConditionalHandle, CUdeviceptr, CUdeviceptr>(
      std::string(kCountdownKernel), [](fake::KernelContext& k) {
        auto counter = k.buffer<std::uint32_t>(1, 1);
        auto go = k.buffer<std::uint32_t>(2, 1);
        if (counter.empty() || go.empty()) return;
        const std::uint32_t left = --counter[0];
        go[0] = left > 0 ? 1u : 0u;
        if (k.value<CUgraphConditionalHandle>(0) != 0) k.set_condition(0, go[0]);
      });
  driver.register_typed_kernel<CUdeviceptr, CUdeviceptr, std::uint32_t>(
      std::string(kChainKernel), [](fake::KernelContext& k) {
        if (k.value<std::uint32_t>(2) != 0) k.wait_for_predecessor();
        const std::size_t blocks = k.dims().grid.x;
        auto prev = k.buffer<const std::uint32_t>(0, blocks);
        auto mine = k.buffer<std::uint32_t>(1, blocks);
        for (std::size_t b = 0; b < mine.size() && b < prev.size(); ++b) mine[b] = prev[b] + 1;
      });
  driver.register_typed_kernel<CUgraphConditionalHandle, std::uint32_t>(
      std::string(kSetConditionKernel),
      [](fake::KernelContext& k) { k.set_condition(0, k.value<std::uint32_t>(1)); });
}

}  // namespace graphcap::bench
