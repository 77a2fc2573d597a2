// RecordingClose: closing an open recording. The driver's capture (and its conditional bodies')
// always ends; then the refusal is decided before anything is changed (an `into` graph, the
// pool, the claims), and either the graph's whole state is made (an updated `into` executable or
// a new one, the pins, the report) or the refusal is returned with what is to be released. Also
// what becomes of a recording a re-recording replaced (retire_replaced).
//
// Made by OpenRecording::close for one close (it reads the recording's owners and options); the
// origin stream's mutex held. Its CUDA calls are the GraphDriver's.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <graphcap/capture/recording.h>
#include <graphcap/capture/recording_book.h>
#include <graphcap/result.h>

namespace graphcap::memory {
class DropQueue;
class SliceOwner;
}  // namespace graphcap::memory

namespace graphcap::capture {

class OpenRecording;

// The graph a recording is closed into (Device::end_capture(s, into)): its executable, and the
// nodes of the graph it was instantiated from (empty if not kept).
struct IntoGraph {
  const Executable& executable;
  const std::vector<CUgraphNode>& source_nodes;
  // The report of the recording the executable holds now: its node counts, from the census of
  // the graph it was instantiated from (which refused memory nodes), are an updated graph's.
  const GraphReport& report;
};

// What closing produced: the graph's whole state, or the refusal (then `recording` holds only
// what is to be released, which the caller drops once no unsafe-call scope is held).
// The Recording is held by pointer from here to the graph that adopts it: it is large, and each
// move of it was code the close ran cold after the driver's update.
struct ClosedRecording {
  std::unique_ptr<Recording> recording;
  std::optional<Error> refusal;
};

// How a recording is closed. `abandon`: refuse it with this error (abort_capture, a closing
// device); `other_thread`: ended from another thread (the driver then answers WRONG_THREAD).
struct CloseRequest {
  bool upload = false;
  const IntoGraph* into = nullptr;
  bool other_thread = false;
  std::optional<Error> abandon;
  std::uint64_t sequence = 0;  // the origin stream's operation number at the close
};

class RecordingClose {
 public:
  // Closes `recording`, reading and emptying its owners and its options.
  explicit RecordingClose(OpenRecording& recording) noexcept : recording_(&recording) {}

  ClosedRecording close(CloseRequest request);

  // A recording of this stream that a re-recording replaced (the stream's mutex held): its node
  // list's room goes to the book's next recording; updated in place (no executable of its own),
  // the replays already enqueued still run its nodes, so its pins count as used by them (the
  // drop queue fences them behind the stream) and are let go. Re-instantiated (it has an
  // executable), the caller releases it as a graph is destroyed.
  static void retire_replaced(RecordingBook& book, Recording& replaced, memory::DropQueue& drops);

 private:
  // close()'s rare parts, out of line: the update close runs its code cold, after the driver's
  // cuGraphExecUpdate has evicted it, so its path is kept to few code lines.
  Error close_refusal(const CloseRequest& request, const Result<CapturedGraph>& captured,
                      const std::optional<Error>& doomed, const std::optional<Error>& unjoined,
                      const Recording& recording) const;
  // Which of the conditional `bodies` left open are still valid, asked before the recording's
  // capture ends; after it, end_bodies ends the valid ones and abandons the others.
  std::vector<bool> bodies_active(const std::vector<CUstream>& bodies) const;
  void end_bodies(const std::vector<CUstream>& bodies, const std::vector<bool>& active);
  // Inspect, then update `into` (when given and possible) or instantiate (unless the recording
  // defers it: OpenRecording::defer_instantiate; then it keeps what instantiate_deferred needs).
  Result<void> make_executable(CapturedGraph& captured, const GraphReport& recorded,
                               const IntoGraph* into, Recording& recording);
  void log_close(const GraphReport& recorded, const std::optional<Error>& refusal) const;

  OpenRecording* recording_;
};

}  // namespace graphcap::capture
