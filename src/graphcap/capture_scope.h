// CaptureScope: a recording as a scope, on the one capture sequence (capture_sequence.h). The
// constructor begins it (after prepare_capture and the warm-up, as Device::begin_capture) and
// owns the window from then on; end() closes it into a Graph. A begin that is refused aborts the
// window prepare opened (the stream is back in no_capture; a stream that was not prepared, or
// records already, is left as it was). Leaving the scope without end() (an exception, an early
// return) aborts the recording: what it would have written is claimed, and the stream is back in
// no_capture and usable. Whatever happens, once the scope is gone its stream is not capturing.
//
//   device.prepare_capture(s);  run_step();                 // warm-up
//   CaptureScope scope(device, s);
//   if (Result<void> ok = run_step(); !ok) return ok.error();  // aborts the recording
//   Result<Graph> graph = scope.end();
#pragma once

#include <graphcap/capture_sequence.h>
#include <graphcap/device.h>
#include <graphcap/graph.h>
#include <graphcap/result.h>
#include <graphcap/stream.h>

namespace graphcap {

class CaptureScope {
 public:
  CaptureScope(Device& device, Stream& s);
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;
  ~CaptureScope() = default;  // the sequence aborts a recording still open (never throws)

  // Whether begin succeeded; its error otherwise (end() returns it too).
  const Result<void>& began() const noexcept { return began_; }
  // Whether the recording is open (began and neither ended nor aborted).
  bool open() const noexcept { return open_; }

  // Close the recording: the graph, or the refusal (Device::end_capture). A refusal that leaves
  // the recording open (a loop still open, ended from another thread) leaves the scope open too:
  // mend it and call end() again, or let the scope abort it. Once closed, another call (or one
  // after a failed begin) is Errc::graph_state (or begin's error).
  Result<Graph> end();
  // Abandon the recording now (Device::abort_capture).
  Result<void> abort();

 private:
  CaptureSequence sequence_;
  Result<void> began_;
  bool open_ = false;
};

}  // namespace graphcap
