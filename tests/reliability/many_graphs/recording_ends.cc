// How the open recording ends: end_capture into a new graph, end_capture(s, into) re-recording a
// graph (updated or re-instantiated), CaptureScope::end, or a refusal (doomed, side work not
// joined back, a lent pool buffer that outlived the recording); what the graph shares of its
// pool; and the model after the close.
#include <algorithm>
#include <string>
#include <utility>

#include "many_graphs/model.h"

namespace graphcap::testing::many_graphs {
namespace {

// What closing a recording may call (end_capture, with or without `into`; CaptureScope::end).
constexpr const char* kCloseEntries[] = {
    "cuStreamEndCapture", "cuGraphGetNodes",     "cuGraphNodeGetType", "cuGraphExecUpdate",
    "cuGraphInstantiateWithFlags", "cuGraphUpload", "cuGraphDestroy",  "cuGraphExecDestroy",
    "cuStreamSynchronize", "cuEventRecord",       "cuEventQuery"};

// Whether a kept buffer the pool may have lent is alive: end_capture may refuse (outlived).
bool may_outlive(const Model& m) {
  return std::any_of(m.recording.maybe_lent.begin(), m.recording.maybe_lent.end(),
                     [&](int b) { return m.buf(b).live; });
}

// The refusals name what they refuse: the side stream left unjoined, the lent buffer.
template <class T>
void expect_wording(Model& m, const Result<T>& result, const CloseExpectation& close) {
  if (m.degraded() || result) return;
  const std::string& message = result.error().message();
  if (close.unjoined >= 0 &&
      message.find("stream " + std::to_string(close.unjoined) + " was forked into the recording") ==
          std::string::npos) {
    m.world.diverge("the refusal of unjoined side work does not name stream " +
                    std::to_string(close.unjoined) + ": " + message);
  }
  if (close.or_outlived && message.find("outlived the recording") == std::string::npos) {
    m.world.diverge("the refusal of a recording keeping a lent buffer does not say so: " + message);
  }
}

// The outcome of a close that went ahead: a graph or the expected refusal, worded as it must be.
template <class T>
void expect_close(Model& m, const Result<T>& result, const CloseExpectation& close, const std::string& what) {
  if (close.or_outlived) {
    m.expect_either(result, std::nullopt, Errc::graph_state, what);
  } else {
    m.expect(result, close.code, what);
  }
  expect_wording(m, result, close);
}

// Refused up front with the recording left open (graph_state): the stream is not the origin of
// a recording, or it is a side stream. The expectation for the rest.
std::optional<Errc> end_up_front(const Model& m, int s, std::string& what) {
  if (!m.in_recording(s)) {
    what = "end_capture out of order";
    return Errc::graph_state;
  }
  if (m.side(s)) {
    what = "end_capture on a side stream";
    return Errc::graph_state;
  }
  return std::nullopt;
}

// A close that went ahead: the graph's index in graphs, or -1.
int closed(Model& m, int s, Result<Graph> graph, const Plan& plan, bool may_outlive_refusal) {
  // In degraded mode, whether it closed is what graphcap says.
  if (m.stream(s).capture_state() == CaptureState::capture) {
    check_all(m);
    return -1;
  }
  if (!graph) {
    close_recording(m, graph.error().code(), may_outlive_refusal && graph.error().code() == Errc::graph_state);
    check_all(m);
    return -1;
  }
  ModelGraph model = graph_of(m, plan);
  model.handle = std::move(*graph);
  check_shared_bytes(m, model.handle.report(), shared_bytes(m), "end_capture");
  m.log() << "  graph " << m.graphs.size() << " replays " << model.ops.size() << " op(s)\n";
  close_recording(m, std::nullopt);
  m.graphs.push_back(std::move(model));
  check_all(m);
  return static_cast<int>(m.graphs.size()) - 1;
}

// A lent pool buffer kept past a window closed without a graph carries the pool's error for good.
bool follow_lent(Model& m) {
  bool lent_seen = false;
  for (int b : m.recording.maybe_lent) {
    ModelBuffer& buffer = m.buf(b);
    buffer.maybe_lent = false;
    if (!buffer.live) continue;
    const std::optional<Error> failure = buffer.handle.failure();
    const bool lent = failure && failure->code() == Errc::graph_state &&
                      failure->message().find(kPoisoned) != std::string::npos;
    m.world.count(lent ? "pool: a kept buffer turned out lent (an error for good)"
                       : "pool: a kept buffer turned out not lent");
    if (lent) {
      lent_seen = true;
      buffer.failure = Errc::graph_state;
      buffer.for_good = true;
      buffer.lent_by = m.recording.pool;
      buffer.forget_words();  // its memory is the pool's graphs' scratch
    }
  }
  return lent_seen;
}

}  // namespace

CloseExpectation close_expectation(const Model& m) {
  CloseExpectation out;
  if (m.recording.doomed) {
    out.code = Errc::doomed;
    out.what = "end_capture of a doomed recording";
  } else if (std::optional<int> side = m.streams.unjoined()) {
    out.code = Errc::graph_state;
    out.unjoined = *side;
    out.what = "end_capture with side work not joined back";
  } else if (may_outlive(m)) {
    out.or_outlived = true;
    out.what = "end_capture keeping a buffer the pool may have lent";
  } else {
    out.what = m.recording.pool >= 0 ? "end_capture (pool)" : "end_capture";
  }
  return out;
}

// The recording closed: a graph (refusal empty) or a refusal whose code its claims carry (when
// the window claims). The side streams leave it; their uses become the origin's.
void close_recording(Model& m, std::optional<Errc> refusal, bool outlived_refusal) {
  const ModelRecording& rec = m.recording;
  const int origin = m.streams.origin();
  std::set<int> used = rec.reads;
  used.insert(rec.writes.begin(), rec.writes.end());
  if (refusal && rec.claims) {
    for (int b : rec.writes) m.fail(b, *refusal);
  }
  m.streams.close_recording(refusal.has_value(), used, [&](int b) -> model::BufferUsage* {
    return m.buf(b).live ? &m.buf(b) : nullptr;
  });
  close_window(m, origin);
  // A pool's window: follow what happened to the buffers it may have lent (a graph: none was).
  const bool lent_seen = refusal ? follow_lent(m) : false;
  if (!refusal) {
    for (int b : rec.maybe_lent) m.buf(b).maybe_lent = false;
  }
  if (outlived_refusal && !lent_seen && !m.degraded()) {
    m.world.diverge("end_capture refused a lent buffer that outlived the recording, but no kept buffer "
                    "carries the pool's error");
  }
  if (!refusal && rec.pool >= 0) {
    // The pool's intermediates: memory the window allocated and the graph uses, no longer held.
    for (int b : used) {
      ModelBuffer& buffer = m.buf(b);
      if (!buffer.live && buffer.window == rec.window) buffer.scratch = true;
    }
  }
  m.recording = ModelRecording{};
  m.release_deferred();
}

// GraphReport::pool_shared_bytes of the graph the open recording makes: what it uses of the
// pool's memory, each slice once (a window's allocations are exact-fit: kBytes): its
// intermediates (memory its window allocated, or the pool lent it, that no handle holds any
// more), and buffers the pool lent to earlier windows closed without a graph (their memory is
// the pool's already); nothing from before the window. On virtual memory, what the recording
// uses of the pool's range: the pool lends there what the warm-up planned and what is mapped,
// and the stream's own pools serve the rest (memory the graph holds alone).
std::size_t shared_bytes(const Model& m) {
  const ModelRecording& rec = m.recording;
  if (rec.pool < 0) return 0;
  const GraphPool* pool = m.pool_of(rec.pool);
  const GraphPoolStats stats = pool != nullptr ? pool->stats() : GraphPoolStats{};
  std::set<CUdeviceptr> shared;
  for (const std::set<int>* used : {&rec.reads, &rec.writes}) {
    for (int b : *used) {
      const ModelBuffer& buffer = m.buf(b);
      const bool in_range = buffer.ptr >= stats.base && buffer.ptr < stats.base + stats.reserved_bytes;
      if (stats.virtual_memory ? in_range
                               : (!buffer.live && buffer.window == rec.window) ||
                                     (buffer.for_good && buffer.lent_by == rec.pool)) {
        shared.insert(buffer.ptr);
      }
    }
  }
  return shared.size() * kBytes;
}

void check_shared_bytes(Model& m, const GraphReport& report, std::size_t expected, const char* what) {
  if (m.degraded() || report.pool_shared_bytes == expected) return;
  m.world.diverge(std::string(what) + ": report().pool_shared_bytes is " + std::to_string(report.pool_shared_bytes) +
                  ", the model says " + std::to_string(expected) +
                  " (the pool's memory is what the window allocated)");
}

ModelGraph graph_of(const Model& m, const Plan& plan) {
  const ModelRecording& rec = m.recording;
  ModelGraph graph;
  graph.stream = m.streams.origin();
  graph.pool = rec.pool;
  graph.ops = rec.ops;
  graph.reads = rec.reads;
  graph.writes = rec.writes;
  graph.signature = m.streams.nodes();
  graph.params = rec.params;
  graph.source_count = rec.params.empty() ? 0 : m.streams.nodes().size();
  graph.plan = plan;
  for (int b : graph.reads) {
    if (m.alive(b)) graph.held.insert(b);
  }
  for (int b : graph.writes) {
    if (m.alive(b)) graph.held.insert(b);
  }
  return graph;
}

// end_capture(s): the graph's index in graphs, or -1.
int do_end(Model& m, int s, const Plan& plan) {
  m.log() << "end_capture(stream " << s << ")\n";
  std::string what;
  std::optional<Errc> up_front = end_up_front(m, s, what);
  CloseExpectation close;
  if (!up_front) close = close_expectation(m);
  m.faults.arm(kCloseEntries);
  Result<Graph> graph = m.device().end_capture(m.stream(s));
  m.faults.settle();
  if (up_front) {
    m.expect(graph, up_front, what);
    check_all(m);
    return -1;
  }
  expect_close(m, graph, close, close.what);
  return closed(m, s, std::move(graph), plan, close.or_outlived);
}

// Whether re-recording into `into` updates its executable: true, false, or (nullopt) either (a
// memcpy or memset node with other operands, a kernel of another signature: the H200 measured
// kernel parameters, grids, functions of one signature and memset sizes).
std::optional<bool> predict_update(const Model& m, const ModelGraph& into) {
  const std::vector<model::Node>& nodes = m.streams.nodes();
  if (!m.recording.params.empty() && into.source_count != nodes.size()) return false;
  if (into.signature.size() != nodes.size()) return false;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::vector<std::size_t> a = into.signature[i].deps, b = nodes[i].deps;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a != b) return false;
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (into.signature[i].type != nodes[i].type) return false;
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const model::Node& was = into.signature[i];
    const model::Node& now = nodes[i];
    if (now.type == CU_GRAPH_NODE_TYPE_MEMCPY && (was.a != now.a || was.b != now.b)) return std::nullopt;
    if (now.type == CU_GRAPH_NODE_TYPE_MEMSET && (was.b != now.b || was.value != now.value)) return std::nullopt;
    if (now.type == CU_GRAPH_NODE_TYPE_KERNEL && was.fill_signature != now.fill_signature) return std::nullopt;
  }
  return true;
}

