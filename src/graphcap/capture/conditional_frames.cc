#include <graphcap/capture/conditional_frames.h>

#include <graphcap/driver/error_names.h>

#include <algorithm>
#include <atomic>
#include <utility>

#include <graphcap/capture/invalidation.h>
#include <graphcap/log.h>

namespace graphcap::capture {
namespace {

// Loops' and conditions' ids, unique in the process (never 0: the book's "no frame").
std::atomic<std::uint64_t> next_conditional_id{1};

// " (begun at file:line)" for a conditional node (" (made at file:line)" for a condition), empty
// when unknown.
std::string located_begun(const std::source_location& where, const char* verb = "begun") {
  const std::string site = call_site(where);
  return site.empty() ? site : std::string(" (") + verb + " at " + site + ")";
}

}  // namespace

const char* ConditionalStep::name() const noexcept {
  switch (kind) {
    case Kind::begin_while: return "begin_while";
    case Kind::end_while: return "end_while";
    case Kind::condition: return "condition";
    case Kind::begin_if: return "begin_if";
    case Kind::begin_else: return "begin_else";
    case Kind::end_if: return "end_if";
    case Kind::begin_switch: return "begin_switch";
    case Kind::begin_case: return "begin_case";
    case Kind::end_switch: return "end_switch";
  }
  return "a conditional step";
}

void ConditionalFrames::open() {
  {
    std::lock_guard lock(book_->mutex());
    frames_.clear();
    conditions_.clear();
    body_graphs_.clear();
  }
  unended_bodies_.clear();
  target_.store(nullptr, std::memory_order_release);
  between_cases_.store(false, std::memory_order_release);
}

Result<ConditionalHandle> ConditionalFrames::apply(const ConditionalStep& step,
                                                   CUstream body_stream) {
  using Kind = ConditionalStep::Kind;
  Result<void> done;
  switch (step.kind) {
    case Kind::begin_while: return begin_loop(body_stream, step.value, step.where);
    case Kind::condition: return make_condition(step.value, step.where);
    case Kind::end_while: done = end_loop(step.id); break;
    case Kind::begin_if:
      done = begin_branch(body_stream, FrameKind::if_else, step.id, 2, step.where);
      break;
    case Kind::begin_else: done = begin_else(step.id); break;
    case Kind::end_if: done = end_branch(FrameKind::if_else, step.id); break;
    case Kind::begin_switch:
      done = begin_branch(body_stream, FrameKind::switch_cases, step.id, step.value, step.where);
      break;
    case Kind::begin_case: done = begin_case(step.id, step.value); break;
    case Kind::end_switch: done = end_branch(FrameKind::switch_cases, step.id); break;
  }
  if (!done) return std::move(done).error();
  return ConditionalHandle{};
}

// ---- Refusals and names -----------------------------------------------------------------------

ConditionalFrames::ConditionState* ConditionalFrames::find_condition_locked(std::uint64_t id) {
  for (ConditionState& condition : conditions_) {
    if (condition.id == id) return &condition;
  }
  return nullptr;
}

bool ConditionalFrames::body_open_locked(std::uint64_t frame, unsigned body) const {
  if (frame == 0) return true;
  return std::any_of(frames_.begin(), frames_.end(), [&](const Frame& open) {
    return open.id == frame && open.body_open && open.body == body;
  });
}

bool ConditionalFrames::open_frame(std::uint64_t id) const {
  std::lock_guard lock(book_->mutex());
  return std::any_of(frames_.begin(), frames_.end(), [&](const Frame& f) { return f.id == id; });
}

std::string ConditionalFrames::frame_name(const Frame& frame) const {
  // Where it was begun, when the topology holds its node (it does while the frame is open).
  const std::string begun = located_begun(frame.where);
  switch (frame.kind) {
    case FrameKind::loop: return "the while loop at node " + std::to_string(frame.node) + begun;
    case FrameKind::if_else: return "the IF at node " + std::to_string(frame.node) + begun;
    case FrameKind::switch_cases:
      return "the SWITCH at node " + std::to_string(frame.node) + begun;
  }
  return "the conditional node at node " + std::to_string(frame.node) + begun;
}

std::optional<Error> ConditionalFrames::unused_condition_locked(
    std::uint64_t frame, unsigned body, const std::string& operation) const {
  if (book_->doomed_locked()) return std::nullopt;  // refused anyway: nothing to mend
  for (const ConditionState& condition : conditions_) {
    if (condition.home_frame != frame || condition.home_body != body || condition.used) continue;
    // CUDA refuses to instantiate a graph holding a handle no conditional node uses
    // (CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED, docs/cuda-driver-facts.md I02).
    return Error(Errc::graph_state,
                 operation + ": the condition made after node " +
                     std::to_string(condition.after_node) + located_begun(condition.where, "made") +
                     " (first " + std::to_string(condition.first) + ") " +
                     (frame == 0 ? "in the graph" : "in this body") +
                     " steers no branch: begin_if or begin_switch with it first (CUDA refuses a "
                     "graph holding a conditional handle no node uses: "
                     "CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED); nothing was closed");
  }
  return std::nullopt;
}

Result<void> ConditionalFrames::innermost_locked(FrameKind kind, std::uint64_t id,
                                                 const std::string& operation) const {
  const char* what = kind == FrameKind::loop       ? "loop"
                     : kind == FrameKind::if_else ? "IF of the condition"
                                                  : "SWITCH of the condition";
  const auto open = std::find_if(frames_.begin(), frames_.end(), [&](const Frame& frame) {
    return frame.id == id;
  });
  if (open == frames_.end()) {
    return Error(Errc::graph_state,
                 operation + ": the " + what + " is not open in this stream's recording" +
                     (kind == FrameKind::loop
                          ? " (ended already, or begun in another recording)"
                          : (kind == FrameKind::if_else ? " (begin_if first)"
                                                        : " (begin_switch first)")));
  }
  if (open->kind != kind) {
    return Error(Errc::graph_state,
                 operation + ": the condition steers " + frame_name(*open) + ", not " +
                     (kind == FrameKind::if_else ? "an IF (end it with end_switch)"
                                                 : "a SWITCH (end it with end_if)"));
  }
  if (open->id != frames_.back().id) {
    return Error(Errc::graph_state,
                 operation + ": the " + what + " is not the innermost open one (" +
                     frame_name(frames_.back()) + " was begun inside it: end it first)");
  }
  return {};
}

Error ConditionalFrames::no_body_refusal(const std::string& operation) const {
  std::lock_guard lock(book_->mutex());
  return no_body_refusal_locked(operation);
}

Error ConditionalFrames::no_body_refusal_locked(const std::string& operation) const {
  const std::string prefix = operation.empty() ? std::string() : operation + ": ";
  if (frames_.empty() || frames_.back().body_open) {
    return Error(Errc::graph_state, prefix + "no conditional body is closed now");
  }
  const Frame& inner = frames_.back();
  const std::optional<Error>& doomed = book_->doomed_locked();
  if (inner.open_failed && doomed) {
    // The recording is doomed by that failure: say so, not "between cases".
    const std::string body = inner.kind == FrameKind::if_else ? "ELSE body"
                             : inner.kind == FrameKind::switch_cases
                                 ? "case " + std::to_string(inner.body)
                                 : "body";
    return Error(Errc::doomed,
                 prefix + "the " + body + " of " + frame_name(inner) +
                     " could not be opened, so the recording is refused (end_capture or "
                     "abort_capture it): " + doomed->message(),
                 doomed->driver_code());
  }
  return Error(Errc::graph_state, prefix + frame_name(inner) +
                                      " has no case open; record a case's work after begin_case");
}

std::optional<Error> ConditionalFrames::open_refusal() const {
  std::lock_guard lock(book_->mutex());
  // A doomed recording never makes a graph: keeping it open for its frames to be closed would
  // only leave the stream capturing. end_capture closes it (the bodies left open are ended after
  // the recording's capture, an invalidated one abandoned) and refuses it with its doom.
  if (book_->doomed_locked()) return std::nullopt;
  if (!frames_.empty()) {
    const Frame& inner = frames_.back();
    const char* closer = inner.kind == FrameKind::loop      ? "end_while"
                         : inner.kind == FrameKind::if_else ? "end_if"
                                                            : "end_switch";
    return Error(Errc::graph_state,
                 "end_capture: " + std::to_string(frames_.size()) +
                     " conditional node(s) still open (the innermost " + frame_name(inner) +
                     "); " + closer + " it first, and any around it, innermost first (end_while, "
                     "end_if, end_switch; the recording stays open)");
  }
  return unused_condition_locked(0, 0, "end_capture");
}

Result<std::size_t> ConditionalFrames::next_depth() const {
  std::lock_guard lock(book_->mutex());
  if (frames_.size() >= kMaxDepth) {
    return Error(Errc::graph_state, std::to_string(frames_.size()) +
                                        " conditional nodes are open already (at most " +
                                        std::to_string(kMaxDepth) +
                                        " nest, the depth measured on the H200)");
  }
  if (!frames_.empty() && !frames_.back().body_open) return no_body_refusal_locked("");
  return frames_.size();
}

// ---- Frames and bodies ------------------------------------------------------------------------

void ConditionalFrames::retarget_locked() noexcept {
  const Frame* inner = frames_.empty() ? nullptr : &frames_.back();
  target_.store(inner != nullptr ? inner->body_stream : nullptr, std::memory_order_release);
  between_cases_.store(inner != nullptr && !inner->body_open, std::memory_order_release);
}

void ConditionalFrames::push_locked(Frame&& frame, std::size_t depth) {
  // (Its node was recorded into the enclosing body, which resumes with its count when it ends.)
  if (!frames_.empty()) frames_.back().body_nodes = book_->body_nodes_locked();
  frame.lane = -1 - static_cast<int>(depth);
  frames_.push_back(std::move(frame));
  const Frame& inner = frames_.back();
  book_->place_locked({inner.id, inner.body, inner.lane});
  retarget_locked();
}

Result<void> ConditionalFrames::pop(const std::string& operation, const std::string& what) {
  std::optional<Error> failure = switch_body(std::nullopt, operation);
  {
    std::lock_guard lock(book_->mutex());
    book_->topology_locked().drop_lane(frames_.back().lane);
    frames_.pop_back();
    if (frames_.empty()) {
      book_->place_locked({});
    } else {
      const Frame& inner = frames_.back();
      book_->place_locked({inner.id, inner.body, inner.lane}, inner.body_nodes);
    }
    retarget_locked();
  }
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(book_->id_locked()) + ": " + what +
                             (failure ? ": " + failure->message() : std::string()));
  }
  if (failure) return *failure;
  return {};
}

