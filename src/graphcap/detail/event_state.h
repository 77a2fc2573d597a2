// EventState: the driver event behind an Event, and what graphcap knows of its last record: the
// position on its stream (with every position of other streams known to come before it), and
// the recording it was recorded into, if any. Guarded by its own mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <graphcap/detail/stream_core.h>
#include <graphcap/driver/cuda_types.h>

namespace graphcap::detail {

class DeviceCore;

class EventState {
 public:
  EventState(std::shared_ptr<DeviceCore> device, CUevent handle) noexcept
      : device_(std::move(device)), handle_(handle) {}
  EventState(const EventState&) = delete;
  EventState& operator=(const EventState&) = delete;
  ~EventState();  // cuEventDestroy, unless the closing device already released it

  DeviceCore& device() const noexcept { return *device_; }
  CUevent handle() const noexcept { return handle_; }
  // The device is closing: destroy the driver event now (once).
  void release() noexcept;

  struct Record {
    OrderPoint point;               // point.stream nullptr: never recorded
    std::uint64_t recording = 0;    // the recording it was recorded into; 0: outside any
    capture::Window* origin = nullptr;  // that recording's origin window
    std::vector<std::size_t> nodes;     // the recorded nodes it marks (the stream's frontier)
    std::string stream_name;        // for messages
  };
  Record last_record() const {
    std::lock_guard lock(mutex_);
    return record_;
  }
  void set_record(Record record) {
    std::lock_guard lock(mutex_);
    record_ = std::move(record);
  }

 private:
  std::shared_ptr<DeviceCore> device_;
  CUevent handle_;
  std::atomic<bool> released_{false};
  mutable std::mutex mutex_;
  Record record_;
};

}  // namespace graphcap::detail
