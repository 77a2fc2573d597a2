// Stream: one CUDA stream of a Device, with its own memory pools, drop queue, error queue and
// capture window. Owned by its Device; use it from one thread at a time.
#pragma once

#include <memory>

#include <graphcap/capture/capture_state.h>
#include <graphcap/driver/cuda_types.h>

namespace graphcap {

namespace detail {
class StreamCore;
}
struct HandleAccess;

class Stream {
 public:
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // The driver's stream, for interop with code that launches on it directly (declare what that
  // work uses with Device::record_external). While a WHILE loop of this stream's recording is
  // open (Device::begin_while), the body stream of the innermost one: what is issued on it is
  // recorded into the loop's body. Ask again after begin_while and end_while.
  CUstream native_handle() const noexcept;
  // The old name of native_handle() (every wrapper's driver handle is native_handle()).
  [[deprecated("use native_handle()")]] CUstream handle() const noexcept { return native_handle(); }
  CaptureState capture_state() const noexcept;

 private:
  friend struct HandleAccess;
  explicit Stream(std::shared_ptr<detail::StreamCore> core) noexcept : core_(std::move(core)) {}

  std::shared_ptr<detail::StreamCore> core_;
};

}  // namespace graphcap
