// The capture sequence and what it leaves: nested WHILE/IF bodies with a driver failure injected
// into the innermost one, Device::record and CaptureScope with steps that throw, fail or leave a
// branch open, CaptureScopes whose begin is refused, and host syncs as ordering. Whatever a step
// or the driver does, every stream the user holds is out of capture and usable afterwards.
#include <optional>
#include <stdexcept>
#include <string>

#include <graphcap/try.h>

#include "safe_life/shapes.h"

namespace graphcap::testing::safe_life {
namespace {

struct StepThrew : std::runtime_error {
  StepThrew() : std::runtime_error("the model's step threw") {}
};

}  // namespace

void branch_fault(World& world) {
  Device& device = world.device();
  const int o = static_cast<int>(world.pick(World::kStreams));
  Stream& s = world.stream(o);
  const int depth = 1 + static_cast<int>(world.pick(3));  // bodies nested
  const int reach = world.draw({branches, branch_faults});
  if (reach < 0) return;
  const bool fault = reach == branch_faults;
  const int x = world.known_of(o), w = world.known_of(o);
  if (world.diverged()) return;
  const std::uint32_t v = world.value(), u = world.value();
  world.log() << "branches: " << depth << " nested on stream " << o << (fault ? ", a launch fails in the innermost" : "") << "\n";
  if (!ok(world, device.prepare_capture(s), "prepare_capture" + on(o))) return;
  if (!ok(world, device.begin_capture(s), "begin_capture" + on(o))) return;
  world.expected_state(o) = CaptureState::capture;
  if (!ok(world, world.fill(o, x, v), "branches: recorded fill before the bodies")) return;
  // Each level: an IF whose condition a kernel sets (1: the body runs, 0: it doesn't), or a
  // WHILE that runs its body once (its body sets the condition to 0).
  struct Level {
    bool loop = false;
    Loop l;
    Condition c;
    bool runs = true;
  };
  std::vector<Level> levels(static_cast<std::size_t>(depth));
  bool body_runs = true;
  for (Level& level : levels) {
    level.loop = world.chance(50);
    if (level.loop) {
      Result<Loop> loop = device.begin_while(s, true);
      if (!ok(world, loop, "branches: begin_while")) return;
      level.l = *loop;
    } else {
      Result<Condition> c = device.condition(s, 0);
      if (!ok(world, c, "branches: condition")) return;
      level.c = *c;
      level.runs = world.chance(70);
      if (!ok(world, world.set_condition(s, Arg::condition(level.c), level.runs ? 1 : 0), "branches: set the condition")) return;
      if (!ok(world, device.begin_if(s, level.c), "branches: begin_if")) return;
    }
    body_runs = body_runs && level.runs;
  }
  if (fault) world.inject("cuLaunchKernel");
  Result<void> body = world.fill(o, w, u);
  world.clear_faults();
  if (fault) {
    world.note(body, "branches: the innermost body's launch, failed by the driver");
  } else if (!ok(world, body, "branches: the innermost body's launch")) {
    return;
  }
  // The innermost IF may have an ELSE body (opened after the failure, when there is one).
  Level& inner = levels.back();
  const bool with_else = !inner.loop && world.chance(50);
  const std::uint32_t u2 = world.value();
  if (with_else) {
    Result<void> opened = device.begin_else(s, inner.c);
    Result<void> wrote = opened ? world.fill(o, w, u2) : opened;
    if (fault) {
      world.note(opened, "branches: begin_else after a failure in the IF body");
      world.note(wrote, "branches: the ELSE body's launch after a failure in the IF body");
    } else if (!ok(world, opened, "branches: begin_else") || !ok(world, wrote, "branches: the ELSE body's launch")) {
      return;
    }
  }
  for (auto level = levels.rbegin(); level != levels.rend() && !world.diverged(); ++level) {
    Result<void> closed;
    if (level->loop) {
      Result<void> set = world.set_condition(s, Arg::condition(level->l), 0);
      if (fault) world.note(set, "branches: set the loop's condition after the failure");
      if (!fault && !ok(world, set, "branches: set the loop's condition")) return;
      closed = device.end_while(s, level->l);
    } else {
      closed = device.end_if(s, level->c);
    }
    if (fault) {
      world.note(closed, std::string("branches: ") + (level->loop ? "end_while" : "end_if") + " after the failure");
    } else if (!ok(world, closed, std::string("branches: ") + (level->loop ? "end_while" : "end_if"))) {
      return;
    }
  }
  if (world.diverged()) return;
  Result<Graph> graph = device.end_capture(s);
  if (fault && s.capture_state() != CaptureState::no_capture) {
    // Refused up front (a body still open): the user's way out is abort_capture.
    world.note(graph, "branches: end_capture after a failure in a body, refused up front");
    graph = Result<Graph>(Error(Errc::doomed, "aborted"));
    world.note(device.abort_capture(s), "branches: abort_capture after a failure in a body");
  }
  world.expect_all_idle();  // end_capture leaves the stream out of capture whatever it answers
  if (fault) {
    world.note(graph, "branches: end_capture after a failure in a body");
    world.buf(x).forget();
    world.buf(w).forget();
    world.check();
    // The stream the user recorded on is usable again.
    for (int b : {x, w}) {
      const std::uint32_t fresh = world.value();
      if (!ok(world, world.fill(o, b, fresh), "branches: eager fill after a failure in a body")) return;
      world.buf(b).fill(fresh);
    }
    world.check();
    return;
  }
  if (!ok(world, graph, "branches: end_capture")) return;
  if (!ok(world, graph->replay(), "branches: replay")) return;
  world.buf(x).fill(v);
  bool outer_run = true;  // every level around the innermost runs
  for (std::size_t i = 0; i + 1 < levels.size(); ++i) outer_run = outer_run && levels[i].runs;
  if (body_runs) world.buf(w).fill(u);
  if (with_else && outer_run && !inner.runs) world.buf(w).fill(u2);
  world.check();
}

void record_or_scope(World& world) {
  Device& device = world.device();
  const int o = static_cast<int>(world.pick(World::kStreams));
  Stream& s = world.stream(o);
  const int x = world.known_of(o);
  int y = world.known_of(o);
  if (y == x) y = world.upload(o);
  if (world.diverged()) return;
  const std::uint32_t v = world.value();
  enum Variant { success, throw_warm, throw_recorded, fail_warm, fail_recorded, branch_open,
                 scope_unwound, scope_begin_fault, scope_beside_recording, kVariants };
  static constexpr const char* kNames[] = {
      "Device::record", "Device::record, the step throws in the warm-up",
      "Device::record, the step throws while recorded", "Device::record, the step fails in the warm-up",
      "Device::record, the step fails while recorded", "Device::record, the step leaves a branch open",
      "CaptureScope, the step throws", "CaptureScope, begin failed by the driver",
      "CaptureScope, begin beside another stream's recording"};
  std::vector<Variant> variants;
  for (int i = 0; i < kVariants; ++i) {
    const Variant candidate = static_cast<Variant>(i);
    const Reach reach = candidate == success || candidate == fail_warm || candidate == fail_recorded ? record_steps
                        : candidate == throw_warm || candidate == throw_recorded ? record_throws
                        : candidate == branch_open  ? record_branch_open
                        : candidate == scope_unwound ? scope_throws
                                                    : scope_begin_refused;
    if (world.reaches(reach)) variants.push_back(candidate);
  }
  if (variants.empty()) return;
  const Variant variant = variants[world.pick(variants.size())];
  const std::string what = kNames[variant];
  world.log() << what << " on stream " << o << "\n";
  int calls = 0;
  auto step = [&]() -> Result<void> {
    ++calls;
    const bool recorded = s.capture_state() == CaptureState::capture;
    if (variant == throw_warm && calls == 1) throw StepThrew();
    if (variant == fail_warm && calls == 1) return Error(Errc::invalid_argument, "the model's step failed");
    GRAPHCAP_TRY(world.fill(o, x, v));
    if (variant == throw_recorded && recorded) throw StepThrew();
    if (variant == fail_recorded && recorded) return Error(Errc::invalid_argument, "the model's step failed");
    GRAPHCAP_TRY(world.add_one(o, x, y));
    if (variant == branch_open && recorded) {
      GRAPHCAP_ASSIGN_OR_RETURN(Condition c, device.condition(s, 0));
      GRAPHCAP_TRY(world.set_condition(s, Arg::condition(c), 1));
      GRAPHCAP_TRY(device.begin_if(s, c));  // never ended: end_capture refuses
    }
    return {};
  };
  if (variant <= branch_open) {
    std::optional<Result<Graph>> graph;
    bool threw = false;
    try {
      graph.emplace(device.record(s, step));
    } catch (const StepThrew&) {
      threw = true;
    }
    world.expect_all_idle();
    if (variant == throw_warm || variant == throw_recorded) {
      world.count(what + (threw ? " -> threw" : " -> did not throw"));
      if (!threw) world.diverge(what + ": the exception did not reach the caller");
    } else {
      world.expect(*graph, variant == success        ? std::nullopt
                           : variant == branch_open  ? std::optional(Errc::graph_state)
                                                     : std::optional(Errc::invalid_argument), what);
    }
    if (world.diverged()) return;
    // The warm-up ran eagerly up to where it stopped; what the recorded run wrote is unknown.
    if (variant != throw_warm && variant != fail_warm) {
      world.buf(x).fill(v);
      world.buf(y).assign(world.buf(x), 1);
    }
    if (variant == throw_recorded || variant == fail_recorded) world.buf(x).forget();
    if (variant == branch_open) {
      world.buf(x).forget();
      world.buf(y).forget();
    }
    world.check();
    if (variant == success) {
      if (!ok(world, graph->value().replay(), what + ": replay")) return;
      world.check();
    }
  } else {
    std::optional<int> other;
    if (variant == scope_beside_recording) {
      other = (o + 1 + static_cast<int>(world.pick(2))) % World::kStreams;
      Stream& t = world.stream(*other);
      if (!ok(world, device.prepare_capture(t), "prepare_capture" + on(*other))) return;
      if (!ok(world, device.begin_capture(t), "begin_capture" + on(*other))) return;
      world.expected_state(*other) = CaptureState::capture;
    }
    if (!ok(world, device.prepare_capture(s), "prepare_capture" + on(o))) return;
    bool threw = false;
    try {
      if (variant == scope_begin_fault) world.inject("cuStreamBeginCapture");
      CaptureScope scope(device, s);
      world.clear_faults();
      if (variant == scope_unwound) {
        if (!ok(world, scope.began(), what + ": began")) return;
        if (!ok(world, world.fill(o, x, v), what + ": recorded fill")) return;
        throw StepThrew();
      }
      if (variant == scope_begin_fault) {
        world.expect(scope.began(), Errc::driver, what + ": began");
      } else {
        world.note(scope.began(), what + ": began");
        if (scope.began()) world.note(scope.abort(), what + ": abort");
      }
    } catch (const StepThrew&) {
      threw = true;
    }
    world.expected_state(o) = CaptureState::no_capture;  // a scope leaves its stream as it found it
    if (variant == scope_unwound) {
      if (!threw) world.diverge(what + ": the exception was lost");
      world.buf(x).fail(Errc::doomed);  // claimed by the recording the scope abandoned
    }
    world.check();
    if (other) {
      Result<Graph> graph = device.end_capture(world.stream(*other));
      world.expected_state(*other) = CaptureState::no_capture;
      world.note(graph, "end_capture beside the scope" + on(*other));
    }
    world.check();
  }
  if (world.diverged()) return;
  // The stream is usable: an eager write and read of its buffers.
  const std::uint32_t w = world.value();
  if (!ok(world, world.fill(o, x, w), what + ": then an eager fill")) return;
  world.buf(x).fill(w);
  if (!ok(world, world.add_one(o, x, y), what + ": then an eager add_one")) return;
  world.buf(y).assign(world.buf(x), 1);
  world.check();
}

void host_sync(World& world) {
  Device& device = world.device();
  const int a = static_cast<int>(world.pick(World::kStreams));
  const auto [b, c] = others(world, a);
  (void)c;
  const int x = world.known_of(a), y = world.known_of(b);
  if (world.diverged()) return;
  const std::uint32_t v = world.value();
  world.log() << "host sync: stream " << a << " writes, syncs; stream " << b << " uses\n";
  if (!ok(world, world.fill(a, x, v), "host sync: eager fill" + on(a))) return;
  world.buf(x).fill(v);
  if (!ok(world, device.sync(world.stream(a)), "host sync: sync" + on(a))) return;
  // Everything stream a did before its sync has finished: stream b may read and write it.
  if (!ok(world, world.add_one(b, x, y), "host sync: another stream reads after the sync")) return;
  world.buf(y).assign(world.buf(x), 1);
  if (world.chance(50)) {
    const std::uint32_t w = world.value();
    if (!ok(world, device.sync(world.stream(b)), "host sync: sync" + on(b))) return;
    if (!ok(world, world.fill(a, y, w), "host sync: the first stream writes after the other's sync")) return;
    world.buf(y).fill(w);
  }
  world.check();
}

}  // namespace graphcap::testing::safe_life
