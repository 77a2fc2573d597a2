// Device: one GPU (its primary context) seen through a DriverApi, with its streams, pooled memory,
// modules, launches and the capture lifecycle. Closing the device (destroying it) releases
// everything it holds, each driver handle exactly once; Buffers, Modules and Graphs that outlive
// it turn inert (their operations return Errc::graph_state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <source_location>
#include <span>
#include <type_traits>
#include <vector>

#include <graphcap/arg.h>
#include <graphcap/buffer.h>
#include <graphcap/condition.h>
#include <graphcap/capture_options.h>
#include <graphcap/capture_sequence.h>
#include <graphcap/device_limits.h>
#include <graphcap/device_options.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/driver/launch_dims.h>
#include <graphcap/event.h>
#include <graphcap/graph.h>
#include <graphcap/graph_pool.h>
#include <graphcap/launch_options.h>
#include <graphcap/loop.h>
#include <graphcap/memory_stats.h>
#include <graphcap/module.h>
#include <graphcap/param.h>
#include <graphcap/result.h>
#include <graphcap/stream.h>

namespace graphcap {

namespace detail {
class DeviceCore;
}

class Device {
 public:
  static Result<std::unique_ptr<Device>> open(DriverApi& driver, DeviceOptions options = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The default stream of this device (non-blocking).
  Stream& stream();
  Result<Stream*> create_stream();

  // cubin, fatbin or PTX (a FakeDriver image on the fake). Empty or malformed images are
  // Errc::invalid_argument before the driver sees them.
  Result<Module> load_module(std::span<const std::byte> image);

  // Pooled device memory, owned by stream `s` (its uses are ordered on it).
  Result<Buffer> alloc(std::size_t bytes, Stream& s);
  Result<Buffer> upload(std::span<const std::byte> bytes, Stream& s,
                        std::source_location where = std::source_location::current());
  // Copies `bytes` to the start of `dst` through pinned staging memory. A full write clears a
  // failure the buffer carries (once it runs: a recorded write produces the bytes on replay).
  Result<void> write(const Buffer& dst, std::span<const std::byte> bytes, Stream& s,
                     std::source_location where = std::source_location::current());
  // The same at byte `offset` of `dst`; the range must lie inside it (Errc::invalid_argument).
  Result<void> write(const Buffer& dst, std::size_t offset, std::span<const std::byte> bytes,
                     Stream& s, std::source_location where = std::source_location::current());
  // Waits for the stream; surfaces the error the buffer carries or the stream has queued.
  Result<std::vector<std::byte>> read(const Buffer& src, Stream& s);
  // `count` bytes from byte `offset` of `src`; the range must lie inside it.
  Result<std::vector<std::byte>> read(const Buffer& src, std::size_t offset, std::size_t count,
                                      Stream& s);

  // (Defined here: a call of its own in the library was a second frame on every launch.)
  // `where`, like every operation's that can enter a recording (its last parameter, left to its
  // default): the caller's line, which the recorded operation keeps and refusals, Graph::dot()
  // and Graph::replay_checked name ("file:line"). An eager launch only passes it on.
  Result<void> launch(Stream& s, const Kernel& kernel, LaunchDims dims,
                      std::initializer_list<Arg> args,
                      std::source_location where = std::source_location::current()) {
    return launch(s, kernel, dims, args, LaunchOptions{}, where);
  }
  // The same with launch attributes (launch_options.h): a programmatic dependent launch, a
  // priority. Issued through cuLaunchKernelEx; the overload above, through cuLaunchKernel.
  Result<void> launch(Stream& s, const Kernel& kernel, LaunchDims dims,
                      std::initializer_list<Arg> args, const LaunchOptions& options,
                      std::source_location where = std::source_location::current());

  // Work graphcap does not issue itself (cuBLAS, NCCL, a raw cuLaunchKernel on s.native_handle()):
  // declare the buffers it reads and writes *before* issuing it on s.native_handle(), and keep them
  // until it is issued. They are checked like a launch's (stream, and an input carrying a
  // failure: then don't issue the work; its outputs carry the failure too), pinned by an open
  // recording (a buffer dropped after it is not reused while the graph may write it), claimed if
  // the recording is refused, and an Arg::out is produced by it (its failure cleared when eager).
  // Only buffers: an Arg::value is Errc::invalid_argument.
  Result<void> record_external(Stream& s, std::initializer_list<Arg> args,
                              std::source_location where = std::source_location::current());
  // The external work failed, or could not be issued: what it writes carries `failure` (and an
  // open recording is doomed by it, as by a failed launch). Returns `failure`, with context.
  Result<void> record_external(Stream& s, std::initializer_list<Arg> args, const Error& failure,
                              std::source_location where = std::source_location::current());

  // Several devices (device_peer.cc): one Device per GPU, all on one DriverApi, usable together
  // from one or several threads (each call makes its device's context current). Objects of one
  // device (streams, buffers, events, graphs, pools, kernels) passed to another are
  // Errc::invalid_argument naming both devices; the exceptions are peer copies (copy() below) and
  // waiting on another device's event (wait(), outside recordings).
  // Whether this device can access `peer`'s memory directly (cuDeviceCanAccessPeer; false for
  // itself). Both devices must be open and on the same driver.
  Result<bool> can_access_peer(const Device& peer) const;
  // Let work on this device's streams access `peer`'s memory (cuCtxEnablePeerAccess from this
  // device's context): what peer copies on this device's streams need. Enabling it again is
  // fine (CUDA's CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED counts as done). A pair that can't
  // (can_access_peer false) is Errc::driver with CUDA_ERROR_PEER_ACCESS_UNSUPPORTED.
  Result<void> enable_peer_access(const Device& peer);

  // Device-to-device copies and fills (device_copy.cc), eager or recorded (a MEMCPY or MEMSET
  // node), under the rules of launches: ranges are checked first (Errc::invalid_argument); a
  // source carrying a failure skips the copy and the destination carries it (failed_buffer); a
  // recorded write is claimed (a refused recording marks it) and its memory pinned; an eager copy
  // or fill of the whole destination clears a failure it carried, a recorded one does not.
  // The whole of `src` into the start of `dst` (src.size() <= dst.size()).
  Result<void> copy(const Buffer& dst, const Buffer& src, Stream& s,
                    std::source_location where = std::source_location::current());
  // `bytes` from byte `src_offset` of `src` to byte `dst_offset` of `dst`. Overlapping ranges of
  // one buffer are Errc::invalid_argument (CUDA's copies may not overlap).
  // A peer copy: `src`, `dst` or both may be buffers of other devices when this device has peer
  // access to them (enable_peer_access; otherwise Errc::invalid_argument saying so). It runs on
  // `s` (this device's stream) as a unified-addressing cuMemcpyDtoDAsync, eager or recorded (a
  // MEMCPY node of this device's graph), under the same rules, including the order between
  // streams: the other device's buffer must be ordered onto `s` first (record an event on its
  // stream, wait for it on `s`) and is handed back to its stream after an eager copy.
  Result<void> copy(const Buffer& dst, std::size_t dst_offset, const Buffer& src,
                    std::size_t src_offset, std::size_t bytes, Stream& s,
                    std::source_location where = std::source_location::current());
  // Every byte of `dst` (cuMemsetD8Async).
  Result<void> fill(const Buffer& dst, std::uint8_t byte, Stream& s,
                    std::source_location where = std::source_location::current());
  // `count` bytes from byte `offset` of `dst`.
  Result<void> fill(const Buffer& dst, std::size_t offset, std::size_t count, std::uint8_t byte,
                    Stream& s, std::source_location where = std::source_location::current());
  // Every 32-bit word of `dst` (cuMemsetD32Async); its size must be a multiple of 4.
  Result<void> fill(const Buffer& dst, std::uint32_t word, Stream& s,
                    std::source_location where = std::source_location::current());
  // A plain int literal would be ambiguous between a byte and a word: say which
  // (std::uint8_t{0} or std::uint32_t{0}).
  Result<void> fill(const Buffer& dst, int value, Stream& s,
                    std::source_location where = std::source_location::current()) = delete;

  // Events (device_events.cc). record_event() marks everything enqueued on `s` so far; wait()
  // makes later work on `s` wait for the last record of `e`. Outside a recording this orders eager
  // work between streams, and lets a buffer move to another stream (docs/capture-lifecycle.md,
  // "Buffers on several streams"). Inside one, waiting on an event recorded in the recording
  // forks a stream into it or joins it back.
  Result<Event> create_event();
  Result<void> record_event(Event& e, Stream& s,
                            std::source_location where = std::source_location::current());
  // The old name of record_event (record(s, step) records a graph).
  [[deprecated("use record_event(e, s)")]] Result<void> record(
      Event& e, Stream& s, std::source_location where = std::source_location::current()) {
    return record_event(e, s, where);
  }
  Result<void> wait(Stream& s, const Event& e,
                    std::source_location where = std::source_location::current());
  // Waits for the stream; surfaces queued errors (e.g. of a replay), once. When the wait itself
  // fails too, the queued error is returned and the wait's failure is named in its message.
  Result<void> sync(Stream& s);

  // The capture lifecycle, per stream: prepare_capture (arm the pools; the warm-up run follows),
  // begin_capture (open the recording), end_capture (close it: a replayable graph, or a refusal).
  // Reads and syncs are refused while a stream records (they would invalidate the recording).
  Result<void> prepare_capture(Stream& s);
  // The same with this window's options: the recording opens in options.mode (the overload above
  // uses DeviceOptions::capture_mode; graphcap's checks of other threads follow that mode while it
  // records), and, with options.pool, the graph shares its
  // intermediates with the pool's other graphs (graph_pool.h). A mode CUDA doesn't define, an
  // empty pool or one of another stream is Errc::invalid_argument.
  Result<void> prepare_capture(Stream& s, CaptureOptions options);
  // A pool of graphs recorded on `s` that share their intermediates' memory (graph_pool.h): in
  // one reserved range of virtual memory where the device supports it, else on plain
  // allocations. A driver call that fails is its error (nothing is left reserved).
  Result<GraphPool> create_graph_pool(Stream& s);
  Result<GraphPool> create_graph_pool(Stream& s, GraphPoolOptions options);
  Result<void> begin_capture(Stream& s);
  Result<Graph> end_capture(Stream& s);
  // Close the recording into an existing graph of this stream (re-recording it): its executable
  // takes the recording in place (cuGraphExecUpdate) when the driver accepts it (same topology;
  // other parameters, pointers, grids), else a new executable is instantiated and swapped in.
  // into.report() is the new recording's, with `updated` saying which and, for a refused update,
  // the CUgraphExecUpdateResult by name and the node. The new recording's memory is pinned
  // before the old recording's is released (after the replays already enqueued). On an error
  // `into` is unchanged and still replayable. `into` empty or destroyed: Errc::graph_state; a
  // graph of another stream: Errc::invalid_argument; in both cases nothing is closed (the
  // recording stays open). Not concurrently with into.replay() on another thread.
  Result<void> end_capture(Stream& s, Graph& into);
  // Abandon a window in prepare or capture state, from any thread: disarm the pools, close any
  // driver capture (a recording begun on another thread is terminated), claim what the recording
  // would have written. The stream is back to no_capture and usable.
  Result<void> abort_capture(Stream& s);

  // The whole lifecycle in one call (the one capture sequence, capture_sequence.h):
  // prepare_capture(s, options), `step` once eagerly (the warm-up: its work runs, and primes the
  // pools), begin_capture, `step` again (recorded, not run), end_capture. `step` issues the work
  // on `s`, callable as Result<void>() (or void()).
  //   Result<Graph> graph = device.record(s, [&] { return device.launch(s, k, dims, args); });
  // On any failure the error of the part that failed comes back (its message prefixed with
  // "record" and which run of the step it was); a recorded run that failed in a doomed recording
  // comes back as the doom (Errc::doomed, what doomed it, and the step's error when it says
  // something else). Whatever leaves record (a failure, a refusal of end_capture that keeps the
  // recording open, an exception from the step), the stream is left as record found it, not
  // capturing: what record opened is aborted (a refused warm-up or recording claims what it
  // would have written, as abort_capture does; a recorded run that failed without dooming the
  // recording closes it into a graph that is dropped, which claims nothing, so the warm-up's
  // results stand). The graph's recording is the second run; the
  // warm-up's results are the ones the step's outputs hold afterwards (a buffer the step
  // allocates in its recorded run is the graph's, written by its replays).
  template <class Step>
  Result<Graph> record(Stream& s, Step&& step, CaptureOptions options = {}) {
    CaptureSequence sequence(*this, s);
    Result<Graph> graph = sequence.run(options, step, [&] { return sequence.end(); });
    if (graph) return graph;
    switch (sequence.failed_at()) {
      case CapturePhase::warm_up:
        return graph.error().context("record (the warm-up run of the step)");
      case CapturePhase::recorded:
        return graph.error().context("record (the recorded run of the step)");
      case CapturePhase::end:
        return graph;  // end_capture's own refusal
      default:
        return graph.error().context("record");  // prepare or begin
    }
  }

  // Device-side loops (device_loops.cc; docs/capture-lifecycle.md, "Device-side loops and
  // branches"). Inside a recording of `s` (begun by `s`, on its recording thread in global and
  // thread_local mode):
  // begin_while inserts a WHILE node, and what `s` records from then on until end_while(s, loop)
  // is the loop's body. Each replay runs the body while the loop's condition is not 0: it starts
  // every replay at `first`, and a kernel recorded with Arg::condition(loop) sets it on the
  // device. Loops nest with each other and with branches (up to 128 deep), ended innermost first;
  // an inner loop's condition is set to `first` once per replay, not per outer iteration (re-arm
  // it from a kernel). Misuse is Errc::graph_state and changes nothing: outside a recording, on a
  // side stream, end_while of a loop that is not the innermost open one, end_capture while a loop
  // is open (unless the recording is doomed: then it closes, refused with its doom). Inside a
  // body, events (record, wait) are refused: a body can't wait on work outside it. A body whose
  // capture the driver invalidated (a failed launch in it) dooms the recording: end_while says
  // why and end_capture refuses it, leaving the stream out of capture and usable. Memory nodes in a body (external work) are refused by the driver's
  // instantiate at end_capture, naming the node.
  Result<Loop> begin_while(Stream& s, bool first = true,
                           std::source_location where = std::source_location::current());
  Result<void> end_while(Stream& s, Loop& loop,
                         std::source_location where = std::source_location::current());

  // Device-side branches (device_branches.cc; docs/capture-lifecycle.md, "Device-side loops and
  // branches"), under the same rules as loops (inside a recording of `s`, begun by `s`, on its
  // recording thread in global and thread_local mode; nesting with each other and with loops, up
  // to 128 deep, the depth measured on the H200; ended innermost first).
  // condition: a conditional handle of the recording, created in the graph (or the body) `s`
  // records into now; every replay starts it at `first`. Give it to the kernel that sets it with
  // Arg::condition(c), recorded before the branch it steers. It must steer exactly one branch,
  // begun where it was made (or in a body nested there) before that body (or the recording)
  // closes: closing it otherwise is refused (CUDA refuses to instantiate a graph holding a
  // handle no node uses).
  Result<Condition> condition(Stream& s, unsigned first = 0,
                              std::source_location where = std::source_location::current());
  // An IF node: what `s` records until begin_else (or end_if) is its body, run by a replay when
  // the condition is not 0; what it records from begin_else to end_if is its ELSE body, run when
  // it is 0. (The node always has its ELSE body, empty without begin_else.)
  Result<void> begin_if(Stream& s, Condition& c,
                        std::source_location where = std::source_location::current());
  Result<void> begin_else(Stream& s, Condition& c,
                          std::source_location where = std::source_location::current());
  Result<void> end_if(Stream& s, Condition& c,
                      std::source_location where = std::source_location::current());
  // A SWITCH node of `cases` bodies (at least 1: Errc::invalid_argument): a replay runs case
  // value (none when the value is past the last case). begin_case opens case `index`'s body
  // (closing the one open); cases never begun are empty. Between begin_switch and the first
  // begin_case, operations on `s` are refused (graph_state): no body records them.
  Result<void> begin_switch(Stream& s, Condition& c, unsigned cases,
                            std::source_location where = std::source_location::current());
  Result<void> begin_case(Stream& s, Condition& c, unsigned index,
                          std::source_location where = std::source_location::current());
  Result<void> end_switch(Stream& s, Condition& c,
                          std::source_location where = std::source_location::current());
  // Misuse is Errc::graph_state and changes nothing: outside a recording, on a side stream, an
  // empty Condition or one of another recording, a condition that steers a branch already or
  // that no kernel recorded since took (every replay would branch alike), begin_else without an
  // open IF of `c` (or a second one), a case twice or past the last, ending out of order or with
  // the other kind's end. A failed driver step dooms the recording (a conditional node without
  // its body must never replay).

  // A per-replay kernel parameter holding `initial` (see param.h): bind it with Arg::param,
  // change it in a recorded graph with Graph::set, and for eager launches with Param::set.
  template <class T>
  Param<T> param(T initial) {
    return Param<T>(detail::make_param_slot(&initial, sizeof(T)));
  }

  // Code outside graphcap changed the calling thread's current context (cudaSetDevice, a
  // library such as NCCL that switches devices): graphcap caches which device's context it made
  // current on each thread, so call this afterwards; each Device's next call on this thread makes
  // its context current again.
  static void context_changed() noexcept;

  DriverApi& driver() const noexcept;
  int ordinal() const noexcept;
  const DeviceLimits& limits() const noexcept;
  MemoryStats memory_stats(Stream& s) const;
  // Streams graphcap left undestroyed: a conditional body's stream whose capture a failure inside
  // the body invalidated (the recording is refused; destroying that stream crashes the driver, so
  // each stays with the driver for the process's life). A leak check counts them as expected.
  // Above 0, the process is not whole: another thread's potentially unsafe call during a GLOBAL
  // capture has crashed the driver since (docs/cuda-driver-facts.md); restart it when you can.
  // graphcap refuses its own such calls before the driver; a direct driver call is the hazard.
  std::size_t streams_left_to_driver() const noexcept;

 private:
  explicit Device(std::shared_ptr<detail::DeviceCore> core);
  Result<void> check_stream(const Stream& s, const char* operation) const;
  // A buffer `s` may use now (writing it when `writes`): of this device, and ordered after its
  // uses on other streams (docs/capture-lifecycle.md, "Buffers on several streams").
  Result<void> check_buffer(const Buffer& buffer, const Stream& s, const char* what,
                            bool writes) const;
  // The same for a copy: a buffer of another device is accepted when peer access allows it.
  Result<void> check_copy_buffer(const Buffer& buffer, const Stream& s, const char* what,
                                 bool writes) const;
  Result<void> check_external(const Buffer& buffer, Stream& s, bool writes) const;
  Result<void> fill_with(const Buffer& dst, std::size_t offset, std::size_t bytes,
                         unsigned element_size, std::uint32_t value, Stream& s,
                         std::source_location where);

  std::shared_ptr<detail::DeviceCore> core_;
  mutable std::mutex streams_mutex_;
  std::vector<std::unique_ptr<Stream>> streams_;
  // streams_.front(), set once by open: stream() reads it without the lock (create_stream may
  // grow streams_ on another thread meanwhile).
  Stream* default_stream_ = nullptr;
};

}  // namespace graphcap