std::optional<Error> ConditionalFrames::switch_body(std::optional<unsigned> next,
                                                    const std::string& operation) {
  Frame frame;
  {
    std::lock_guard lock(book_->mutex());
    frame = frames_.back();
  }
  std::optional<Error> failure;
  bool stuck = frame.stuck;
  if (frame.body_open && !stuck) {
    Result<bool> valid = graphs_->body_active(frame.body_stream);
    if (!valid || !*valid) {
      // Invalidated (by an unsafe call elsewhere, say), or not known to be valid: don't end the
      // body's capture before the recording's own, which the driver does not survive with an
      // invalidated body; the close asks again and ends it after.
      unended_bodies_.push_back(frame.body_stream);
      stuck = true;
      failure = !valid ? std::move(valid).error().context(operation + ": " + frame_name(frame))
                       : Error(Errc::driver,
                               operation + ": the body's capture was invalidated (" +
                                   likely_causes(book_->mode()) + ")",
                               CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    } else if (Result<void> ended = graphs_->end_body(frame.body_stream); !ended) {
      failure = std::move(ended).error().context(operation + ": closing " + frame_name(frame) +
                                                 "'s body");
    }
  }
  bool opened = false;
  if (next && !stuck) {
    if (Result<void> begun = graphs_->begin_body(frame.body_stream, frame.bodies[*next],
                                                 CU_STREAM_CAPTURE_MODE_RELAXED);
        !begun) {
      if (!failure) {
        failure = std::move(begun).error().context(operation + ": opening " + frame_name(frame) +
                                                   "'s body " + std::to_string(*next));
      }
    } else {
      opened = true;
    }
  }
  {
    std::lock_guard lock(book_->mutex());
    Frame& inner = frames_.back();
    inner.stuck = stuck;
    book_->topology_locked().drop_lane(inner.lane);  // the next body starts from no dependency
    inner.open_failed = next && !opened && !stuck;
    if (next) {
      inner.body = *next;
      inner.begun[*next] = true;
      // A stuck stream still captures (invalidated): what it records fails there, never runs.
      inner.body_open = opened || stuck;
    } else {
      inner.body_open = false;
    }
    book_->place_locked({inner.id, inner.body, inner.lane});
    if (failure) book_->doom_locked(*failure);
    retarget_locked();
  }
  return failure;
}

// ---- The steps --------------------------------------------------------------------------------

Result<ConditionalHandle> ConditionalFrames::begin_loop(CUstream body_stream, unsigned first,
                                                        std::source_location where) {
  Result<std::size_t> depth = next_depth();
  if (!depth) return std::move(depth).error().context("begin_while");
  const CUstream outer = target() != nullptr ? target() : stream_;
  // The body is captured in RELAXED mode whatever the recording's mode: an unsafe call
  // invalidates only the recording's own capture then, never the body's. Once a body's capture
  // was invalidated, every way out of it crashed the H200's driver (docs/cuda-driver-facts.md,
  // "Conditional nodes"); graphcap's own checks of unsafe calls follow the recording's mode.
  Result<ConditionalNode> inserted = Error(Errc::driver, "not inserted");
  Result<CUgraphConditionalHandle> handle = graphs_->create_condition(outer, first);
  if (handle) inserted = graphs_->add_conditional(outer, *handle, CU_GRAPH_COND_TYPE_WHILE, 1);
  Result<void> body = handle && inserted ? graphs_->begin_body(body_stream, inserted->bodies[0],
                                                               CU_STREAM_CAPTURE_MODE_RELAXED)
                                         : Result<void>{};
  if (!handle || !inserted || !body) {
    // Whatever of it the driver did stays in the recording (perhaps a WHILE node without a
    // body, which must never replay): refuse the recording.
    Error error = (!handle ? handle.error() : !inserted ? inserted.error() : body.error())
                      .context("begin_while");
    book_->doom(error);
    return error;
  }
  Frame frame;
  frame.kind = FrameKind::loop;
  frame.id = next_conditional_id.fetch_add(1, std::memory_order_relaxed);
  frame.body_stream = body_stream;
  frame.bodies = inserted->bodies;
  frame.body_open = true;
  frame.begun.assign(1, true);
  frame.handle = *handle;
  frame.first = first;
  frame.where = where;
  const ConditionalHandle made{frame.id, frame.handle};
  std::size_t node = 0;
  {
    std::lock_guard lock(book_->mutex());
    node = frame.node = book_->add_conditional_locked(
        frame.id,
        "while loop " + std::to_string(frame.id) + " (first " + std::to_string(first) + ")",
        where);
    body_graphs_.push_back(BodyGraph{frame.id, 0, frame.bodies[0], frame.node});
    push_locked(std::move(frame), *depth);
  }
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(book_->id_locked()) + ": node " +
                             std::to_string(node) + " CONDITIONAL: while loop " +
                             std::to_string(made.id) + " begins (depth " +
                             std::to_string(*depth + 1) + ")");
  }
  return made;
}

