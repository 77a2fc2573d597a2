#include <graphcap/memory/buffer_state.h>

namespace graphcap::memory {

BufferState::~BufferState() {
  if (failed()) owner().count_failed_buffer(-1);
}

void BufferState::set_label(std::string label) {
  auto shared = label.empty() ? nullptr : std::make_shared<const std::string>(std::move(label));
  std::lock_guard lock(mutex_);
  label_ = std::move(shared);
  labelled_.store(label_ != nullptr, std::memory_order_release);
}

void BufferState::fail(const Error& error) {
  std::lock_guard lock(mutex_);
  if (for_good_) return;  // the reason it can't hold data stays the one it carries
  failure_ = error;
  if (!failed_.exchange(true, std::memory_order_acq_rel)) owner().count_failed_buffer(+1);
}

void BufferState::fail_for_good(const Error& error) {
  std::lock_guard lock(mutex_);
  failure_ = error;
  for_good_ = true;
  for_good_flag_.store(true, std::memory_order_release);
  if (!failed_.exchange(true, std::memory_order_acq_rel)) owner().count_failed_buffer(+1);
}

void BufferState::clear_failure() {
  if (!failed()) return;
  std::lock_guard lock(mutex_);
  if (for_good_) return;
  failure_.reset();
  if (failed_.exchange(false, std::memory_order_acq_rel)) owner().count_failed_buffer(-1);
}

BufferState::Usage BufferState::usage() const {
  Usage usage{writer(), write_sequence_.load(std::memory_order_acquire),
              use_sequence_.load(std::memory_order_acquire), {}};
  if (has_readers()) {
    std::lock_guard lock(mutex_);
    usage.readers = readers_;
  }
  return usage;
}

void BufferState::used_by(const SliceOwner& stream, std::uint64_t sequence, bool writes) {
  if (writer() == &stream) {
    use_sequence_.store(sequence, std::memory_order_release);
    if (writes) {
      write_sequence_.store(sequence, std::memory_order_release);
      if (has_readers()) {
        std::lock_guard lock(mutex_);
        readers_.clear();
        has_readers_.store(false, std::memory_order_release);
      }
    }
    return;
  }
  if (writes) {
    std::lock_guard lock(mutex_);
    readers_.clear();
    has_readers_.store(false, std::memory_order_release);
    write_sequence_.store(sequence, std::memory_order_release);
    use_sequence_.store(sequence, std::memory_order_release);
    writer_.store(&stream, std::memory_order_release);
    return;
  }
  std::lock_guard lock(mutex_);
  for (Use& reader : readers_) {
    if (reader.stream == &stream) {
      reader.sequence = sequence;
      return;
    }
  }
  readers_.push_back({&stream, sequence});
  has_readers_.store(true, std::memory_order_release);
}

void BufferState::forget_uses_by(const std::vector<const SliceOwner*>& sides,
                                 const SliceOwner& origin, std::uint64_t sequence) {
  auto is_side = [&](const SliceOwner* stream) {
    for (const SliceOwner* side : sides) {
      if (side == stream) return true;
    }
    return false;
  };
  std::lock_guard lock(mutex_);
  std::erase_if(readers_, [&](const Use& reader) { return is_side(reader.stream); });
  has_readers_.store(!readers_.empty(), std::memory_order_release);
  if (is_side(writer())) {
    write_sequence_.store(sequence, std::memory_order_release);
    use_sequence_.store(sequence, std::memory_order_release);
    writer_.store(&origin, std::memory_order_release);
  }
}

}  // namespace graphcap::memory
