// Event: a CUDA event of a Device (Device::create_event), for ordering work between its streams.
// Device::record_event(event, s) marks everything enqueued on `s` so far; Device::wait(t, event)
// makes later work on `t` wait for it. Outside a recording that is eager cross-stream order, and
// it is what lets a buffer be used on another stream of its device (docs/capture-lifecycle.md,
// "Buffers on several streams"). Move-only; the driver's event is destroyed exactly once, when
// the last Event goes (or when its Device closes, whichever comes first).
#pragma once

#include <memory>

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

namespace detail {
class EventState;
}
struct HandleAccess;

class Event {
 public:
  Event() noexcept;  // empty: record and wait refuse it (Errc::invalid_argument)
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  explicit operator bool() const noexcept { return state_ != nullptr; }
  // The driver's event, for interop; nullptr for an empty Event. graphcap still owns it.
  CUevent native_handle() const noexcept;

 private:
  friend struct HandleAccess;
  explicit Event(std::shared_ptr<detail::EventState> state) noexcept;

  std::shared_ptr<detail::EventState> state_;
};

}  // namespace graphcap
