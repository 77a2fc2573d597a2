// Buffer: a shared handle to device memory from a stream's pool. Copies share the memory; when the
// last copy goes, the slice goes onto its stream's drop queue and returns to the pool once the
// stream has passed every operation that used it.
//
// A buffer can carry a failure: when an operation that should have written it failed (a launch,
// a write, a refused recording), the buffer holds that error instead of data. A launch that reads
// it fails with Errc::failed_buffer, read() returns the error, and a full write() clears it.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/error.h>

namespace graphcap {

namespace memory {
class BufferState;
}
struct HandleAccess;

class Buffer {
 public:
  Buffer() = default;  // an empty handle: no memory; every operation on it is invalid_argument

  explicit operator bool() const noexcept { return state_ != nullptr; }
  // Bytes requested (the slice behind it may be larger). 0 for an empty handle.
  std::size_t size() const noexcept;
  // The device address, for interop; 0 for an empty handle.
  CUdeviceptr native_handle() const noexcept;
  // The old name of native_handle() (every wrapper's driver handle is native_handle()).
  [[deprecated("use native_handle()")]] CUdeviceptr device_ptr() const noexcept {
    return native_handle();
  }
  // The error this buffer carries instead of data, if any.
  std::optional<Error> failure() const;

  // A name for diagnostics, shared by every copy of this handle: Graph::dot() shows it on each
  // recorded operation that takes the buffer ("arg 0: out 64 B \"kv_cache\""). Empty by default;
  // setting an empty one removes it. A recording keeps the label the buffer had when it was
  // recorded. No effect on an empty handle.
  void set_label(std::string label);
  std::string label() const;

  friend bool operator==(const Buffer& a, const Buffer& b) noexcept { return a.state_ == b.state_; }

 private:
  friend struct HandleAccess;
  explicit Buffer(std::shared_ptr<memory::BufferState> state) noexcept : state_(std::move(state)) {}

  std::shared_ptr<memory::BufferState> state_;
};

}  // namespace graphcap
