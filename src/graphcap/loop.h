// Loop: a WHILE loop recorded into a graph (Device::begin_while .. Device::end_while). Every
// replay of the graph runs the loop's body while its condition is not 0: the condition starts
// each replay at begin_while's `first`, and a kernel of the graph sets it on the device
// (Arg::condition(loop) hands it the handle; cudaGraphSetConditional(handle, value) in CUDA, or
// KernelContext::set_condition on the fake). A value type: copies name the same loop.
#pragma once

#include <cstdint>

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

class Arg;

class Loop {
 public:
  Loop() = default;

  // Begun by begin_while and not yet ended by end_while (through this object).
  bool open() const noexcept { return open_; }
  explicit operator bool() const noexcept { return id_ != 0; }
  // The conditional handle kernels set (0 for an empty Loop).
  CUgraphConditionalHandle handle() const noexcept { return handle_; }
  // The recording the loop belongs to (0 for an empty Loop).
  std::uint64_t recording() const noexcept { return recording_; }

 private:
  friend struct HandleAccess;
  friend class Arg;  // Arg::condition takes the id, for the recording to know it
  Loop(std::uint64_t id, std::uint64_t recording, CUgraphConditionalHandle handle) noexcept
      : id_(id), recording_(recording), handle_(handle), open_(true) {}

  std::uint64_t id_ = 0;
  std::uint64_t recording_ = 0;
  CUgraphConditionalHandle handle_ = 0;
  bool open_ = false;
};

}  // namespace graphcap
