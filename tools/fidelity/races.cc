// Which bytes a program cannot predict. The harness makes no eager access that could race (access
// skips it), but a graph may hold nodes no edge orders: two captured streams forked from one
// event, work captured into an existing graph beside its nodes, dependencies set to none, a kernel
// set on an executable's node (cuGraphExecKernelNodeSetParams) that such a node also uses. Such
// nodes writing one buffer (or one writing what the other reads) leave bytes that differ from run
// to run on a GPU. They are classified, not skipped: the graph's executable marks what they write
// racy when it launches, whatever reads racy bytes writes racy bytes, and a whole-buffer fill makes
// a buffer known again. Snapshots show a racy buffer as "b2~=<bytes>" at every synchronisation,
// and comparisons count those bytes apart instead of comparing them (program.h, racy_parts).
// Within a capture, order is a vector clock per lane, as the eager streams' clocks: a stream's
// captured ops in turn, a captured event record carries its lane's clock to a stream that waits.
// A graph and its executables keep their nodes' accesses (each with its clock and its node), lanes
// renamed apart from every other capture's: a capture into the graph begins with them, unordered
// with all it captures, and a kernel set on an executable's node is checked against the others.
// Not modelled: a conditional body's nodes against the parent graph's unordered ones.
//
// Bytes a conditional value steers that the program does not define are likewise unknown, and
// counted apart ("b2?=<bytes>"). A handle's default is applied at the start of each execution
// only when it was created with CU_GRAPH_COND_ASSIGN_DEFAULT (cuGraphConditionalHandleCreate's
// documentation); without it, a conditional node runs on whatever value the handle holds unless a
// node of the same execution ordered before it (a set_condition launch: cudaGraphSetConditional)
// set it. On the H100 (driver 580.159.04) such SWITCH nodes did not run the body for 0 that the
// fake, which starts every handle at 0, runs. So the bodies of such a node are "unset": what they
// write is unknown in the graph, whatever reads unknown bytes writes unknown bytes, a launch makes
// them unknown in the program, and a whole-buffer fill makes a buffer known again, as for races.
// An earlier set is only followed within one capture (the node's dependencies are a stream's
// capture dependencies, and the set is ordered before them by that stream's clock); any other
// node counts as unset, which compares fewer bytes, never unknown ones.
#include <algorithm>

#include "harness.h"

