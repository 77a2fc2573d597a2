#include <graphcap/capture/instantiation.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include <graphcap/driver/error_names.h>

namespace graphcap::capture {

Result<void> instantiate_into(GraphDriver& graphs, CapturedGraph& captured, GraphReport& report,
                              std::vector<CUgraphNode>& nodes,
                              const std::vector<BodyGraph>& bodies, bool measure_memory,
                              Recording& recording) {
  InstantiateFailure failure;
  Result<Executable> fresh =
      graphs.instantiate_inspected(captured, report, &failure, measure_memory);
  if (!fresh) {
    if (failure.node == nullptr) return fresh.error();
    const Error& error = fresh.error();
    return Error(error.code(),
                 error.message() + ": " +
                     name_failed_node(graphs, captured, recording, bodies, failure),
                 error.driver_code());
  }
  recording.executable = std::move(*fresh);
  recording.report = std::move(report);
  if (!recording.param_nodes.empty()) {
    recording.source = std::move(captured);  // set-params names nodes of it
    recording.source_nodes = std::move(nodes);
  }
  return {};
}

Result<void> instantiate_deferred(GraphDriver& graphs, Recording& recording,
                                  const std::vector<BodyGraph>& bodies) {
  if (recording.executable) return {};
  CapturedGraph captured = std::move(recording.source);
  GraphReport report = std::move(recording.report);
  std::vector<CUgraphNode> nodes = std::move(recording.source_nodes);
  return instantiate_into(graphs, captured, report, nodes, bodies, false, recording);
}

std::string name_failed_node(GraphDriver& graphs, CapturedGraph& captured,
                             const Recording& recording, const std::vector<BodyGraph>& bodies,
                             const InstantiateFailure& failure) {
  // The driver's node is found among the graph's nodes or a body's; graphcap's recorded node at
  // the same position in the same graph is named when the counts agree (external work may have
  // added nodes graphcap did not record).
  auto recorded_in = [&](std::uint64_t frame, unsigned body) {
    std::vector<std::size_t> in;
    for (std::size_t i = 0; i < recording.nodes.size(); ++i) {
      if (recording.nodes[i].loop == frame && recording.nodes[i].branch_body == body) {
        in.push_back(i);
      }
    }
    return in;
  };
  auto name = [&](const std::vector<CUgraphNode>& nodes, std::uint64_t frame, unsigned body,
                  const std::string& where) -> std::optional<std::string> {
    const auto at = std::find(nodes.begin(), nodes.end(), failure.node);
    if (at == nodes.end()) return std::nullopt;
    const std::size_t position = static_cast<std::size_t>(at - nodes.begin());
    std::string text = "node " + std::to_string(position) + " (" + node_type_name(failure.type) +
                       ") of " + where;
    const std::vector<std::size_t> recorded = recorded_in(frame, body);
    if (recorded.size() == nodes.size()) {
      const RecordedNode& node = recording.nodes[recorded[position]];
      text += ", graphcap's node " + std::to_string(recorded[position]) + ": " +
              (node.label.empty() ? std::string(node_type_name(node.type))
                                  : recording.label(recorded[position]).first_line());
    } else {
      text += " (that graph holds nodes graphcap did not record: external work)";
    }
    return text;
  };
  if (Result<std::vector<CUgraphNode>> top = graphs.nodes(captured)) {
    if (std::optional<std::string> named = name(*top, 0, 0, "the graph")) return *named;
  }
  for (const BodyGraph& body : bodies) {
    Result<std::vector<CUgraphNode>> nodes = graphs.body_nodes(body.graph);
    if (!nodes) continue;
    if (std::optional<std::string> named =
            name(*nodes, body.frame, body.body,
                 "body " + std::to_string(body.body) + " of graphcap's node " +
                     std::to_string(body.node) + " (" +
                     recording.label(body.node).first_line() + ")")) {
      return *named;
    }
  }
  return std::string("a node graphcap could not find in the graph or its bodies");
}

}  // namespace graphcap::capture
