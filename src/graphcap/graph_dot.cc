// Graph::dot(): the recorded graph in Graphviz DOT, from graphcap's own record.
#include <map>
#include <string>
#include <vector>

#include <graphcap/capture/recording.h>
#include <graphcap/driver/error_names.h>
#include <graphcap/detail/graph_state.h>
#include <graphcap/graph.h>

namespace graphcap {
namespace {

// A DOT string literal's contents: quotes and backslashes escaped, line breaks as \n.
std::string escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string Graph::dot() const {
  if (state_ == nullptr) return {};
  const std::vector<capture::RecordedNode>& nodes = state_->nodes();
  std::string out = "digraph graphcap {\n  node [shape=box];\n";
  std::map<int, std::vector<std::size_t>> by_stream;
  for (std::size_t i = 0; i < nodes.size(); ++i) by_stream[nodes[i].stream].push_back(i);
  for (const auto& [stream, members] : by_stream) {
    const std::string name = std::to_string(stream);
    out += "  subgraph cluster_stream" + name + " {\n    label=\"stream " + name + "\";\n";
    for (std::size_t i : members) {
      const capture::RecordedNode& node = nodes[i];
      std::string label = node_type_name(node.type);
      if (!node.label.empty()) label += "\n" + state_->label(i).text();
      out += "    n" + std::to_string(i) + " [label=\"" + escaped(label) + "\"];\n";
    }
    out += "  }\n";
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].for_each_dependency(state_->node_store(), [&](std::size_t from) {
      // A programmatic edge (LaunchOptions::programmatic after a kernel) is drawn dashed.
      const bool programmatic = nodes[i].programmatic && from < nodes.size() &&
                                nodes[from].type == CU_GRAPH_NODE_TYPE_KERNEL;
      out += "  n" + std::to_string(from) + " -> n" + std::to_string(i) +
             (programmatic ? " [style=dashed, label=\"programmatic\"]" : "") + ";\n";
    });
  }
  out += "}\n";
  return out;
}

}  // namespace graphcap
