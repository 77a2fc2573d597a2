// Fork/join over three streams: chains of forks (the origin forks stream 1, stream 1 forks stream
// 2), joins back directly or through the other side stream, and recordings that end mid-fork (an
// abort, a refused end_capture, a CaptureScope left). Order inside a recording is transitive
// through every event; a recording that never became a graph leaves every buffer's writer as it
// was (its side-stream uses never ran), so a side stream goes on using its own buffers.
#include <optional>
#include <string>

#include "safe_life/shapes.h"

namespace graphcap::testing::safe_life {
namespace {

// Forks side stream `to` from `from` through event `e`, inside the recording.
bool fork(World& world, int from, int to, int e) {
  Device& device = world.device();
  if (!ok(world, device.record_event(world.event(e), world.stream(from)),
          "fork: record" + on(from))) {
    return false;
  }
  if (!ok(world, device.wait(world.stream(to), world.event(e)), "fork: wait" + on(to))) return false;
  world.expected_state(to) = CaptureState::capture;
  world.check();
  return !world.diverged();
}

// Joins stream `from` into `to` through event `e`.
bool join(World& world, int from, int to, int e) {
  Device& device = world.device();
  if (!ok(world, device.record_event(world.event(e), world.stream(from)),
          "join: record" + on(from))) {
    return false;
  }
  return ok(world, device.wait(world.stream(to), world.event(e)), "join: wait" + on(to));
}

}  // namespace

std::pair<int, int> others(World& world, int o) {
  const int a = (o + 1) % World::kStreams;
  const int b = (o + 2) % World::kStreams;
  return world.chance(50) ? std::pair{a, b} : std::pair{b, a};
}

void fork_chain(World& world) {
  Device& device = world.device();
  const int o = static_cast<int>(world.pick(World::kStreams));
  const auto [s1, s2] = others(world, o);
  const bool chain = world.reaches(fork_from_side) && world.chance(60);            // s2 forked from s1
  const bool through_side = world.reaches(join_through_side) && world.chance(60);  // s2 -> s1 -> origin
  const int x = world.known_of(o), y = world.known_of(s1), z = world.known_of(s2);
  if (world.diverged()) return;
  world.log() << "fork chain: origin " << o << ", side " << s1 << (chain ? " then " : " and ") << s2
              << (through_side ? ", joined through the side" : ", joined directly") << "\n";
  const std::uint32_t v = world.value();
  if (!ok(world, device.prepare_capture(world.stream(o)), "prepare_capture" + on(o))) return;
  if (!ok(world, device.begin_capture(world.stream(o)), "begin_capture" + on(o))) return;
  world.expected_state(o) = CaptureState::capture;
  if (!ok(world, world.fill(o, x, v), "fork chain: recorded fill" + on(o))) return;
  if (!fork(world, o, s1, 0)) return;
  if (!fork(world, chain ? s1 : o, s2, 1)) return;
  // Both side streams read what the origin wrote in the recording: s2 by a chain of forks.
  const std::string reach = chain ? " (forked from a side stream)" : " (forked from the origin)";
  if (world.chance(50)) {
    if (!ok(world, world.add_one(s1, x, y), "fork chain: side reads the origin's write")) return;
    if (!ok(world, world.add_one(s2, x, z), "fork chain: second side reads the origin's write" + reach)) return;
  } else {
    if (!ok(world, world.add_one(s2, x, z), "fork chain: second side reads the origin's write" + reach)) return;
    if (!ok(world, world.add_one(s1, x, y), "fork chain: side reads the origin's write")) return;
  }
  if (through_side) {
    if (!join(world, s2, s1, 2) || !join(world, s1, o, 3)) return;
  } else {
    if (!join(world, s2, o, 2) || !join(world, s1, o, 3)) return;
  }
  // The origin reads what the second side stream wrote (through the side when joined so) and
  // overwrites what both read.
  const std::string joined = through_side ? " (joined through a side stream)" : " (joined directly)";
  if (!ok(world, world.copy(world.stream(o), world.buf(z).handle, world.buf(x).handle),
          "fork chain: origin reads the second side's write" + joined)) {
    return;
  }
  world.check();
  Result<Graph> graph = device.end_capture(world.stream(o));
  world.expect_all_idle();
  if (!ok(world, graph, "fork chain: end_capture")) return;
  world.check();
  if (!ok(world, graph->replay(), "fork chain: replay")) return;
  world.buf(x).fill(v);
  world.buf(y).assign(world.buf(x), 1);
  world.buf(z).assign(world.buf(x), 1);
  world.buf(x).assign(world.buf(z), 0);
  world.check();
}

void abort_mid_fork(World& world) {
  Device& device = world.device();
  const int o = static_cast<int>(world.pick(World::kStreams));
  const auto [s1, s2] = others(world, o);
  const bool chain = world.reaches(fork_from_side) && world.chance(50);
  const bool second = world.chance(70);  // s2 forked too
  enum { abort, refused_end, scope_left, half_joined, side_abort } how =
      static_cast<decltype(abort)>(world.pick(5));
  static constexpr const char* kHow[] = {"abort_capture", "end_capture refused (unjoined)",
                                         "CaptureScope left", "end_capture refused (one joined)",
                                         "abort_capture on the side, then the origin"};
  // The side streams' own buffers, written eagerly by them before the recording.
  const int x = world.known_of(o), y = world.known_of(s1), z = world.known_of(s2);
  if (world.diverged()) return;
  world.log() << "mid-fork: origin " << o << ", side " << s1 << (second ? chain ? " then " : " and " : "")
              << (second ? std::to_string(s2) : std::string()) << ", ends by " << kHow[how] << "\n";
  if (!ok(world, device.prepare_capture(world.stream(o)), "prepare_capture" + on(o))) return;
  std::optional<CaptureScope> scope;
  if (how == scope_left) {
    scope.emplace(device, world.stream(o));
    if (!ok(world, scope->began(), "mid-fork: CaptureScope began")) return;
  } else if (!ok(world, device.begin_capture(world.stream(o)), "begin_capture" + on(o))) {
    return;
  }
  world.expected_state(o) = CaptureState::capture;
  if (!ok(world, world.fill(o, x, world.value()), "mid-fork: recorded fill" + on(o))) return;
  if (!fork(world, o, s1, 0)) return;
  if (!ok(world, world.fill(s1, y, world.value()), "mid-fork: side writes its own buffer")) return;
  if (second) {
    if (!fork(world, chain ? s1 : o, s2, 1)) return;
    if (!ok(world, world.fill(s2, z, world.value()), "mid-fork: second side writes its own buffer")) return;
  }
  world.check();
  switch (how) {
    case abort:
      ok(world, device.abort_capture(world.stream(o)), "mid-fork: abort_capture");
      break;
    case refused_end:
    case half_joined: {
      if (how == half_joined && !join(world, s1, o, 2)) return;
      if (how == half_joined && !second) {
        ok(world, device.abort_capture(world.stream(o)), "mid-fork: abort_capture (all joined)");
        break;
      }
      Result<Graph> graph = device.end_capture(world.stream(o));
      world.expect(graph, Errc::graph_state, std::string("mid-fork: ") + kHow[how]);
      break;
    }
    case scope_left:
      scope.reset();
      world.count("mid-fork: CaptureScope left");
      break;
    case side_abort:
      world.expect(device.abort_capture(world.stream(s1)), Errc::graph_state,
                   "mid-fork: abort_capture on a side stream");
      world.check();
      ok(world, device.abort_capture(world.stream(o)), "mid-fork: abort_capture");
      break;
  }
  if (world.diverged()) return;
  world.expect_all_idle();
  // What the recording wrote carries its end ("abandoned", the refusal): reads fail.
  const Errc end = how == refused_end || (how == half_joined && second) ? Errc::graph_state : Errc::doomed;
  world.buf(x).fail(end);
  world.buf(y).fail(end);
  if (second) world.buf(z).fail(end);
  world.check();
  // Each stream writes and reads its own buffers again: the recording's uses are forgotten.
  for (auto [s, b] : {std::pair{s1, y}, std::pair{s2, z}, std::pair{o, x}}) {
    const std::uint32_t w = world.value();
    if (!ok(world, world.fill(s, b, w), "after a recording ended mid-fork: stream " +
                                            std::string(s == o ? "origin" : "side") +
                                            " writes its own buffer")) {
      return;
    }
    world.buf(b).fill(w);
  }
  const int y2 = world.known_of(s1);
  if (world.diverged()) return;
  if (y2 != y) {
    if (!ok(world, world.add_one(s1, y, y2), "after a recording ended mid-fork: side reads its own buffer")) return;
    world.buf(y2).assign(world.buf(y), 1);
  }
  world.check();
}

}  // namespace graphcap::testing::safe_life