Result<void> ConditionalFrames::end_loop(std::uint64_t id) {
  std::size_t nodes = 0;
  {
    std::lock_guard lock(book_->mutex());
    if (Result<void> at = innermost_locked(FrameKind::loop, id, "end_while"); !at) return at;
    const Frame& frame = frames_.back();
    // (Not when doomed: the kernel that takes the condition may be the one that failed, and the
    // loop never replays anyway.)
    if (!book_->doomed_locked() && frame.first != 0 && !book_->condition_taken_locked(frame.id)) {
      // Its condition starts true every replay and nothing can set it to 0: on a GPU the replay
      // would never end. Refused before the body closes, so a kernel can still be recorded.
      return Error(Errc::graph_state,
                   "end_while: the loop's condition starts true (begin_while's `first`) and no "
                   "kernel recorded since begin_while takes it (Arg::condition(loop)), so nothing "
                   "could end the loop: every replay would run forever; record the kernel that "
                   "sets it first (the loop stays open)");
    }
    if (std::optional<Error> unused = unused_condition_locked(frame.id, 0, "end_while")) {
      return *unused;
    }
    nodes = book_->body_nodes_locked();
  }
  return pop("end_while", "while loop " + std::to_string(id) + " ends (" +
                              std::to_string(nodes) + " nodes in its body)");
}

