// StreamCore: everything one stream owns: the driver stream, its device and staging pools, its
// drop queue, its capture window and its queue of asynchronous errors. Shared by the public Stream,
// by every Allocation of its pools, and by the Graphs captured on it, so it outlives the Device
// in a closed state (every operation then refuses, every drop is a no-op).
//
// Every stream operation on buffers (a launch, a write, ...) goes through run(): one place that
// checks the inputs for carried failures, issues the driver call, stamps each buffer's last use,
// hands the operation to the recording it enters (capture::OpenRecording) when recording, and
// marks or clears failures. Events (record_event, wait_event), allocations (allocate), reads back
// to the host (copy_to_host) and the capture verbs (prepare_capture to end_capture, the
// conditional steps) go through the stream too: nothing above it steers a recording, and the
// public calls only convert handles and check arguments.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <graphcap/capture/recording.h>
#include <graphcap/capture/replay_gate.h>
#include <graphcap/capture/window.h>
#include <graphcap/detail/error_queue.h>
#include <graphcap/detail/stream_order.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/error.h>
#include <graphcap/memory/drop_queue.h>
#include <graphcap/memory/slice_owner.h>
#include <graphcap/memory/slice_pool.h>
#include <graphcap/memory/virtual_range.h>
#include <graphcap/result.h>

