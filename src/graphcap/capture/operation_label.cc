#include <graphcap/capture/operation_label.h>

#include <iterator>
#include <string>

namespace graphcap::capture {

std::string call_site(const std::source_location& where) {
  if (where.line() == 0) return {};
  return std::string(where.file_name()) + ":" + std::to_string(where.line());
}

std::string located(const std::source_location& where) {
  if (where.line() == 0) return {};
  return " at " + call_site(where);
}

Error called_at(const Error& error, const std::source_location& where) {
  if (where.line() == 0) return error;
  return Error(error.code(), error.message() + " (at " + call_site(where) + ")",
               error.driver_code());
}

namespace {

std::string rendered(const OperationLabel& label, OperationLabel::Render render,
                     const std::string& text) {
  return render != nullptr ? render(label) : text;
}

}  // namespace

std::string OperationLabel::text() const {
  std::string all = rendered(*this, render_, text_);
  if (const std::string site = call_site(where); !site.empty() && !all.empty()) {
    all += "\nat " + site;
  }
  return all;
}

std::string OperationLabel::first_line() const {
  std::string all = rendered(*this, render_, text_);
  if (const std::size_t end = all.find('\n'); end != std::string::npos) all.resize(end);
  if (const std::string site = call_site(where); !site.empty() && !all.empty()) {
    all += " at " + site;
  }
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
