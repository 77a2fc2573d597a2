// RecordedLabel: an operation's label (OperationLabel) as a recording keeps it for each of its
// nodes. Compact: its buffer arguments are kept in one array of the recording, not inline in each
// node, and its text only by shared reference. A node record was 496 bytes, most of them the
// label's eight inline argument entries; writing them on capture and reading them back to destroy
// them when a re-recording replaced the recording was graphcap's per-node cost on both paths
// (docs/performance.md, issue 24). Expanded back into an OperationLabel (its arguments copied)
// only when something renders it: Graph::dot(), a refusal, the debug log.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <graphcap/capture/operation_label.h>
#include <graphcap/driver/launch_dims.h>

namespace graphcap::capture {

class RecordedLabel {
 public:
  using BufferArg = OperationLabel::BufferArg;

  RecordedLabel() noexcept = default;
  // Takes `label`'s record, moving its buffer arguments to the end of `args` (the recording's).
  RecordedLabel(OperationLabel&& label, std::vector<BufferArg>& args);

  bool empty() const noexcept { return render_ == nullptr && name_ == nullptr; }
  // The label as recorded; `args` is the array its arguments were moved to.
  OperationLabel expand(std::span<const BufferArg> args) const;

 private:
  std::shared_ptr<const std::string> name_;  // the renderer's name, or a text label's text
  OperationLabel::Render render_ = nullptr;  // nullptr: a text label (name_ is the text)
  LaunchDims dims_{};
  std::array<std::uint64_t, 5> numbers_{};
  std::uint32_t first_arg_ = 0;
  std::uint32_t arg_count_ = 0;
};

}  // namespace graphcap::capture
