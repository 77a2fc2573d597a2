// Condition: the conditional handle of an IF (with its optional ELSE) or a SWITCH recorded into a
// graph (Device::condition, then begin_if .. end_if or begin_switch .. end_switch). A kernel of
// the same recording, recorded before the branch, sets its value on the device (Arg::condition(c)
// hands it the handle; cudaGraphSetConditional(handle, value) in CUDA, KernelContext::
// set_condition on the fake); every replay starts it at Device::condition's `first`. Each replay
// then runs the IF body when the value is not 0 (else the ELSE body), or the SWITCH case the value
// names (none past the last case). A value type: copies name the same condition.
#pragma once

#include <cstdint>

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

class Arg;

class Condition {
 public:
  Condition() = default;

  explicit operator bool() const noexcept { return id_ != 0; }
  // The conditional handle kernels set (0 for an empty Condition).
  CUgraphConditionalHandle handle() const noexcept { return handle_; }
  // The recording the condition belongs to (0 for an empty Condition).
  std::uint64_t recording() const noexcept { return recording_; }
  // The value every replay starts it at.
  unsigned first() const noexcept { return first_; }

 private:
  friend struct HandleAccess;
  friend class Arg;  // Arg::condition takes the id, for the recording to know it
  Condition(std::uint64_t id, std::uint64_t recording, CUgraphConditionalHandle handle,
            unsigned first) noexcept
      : id_(id), recording_(recording), handle_(handle), first_(first) {}

  std::uint64_t id_ = 0;
  std::uint64_t recording_ = 0;
  CUgraphConditionalHandle handle_ = 0;
  unsigned first_ = 0;
};

}  // namespace graphcap
