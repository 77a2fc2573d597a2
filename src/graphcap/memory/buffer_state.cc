#include <graphcap/memory/buffer_state.h>

#include <algorithm>

namespace graphcap::memory {

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
  if (!failed_.exchange(true, std::memory_order_acq_rel)) replays_.failed();
}

void BufferState::fail_for_good(const Error& error) {
  std::lock_guard lock(mutex_);
  failure_ = error;
  for_good_ = true;
  for_good_flag_.store(true, std::memory_order_release);
  if (!failed_.exchange(true, std::memory_order_acq_rel)) replays_.failed();
}

void BufferState::clear_failure() {
  if (!failed()) return;
  std::lock_guard lock(mutex_);
  if (for_good_) return;
  failure_.reset();
  failed_.store(false, std::memory_order_release);
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

namespace {

// A use on a saved usage (the rule of BufferState::stamp, on a copy).
void stamp_usage(BufferState::Usage& usage, const SliceOwner& stream, std::uint64_t sequence,
                 bool writes) {
  if (writes) {
    usage.writer = &stream;
    usage.write_sequence = sequence;
    usage.use_sequence = sequence;
    usage.readers.clear();
    return;
  }
  if (usage.writer == &stream) {
    usage.use_sequence = sequence;
    return;
  }
  for (BufferState::Use& reader : usage.readers) {
    if (reader.stream == &stream) {
      reader.sequence = sequence;
      return;
    }
  }
  usage.readers.push_back({&stream, sequence});
}

bool is_one_of(const std::vector<const SliceOwner*>& streams, const SliceOwner* stream) {
  return std::find(streams.begin(), streams.end(), stream) != streams.end();
}

}  // namespace

void BufferState::used_by(const SliceOwner& stream, std::uint64_t sequence, bool writes,
                          std::uint64_t recording) {
  // A graph of another stream whose replays conflict with this use checks its order before its
  // next replay (a recorded use is checked when its own graph replays).
  if (recording == 0 && replays_.concern(stream, owner())) [[unlikely]] {
    replays_.used_by(stream, writes);
  }
  if (recording != 0 || saved_count_.load(std::memory_order_acquire) != 0) [[unlikely]] {
    // Inside a recording whose view is the one saved, only the live usage changes.
    const bool only_its_own = recording != 0 &&
                              saved_count_.load(std::memory_order_acquire) == 1 &&
                              saved_for_.load(std::memory_order_acquire) == recording;
    if (!only_its_own) used_by_saving(stream, sequence, writes, recording);
  }
  stamp(stream, sequence, writes);
}

void BufferState::used_by_saving(const SliceOwner& stream, std::uint64_t sequence, bool writes,
                                 std::uint64_t recording) {
  std::lock_guard lock(mutex_);
  bool found = recording == 0;
  for (Saved& saved : saved_) {
    if (saved.recording == recording) {
      found = true;
    } else {
      stamp_usage(saved.usage, stream, sequence, writes);  // not that recording's use
    }
  }
  if (!found) {
    // The recording's first use: what it goes back to if refused (before this use).
    saved_.push_back({recording, Usage{writer(), write_sequence_.load(std::memory_order_acquire),
                                       use_sequence_.load(std::memory_order_acquire), readers_}});
  }
  saved_count_.store(saved_.size(), std::memory_order_release);
  saved_for_.store(saved_.size() == 1 ? saved_.front().recording : 0, std::memory_order_release);
}

void BufferState::stamp(const SliceOwner& stream, std::uint64_t sequence, bool writes) {

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

void BufferState::recording_closed(std::uint64_t recording, bool made_graph,
                                   const std::vector<const SliceOwner*>& sides,
                                   const SliceOwner& origin, std::uint64_t sequence) {
  std::lock_guard lock(mutex_);
  auto saved = std::find_if(saved_.begin(), saved_.end(),
                            [&](const Saved& s) { return s.recording == recording; });
  const bool restore = saved != saved_.end() && !made_graph;
  if (restore) {
    writer_.store(saved->usage.writer, std::memory_order_release);
    write_sequence_.store(saved->usage.write_sequence, std::memory_order_release);
    use_sequence_.store(saved->usage.use_sequence, std::memory_order_release);
    readers_ = std::move(saved->usage.readers);
    has_readers_.store(!readers_.empty(), std::memory_order_release);
  }
  if (saved != saved_.end()) saved_.erase(saved);
  saved_count_.store(saved_.size(), std::memory_order_release);
  saved_for_.store(saved_.size() == 1 ? saved_.front().recording : 0, std::memory_order_release);
  // (Other recordings' views keep a refused recording's uses: more order asked, never less.)
  if (!made_graph || sides.empty()) return;
  auto to_origin = [&](const SliceOwner*& writer, std::vector<Use>& readers,
                       std::uint64_t& write_sequence, std::uint64_t& use_sequence) {
    std::erase_if(readers, [&](const Use& reader) { return is_one_of(sides, reader.stream); });
    if (is_one_of(sides, writer)) {
      writer = &origin;
      write_sequence = sequence;
      use_sequence = sequence;
    }
  };
  const SliceOwner* writer = this->writer();
  std::uint64_t write_sequence = write_sequence_.load(std::memory_order_acquire);
  std::uint64_t use_sequence = use_sequence_.load(std::memory_order_acquire);
  to_origin(writer, readers_, write_sequence, use_sequence);
  has_readers_.store(!readers_.empty(), std::memory_order_release);
  write_sequence_.store(write_sequence, std::memory_order_release);
  use_sequence_.store(use_sequence, std::memory_order_release);
  writer_.store(writer, std::memory_order_release);
  for (Saved& other : saved_) {
    to_origin(other.usage.writer, other.usage.readers, other.usage.write_sequence,
              other.usage.use_sequence);
  }
}

}  // namespace graphcap::memory
