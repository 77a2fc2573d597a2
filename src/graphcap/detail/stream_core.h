// StreamCore: everything one stream owns: the driver stream, its device and staging pools, its
// drop queue, its capture window and its queue of asynchronous errors. Shared by the public Stream,
// by every Allocation of its pools, and by the Graphs captured on it, so it outlives the Device
// in a closed state (every operation then refuses, every drop is a no-op).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <graphcap/capture/window.h>
#include <graphcap/detail/replay_gate.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/error.h>
#include <graphcap/memory/drop_queue.h>
#include <graphcap/memory/slice_pool.h>

namespace graphcap::detail {

class DeviceCore;

class StreamCore : public std::enable_shared_from_this<StreamCore> {
 public:
  StreamCore(std::shared_ptr<DeviceCore> device, CUstream handle);
  StreamCore(const StreamCore&) = delete;
  StreamCore& operator=(const StreamCore&) = delete;
  ~StreamCore();

  DeviceCore& device() const noexcept { return *device_; }
  CUstream handle() const noexcept { return handle_; }
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  ReplayGate& gate() noexcept { return gate_; }

  // Guards the pools, the drop queue and the window. Recursive: releasing the last reference to
  // an allocation while holding it (e.g. unpinning at end_capture) re-enters through drop().
  std::recursive_mutex& mutex() noexcept { return mutex_; }
  memory::SlicePool& device_pool() noexcept { return device_pool_; }
  memory::SlicePool& staging_pool() noexcept { return staging_pool_; }
  memory::DropQueue& drops() noexcept { return drops_; }
  capture::Window& window() noexcept { return window_; }
  const capture::Window& window() const noexcept { return window_; }

  // A buffer of this stream started (+1) or stopped (-1) carrying a failure.
  void count_failed_buffer(int delta) noexcept;

  // A slice's last handle went away (any thread).
  void drop(const memory::Slice& slice, std::uint64_t last_use) noexcept;

  // Asynchronous failures (of replays, of waits in destructors) surface on the next sync or read.
  void queue_error(const Error& error);
  std::optional<Error> take_error();
  bool has_queued_error() const noexcept { return has_errors_.load(std::memory_order_acquire); }

  // Wait for everything enqueued so far; then every drop behind it is released. Refused while a
  // recording forbids waits (see CaptureTracker).
  Result<void> synchronize(const char* operation);

  // The device is closing: close any recording, wait, free every slice and the stream.
  void close() noexcept;

 private:
  ReplayGate gate_;
  std::shared_ptr<DeviceCore> device_;
  CUstream handle_;
  std::recursive_mutex mutex_;
  memory::SlicePool device_pool_;
  memory::SlicePool staging_pool_;
  memory::DropQueue drops_;
  capture::Window window_;
  std::mutex failed_mutex_;
  int failed_buffers_ = 0;
  std::mutex errors_mutex_;
  std::vector<Error> errors_;
  std::atomic<bool> has_errors_{false};
  std::atomic<bool> closed_{false};
};

}  // namespace graphcap::detail
