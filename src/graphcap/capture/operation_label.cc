#include <graphcap/capture/operation_label.h>

namespace graphcap::capture {

std::string OperationLabel::text() const {
  if (render_ != nullptr) return render_(*this);
  return text_;
}

std::string OperationLabel::first_line() const {
  std::string all = text();
  if (const std::size_t end = all.find('\n'); end != std::string::npos) all.resize(end);
  return all;
}

void OperationLabel::add_buffer_arg(const BufferArg& arg) {
  if (more_args_.empty() && arg_count_ < kInlineArgs) {
    new (&inline_args_[arg_count_]) BufferArg(arg);
    ++arg_count_;
    return;
  }
  if (more_args_.empty()) more_args_.assign(inline_args_, inline_args_ + arg_count_);
  more_args_.push_back(arg);
  arg_count_ = static_cast<std::uint32_t>(more_args_.size());
}

}  // namespace graphcap::capture