Result<ConditionalHandle> ConditionalFrames::make_condition(unsigned first,
                                                            std::source_location where) {
  ConditionState condition;
  condition.where = where;
  {
    std::lock_guard lock(book_->mutex());
    if (!frames_.empty() && !frames_.back().body_open) return no_body_refusal_locked("condition");
    if (!frames_.empty()) {
      condition.home_frame = frames_.back().id;
      condition.home_body = frames_.back().body;
    }
    condition.after_node = book_->topology_locked().size();
  }
  const CUstream target_now = target() != nullptr ? target() : stream_;
  // A failure changes nothing: no handle exists (the recording stays valid).
  Result<CUgraphConditionalHandle> handle = graphs_->create_condition(target_now, first);
  if (!handle) return std::move(handle).error().context("condition");
  condition.id = next_conditional_id.fetch_add(1, std::memory_order_relaxed);
  condition.handle = *handle;
  condition.first = first;
  {
    std::lock_guard lock(book_->mutex());
    conditions_.push_back(condition);
  }
  return ConditionalHandle{condition.id, condition.handle};
}

Result<void> ConditionalFrames::begin_branch(CUstream body_stream, FrameKind kind,
                                             std::uint64_t id, unsigned cases,
                                             std::source_location where) {
  const bool is_if = kind == FrameKind::if_else;
  const std::string operation = is_if ? "begin_if" : "begin_switch";
  Result<std::size_t> depth = next_depth();
  if (!depth) return std::move(depth).error().context(operation);
  unsigned first = 0;
  CUgraphConditionalHandle handle = 0;
  {
    std::lock_guard lock(book_->mutex());
    ConditionState* condition = find_condition_locked(id);
    if (condition == nullptr) {
      return Error(Errc::graph_state,
                   operation + ": the condition is not one of this stream's recording (made in "
                               "another recording, or on another stream)");
    }
    if (condition->used) {
      return Error(Errc::graph_state,
                   operation + ": the condition steers a branch already (each condition steers "
                               "one IF or SWITCH: make another with Device::condition)");
    }
    if (!body_open_locked(condition->home_frame, condition->home_body)) {
      return Error(Errc::graph_state,
                   operation + ": the condition was made in a conditional body that is closed "
                               "(a branch may use a condition of its own body or of one around "
                               "it)");
    }
    if (!book_->condition_taken_locked(id)) {
      return Error(Errc::graph_state,
                   operation + ": no kernel recorded since Device::condition takes the condition "
                               "(Arg::condition(c)), so every replay would take the same branch "
                               "(first " + std::to_string(condition->first) +
                               "): record the kernel that sets it first (nothing changed)");
    }
    first = condition->first;
    handle = condition->handle;
  }
  const CUstream outer = target() != nullptr ? target() : stream_;
  // An IF node always has its ELSE body (size 2; empty bodies are valid, B06): begin_else may
  // follow, and re-recordings with and without it update in place.
  const unsigned size = is_if ? 2u : cases;
  Result<ConditionalNode> inserted = graphs_->add_conditional(
      outer, handle, is_if ? CU_GRAPH_COND_TYPE_IF : CU_GRAPH_COND_TYPE_SWITCH, size);
  Result<void> body = inserted && is_if
                          ? graphs_->begin_body(body_stream, inserted->bodies[0],
                                                CU_STREAM_CAPTURE_MODE_RELAXED)
                          : Result<void>{};
  std::size_t node = 0;
  {
    std::lock_guard lock(book_->mutex());
    find_condition_locked(id)->used = true;  // the driver may hold its node: never unused now
    if (!inserted || !body) {
      // A conditional node without its body must never replay: the recording is refused.
      Error error = (!inserted ? inserted.error() : body.error()).context(operation);
      book_->doom_locked(error);
      return error;
    }
    Frame frame;
    frame.kind = kind;
    frame.id = id;
    frame.body_stream = body_stream;
    frame.bodies = inserted->bodies;
    frame.begun.assign(size, false);
    frame.body_open = is_if;
    if (is_if) frame.begun[0] = true;
    frame.handle = handle;
    frame.first = first;
    frame.where = where;
    node = frame.node = book_->add_conditional_locked(
        id,
        is_if ? "if (condition " + std::to_string(id) + ", first " + std::to_string(first) + ")"
              : "switch of " + std::to_string(cases) + " cases (condition " + std::to_string(id) +
                    ", first " + std::to_string(first) + ")",
        where);
    for (unsigned b = 0; b < size; ++b) {
      body_graphs_.push_back(BodyGraph{id, b, frame.bodies[b], frame.node});
    }
    push_locked(std::move(frame), *depth);
  }
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(book_->id_locked()) + ": node " +
                             std::to_string(node) + " CONDITIONAL: " + (is_if ? "IF" : "SWITCH") +
                             " of condition " + std::to_string(id) + " begins (depth " +
                             std::to_string(*depth + 1) + ")");
  }
  return {};
}