namespace graphcap::fidelity {
namespace {

bool memory(Kind kind) {
  return kind == Kind::buffer || kind == Kind::host || kind == Kind::pageable;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// `accesses` with every lane not renamed yet renamed by `tag`: lanes of different captures never
// meet (a capture's lanes restart with it, and a capture into a graph may take its id).
Accesses renamed(Accesses accesses, const std::string& tag) {
  auto rename = [&](const std::string& lane) {
    return lane.find('@') == std::string::npos ? lane + tag : lane;
  };
  for (auto& [buffer, list] : accesses) {
    for (Access& access : list) {
      access.at.stream = rename(access.at.stream);
      Clock after;
      for (const auto& [lane, seq] : access.after) after[rename(lane)] = seq;
      access.after = std::move(after);
    }
  }
  return accesses;
}

// Whether access `a` and `b` are ordered, one after the other.
bool ordered(const Access& a, const Access& b) {
  auto b_first = a.after.find(b.at.stream);
  if (b_first != a.after.end() && b_first->second >= b.at.seq) return true;
  auto a_first = b.after.find(a.at.stream);
  return a_first != b.after.end() && a_first->second >= a.at.seq;
}

}  // namespace

void Harness::captured_access(const std::string& stream, const std::vector<std::string>& uses,
                              const std::vector<std::string>& writes) {
  const std::uint64_t id = capture_of(stream);
  Symbol& s = symbols_.at(stream);
  if (s.lane.empty()) s.lane = stream;
  s.captured_clock[s.lane] = ++s.captured_seq;
  const Use now{s.lane, s.captured_seq};
  unnamed_nodes_.push_back(UnnamedNode{id, stream, now});
  std::set<std::string>& racy = capture_racy[id];
  std::set<std::string>& unset = capture_unset[id];
  // Work in a body whose node's value is not defined may or may not run.
  if (auto target = capture_target.find(id); target != capture_target.end()) {
    const Symbol* body = find(target->second);
    if (body != nullptr && body->unset_body) unset.insert(writes.begin(), writes.end());
  }
  Accesses& accesses = capture_accesses[id];
  for (const std::string& use : uses) {
    const Symbol* b = find(use);
    if (b == nullptr || !memory(b->kind)) continue;
    const bool write = contains(writes, use);
    // Unpredictable bytes read (racy before the launch, or in this graph) make the outputs so.
    if (!write && (b->racy || racy.count(use) != 0)) racy.insert(writes.begin(), writes.end());
    if (!write && (b->unset || unset.count(use) != 0)) unset.insert(writes.begin(), writes.end());
    // Beside the nodes of the graph captured into: no edge from them unless through the
    // dependencies given, which are not followed here.
    if (capture_prior[id].count(use) != 0) {
      racy.insert(writes.begin(), writes.end());
      if (write) racy.insert(use);
    }
    std::vector<Access>& before = accesses[use];
    for (const Access& other : before) {
      if (!write && !other.write) continue;
      auto known = s.captured_clock.find(other.at.stream);
      if (known != s.captured_clock.end() && known->second >= other.at.seq) continue;
      racy.insert(writes.begin(), writes.end());
      racy.insert(other.outputs.begin(), other.outputs.end());
    }
    before.push_back(Access{now, write, writes, s.captured_clock});
  }
  capture_writes[id].insert(writes.begin(), writes.end());
}

void Harness::eager_access(const std::vector<std::string>& uses,
                           const std::vector<std::string>& writes) {
  bool reads_racy = false, reads_unset = false;
  for (const std::string& use : uses) {
    const Symbol* b = find(use);
    if (b == nullptr || contains(writes, use)) continue;
    reads_racy = reads_racy || b->racy;
    reads_unset = reads_unset || b->unset;
  }
  if (!reads_racy && !reads_unset) return;
  for (const std::string& name : writes) {
    if (auto it = symbols_.find(name); it != symbols_.end() && memory(it->second.kind)) {
      it->second.racy = it->second.racy || reads_racy;
      it->second.unset = it->second.unset || reads_unset;
    }
  }
}

void Harness::launched(const Symbol& exec) {
  std::vector<std::string> uses(exec.uses.begin(), exec.uses.end());
  eager_access(uses, std::vector<std::string>(exec.writes.begin(), exec.writes.end()));
  for (const std::string& name : exec.racy_writes) {
    if (auto it = symbols_.find(name); it != symbols_.end() && memory(it->second.kind)) {
      it->second.racy = true;
    }
  }
  // Which of its uses a graph reads is not kept, so a launch that uses unknown bytes at all (a
  // node may read them: a copy from what an earlier launch's body wrote) writes unknown bytes.
  bool uses_unset = false;
  for (const std::string& use : exec.uses) {
    const Symbol* b = find(use);
    uses_unset = uses_unset || (b != nullptr && b->unset);
  }
  for (const std::string& name : uses_unset ? exec.writes : exec.unset_writes) {
    if (auto it = symbols_.find(name); it != symbols_.end() && memory(it->second.kind)) {
      it->second.unset = true;
    }
  }
}

void Harness::name_captured_nodes() {
  for (const auto& [capture, stream, at] : unnamed_nodes_) {
    const Symbol& s = symbols_.at(stream);
    // The node a captured op made is the one dependency its stream has after it.
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    const CUgraphNode* deps = nullptr;
    std::size_t count = 0;
    if (driver_.cuStreamGetCaptureInfo(reinterpret_cast<CUstream>(s.value), &status, nullptr,
                                       nullptr, &deps, nullptr, &count) != CUDA_SUCCESS ||
        status != CU_STREAM_CAPTURE_STATUS_ACTIVE || count != 1) {
      continue;
    }
    for (auto& [buffer, list] : capture_accesses[capture]) {
      for (Access& access : list) {
        if (access.at.stream == at.stream && access.at.seq == at.seq) {
          access.node = reinterpret_cast<std::uintptr_t>(deps[0]);
        }
      }
    }
  }
  unnamed_nodes_.clear();
}

void Harness::capture_into(std::uint64_t capture, const Symbol& graph) {
  for (const std::string& use : graph.uses) {
    const Symbol* b = find(use);
    if (b != nullptr && b->kind != Kind::module && b->kind != Kind::event) {
      capture_prior[capture].insert(use);
    }
  }
  // Beside the graph's nodes: none of their lanes is any stream's of this capture, so they stay
  // unordered with all it captures (the dependencies it was given are not followed).
  Accesses& accesses = capture_accesses[capture];
  for (const auto& [buffer, list] : graph.accesses) {
    accesses[buffer].insert(accesses[buffer].end(), list.begin(), list.end());
  }
}

Accesses Harness::captured_accesses(std::uint64_t capture) {
  auto it = capture_accesses.find(capture);
  if (it == capture_accesses.end()) return {};
  return renamed(it->second, "@" + std::to_string(++renamed_));
}

void Harness::keep_accesses(std::uint64_t capture, std::uintptr_t graph) {
  const Accesses kept = captured_accesses(capture);
  for (auto& [name, symbol] : symbols_) {
    if (symbol.live && symbol.kind == Kind::graph && symbol.value == graph) symbol.accesses = kept;
  }
}

void Harness::kernel_node_changed(Symbol& exec, std::uintptr_t node,
                                  const std::vector<std::string>& uses,
                                  const std::vector<std::string>& writes) {
  // The node keeps its place: its clock is that of any access it made. A node that made none is
  // taken as ordered with no other (which leaves more bytes out, never fewer).
  Access placed;
  placed.at = Use{"@node" + std::to_string(++renamed_), 1};
  placed.after[placed.at.stream] = 1;
  for (auto& [buffer, list] : exec.accesses) {
    for (const Access& access : list) {
      if (access.node == node && node != 0) placed = access;
    }
    std::erase_if(list, [&](const Access& access) { return access.node == node && node != 0; });
  }
  std::set<std::string> racy;
  for (const std::string& use : uses) {
    const Symbol* b = find(use);
    if (b == nullptr || !memory(b->kind)) continue;
    Access now{placed.at, contains(writes, use), writes, placed.after, node};
    for (const Access& other : exec.accesses[use]) {
      if ((!now.write && !other.write) || ordered(now, other)) continue;
      racy.insert(writes.begin(), writes.end());
      racy.insert(other.outputs.begin(), other.outputs.end());
    }
    exec.accesses[use].push_back(std::move(now));
  }
  // Whatever reads racy bytes writes racy bytes; which node reads first is not followed.
  for (bool grew = !racy.empty(); grew;) {
    grew = false;
    for (const auto& [buffer, list] : exec.accesses) {
      if (racy.count(buffer) == 0) continue;
      for (const Access& access : list) {
        if (access.write) continue;
        for (const std::string& output : access.outputs) grew = racy.insert(output).second || grew;
      }
    }
  }
  exec.racy_writes.insert(racy.begin(), racy.end());
}

void Harness::exec_updated(Symbol& exec, const std::string& graph, const Symbol& merged) {
  // Nodes pair up by creation order: name the graph's by the source graph's (0 where it has none).
  std::vector<CUgraphNode> from, to;
  graph_nodes(graph, &from);
  const Symbol* source = find(exec.source);
  if (source != nullptr && source->live && source->kind == Kind::graph) {
    graph_nodes(exec.source, &to);
  }
  exec.accesses = merged.accesses;
  for (auto& [buffer, list] : exec.accesses) {
    for (Access& access : list) {
      if (access.node == 0) continue;
      auto at = std::find(from.begin(), from.end(), reinterpret_cast<CUgraphNode>(access.node));
      const auto index = static_cast<std::size_t>(at - from.begin());
      access.node = index < to.size() ? reinterpret_cast<std::uintptr_t>(to[index]) : 0;
    }
  }
}

void Harness::overwritten(const std::string& buffer) {
  if (auto it = symbols_.find(buffer); it != symbols_.end()) {
    it->second.racy = false;
    it->second.unset = false;
  }
}

void Harness::condition_set(const std::string& stream, const std::string& cond) {
  const Symbol& s = symbols_.at(stream);
  capture_sets[capture_of(stream)].emplace_back(cond, Use{s.lane, s.captured_seq});
}

bool Harness::condition_defined(const std::string& graph, const std::string& cond,
                                const std::string& after) const {
  const Symbol* c = find(cond);
  const Symbol* g = find(graph);
  if (c == nullptr || g == nullptr || g->unset_body) return false;
  if (c->assign_default) return true;
  if (after.empty() || !capturing(after)) return false;
  const Symbol& s = symbols_.at(after);
  auto sets = capture_sets.find(capture_of(after));
  if (sets == capture_sets.end()) return false;
  for (const auto& [handle, at] : sets->second) {
    if (handle != cond) continue;
    auto known = s.captured_clock.find(at.stream);
    if (known != s.captured_clock.end() && known->second >= at.seq) return true;
  }
  return false;
}

void Harness::new_lane(const std::string& stream) {
  Symbol& s = symbols_.at(stream);
  s.lane = stream + "'" + std::to_string(++lanes_);
  s.captured_clock.clear();
}

}  // namespace graphcap::fidelity
