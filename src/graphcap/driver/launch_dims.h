// The shape of one kernel launch, as cuLaunchKernel takes it.
#pragma once

namespace graphcap {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  friend bool operator==(const Dim3&, const Dim3&) = default;
};

struct LaunchDims {
  Dim3 grid;
  Dim3 block;
  unsigned shared_bytes = 0;
  friend bool operator==(const LaunchDims&, const LaunchDims&) = default;
};

}  // namespace graphcap
