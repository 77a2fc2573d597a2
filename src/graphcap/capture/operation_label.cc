#include <graphcap/capture/operation_label.h>

#include <iterator>

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

void OperationLabel::take_buffer_args(std::vector<BufferArg>& out) {
  if (more_args_.empty()) {
    for (std::uint32_t i = 0; i < arg_count_; ++i) {
      out.push_back(std::move(inline_args_[i]));
      inline_args_[i].~BufferArg();
    }
  } else {
    destroy_inline();
    out.insert(out.end(), std::make_move_iterator(more_args_.begin()),
               std::make_move_iterator(more_args_.end()));
    more_args_.clear();
  }
  arg_count_ = 0;
}

}  // namespace graphcap::capture
