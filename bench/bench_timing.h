// What the benchmark families share to time one operation: the clock, a span in ns, the median of
// samples, and skipping a benchmark with graphcap's error.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <graphcap/error.h>

namespace graphcap::bench {

using Clock = std::chrono::steady_clock;

inline double ns_between(Clock::time_point start, Clock::time_point stop) {
  return std::chrono::duration<double, std::nano>(stop - start).count();
}

// The median (the mean of the middle two for an even count); 0 for no samples.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(),
                                         values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2.0;
}

inline void skip(benchmark::State& state, const Error& error) {
  state.SkipWithError(to_string(error).c_str());
}

inline void skip(benchmark::State& state, const std::string& message) {
  state.SkipWithError(message.c_str());
}

}  // namespace graphcap::bench
