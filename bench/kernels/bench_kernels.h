// The benchmark kernels. Each exists twice with the same name and effect: CUDA source in
// bench_kernels.cu (embedded as a fatbin when GRAPHCAP_GPU is ON) and a fake body registered on a
// FakeDriver by register_bench_kernels().
//
//   empty()    does nothing; the benchmarks measure launch and replay costs, not kernels
//   sink(v)    takes one 32-bit value and does nothing with it (the per-replay parameter
//              benchmarks set it)
#pragma once

#include <span>
#include <string_view>

namespace graphcap::fake {
class FakeDriver;
}

namespace graphcap::bench {

inline constexpr std::string_view kEmptyKernel = "empty";
inline constexpr std::string_view kSinkKernel = "sink";

// Registers every benchmark kernel on a fake driver.
void register_bench_kernels(fake::FakeDriver& driver);

}  // namespace graphcap::bench
