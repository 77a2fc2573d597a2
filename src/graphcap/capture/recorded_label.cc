#include <graphcap/capture/recorded_label.h>

#include <utility>

namespace graphcap::capture {

RecordedLabel::RecordedLabel(OperationLabel&& label, std::vector<BufferArg>& args)
    : render_(label.renderer()), dims_(label.dims), numbers_(label.numbers) {
  if (render_ != nullptr) {
    name_ = std::move(label.name);
    first_arg_ = static_cast<std::uint32_t>(args.size());
    label.take_buffer_args(args);
    arg_count_ = static_cast<std::uint32_t>(args.size() - first_arg_);
  } else if (!label.empty()) {
    name_ = std::make_shared<const std::string>(label.text());  // rare: a text label
  }
}

OperationLabel RecordedLabel::expand(std::span<const BufferArg> args) const {
  if (render_ == nullptr) {
    return name_ == nullptr ? OperationLabel() : OperationLabel::of_text(*name_);
  }
  OperationLabel label(render_);
  label.name = name_;
  label.dims = dims_;
  label.numbers = numbers_;
  for (const BufferArg& arg : args.subspan(first_arg_, arg_count_)) label.add_buffer_arg(arg);
  return label;
}

}  // namespace graphcap::capture
