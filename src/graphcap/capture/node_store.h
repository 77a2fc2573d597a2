// NodeStore: what a recording's node records (RecordedNode) share and point into by index or
// plain pointer: every label's buffer arguments, the names the labels point to (each kept once
// per run of labels that name the same string, e.g. launches of one kernel), and the further
// dependencies of the nodes that have more than one (a join). With them here, a node record holds
// nothing to release: a recording's node list is freed, emptied or reused without a walk over
// its nodes (a walk over cold memory was graphcap's per-node cost in the update close on the
// H200; docs/performance.md).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <graphcap/capture/operation_label.h>

namespace graphcap::capture {

struct NodeStore {
  std::vector<OperationLabel::BufferArg> args;
  std::vector<std::shared_ptr<const std::string>> names;
  std::vector<std::size_t> joins;  // RecordedNode::joins_first/joins_count index it

  void clear() {
    args.clear();
    names.clear();
    joins.clear();
  }
};

}  // namespace graphcap::capture
