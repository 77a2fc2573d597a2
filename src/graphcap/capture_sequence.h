// CaptureSequence: the capture lifecycle as the one sequence every way of recording runs
// (Device::record, CaptureScope, GraphCache): prepare_capture, the step once eagerly (the
// warm-up), begin_capture, the step again (recorded), end_capture, or abort_capture. It owns the
// window it opened (or took over): whatever leaves it (a return, a refusal that keeps the
// recording open, an exception from the step), what it owns and is still open is aborted, so the
// stream is left not capturing. It never aborts a window it does not own (one the stream was
// already in).
//
//   CaptureSequence sequence(device, s);
//   Result<Graph> graph = sequence.run(options, step, [&] { return sequence.end(); });
//   if (!graph) ... sequence.failed_at() says which part failed ...
#pragma once

#include <type_traits>
#include <utility>

#include <graphcap/capture_options.h>
#include <graphcap/error.h>
#include <graphcap/graph.h>
#include <graphcap/pending_graph.h>
#include <graphcap/result.h>
#include <graphcap/stream.h>

namespace graphcap {

class Device;

// The parts of the sequence, in order (CaptureSequence::failed_at).
enum class CapturePhase { none, prepare, warm_up, begin, recorded, end };

// Runs a step callable as Result<void>() or void().
template <class Step>
Result<void> run_capture_step(Step& step) {
  using Returned = std::invoke_result_t<Step&>;
  static_assert(std::is_void_v<Returned> || std::is_convertible_v<Returned, Result<void>>,
                "a capture step must be callable as Result<void>() or void()");
  if constexpr (std::is_void_v<Returned>) {
    step();
    return {};
  } else {
    return step();
  }
}

class CaptureSequence {
 public:
  CaptureSequence(Device& device, Stream& s) noexcept : device_(&device), stream_(&s) {}
  CaptureSequence(const CaptureSequence&) = delete;
  CaptureSequence& operator=(const CaptureSequence&) = delete;
  ~CaptureSequence();  // aborts what it owns and is still open (never throws)

  // Open the window (Device::prepare_capture): owned from then on. Refused: nothing is owned.
  Result<void> prepare(const CaptureOptions& options);
  // Take over the window the caller prepared (and warmed up) on the stream; a stream in no
  // window, or already recording, is not taken.
  void adopt_prepared() noexcept;
  // Open the recording (Device::begin_capture). Refused: what it owns is aborted.
  Result<void> begin();
  // Close the recording (Device::end_capture, into `into` for the second). Refused with the
  // recording still open: it stays owned (end again, or let it be aborted).
  Result<Graph> end();
  Result<void> end(Graph& into);
  // Close the recording as end() does, but leave the instantiate to later (PendingGraph,
  // pending_graph.h): every other refusal is decided here, and the stream may record again at
  // once. Refused with the recording still open: it stays owned, as for end().
  Result<PendingGraph> end_deferred();
  // The recorded run of the step failed with `failure`: close the recording (a doomed one is
  // refused before anything is instantiated) and return why: the doom when the recording was
  // doomed (Errc::doomed, the failed operation's message inside, naming `failure` when it says
  // something else), else `failure`. What it owns is closed either way.
  Error recorded_run_failed(const Error& failure);
  // Abandon what it owns now (Device::abort_capture); nothing owned: nothing to do.
  Result<void> abort();

  // Whether it owns a window the stream is still in.
  bool owns() const noexcept;
  // Whether the recording it closed last kept a buffer the recorded run allocated alive past the
  // close: that buffer holds bytes only the graph's replays write (none, when it was refused).
  bool kept_recorded_allocation() const noexcept { return kept_; }
  // Which part of run() failed (CapturePhase::none while none did).
  CapturePhase failed_at() const noexcept { return failed_at_; }

  // The whole sequence: prepare(options), the step (the warm-up), begin, the step (recorded),
  // then close(), which ends the recording (end() or end(into)) and returns what run returns.
  // On a failure its error (of the part failed_at() names), with the window closed: the
  // recorded run's, through recorded_run_failed. A step that throws unwinds through here; the
  // destructor aborts.
  template <class Step, class Close>
  std::invoke_result_t<Close&> run(const CaptureOptions& options, Step& step, Close&& close) {
    failed_at_ = CapturePhase::prepare;
    if (Result<void> prepared = prepare(options); !prepared) return prepared.error();
    failed_at_ = CapturePhase::warm_up;
    if (Result<void> warm = run_capture_step(step); !warm) {
      (void)abort();
      return warm.error();
    }
    failed_at_ = CapturePhase::begin;
    if (Result<void> begun = begin(); !begun) return begun.error();
    failed_at_ = CapturePhase::recorded;
    if (Result<void> recorded = run_capture_step(step); !recorded) {
      return recorded_run_failed(recorded.error());
    }
    failed_at_ = CapturePhase::end;
    auto closed = close();
    if (!closed) {
      (void)abort();  // refused with the recording still open: closed here
      return closed;
    }
    failed_at_ = CapturePhase::none;
    return closed;
  }

 private:
  Device* device_;
  Stream* stream_;
  bool owned_ = false;
  bool kept_ = false;
  CapturePhase failed_at_ = CapturePhase::none;
};

}  // namespace graphcap