Result<void> ConditionalFrames::begin_else(std::uint64_t id) {
  {
    std::lock_guard lock(book_->mutex());
    if (Result<void> at = innermost_locked(FrameKind::if_else, id, "begin_else"); !at) return at;
    if (frames_.back().body != 0) {
      return Error(Errc::graph_state,
                   "begin_else: the IF's ELSE body was begun already (one ELSE per IF)");
    }
    if (std::optional<Error> unused = unused_condition_locked(id, 0, "begin_else")) return *unused;
  }
  if (std::optional<Error> failure = switch_body(1u, "begin_else")) return *failure;
  return {};
}

Result<void> ConditionalFrames::begin_case(std::uint64_t id, unsigned index) {
  {
    std::lock_guard lock(book_->mutex());
    if (Result<void> at = innermost_locked(FrameKind::switch_cases, id, "begin_case"); !at) {
      return at;
    }
    const Frame& frame = frames_.back();
    if (index >= frame.bodies.size()) {
      return Error(Errc::graph_state,
                   "begin_case: case " + std::to_string(index) + " of a SWITCH of " +
                       std::to_string(frame.bodies.size()) +
                       " cases (cases are 0 to cases - 1; at replay, a value past the last case "
                       "runs none)");
    }
    if (frame.begun[index]) {
      return Error(Errc::graph_state, "begin_case: case " + std::to_string(index) +
                                          " was begun already (each case once)");
    }
    if (frame.body_open) {
      if (std::optional<Error> unused = unused_condition_locked(id, frame.body, "begin_case")) {
        return *unused;
      }
    }
  }
  if (std::optional<Error> failure = switch_body(index, "begin_case")) return *failure;
  return {};
}

