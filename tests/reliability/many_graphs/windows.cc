// Whole capture windows: prepare_capture (with or without the stream's GraphPool), an optional
// warm-up that runs the window's plan eagerly, begin_capture (or a CaptureScope), the plan
// recorded, and a close. A plan is a few operations on the recording stream, intermediates it
// allocates and drops (or keeps: a result), and sometimes a fork: an event recorded on the
// recording stream and waited on by a side stream, which records operations on buffers the
// recording stream does not touch until it is joined back (and sometimes is not: refused by name).
// Misuse and unrelated work is mixed in mid-window (chaos).
#include <algorithm>
#include <array>
#include <set>
#include <utility>
#include <vector>

#include "many_graphs/model.h"

namespace graphcap::testing::many_graphs {
namespace {

// Where a plan's execution stands.
struct Region {  // a forked side stream, from its fork to its join
  int lane = 0;
  bool open = true;
  std::set<int> side_used, side_written, origin_used, origin_written;
};
struct Execution {
  int origin = 0;
  std::array<int, 3> lane{{-1, -1, -1}};  // lane -> stream
  std::array<int, 3> lane_ops{{0, 0, 0}};
  std::vector<int> temps;                 // slot -> buffer id (-1: none)
  std::vector<Region> regions;
};

enum class Close { end, into, scope_end, scope_leave, abort };

void chaos(Model& m, Execution& ex);
void join(Model& m, Execution& ex, int lane);

Plan random_plan(Model& m) {
  Plan plan;
  plan.temps = static_cast<int>(m.world.pick(3));
  const int ops = 1 + static_cast<int>(m.world.pick(5));
  const int fork_at = m.world.chance(35) ? static_cast<int>(m.world.pick(static_cast<std::size_t>(ops))) : -1;
  std::vector<int> alloc_at(static_cast<std::size_t>(plan.temps)),
      drop_at(static_cast<std::size_t>(plan.temps));
  for (int t = 0; t < plan.temps; ++t) {
    alloc_at[t] = static_cast<int>(m.world.pick(static_cast<std::size_t>(ops)));
    // Mostly dropped before the end (an intermediate); else kept (a result).
    drop_at[t] =
        m.world.chance(75) ? alloc_at[t] + 1 + static_cast<int>(m.world.pick(static_cast<std::size_t>(ops))) : -1;
  }
  for (int i = 0; i <= ops; ++i) {
    for (int t = 0; t < plan.temps; ++t) {
      if (drop_at[t] == i) plan.steps.push_back({PlanStep::drop, Op::add_one, 0, t});
      if (alloc_at[t] == i) plan.steps.push_back({PlanStep::alloc, Op::add_one, 0, t});
    }
    if (i == fork_at) {
      plan.steps.push_back({PlanStep::fork, Op::add_one, 1, -1});
      const int side_ops = 1 + static_cast<int>(m.world.pick(2));
      for (int k = 0; k < side_ops; ++k) {
        plan.steps.push_back({PlanStep::op, random_kind(m), 1, -1});
      }
      if (m.world.chance(50)) plan.steps.push_back({PlanStep::op, random_kind(m), 0, -1});
      if (m.world.chance(88)) plan.steps.push_back({PlanStep::join, Op::add_one, 1, -1});
    }
    if (i < ops) plan.steps.push_back({PlanStep::op, random_kind(m), 0, -1});
  }
  return plan;
}
// The same plan with one operation more or less: another topology.
Plan other_topology(Model& m, Plan plan) {
  if (plan.steps.size() > 1 && m.world.chance(50)) {
    for (std::size_t i = 0; i < plan.steps.size(); ++i) {
      if (plan.steps[i].kind == PlanStep::op && plan.steps[i].lane == 0) {
        plan.steps.erase(plan.steps.begin() + static_cast<std::ptrdiff_t>(i));
        return plan;
      }
    }
  }
  plan.steps.push_back({PlanStep::op, random_kind(m), 0, -1});
  return plan;
}

// Whether stream `x` of the execution may use buffer `b` without racing a concurrent lane: a
// forked side stream and the recording stream use disjoint buffers until the join.
bool race_free(const Execution& ex, int x, int b, bool writes) {
  auto clash = [&](const std::set<int>& used, const std::set<int>& written) {
    return written.count(b) != 0 || (writes && used.count(b) != 0);
  };
  for (const Region& r : ex.regions) {
    if (!r.open) continue;
    const int side = ex.lane[static_cast<std::size_t>(r.lane)];
    if (x == side) {
      if (clash(r.origin_used, r.origin_written)) return false;
    } else if (x == ex.origin) {
      if (clash(r.side_used, r.side_written)) return false;
    } else if (clash(r.side_used, r.side_written)) {
      return false;  // another side stream
    }
  }
  return true;
}
void note_use(Execution& ex, int x, int b, bool writes) {
  for (Region& r : ex.regions) {
    if (!r.open) continue;
    const bool side = x == ex.lane[static_cast<std::size_t>(r.lane)];
    if (!side && x != ex.origin) continue;
    (side ? r.side_used : r.origin_used).insert(b);
    if (writes) (side ? r.side_written : r.origin_written).insert(b);
  }
}
// A buffer for a plan's operation on stream `x`: mostly one of the plan's temps.
int plan_buffer(Model& m, const Execution& ex, int x, bool writes, int other) {
  // Mostly an input that carries no failure (which would doom the recording).
  const bool healthy = !writes && m.world.chance(85);
  auto usable = [&](int b) {
    return !m.buf(b).cache_private && b != other && race_free(ex, x, b, writes) &&
           !(healthy && m.buf(b).failure) &&
           (m.world.chance(4) || m.may_use(x, b, writes));  // now and then misuse: refused, not recorded
  };
  if (m.world.chance(60)) {
    std::vector<int> temps;
    for (int b : ex.temps) {
      if (b >= 0 && m.buf(b).live && usable(b)) temps.push_back(b);
    }
    if (!temps.empty()) return temps[m.world.pick(temps.size())];
  }
  return m.live_buffer(usable);
}

void run_plan(Model& m, const Plan& plan, Execution& ex, bool recorded) {
  ex.temps.assign(static_cast<std::size_t>(plan.temps), -1);
  ex.regions.clear();
  ex.lane = {ex.origin, -1, -1};
  ex.lane_ops = {0, 0, 0};
  auto origin_ok = [&] { return m.state(ex.origin) == (recorded ? CaptureState::capture : CaptureState::prepare); };
  for (const PlanStep& step : plan.steps) {
    if (!m.ok() || !origin_ok()) return;
    if (m.world.chance(7)) chaos(m, ex);
    if (!m.ok() || !origin_ok()) return;
    switch (step.kind) {
      case PlanStep::alloc: {
        if (m.live_count() >= kMaxLive) break;
        Result<int> made = do_alloc(m, ex.origin);
        if (made) ex.temps[static_cast<std::size_t>(step.temp)] = *made;
        break;
      }
      case PlanStep::drop: {
        const int b = ex.temps[static_cast<std::size_t>(step.temp)];
        if (b >= 0 && m.buf(b).live) do_drop(m, b);
        break;
      }
      case PlanStep::fork: {
        std::vector<int> free;
        for (int s = 0; s < kStreams; ++s) {
          const bool bound = std::find(ex.lane.begin(), ex.lane.end(), s) != ex.lane.end();
          if (!bound && m.state(s) == CaptureState::no_capture) free.push_back(s);
        }
        if (free.empty()) break;
        const int side = free[m.world.pick(free.size())];
        const int e = static_cast<int>(m.world.pick(kEvents));
        if (!do_record(m, e, ex.origin)) break;
        if (!do_wait(m, side, e)) break;
        ex.lane[static_cast<std::size_t>(step.lane)] = side;
        Region region;
        region.lane = step.lane;
        ex.regions.push_back(std::move(region));
        break;
      }
      case PlanStep::join:
        join(m, ex, step.lane);
        break;
      case PlanStep::op: {
        const int x = ex.lane[static_cast<std::size_t>(step.lane)];
        if (x < 0) break;
        Op op = random_op_kind(m, step.op_kind);
        op.dst = plan_buffer(m, ex, x, true, -1);
        if (op.dst < 0) break;
        if (reads_src(op.kind)) {
          op.src = plan_buffer(m, ex, x, false, op.kind == Op::device_copy ? op.dst : -1);
          if (op.src < 0) break;
        }
        const bool issued = static_cast<bool>(do_op(m, x, op));
        if (issued) {
          if (reads_src(op.kind)) note_use(ex, x, op.src, false);
          note_use(ex, x, op.dst, true);
          ++ex.lane_ops[static_cast<std::size_t>(step.lane)];
        }
        break;
      }
    }
  }
  // A fork that recorded nothing is always joined (what CUDA answers to an empty unjoined fork
  // is not measured); one with work is left unjoined when the plan says so.
  for (const Region& r : ex.regions) {
    if (r.open && ex.lane_ops[static_cast<std::size_t>(r.lane)] == 0 && origin_ok()) {
      join(m, ex, r.lane);
    }
  }
}

void join(Model& m, Execution& ex, int lane) {
  const int side = ex.lane[static_cast<std::size_t>(lane)];
  if (side < 0) return;
  const int e = static_cast<int>(m.world.pick(kEvents));
  if (!do_record(m, e, side)) return;
  if (!do_wait(m, ex.origin, e)) return;
  for (Region& r : ex.regions) {
    if (r.lane == lane) r.open = false;
  }
  ex.lane[static_cast<std::size_t>(lane)] = -1;  // a later op of that lane needs a new fork
}

// Misuse and unrelated work in the middle of a window.
void chaos(Model& m, Execution& ex) {
  const int s = static_cast<int>(m.world.pick(kStreams));
  switch (m.world.pick(16)) {
    case 0: {
      const int b = m.buffer_for(s);
      if (b >= 0) do_read(m, b, s);
      break;
    }
    case 1:
      (void)do_sync(m, s);
      break;
    case 2:
      if (!m.graphs.empty()) do_replay(m, static_cast<int>(m.world.pick(m.graphs.size())));
      break;
    case 3:
      if (m.in_recording(ex.origin)) (void)do_begin(m, ex.origin);  // out of order
      break;
    case 4:
      (void)do_prepare(m, ex.origin, m.world.chance(50) ? ex.origin : -1);
      break;
    case 5:
      // End or abort on a side stream (end into one of its own graphs too): refused, the
      // recording stays open.
      for (int side = 0; side < kStreams; ++side) {
        if (!m.side(side)) continue;
        const std::size_t how = m.world.pick(3);
        int own = -1;
        for (std::size_t g = 0; g < m.graphs.size(); ++g) {
          if (m.graphs[g].live && m.graphs[g].stream == side) own = static_cast<int>(g);
        }
        if (how == 0 && own >= 0) {
          do_end_into(m, side, own, Plan{});
        } else if (how == 1) {
          (void)do_end(m, side, Plan{});
        } else {
          do_abort(m, side);
        }
        break;
      }
      break;
    case 6: {
      // Into a destroyed graph or one of another stream: refused, the recording stays open.
      for (std::size_t g = 0; g < m.graphs.size(); ++g) {
        if (!m.graphs[g].live || m.graphs[g].stream != ex.origin) {
          do_end_into(m, ex.origin, static_cast<int>(g), Plan{});
          break;
        }
      }
      break;
    }
    case 7:
      if (!m.graphs.empty()) {
        do_graph_set(m, static_cast<int>(m.world.pick(m.graphs.size())), static_cast<int>(m.world.pick(kParams)));
      }
      break;
    case 8:
      do_param_set(m, static_cast<int>(m.world.pick(kParams)));
      break;
    case 9:
      if (!m.graphs.empty() && m.world.chance(30)) do_destroy(m, static_cast<int>(m.world.pick(m.graphs.size())));
      break;
    case 10:
      if (m.state(s) == CaptureState::no_capture || m.state(s) == CaptureState::prepare) {
        if (std::find(ex.lane.begin(), ex.lane.end(), s) == ex.lane.end()) random_op(m, s);
      }
      break;
    case 11:
      if (m.live_count() < kMaxLive) (void)do_alloc(m, s);
      break;
    case 12:
      do_cache_run(m, static_cast<int>(m.world.pick(kKeys)));
      break;
    case 14:
    case 15: {
      // A buffer dropped mid-window (perhaps one the recording uses: the graph keeps it, and
      // it joins the pool only if the window allocated it).
      const int b = m.live_buffer([&](int x) { return !m.buf(x).cache_private; });
      if (b >= 0) do_drop(m, b);
      break;
    }
    case 13: {
      // A wait inside the recording on an event recorded outside it.
      if (!m.in_recording(ex.origin)) break;
      for (int e = 0; e < kEvents; ++e) {
        if (m.events[e].recorded && m.events[e].recording == 0) {
          (void)do_wait(m, ex.origin, e);
          break;
        }
      }
      break;
    }
  }
}

// One whole capture window on stream `s`: prepare, warm-up, begin, the plan recorded, a close.
void do_window(Model& m, int s, Plan plan, Close close, int into, int pool_percent = 45) {
  if (m.state(s) != CaptureState::no_capture) return;
  int pool = m.world.chance(pool_percent) ? s : -1;
  if (m.world.chance(3)) pool = m.world.chance(50) ? -2 : (s + 1) % kStreams;  // misuse: refused
  if (!do_prepare(m, s, pool)) return;
  Execution ex;
  ex.origin = s;
  if (m.world.chance(85)) run_plan(m, plan, ex, false);  // the warm-up
  if (!m.ok()) return;
  if (m.state(s) != CaptureState::prepare) return;
  const bool scoped = close == Close::scope_end || close == Close::scope_leave;
  if (scoped) {
    do_scope_begin(m, s);
  } else {
    (void)do_begin(m, s);
  }
  if (m.in_recording(s) && !m.side(s)) {
    run_plan(m, plan, ex, true);
    if (!m.ok()) return;
  }
  if (scoped && m.scope) {
    if (close == Close::scope_end) (void)do_scope_end(m, plan);
    if (m.scope) do_scope_leave(m);
  } else if (m.in_recording(s) && !m.side(s)) {
    switch (close) {
      case Close::end: (void)do_end(m, s, plan); break;
      case Close::into: do_end_into(m, s, into, plan); break;
      default: do_abort(m, s); break;
    }
  }
  // Whatever is still open is abandoned (a refusal that kept it open, a failed begin).
  if (m.ok() && m.state(s) != CaptureState::no_capture && !m.side(s)) {
    do_abort(m, s);
  }
}

}  // namespace

void random_window(Model& m) {
  std::vector<int> idle;
  for (int s = 0; s < kStreams; ++s) {
    if (m.state(s) == CaptureState::no_capture) idle.push_back(s);
  }
  if (idle.empty()) return;
  const int s = idle[m.world.pick(idle.size())];
  const std::size_t roll = m.world.pick(100);
  const Close close = roll < 55   ? Close::end
                      : roll < 70 ? Close::scope_end
                      : roll < 85 ? Close::scope_leave
                                  : Close::abort;
  do_window(m, s, random_plan(m), close, -1);
}

// Re-record a live graph: the same plan (the same topology on other buffers), or another.
void rerecord(Model& m) {
  std::vector<int> live;
  for (std::size_t g = 0; g < m.graphs.size(); ++g) {
    if (m.graphs[g].live && !m.graphs[g].plan.steps.empty() &&
        m.state(m.graphs[g].stream) == CaptureState::no_capture) {
      live.push_back(static_cast<int>(g));
    }
  }
  if (live.empty()) return;
  const int g = live[m.world.pick(live.size())];
  const ModelGraph& graph = m.graphs[static_cast<std::size_t>(g)];
  Plan plan = m.world.chance(60) ? graph.plan : other_topology(m, graph.plan);
  if (m.world.chance(30)) {
    // Keep an intermediate this time (the same topology): a result the pool may have lent.
    auto drop = std::find_if(plan.steps.begin(), plan.steps.end(),
                             [](const PlanStep& step) { return step.kind == PlanStep::drop; });
    if (drop != plan.steps.end()) plan.steps.erase(drop);
  }
  // A pool graph mostly re-records into its pool: the pool lends it its own intermediates.
  do_window(m, graph.stream, std::move(plan), Close::into, g, graph.pool >= 0 ? 85 : 45);
}

}  // namespace graphcap::testing::many_graphs
