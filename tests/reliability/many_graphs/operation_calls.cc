// Whole-buffer operations (launches of add_one / copy / fill, fill taking a Param, device copies
// and word fills) on any stream, eager or recorded, and the events that order streams and fork
// and join recordings.
#include <set>
#include <string>

#include "many_graphs/model.h"

namespace graphcap::testing::many_graphs {
namespace {

CUgraphNodeType node_type(Op::Kind kind) {
  switch (kind) {
    case Op::device_copy: return CU_GRAPH_NODE_TYPE_MEMCPY;
    case Op::device_fill: return CU_GRAPH_NODE_TYPE_MEMSET;
    default: return CU_GRAPH_NODE_TYPE_KERNEL;
  }
}

Result<void> issue(Model& m, int s, const Op& op) {
  Stream& on = m.stream(s);
  const Buffer& dst = m.buf(op.dst).handle;
  switch (op.kind) {
    case Op::add_one: return m.world.add_one(on, m.buf(op.src).handle, dst);
    case Op::copy_kernel: return m.world.copy(on, m.buf(op.src).handle, dst);
    case Op::fill_kernel: return m.world.fill(on, dst, op.value);
    case Op::fill_param: return m.world.fill(on, dst, Arg::param(m.params[static_cast<std::size_t>(op.param)]));
    case Op::device_copy: return m.device().copy(dst, m.buf(op.src).handle, on);
    case Op::device_fill: return m.device().fill(dst, op.value, on);
  }
  return {};
}

// The node a recorded operation adds, as exec update compares it.
void add_node(Model& m, int s, const Op& op) {
  model::Node& node = m.streams.add_node(s);
  node.type = node_type(op.kind);
  if (op.kind == Op::device_copy) node.a = m.buf(op.src).ptr;
  node.b = m.buf(op.dst).ptr;
  node.value = op.value;
  node.fill_signature = op.kind == Op::fill_kernel || op.kind == Op::fill_param;
}

}  // namespace

void hand_back(Model& m, int s, std::uint64_t seq, const std::set<int>& owners) {
  for (int owner : owners) {
    if (owner == s) continue;
    ++m.streams[owner].seq;
    m.streams.merge(owner, s, seq);
  }
}

void apply(Model& m, const Op& op) {
  ModelBuffer& dst = m.buf(op.dst);
  if (reads_src(op.kind)) {
    dst.copy_words(m.buf(op.src), op.kind == Op::add_one ? 1 : 0, kN);
  } else {
    dst.fill_words(op.value, kN);
  }
}

// A whole-buffer operation on stream `s`: eager, or recorded when `s` is in the recording.
Result<void> do_op(Model& m, int s, Op op) {
  const bool reads = reads_src(op.kind);
  const bool recorded = m.in_recording(s);
  if (op.kind == Op::fill_param) op.value = m.params[static_cast<std::size_t>(op.param)].value();
  m.log() << kind_name(op.kind) << "(";
  if (reads) m.log() << "buffer " << op.src << " -> ";
  m.log() << "buffer " << op.dst;
  if (op.kind == Op::fill_param) m.log() << " = param " << op.param << " (" << op.value << ")";
  if (op.kind == Op::fill_kernel || op.kind == Op::device_fill) m.log() << " = " << op.value;
  m.log() << ", stream " << s << ")\n";
  const char* launch_entry = op.kind == Op::device_copy   ? "cuMemcpyDtoDAsync"
                             : op.kind == Op::device_fill ? "cuMemsetD32Async"
                                                          : "cuLaunchKernel";
  m.faults.arm({launch_entry, "cuEventCreate", "cuEventRecord", "cuStreamWaitEvent", "cuEventDestroy",
                "cuStreamGetCaptureInfo"});
  Result<void> done = issue(m, s, op);
  m.faults.settle();
  const std::string what = std::string(kind_name(op.kind)) + (recorded ? " (recorded" : " (eager") +
                           (m.side(s) ? ", side stream)" : ")");
  std::optional<Errc> refusal = reads ? m.refused_use(s, op.src, false) : std::nullopt;
  if (!refusal) refusal = m.refused_use(s, op.dst, true);
  const bool unordered = refusal == Errc::invalid_argument;
  const bool input_failed = reads && m.buf(op.src).failure.has_value();
  std::optional<Errc> expected = refusal;
  if (!expected && input_failed) expected = Errc::failed_buffer;
  m.expect(done, expected, what + (unordered ? " not ordered" : refusal ? " of a buffer failed for good" : ""));
  if (!done) {
    const Errc code = done.error().code();
    // Refused before anything was issued (an argument, the order, a buffer failed for good,
    // the hand-back's event).
    if (code == Errc::invalid_argument || refusal ||
        done.error().message().find("ordering a buffer of another stream") != std::string::npos) {
      check_all(m);
      return done;
    }
    // Failed or skipped: what it writes carries that (unless the recording does not claim), a
    // recording is doomed by it. A driver failure came after the uses were stamped.
    if (code != Errc::failed_buffer) {
      const std::uint64_t seq = ++m.streams[s].seq;
      if (reads) m.stamp(s, op.src, false, seq);
      m.stamp(s, op.dst, true, seq);
    }
    if (!recorded || m.recording.claims) m.fail(op.dst, code);
    if (recorded) {
      if (!m.recording.doomed) m.recording.doomed = code;
      if (reads) m.recording.reads.insert(op.src);
      m.recording.writes.insert(op.dst);
    }
    check_all(m);
    return done;
  }
  const std::uint64_t seq = ++m.streams[s].seq;
  if (reads) m.stamp(s, op.src, false, seq);
  m.stamp(s, op.dst, true, seq);
  if (recorded) {
    if (reads) m.recording.reads.insert(op.src);
    m.recording.writes.insert(op.dst);
    if (op.kind == Op::fill_param) m.recording.params.insert(op.param);
    add_node(m, s, op);
    m.recording.ops.push_back(op);
    check_all(m);
    return done;
  }
  apply(m, op);
  m.clear_failure(op.dst);  // a whole eager operation produces it
  std::set<int> owners{m.buf(op.dst).owner};
  if (reads) owners.insert(m.buf(op.src).owner);
  hand_back(m, s, seq, owners);
  check_all(m);
  return done;
}

Op random_op_kind(Model& m, Op::Kind kind) {
  Op op;
  op.kind = kind;
  op.value = m.world.value();
  if (kind == Op::fill_param) op.param = static_cast<int>(m.world.pick(kParams));
  return op;
}

Op::Kind random_kind(Model& m) { return static_cast<Op::Kind>(m.world.pick(6)); }

// Random eager (or, on a stream of the recording, recorded) work on stream `s`.
void random_op(Model& m, int s) {
  Op op = random_op_kind(m, random_kind(m));
  op.dst = m.buffer_for(s);
  if (op.dst < 0) return;
  if (reads_src(op.kind)) {
    op.src = m.buffer_for(s);
    if (op.kind == Op::device_copy && op.src == op.dst) return;  // overlapping: not modelled
  }
  (void)do_op(m, s, op);
}

Result<void> do_record(Model& m, int e, int s) {
  m.log() << "record(event " << e << ", stream " << s << ")\n";
  m.faults.arm({"cuEventRecord"});
  Result<void> recorded = m.device().record_event(m.world.event(e), m.stream(s));
  m.faults.settle();
  m.expect(recorded, std::nullopt, m.in_recording(s) ? "record (recorded)" : "record");
  if (!recorded) {
    if (m.in_recording(s) && !m.recording.doomed) m.recording.doomed = recorded.error().code();
  } else {
    m.streams.recorded(m.events[static_cast<std::size_t>(e)], s);
  }
  check_all(m);
  return recorded;
}

Result<void> do_wait(Model& m, int s, int e) {
  m.log() << "wait(stream " << s << ", event " << e << ")\n";
  const model::EventState& event = m.events[static_cast<std::size_t>(e)];
  const model::WaitRule rule = m.streams.wait_rule(event, s);
  m.faults.arm({"cuStreamWaitEvent"});
  Result<void> waited = m.device().wait(m.stream(s), m.world.event(e));
  m.faults.settle();
  m.expect(waited, rule.expected, rule.what);
  if (!waited) {
    if (m.in_recording(s) && waited.error().code() == Errc::driver && !m.recording.doomed) {
      m.recording.doomed = Errc::driver;
    }
  } else {
    m.streams.waited(s, event, rule.fork);
  }
  check_all(m);
  return waited;
}

// `to` ordered after `from` through event `e`.
void do_order(Model& m, int from, int to, int e) {
  if (do_record(m, e, from)) (void)do_wait(m, to, e);
}

}  // namespace graphcap::testing::many_graphs
