// DeviceCore: the state of one open Device, shared by everything that can outlive the Device
// object (streams, buffers, modules, graphs). Closing marks it closed and releases every driver
// handle it holds exactly once; the objects still alive then find it closed and turn inert.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <graphcap/capture/capture_tracker.h>
#include <graphcap/capture/cuda_graph_driver.h>
#include <graphcap/detail/bound_device.h>
#include <graphcap/detail/stream_order.h>
#include <graphcap/device_limits.h>
#include <graphcap/device_options.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/log.h>
#include <graphcap/memory/allocation.h>
#include <graphcap/result.h>

namespace graphcap::detail {

class StreamCore;
class ModuleState;
class GraphState;
class EventState;

class DeviceCore : public std::enable_shared_from_this<DeviceCore> {
 public:
  // cuInit, the device of `options.ordinal`, its primary context (retained, and made current on
  // this thread) and its limits. On failure everything acquired is released again.
  static Result<std::shared_ptr<DeviceCore>> open(DriverApi& driver, DeviceOptions options);

  DeviceCore(DriverApi& driver, DeviceOptions options);
  DeviceCore(const DeviceCore&) = delete;
  DeviceCore& operator=(const DeviceCore&) = delete;

  DriverApi& driver() const noexcept { return *driver_; }
  const DeviceOptions& options() const noexcept { return options_; }
  const DeviceLimits& limits() const noexcept { return limits_; }
  CUdevice device() const noexcept { return device_; }
  CUcontext context() const noexcept { return context_; }
  capture::GraphDriver& graph_driver() noexcept { return graph_driver_; }
  capture::CaptureTracker& tracker() const noexcept { return *tracker_; }
  bool is_open() const noexcept { return open_.load(std::memory_order_acquire); }
  // Whether this open device serves a stream of `stream_device`: every operation's first check
  // (Device::check_stream, and Device::launch inline).
  bool serves(const DeviceCore& stream_device) const noexcept {
    return &stream_device == this && is_open();
  }
  std::uint64_t id() const noexcept { return id_; }
  bool unsafe_calls_forbidden() const noexcept { return tracker_->unsafe_calls_forbidden(); }
  // True the first time only: the first kernel of this device whose parameter layout the driver
  // couldn't report (its launches go unchecked), so the warning about it is logged once.
  bool first_unchecked_kernel() noexcept {
    return !unchecked_kernel_seen_.exchange(true, std::memory_order_relaxed);
  }

  // Make this device's context current on the calling thread (cached per thread: see
  // t_bound_device; code that changes the current context behind graphcap's back defeats it).
  Result<void> bind_thread() {
    if (t_bound_device == id_) return {};
    return bind_thread_slow();
  }
  // Errc::graph_state naming `operation` when the device is closed.
  Result<void> check_open(const char* operation) const;

  // ---- Several devices (device_peer.cc) ----
  // "device 1" (its ordinal), for messages.
  std::string name() const;
  // For refusing an object of `other` here: "another device (device 1; this is device 0)", or
  // for two Devices opened on one ordinal "another device (a second Device of ordinal 0)".
  std::string another_device(const DeviceCore& other) const;
  // Whether this device's context may access `peer`'s memory (enabled through graphcap).
  bool peer_enabled(const DeviceCore& peer) const;
  void set_peer_enabled(const DeviceCore& peer);

  // A graph of another device pins `memory` of this one (a peer copy): this device keeps it
  // allocated past its own close, for as long as that graph holds it.
  void pinned_by_other_device(const std::shared_ptr<memory::Allocation>& memory);
  // After close: a kept slice went with its last pin; the context goes with the last of them.
  void kept_slice_freed() noexcept;

  // A new non-blocking stream of this device.
  Result<std::shared_ptr<StreamCore>> create_stream();
  void add_module(const std::shared_ptr<ModuleState>& module);
  void add_graph(const std::shared_ptr<GraphState>& graph);
  void add_event(const std::shared_ptr<EventState>& event);
  // A release that must wait until no recording forbids it (it waits, or destroys an executable
  // or a module, all of which would invalidate an open recording).
  void defer(std::shared_ptr<GraphState> graph);
  void defer_unload(CUmodule module);
  void collect_deferred() noexcept;
  // Set by a stream's drop queue when drops are left waiting in it (memory::DropQueue): only
  // then does collect_deferred poll every stream's queue.
  std::atomic<bool>& drops_waiting() noexcept { return drops_waiting_; }

  // What the host has seen finish on this device's streams (their completed syncs): every
  // stream is ordered after it (docs/capture-lifecycle.md, "Buffers on several streams").
  CompletedOrder& completed_order() noexcept { return completed_order_; }

  // A stream graphcap can't destroy (a conditional body's, its capture invalidated: destroying it
  // crashes the driver) is left to the driver for the process's life; counted here.
  void leave_stream_to_driver() noexcept { streams_left_.fetch_add(1, std::memory_order_relaxed); }
  std::size_t streams_left_to_driver() const noexcept {
    return streams_left_.load(std::memory_order_relaxed);
  }

  // Release everything, each handle once. Idempotent.
  void close() noexcept;

  // A device fault fails every call after it (sticky, as on the H200), so closing after one
  // fails many calls alike. A wait returned `code` to the user: fault_reported(code). Then
  // teardown_level(code) is info for a failure with that code (they were told), and warn for the
  // first failure of any other code (which then counts as told).
  void fault_reported(CUresult code) noexcept {
    told_fault_.store(static_cast<int>(code), std::memory_order_relaxed);
  }
  LogLevel teardown_level(CUresult code) noexcept {
    const int told = told_fault_.exchange(static_cast<int>(code), std::memory_order_relaxed);
    return told == static_cast<int>(code) ? LogLevel::info : LogLevel::warn;
  }

 private:
  Result<void> bind_thread_slow();
  Result<void> query_limits();

  DriverApi* driver_;
  DeviceOptions options_;
  DeviceLimits limits_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  capture::CudaGraphDriver graph_driver_;
  std::shared_ptr<capture::CaptureTracker> tracker_;
  const std::uint64_t id_;
  std::atomic<bool> open_{true};
  std::atomic<bool> unchecked_kernel_seen_{false};
  std::atomic<bool> drops_waiting_{false};
  std::atomic<std::size_t> streams_left_{0};
  std::atomic<bool> has_deferred_{false};  // deferred_graphs_ or deferred_unloads_ may hold some
  bool context_retained_ = false;

  std::mutex mutex_;
  std::vector<std::shared_ptr<StreamCore>> streams_;
  std::vector<std::weak_ptr<ModuleState>> modules_;
  std::vector<std::weak_ptr<GraphState>> graphs_;
  std::vector<std::weak_ptr<EventState>> events_;
  int next_stream_index_ = 0;
  std::vector<std::shared_ptr<GraphState>> deferred_graphs_;
  std::vector<CUmodule> deferred_unloads_;
  mutable std::mutex peers_mutex_;
  // The devices (as opened: a peer closed and opened again is a new one, whose context the driver
  // made anew) whose memory this context may access.
  std::vector<std::uint64_t> peers_;
  // Memory of this device that graphs of other devices pin (peer copies): kept allocated, with
  // the context, past this device's close until the last of those graphs lets go.
  std::vector<std::weak_ptr<memory::Allocation>> pinned_elsewhere_;
  std::atomic<int> kept_after_close_{0};
  CompletedOrder completed_order_;
  std::atomic<int> told_fault_{CUDA_SUCCESS};  // the last fault code the user was told of
};

}  // namespace graphcap::detail