Result<void> ConditionalFrames::end_branch(FrameKind kind, std::uint64_t id) {
  const bool is_if = kind == FrameKind::if_else;
  const std::string operation = is_if ? "end_if" : "end_switch";
  {
    std::lock_guard lock(book_->mutex());
    if (Result<void> at = innermost_locked(kind, id, operation); !at) return at;
    const Frame& frame = frames_.back();
    if (frame.body_open) {
      if (std::optional<Error> unused = unused_condition_locked(id, frame.body, operation)) {
        return *unused;
      }
    }
  }
  return pop(operation, std::string(is_if ? "IF" : "SWITCH") + " of condition " +
                            std::to_string(id) + " ends");
}

// ---- The close --------------------------------------------------------------------------------

std::vector<CUstream> ConditionalFrames::close_locked() {
  std::vector<CUstream> bodies = std::exchange(unended_bodies_, {});
  // Bodies left open (an abort, a closing device) end after the recording's own capture,
  // innermost first, while its graph (which owns them) is still alive.
  for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame) {
    if (frame->body_open && !frame->stuck) bodies.push_back(frame->body_stream);
  }
  frames_.clear();
  target_.store(nullptr, std::memory_order_release);
  between_cases_.store(false, std::memory_order_release);
  return bodies;
}

}  // namespace graphcap::capture
