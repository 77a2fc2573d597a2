// ConditionalFrames: the conditional nodes an open recording is inside (WHILE loops, IF/ELSE and
// SWITCH branches) and the conditions made for its branches (docs/capture-lifecycle.md,
// "Device-side loops and branches"). Each node opens a frame whose bodies the origin stream's
// operations go into, captured on the frame's body stream; frames nest (up to kMaxDepth, of any
// kinds) and close innermost first. Every refusal is decided before anything changes
// (graph_state); a failed driver step dooms the recording (a conditional node without its body
// must never replay).
//
// Every step enters through apply(): one ConditionalStep names it. The origin stream's mutex is
// held (the steps are the origin's, on its recording thread, checked by the Window); the
// recording book's lock guards the frames against side streams reading the body placement.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include <graphcap/capture/graph_driver.h>
#include <graphcap/capture/recording.h>
#include <graphcap/capture/recording_book.h>
#include <graphcap/result.h>

namespace graphcap::capture {

// One step of a conditional node, as a public call makes it (Device::begin_while, ...).
struct ConditionalStep {
  enum class Kind : std::uint8_t {
    begin_while,
    end_while,
    condition,  // a condition for an IF or a SWITCH to steer by
    begin_if,
    begin_else,
    end_if,
    begin_switch,
    begin_case,
    end_switch,
  };
  Kind kind = Kind::begin_while;
  // The loop or condition the step is on (not for begin_while, condition), and the recording it
  // was made in.
  std::uint64_t id = 0;
  std::uint64_t recording = 0;
  // begin_while, condition: the condition's value at the start of every replay; begin_switch:
  // the number of cases; begin_case: the case.
  unsigned value = 0;
  std::source_location where{};

  // "begin_while", "end_if", ...: how messages name it.
  const char* name() const noexcept;
  // It inserts a conditional node (begin_while, begin_if, begin_switch): it needs a body stream.
  bool opens_node() const noexcept {
    return kind == Kind::begin_while || kind == Kind::begin_if || kind == Kind::begin_switch;
  }
};

// What a step made: a loop or a condition (begin_while, condition): its id (unique in the
// process) and the handle a kernel sets.
struct ConditionalHandle {
  std::uint64_t id = 0;
  CUgraphConditionalHandle handle = 0;
};

class ConditionalFrames {
 public:
  ConditionalFrames(GraphDriver& graphs, RecordingBook& book, CUstream stream) noexcept
      : graphs_(&graphs), book_(&book), stream_(stream) {}
  ConditionalFrames(const ConditionalFrames&) = delete;
  ConditionalFrames& operator=(const ConditionalFrames&) = delete;

  // A recording opens: no frame, no condition.
  void open();
  // The depth a new conditional node would have, or graph_state when too many are open or the
  // innermost frame has no body open.
  Result<std::size_t> next_depth() const;
  // Step `step` of the recording (`body_stream`: the stream for the bodies of the node a step
  // opens, of depth next_depth()).
  Result<ConditionalHandle> apply(const ConditionalStep& step, CUstream body_stream);
  // A loop or a branch of this id is open.
  bool open_frame(std::uint64_t id) const;

  // The innermost frame has no body open (a SWITCH before its first case, or a body that failed
  // to open): the origin may record nothing now.
  bool between_cases() const noexcept { return between_cases_.load(std::memory_order_acquire); }
  // What `operation` on the origin is refused with then: graph_state between a SWITCH's cases;
  // the recording's doom when the body failed to open (it is refused: end or abort it).
  Error no_body_refusal(const std::string& operation) const;
  // end_capture with frames open, or with a condition made in the graph that steers no branch:
  // refused (the recording stays open), naming the innermost frame or the condition; never for a
  // doomed recording (end_capture closes it, refused with its doom).
  std::optional<Error> open_refusal() const;
  // Where the origin's operations are issued now: the innermost body stream, or nullptr.
  CUstream target() const noexcept { return target_.load(std::memory_order_acquire); }

  // ---- The close (RecordingClose) ----------------------------------------------------------
  // The bodies to end after the recording's own capture, innermost first: those invalidated at
  // a step (ended only now), and those left open (an abort, a closing device). No frame is open
  // after it. The book's lock held.
  std::vector<CUstream> close_locked();
  // A body whose invalidated capture the close left open.
  void abandon(CUstream body) { abandoned_bodies_.push_back(body); }
  // The recording's body graphs, to name a node of one in an instantiate refusal.
  const std::vector<BodyGraph>& body_graphs() const noexcept { return body_graphs_; }
  // Body streams whose invalidated capture was left open (ending it crashes the H200's driver):
  // never to be used again, destroyed by their owner.
  std::vector<CUstream> take_abandoned_bodies() { return std::exchange(abandoned_bodies_, {}); }