namespace graphcap::detail {

class DeviceCore;
class EventState;
class GraphState;
class PendingGraphState;

class StreamCore final : public memory::SliceOwner,
                         public std::enable_shared_from_this<StreamCore> {
 public:
  StreamCore(std::shared_ptr<DeviceCore> device, CUstream handle);
  StreamCore(const StreamCore&) = delete;
  StreamCore& operator=(const StreamCore&) = delete;
  ~StreamCore();

  DeviceCore& device() const noexcept { return *device_; }
  // The stream's place among its device's streams (0: Device::stream()), for messages and DOT:
  // "stream 1".
  int index() const noexcept { return index_; }
  void set_index(int index) noexcept {
    index_ = index;
    window_.set_stream_index(index);
    window_.set_stream(this);
  }
  std::string name() const { return "stream " + std::to_string(index_); }
  CUstream handle() const noexcept { return handle_; }
  // Where the stream's operations are issued now: its handle, or, while a conditional node of
  // its recording is open, the body stream of the innermost one.
  CUstream target() const noexcept {
    const CUstream body = window_.own_recording().frames().target();
    return body != nullptr ? body : handle_;
  }
  // The stream records the body of a conditional node now.
  bool in_conditional_body() const noexcept {
    return window_.own_recording().frames().target() != nullptr;
  }
  // The body stream for a conditional node at `depth` (0: outermost), created on first use and
  // kept until the stream closes (mutex() held); `operation` names the call in a failure, which
  // dooms the open recording (a failed step of `operation`).
  Result<CUstream> loop_stream(std::size_t depth, const char* operation = "begin_while");
  // Drops the body streams the window abandoned (their invalidated capture left open).
  void forget_abandoned_loop_streams();
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  capture::ReplayGate& gate() noexcept { return gate_; }

  // Guards the pools, the drop queue and the window. Recursive: releasing the last reference to
  // an allocation while holding it (e.g. unpinning at end_capture) re-enters through drop().
  std::recursive_mutex& mutex() noexcept { return mutex_; }
  memory::SlicePool& device_pool() noexcept { return device_pool_; }
  memory::SlicePool& staging_pool() noexcept { return staging_pool_; }
  memory::DropQueue& drops() noexcept { return drops_; }
  // The capture window (for the detail layer: the device's closing, the events' fork and join).
  capture::Window& window() noexcept { return window_; }
  const capture::Window& window() const noexcept { return window_; }
  // A slice of `bytes` from `pool` as an Allocation of this stream: a free one, else whatever the
  // drop queue can release without waiting, else a new one from the driver when no recording
  // forbids it. Call with mutex() held.
  Result<std::shared_ptr<memory::Allocation>> take_slice(memory::SlicePool& pool, std::size_t bytes);

  // A buffer of `bytes` owned by this stream (mutex() held): inside a graph pool's recording,
  // memory the pool lends first; the allocation counts as the buffer's first use (a write), lent
  // or not. A failure inside a recording dooms it.
  Result<std::shared_ptr<memory::BufferState>> allocate(std::size_t bytes);

  // Events (mutex() held): record `event` here now, or make this stream wait for its last record
  // (`peer`: the event is another device's). Inside a recording: fork and join, checked before
  // the driver sees them (each refusal would otherwise invalidate the recording).
  Result<void> record_event(EventState& event);
  Result<void> wait_event(const EventState& event, bool peer);

  // One stream operation (mutex() held). `issue` makes the driver call(s) and returns an error or
  // nothing; it may set op.staging. `what` names the operation, `use_name(i)` its i-th use (both
  // are called only to build a message).
  template <class Issue, class What, class UseName>
  Result<void> run(capture::Operation& op, Issue&& issue, What&& what, UseName&& use_name);

  // ---- The capture verbs (stream_capture.cc): each takes the stream's lock itself ----------
  CaptureState capture_state() const noexcept { return window_.state(); }
  // Whether a buffer allocated inside this stream's last recording was alive at its close.
  bool kept_allocation_at_close() const noexcept { return window_.kept_allocation_at_close(); }
  // This stream records (its own recording, or one it was forked into).
  bool recording() const noexcept { return window_.recording(); }
  // The recording this stream's operations enter now (unique in the process), 0 when none.
  std::uint64_t recording_id() noexcept { return window_.recording_id(); }
  // prepare_capture: arm the pools; the recording's mode, whether a refusal claims, the graph
  // pool (of this stream) whose intermediates it shares.
  Result<void> prepare_capture(CUstreamCaptureMode mode, bool claim_on_refusal,
                               std::shared_ptr<capture::PoolShare> pool);
  Result<void> begin_capture();
  // end_capture: the graph's state (registered with the device), or the refusal.
  Result<std::shared_ptr<GraphState>> end_capture();
  // end_capture with the instantiate left to later (PendingGraphState): every other refusal is
  // decided here, and the stream may record again at once.
  Result<std::shared_ptr<PendingGraphState>> end_capture_deferred();
  // end_capture into `into` (a graph of this stream): `into` adopts the new recording; the one
  // it replaced is released once the stream has passed the replays that used it.
  Result<void> end_capture(GraphState& into);
  Result<void> abort_capture();
  // A step of a conditional node (begin_while, condition, begin_if, ..., end_switch), checked
  // by the window and made by the recording's frames; a step opening a node gets its body
  // stream here. A loop or a condition it made comes with this recording's id.
  struct Conditional {
    capture::ConditionalHandle made;
    std::uint64_t recording = 0;
  };
  Result<Conditional> conditional(const capture::ConditionalStep& step);
  // A loop or branch of this id is open in this stream's recording.
  bool conditional_open(std::uint64_t id) const {
    return window_.own_recording().frames().open_frame(id);
  }
  // Device::read: `count` bytes of `src` at `offset` copied into pinned staging memory, which is
  // returned (the copy is enqueued; synchronize before reading it); the uses are stamped as
  // run() stamps them. A failure is named as read's.
  Result<std::shared_ptr<memory::Allocation>> copy_to_host(
      const std::shared_ptr<memory::BufferState>& src, std::size_t offset, std::size_t count);

  // memory::SliceOwner: a slice's last handle went away (any thread).
  void drop(const memory::Slice& slice, std::uint64_t last_use) noexcept override;
  void drop_to(const memory::Slice& slice, std::uint64_t last_use,
               std::shared_ptr<memory::SliceHome> home) noexcept override;
  // Release what the stream is now seen to have passed (non-blocking): after a recording
  // elsewhere closes, drops it kept from querying their fences go back.
  void flush_drops() noexcept;

  // A graph pool of this stream lays its graphs out in `range`: closing the stream gives it back
  // to the driver (its graphs' executables are gone by then).
  void keep_range(const std::shared_ptr<memory::VirtualRange>& range);

  // Asynchronous failures (of replays, of waits in destructors) surface on the next sync or read.
  ErrorQueue& errors() noexcept { return errors_; }

  // Wait for everything enqueued so far; then every drop behind it is released. Refused while a
  // recording forbids waits (see capture::CaptureTracker).
  Result<void> synchronize(const char* operation);
  // A host wait for this stream returned success, covering everything up to `point` (taken with
  // order_point() before the wait): the drops behind it are released and every stream is ordered
  // after it, as in CUDA. Out of memory for the order, it orders nothing (which only refuses more).
  void host_saw_finish(const OrderPoint& point) noexcept;

  // The device is closing: close any recording, wait, free every slice and the stream.
  void close() noexcept;
  // Before close(): a graph of another device pins `slice`, so close() keeps it allocated and
  // its last drop frees it.
  void keep_at_close(const memory::Slice& slice);

  // ---- Order between streams (docs/capture-lifecycle.md, "Buffers on several streams") ----
  // The point an event recorded now marks: this stream's last operation and everything the
  // stream's next work is ordered after (inside a recording, the recording's order too), so
  // order passes whole through every event (mutex() held).
  OrderPoint order_point();
  // What this stream's work is ordered after by the events it waited for (StreamOrder: an eager
  // wait orders its eager work, a wait recorded into a recording that recording's nodes only).
  StreamOrder& order() noexcept { return order_; }
  // Whether work enqueued here from now on comes after operation `sequence` of `stream`: by the
  // events this stream waited for (in the recording it records into, if any), or because the
  // host saw that operation finish (a completed sync of its stream, or of one ordered after it).
  // A side stream of a recording is not ordered after its own eager work before its fork: its
  // recorded work runs in the graph, on the origin.
  bool ordered_after(const memory::SliceOwner* stream, std::uint64_t sequence);
  // Whether this stream is a side stream of a recording now (forked into it by a wait).
  bool forked() const noexcept { return window_.is_side(); }
  // After run() issued an eager operation that used buffers of other streams: make each owner
  // wait for op.borrowed_fence, so its later work and its drop queue come after this use. Call
  // without mutex() held (it takes the owners' mutexes). Destroys the fence.
  void return_borrowed(capture::Operation& op) noexcept;

 private:
  // The operation failed or was skipped: its writes carry `error` (unless the recording it enters
  // does not claim), and the recording is doomed by it.
  void failed(capture::Operation& op, capture::OpenRecording* recording, const Error& error);
  // The window's close of the recording (lock taken here) into a new graph; with
  // `deferred_bodies`, its instantiate deferred, and its conditional bodies' graphs put there.
  Result<std::unique_ptr<capture::Recording>> close_recording(
      std::vector<capture::BodyGraph>* deferred_bodies);
  // Waits refused inside recordings (invalidating ones), or a fork checked before the driver.
  Result<void> check_wait(const EventState& event, bool peer, capture::OpenRecording* recording);
  DriverApi& device_driver() const noexcept;
  // A borrowed use could not be handed back: wait for this stream instead (or warn).
  void lost_order(capture::Operation& op, const Error& why) noexcept;
  // The hand-back's event is destroyed; a failure is a warning (the use itself went through).
  void destroy_fence(CUevent fence) noexcept;

  capture::ReplayGate gate_;
  std::shared_ptr<DeviceCore> device_;
  CUstream handle_;
  int index_ = 0;
  std::recursive_mutex mutex_;
  memory::SlicePool device_pool_;
  memory::SlicePool staging_pool_;
  memory::DropQueue drops_;
  capture::Window window_;
  ErrorQueue errors_;
  std::atomic<bool> closed_{false};
  StreamOrder order_;
  std::vector<CUstream> loop_streams_;  // by loop depth
  std::vector<std::uintptr_t> kept_at_close_;  // device slices other devices' graphs pin
  void flush_drops_locked();
  std::vector<std::weak_ptr<memory::VirtualRange>> ranges_;  // of this stream's graph pools
};

// (Always inlined: a call of its own was a second frame on every launch.)
template <class Issue, class What, class UseName>
[[gnu::always_inline]] inline Result<void> StreamCore::run(capture::Operation& op, Issue&& issue,
                                                           What&& what, UseName&& use_name) {
  capture::OpenRecording* const recording = window_.recording_into();
  if (recording != nullptr && window_.own_recording().frames().between_cases()) [[unlikely]] {
    // No body captures (between begin_switch and its first begin_case, or a body that failed to
    // open): refused before anything is issued (it would run eagerly on the body stream), and
    // nothing more is doomed.
    return window_.own_recording().frames().no_body_refusal(what());
  }
  // An input that carries a failure: the operation would compute from bytes no operation
  // produced. Skip it; what it writes carries the reason.
  for (std::size_t i = 0; i < op.uses.size(); ++i) {
    const capture::BufferUse& use = op.uses[i];
    if (!capture::reads(use.access)) continue;
    if (std::optional<Error> failure = (*use.buffer)->failure()) [[unlikely]] {
      Error error(Errc::failed_buffer,
                  what() + ": " + use_name(i) +
                      " carries an error, so the operation was skipped: " + failure->message(),
                  failure->driver_code());
      failed(op, recording, error);
      return error;
    }
  }
  // Buffers of other streams (lent to this one once ordered, see Device::check_buffer): an eager
  // use is handed back to their owner through an event, created before anything is issued.
  bool borrowed = false;
  for (const capture::BufferUse& buffer_use : op.uses) {
    borrowed = borrowed || &(*buffer_use.buffer)->owner() != this;
  }
  if (borrowed && recording == nullptr) [[unlikely]] {
    if (CUresult result = device_driver().cuEventCreate(&op.borrowed_fence, CU_EVENT_DISABLE_TIMING);
        result != CUDA_SUCCESS) {
      op.borrowed_fence = nullptr;
      return Error::from_driver("cuEventCreate", result).context(what() + ": ordering a buffer of another stream");
    }
  }
  Result<void> issued = issue();
  const std::uint64_t use = drops_.next_use();
  // A recorded use is the recording's: forgotten if it makes no graph.
  const std::uint64_t recorded_into = recording != nullptr ? recording->id() : 0;
  for (const capture::BufferUse& buffer_use : op.uses) {
    memory::BufferState& buffer = **buffer_use.buffer;
    buffer.used_by(*this, use, capture::writes(buffer_use.access), recorded_into);
    // Sequence numbers are per stream: a borrowed buffer is stamped on its owner's queue by
    // return_borrowed (eager) or pinned by the recording (recorded).
    if (&buffer.owner() == this) buffer.memory()->used_at(use);
  }
  if (op.staging) op.staging->used_at(use);
  if (op.borrowed_fence != nullptr) [[unlikely]] {
    op.borrowed_at = use;
    if (CUresult result = device_driver().cuEventRecord(op.borrowed_fence, handle_);
        result != CUDA_SUCCESS) {
      lost_order(op, Error::from_driver("cuEventRecord", result));
    }
  }
  if (!issued) [[unlikely]] {
    Error error = std::move(issued).error().context(what());
    failed(op, recording, error);
    return error;
  }
  if (recording != nullptr) {
    // Recorded, not run: what it produces is produced by replays.
    if (Result<void> recorded = recording->record(op, index_, nullptr, target()); !recorded) {
      Error error = std::move(recorded).error().context(what());
      if (recording->claims()) op.fail_writes(error);
      return error;
    }
    return {};
  }
  // Ran: what it wrote whole replaces whatever those buffers carried.
  for (const capture::BufferUse& buffer_use : op.uses) {
    if (buffer_use.access == capture::Access::write_whole) (*buffer_use.buffer)->clear_failure();
  }
  return {};
}

}  // namespace graphcap::detail
