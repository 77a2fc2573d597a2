// Which bytes a program cannot predict. The harness makes no eager access that could race (access
// skips it), but a graph may hold nodes no edge orders: two captured streams forked from one
// event, work captured into an existing graph beside its nodes, dependencies set to none. Such
// nodes writing one buffer (or one writing what the other reads) leave bytes that differ from run
// to run on a GPU. They are classified, not skipped: the graph's executable marks what they write
// racy when it launches, whatever reads racy bytes writes racy bytes, and a whole-buffer fill makes
// a buffer known again. Snapshots show a racy buffer as "b2~=<bytes>" at every synchronisation,
// and comparisons count those bytes apart instead of comparing them (program.h, racy_parts).
// Within a capture, order is a vector clock per lane, as the eager streams' clocks: a stream's
// captured ops in turn, a captured event record carries its lane's clock to a stream that waits.
// Not modelled: a conditional body's nodes against the parent graph's unordered ones.
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

}  // namespace

void Harness::captured_access(const std::string& stream, const std::vector<std::string>& uses,
                              const std::vector<std::string>& writes) {
  const std::uint64_t id = capture_of(stream);
  Symbol& s = symbols_.at(stream);
  if (s.lane.empty()) s.lane = stream;
  s.captured_clock[s.lane] = ++s.captured_seq;
  const Use now{s.lane, s.captured_seq};
  std::set<std::string>& racy = capture_racy[id];
  std::map<std::string, std::vector<Access>>& accesses = capture_accesses[id];
  for (const std::string& use : uses) {
    const Symbol* b = find(use);
    if (b == nullptr || !memory(b->kind)) continue;
    const bool write = contains(writes, use);
    // Unpredictable bytes read (racy before the launch, or in this graph) make the outputs so.
    if (!write && (b->racy || racy.count(use) != 0)) racy.insert(writes.begin(), writes.end());
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
    before.push_back(Access{now, write, writes});
  }
  capture_writes[id].insert(writes.begin(), writes.end());
}

void Harness::eager_access(const std::vector<std::string>& uses,
                           const std::vector<std::string>& writes) {
  bool reads_racy = false;
  for (const std::string& use : uses) {
    const Symbol* b = find(use);
    reads_racy = reads_racy || (b != nullptr && b->racy && !contains(writes, use));
  }
  if (!reads_racy) return;
  for (const std::string& name : writes) {
    if (auto it = symbols_.find(name); it != symbols_.end() && memory(it->second.kind)) {
      it->second.racy = true;
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
}

void Harness::overwritten(const std::string& buffer) {
  if (auto it = symbols_.find(buffer); it != symbols_.end()) it->second.racy = false;
}

void Harness::new_lane(const std::string& stream) {
  Symbol& s = symbols_.at(stream);
  s.lane = stream + "'" + std::to_string(++lanes_);
  s.captured_clock.clear();
}

}  // namespace graphcap::fidelity
