#include <graphcap/capture/recorded_label.h>

#include <span>
#include <utility>

namespace graphcap::capture {

namespace {

// `name` kept in the store (once per run of the same string); its address there.
const std::string* keep_name(std::shared_ptr<const std::string>&& name, NodeStore& store) {
  if (store.names.empty() || store.names.back().get() != name.get()) {
    store.names.push_back(std::move(name));
  }
  return store.names.back().get();
}

}  // namespace

RecordedLabel::RecordedLabel(OperationLabel&& label, NodeStore& store)
    : render_(label.renderer()),
      dims_(label.dims),
      numbers_(label.numbers),
      where_(label.where) {
  if (render_ != nullptr) {
    if (label.name) name_ = keep_name(std::move(label.name), store);
    first_arg_ = static_cast<std::uint32_t>(store.args.size());
    label.take_buffer_args(store.args);
    arg_count_ = static_cast<std::uint32_t>(store.args.size() - first_arg_);
  } else if (!label.empty()) {  // rare: a text label
    name_ = keep_name(std::make_shared<const std::string>(label.text()), store);
  }
}

OperationLabel RecordedLabel::expand(const NodeStore& store) const {
  if (render_ == nullptr) {
    OperationLabel label = name_ == nullptr ? OperationLabel() : OperationLabel::of_text(*name_);
    label.where = where_;
    return label;
  }
  OperationLabel label(render_);
  label.where = where_;
  // Borrowed (no owner): the store keeps the name while the recording lives.
  if (name_ != nullptr) {
    label.name = std::shared_ptr<const std::string>(std::shared_ptr<const void>(), name_);
  }
  label.dims = dims_;
  label.numbers = numbers_;
  for (const OperationLabel::BufferArg& arg :
       std::span(store.args).subspan(first_arg_, arg_count_)) {
    label.add_buffer_arg(arg);
  }
  return label;
}

}  // namespace graphcap::capture
