// Opening a capture window (prepare_capture with or without the stream's GraphPool, misuse
// refused), its recording (begin_capture or a CaptureScope), leaving a scope, and aborts.
#include <string>

#include "many_graphs/model.h"

namespace graphcap::testing::many_graphs {
namespace {

std::optional<Errc> begin_expectation(const Model& m, int s, std::string& what) {
  if (m.state(s) != CaptureState::prepare) {
    what = "begin_capture out of order";
    return Errc::graph_state;
  }
  if (m.recording_open()) {
    what = "begin_capture while another recording is open";
    return Errc::graph_state;
  }
  what = "begin_capture";
  return std::nullopt;
}

const char* prepare_name(const Model& m, int s, int pool) {
  if (pool == -2) return "prepare_capture with an empty pool";
  if (pool >= 0 && pool != s) return "prepare_capture with a pool of another stream";
  if (m.state(s) != CaptureState::no_capture) return "prepare_capture out of order";
  return pool >= 0 ? "prepare_capture (pool)" : "prepare_capture";
}

}  // namespace

// prepare_capture(s, {pool}) with `pool`: -1 none, s its own, another stream's (misuse), or -2
// an empty GraphPool (misuse).
Result<void> do_prepare(Model& m, int s, int pool) {
  m.log() << "prepare_capture(stream " << s << ", pool " << pool << ")\n";
  CaptureOptions options;
  GraphPool empty;
  if (pool == -2) options.pool = &empty;
  if (pool >= 0) options.pool = &m.pools[static_cast<std::size_t>(pool)];
  m.faults.arm({});
  Result<void> prepared = m.device().prepare_capture(m.stream(s), options);
  m.faults.settle();
  std::optional<Errc> expected;
  if (pool == -2 || (pool >= 0 && pool != s)) {
    expected = Errc::invalid_argument;
  } else if (m.state(s) != CaptureState::no_capture) {
    expected = Errc::graph_state;
  }
  m.expect(prepared, expected, prepare_name(m, s, pool));
  if (prepared) open_window(m, s, pool, true);
  check_all(m);
  return prepared;
}

void open_window(Model& m, int s, int pool, bool claims) {
  m.streams[s].state = CaptureState::prepare;
  m.windows[static_cast<std::size_t>(s)] = OwnWindow{m.next_window++, pool, claims};
}

void close_window(Model& m, int s) {
  m.streams[s].state = CaptureState::no_capture;
  m.windows[static_cast<std::size_t>(s)] = OwnWindow{};
}

// The recording opened on `s` (its window's options hold).
void open_recording(Model& m, int s) {
  m.streams.open_recording(s);
  const OwnWindow& window = m.windows[static_cast<std::size_t>(s)];
  m.recording = ModelRecording{};
  m.recording.claims = window.claims;
  m.recording.pool = window.pool;
  m.recording.window = window.id;
}

Result<void> do_begin(Model& m, int s) {
  m.log() << "begin_capture(stream " << s << ")\n";
  std::string what;
  const std::optional<Errc> expected = begin_expectation(m, s, what);
  m.faults.arm({"cuStreamBeginCapture", "cuEventQuery", "cuEventSynchronize", "cuStreamSynchronize"});
  Result<void> begun = m.device().begin_capture(m.stream(s));
  m.faults.settle();
  m.expect(begun, expected, what);
  if (begun) open_recording(m, s);
  check_all(m);
  return begun;
}

void do_scope_begin(Model& m, int s) {
  m.log() << "CaptureScope(stream " << s << ")\n";
  std::string what;
  const std::optional<Errc> expected = begin_expectation(m, s, what);
  m.faults.arm({"cuStreamBeginCapture", "cuEventQuery", "cuEventSynchronize", "cuStreamSynchronize"});
  m.scope.emplace(m.device(), m.stream(s));
  m.faults.settle();
  m.expect(m.scope->began(), expected, "CaptureScope: " + what);
  m.scope_stream = s;
  if (m.scope->began()) {
    open_recording(m, s);
  } else if (m.state(s) == CaptureState::prepare) {
    close_window(m, s);  // a refused begin aborts the window the scope took over
  }
  check_all(m);
}

// Leaving the scope without end(): it aborts a recording still open.
void do_scope_leave(Model& m) {
  m.log() << "leave the CaptureScope (stream " << m.scope_stream << ")\n";
  const bool open = m.scope->open();
  m.faults.arm({"cuStreamEndCapture", "cuGraphDestroy"});
  m.scope.reset();
  m.faults.settle();
  m.world.count(open ? "CaptureScope left open: aborted" : "CaptureScope left closed");
  if (open && m.recording_open() && m.streams.origin() == m.scope_stream &&
      m.stream(m.scope_stream).capture_state() != CaptureState::capture) {
    close_recording(m, Errc::doomed);
  }
  check_all(m);
}

void do_abort(Model& m, int s) {
  m.log() << "abort_capture(stream " << s << ")\n";
  const CaptureState was = m.state(s);
  std::optional<Errc> expected;
  std::string what = "abort_capture";
  if (m.side(s)) {
    expected = Errc::graph_state;
    what = "abort_capture on a side stream";
  } else if (was == CaptureState::no_capture) {
    expected = Errc::graph_state;
    what = "abort_capture out of order";
  } else if (was == CaptureState::capture) {
    what = "abort_capture mid-recording";
  }
  m.faults.arm({"cuStreamEndCapture", "cuGraphDestroy", "cuEventRecord"});
  Result<void> aborted = m.device().abort_capture(m.stream(s));
  m.faults.settle();
  m.expect(aborted, expected, what);
  if (aborted && was == CaptureState::capture) {
    close_recording(m, Errc::doomed);  // the claims carry "abandoned" (doomed)
  } else if (aborted && was == CaptureState::prepare) {
    close_window(m, s);
  }
  check_all(m);
}

}  // namespace graphcap::testing::many_graphs
