// Error: what went wrong, as a value. Every message names the operation and, for a driver failure,
// the entry point and CUDA's name for the error.
#pragma once

#include <string>
#include <string_view>

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

// Each code means one thing:
enum class Errc {
  driver,            // a driver entry point failed; driver_code() says how
  graph_state,       // the call is out of order for the lifecycle of what it names: the capture
                     // window's state, a closed device, a released graph or module, a thread that
                     // may not end another's recording, or a recording that can't replay (memory
                     // nodes); nothing changed
  doomed,            // a recording refused because an operation inside it failed (or it was
                     // abandoned); also what the buffers it would have written carry
  failed_buffer,     // an input carries the error of the operation that should have written it
  out_of_memory,     // memory the operation needs can't be had now: the device's or pinned host
                     // memory is exhausted (CUDA_ERROR_OUT_OF_MEMORY), or a pool that may not
                     // grow now (inside a recording, or while a recording in global mode forbids
                     // driver allocations) has no free slice of the size; the message says which
  invalid_argument,  // the caller's arguments can't be right (checked before any driver call)
  driver_not_found,  // libcuda or one of its entry points is missing
};

// "driver", "graph_state", ...
const char* to_string(Errc code) noexcept;

class Error {
 public:
  Error(Errc code, std::string message, CUresult driver_code = CUDA_SUCCESS);

  // A failed driver call: "cuGraphLaunch failed: CUDA_ERROR_INVALID_VALUE (invalid argument)".
  // CUDA_ERROR_OUT_OF_MEMORY maps to Errc::out_of_memory, everything else to Errc::driver.
  static Error from_driver(std::string_view entry_point, CUresult code);

  Errc code() const noexcept { return code_; }
  // The CUresult behind this error, CUDA_SUCCESS (0) when no driver call failed.
  CUresult driver_code() const noexcept { return driver_code_; }
  const std::string& message() const noexcept { return message_; }

  // The same error, its message prefixed with the operation that saw it: "end_capture: ...".
  Error context(std::string_view operation) const;
  // The same message and driver code under another code (a failed buffer keeps its cause's).
  Error with_code(Errc code) const;

 private:
  Errc code_;
  CUresult driver_code_;
  std::string message_;
};

// "graph_state: end_capture: ..." for logs and test output.
std::string to_string(const Error& error);

}  // namespace graphcap
