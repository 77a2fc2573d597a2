// RecordedLabel: an operation's label (OperationLabel) as a recording keeps it for each of its
// nodes. Compact, and nothing in it to release one by one: its buffer arguments are kept in one
// array of the recording and its name (or text) by plain pointer into the recording's list of
// names (NodeStore). A node record was 496 bytes, most of them the label's eight inline argument
// entries, and each held its kernel's name by shared reference; writing them on capture, and
// reading them back and releasing each reference (an atomic decrement a node) when a re-recording
// replaced the recording, was graphcap's per-node cost on both paths (docs/performance.md, issue
// 24). Expanded back into an OperationLabel only when something renders it: Graph::dot(), a
// refusal, the debug log.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include <graphcap/capture/node_store.h>
#include <graphcap/capture/operation_label.h>
#include <graphcap/driver/launch_dims.h>

namespace graphcap::capture {

class RecordedLabel {
 public:
  RecordedLabel() noexcept = default;
  // Takes `label`'s record into `store` (its arguments appended, its name kept there).
  RecordedLabel(OperationLabel&& label, NodeStore& store);

  bool empty() const noexcept { return render_ == nullptr && name_ == nullptr; }
  // The label as recorded, from the store it was recorded into. Its name is borrowed from the
  // store: render it while the recording lives (every use renders it at once).
  OperationLabel expand(const NodeStore& store) const;

 private:
  const std::string* name_ = nullptr;        // the renderer's name, or a text label's text
  OperationLabel::Render render_ = nullptr;  // nullptr: a text label (name_ is the text)
  LaunchDims dims_{};
  std::array<std::uint64_t, 5> numbers_{};
  std::source_location where_{};
  std::uint32_t first_arg_ = 0;
  std::uint32_t arg_count_ = 0;
};

}  // namespace graphcap::capture