 private:
  // IF, WHILE, alternating IF/WHILE and SWITCH nodes were measured to nest to depth 128 (each
  // depth instantiated and ran); graphcap takes no more than the H200 was shown to.
  static constexpr std::size_t kMaxDepth = 128;
  enum class FrameKind : std::uint8_t { loop, if_else, switch_cases };
  // One open conditional node and the body of it being recorded.
  struct Frame {
    FrameKind kind = FrameKind::loop;
    std::uint64_t id = 0;  // the loop's, or the condition's that steers the branch
    CUstream body_stream = nullptr;
    std::vector<CUgraph> bodies;  // the node's body graphs (owned by the node)
    unsigned body = 0;            // the body recorded now (when body_open)
    bool body_open = false;
    bool stuck = false;           // a body's capture was invalidated: left open, never ended
    bool open_failed = false;     // opening body `body` failed (the recording is doomed)
    std::vector<bool> begun;      // per body: begun already
    CUgraphConditionalHandle handle = 0;
    unsigned first = 0;
    int lane = 0;                  // the body's lane in the topology (below any stream index)
    std::size_t node = 0;          // the conditional node
    std::size_t body_nodes = 0;    // nodes in the open body, kept while a frame inside is open
    std::source_location where{};  // the call that began it
  };
  // A condition made by make_condition: where, and what has been done with it.
  struct ConditionState {
    std::uint64_t id = 0;
    CUgraphConditionalHandle handle = 0;
    unsigned first = 0;
    std::uint64_t home_frame = 0;  // the frame whose body it was made in (0: the graph)
    unsigned home_body = 0;
    std::size_t after_node = 0;  // how many nodes were recorded when it was made
    bool used = false;           // a branch steers by it
    std::source_location where{};  // Device::condition's caller
  };

  Result<ConditionalHandle> begin_loop(CUstream body_stream, unsigned first,
                                       std::source_location where);
  Result<void> end_loop(std::uint64_t id);
  Result<ConditionalHandle> make_condition(unsigned first, std::source_location where);
  Result<void> begin_branch(CUstream body_stream, FrameKind kind, std::uint64_t condition,
                            unsigned cases, std::source_location where);
  Result<void> begin_else(std::uint64_t condition);
  Result<void> begin_case(std::uint64_t condition, unsigned index);
  Result<void> end_branch(FrameKind kind, std::uint64_t condition);
  // Pushes `frame` (its node recorded): the origin records into its open body from now on.
  void push_locked(Frame&& frame, std::size_t depth);
  // Closes the innermost frame's open body (a failure is returned), pops it, logs `what`.
  Result<void> pop(const std::string& operation, const std::string& what);

  ConditionState* find_condition_locked(std::uint64_t id);
  // Whether the body `frame`/`body` (0/0: the graph) is open now.
  bool body_open_locked(std::uint64_t frame, unsigned body) const;
  // A condition made in body `frame`/`body` that steers no branch: the refusal of closing it.
  std::optional<Error> unused_condition_locked(std::uint64_t frame, unsigned body,
                                               const std::string& operation) const;
  // The innermost frame, checked to be `id`'s of `kind`: nothing, or the refusal.
  Result<void> innermost_locked(FrameKind kind, std::uint64_t id,
                                const std::string& operation) const;
  // Close the innermost frame's open body on the driver (a failure is returned, not doomed) and
  // open body `next` (or none). The caller decided every refusal first.
  std::optional<Error> switch_body(std::optional<unsigned> next, const std::string& operation);
  void retarget_locked() noexcept;
  std::string frame_name(const Frame& frame) const;
  Error no_body_refusal_locked(const std::string& operation) const;

  GraphDriver* graphs_;
  RecordingBook* book_;
  CUstream stream_;
  // Guarded by the book's lock.
  std::vector<Frame> frames_;  // innermost last
  std::vector<ConditionState> conditions_;
  std::vector<BodyGraph> body_graphs_;
  // The origin's mutex held.
  std::vector<CUstream> unended_bodies_;  // invalidated at a step: ended after the recording
  std::vector<CUstream> abandoned_bodies_;
  std::atomic<CUstream> target_{nullptr};
  std::atomic<bool> between_cases_{false};
};

}  // namespace graphcap::capture