// end_capture(s, into graph g).
void do_end_into(Model& m, int s, int g, const Plan& plan) {
  ModelGraph& into = m.graphs[static_cast<std::size_t>(g)];
  m.log() << "end_capture(stream " << s << ", into graph " << g << ")\n";
  std::string what;
  std::optional<Errc> up_front;
  if (!into.live) {
    up_front = Errc::graph_state;
    what = "end_capture into a destroyed graph";
  } else if (into.stream != s) {
    up_front = Errc::invalid_argument;
    what = "end_capture into a graph of another stream";
  } else {
    up_front = end_up_front(m, s, what);
  }
  CloseExpectation close;
  std::optional<bool> update;
  if (!up_front) {
    close = close_expectation(m);
    update = predict_update(m, into);
  }
  m.faults.arm(kCloseEntries);
  const CUgraphExec exec_before = into.handle.native_handle();
  Result<void> done = m.device().end_capture(m.stream(s), into.handle);
  m.faults.settle();
  if (up_front) {
    m.expect(done, up_front, what);
    check_all(m);
    return;
  }
  expect_close(m, done, close, "re-record: " + close.what);
  if (m.stream(s).capture_state() == CaptureState::capture) {
    check_all(m);
    return;
  }
  if (!done) {
    // Refused: `into` is as it was (its replays, checked later, are the old recording's).
    if (!m.degraded() && into.handle.native_handle() != exec_before) {
      m.world.diverge("a refused re-recording changed the graph's executable");
    }
    close_recording(m, done.error().code(), close.or_outlived && done.error().code() == Errc::graph_state);
    check_all(m);
    return;
  }
  const GraphReport& report = into.handle.report();
  const bool kept = into.handle.native_handle() == exec_before;
  if (!m.degraded() && kept != report.updated) {
    m.world.diverge(std::string("end_capture(s, into): report().updated is ") + (report.updated ? "true" : "false") +
                    " but the executable was " + (kept ? "kept" : "replaced"));
  }
  const bool updated = report.updated;
  m.world.count(std::string("re-record into a graph: ") + (updated ? "updated" : "re-instantiated") +
                (update ? (*update ? " (model: update)" : " (model: re-instantiate)") : " (model: either)") +
                (m.degraded() ? " (after a fault)" : ""));
  if (!m.degraded()) {
    if (!report.rerecorded) m.world.diverge("end_capture(s, into): report().rerecorded is false");
    if (update && *update != updated) {
      m.world.diverge(std::string("end_capture(s, into): the model says the executable ") +
                      (*update ? "is updated" : "is re-instantiated") + ", report().updated is " +
                      (updated ? "true" : "false") + " (" + report.update_refusal + ")");
    }
  }
  check_shared_bytes(m, report, shared_bytes(m), "end_capture(s, into)");
  ModelGraph model = graph_of(m, plan);
  model.handle = std::move(into.handle);
  if (updated) model.source_count = into.source_count;
  m.log() << "  graph " << g << " now replays " << model.ops.size() << " op(s)"
          << (updated ? " (updated)" : " (re-instantiated)") << "\n";
  close_recording(m, std::nullopt);
  // Updated: once closed, the old recording's pins are stamped as used by the queued replays
  // (the stream's next operation).
  if (updated) ++m.streams[s].seq;
  into = std::move(model);
  check_all(m);
}

int do_scope_end(Model& m, const Plan& plan) {
  const int s = m.scope_stream;
  m.log() << "CaptureScope::end(stream " << s << ")\n";
  CloseExpectation close;
  std::optional<Errc> up_front;
  std::string what = "CaptureScope::end";
  if (!m.scope->began()) {
    up_front = m.scope->began().error().code();
    what = "CaptureScope::end after a failed begin";
  } else if (!m.scope->open()) {
    up_front = Errc::graph_state;
    what = "CaptureScope::end again";
  } else {
    up_front = end_up_front(m, s, what);
    if (!up_front) close = close_expectation(m);
  }
  m.faults.arm(kCloseEntries);
  Result<Graph> graph = m.scope->end();
  m.faults.settle();
  if (up_front) {
    m.expect(graph, up_front, what);
    check_all(m);
    return -1;
  }
  expect_close(m, graph, close, "CaptureScope::end: " + close.what);
  if (!m.degraded() && m.scope->open()) m.world.diverge("CaptureScope::end closed the recording, open() is true");
  return closed(m, s, std::move(graph), plan, close.or_outlived);
}

}  // namespace graphcap::testing::many_graphs
