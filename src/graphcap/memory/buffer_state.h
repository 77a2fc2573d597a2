// BufferState: what a Buffer handle shares: its memory, its size, and the failure it may carry
// instead of data (when the operation that should have written it failed).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <graphcap/error.h>
#include <graphcap/memory/allocation.h>
#include <graphcap/memory/replay_uses.h>

namespace graphcap::memory {

class BufferState {
 public:
  BufferState(std::shared_ptr<Allocation> memory, std::size_t size) noexcept
      : memory_(std::move(memory)), size_(size) {}
  BufferState(const BufferState&) = delete;
  BufferState& operator=(const BufferState&) = delete;
  ~BufferState() = default;

  const std::shared_ptr<Allocation>& memory() const noexcept { return memory_; }
  std::size_t size() const noexcept { return size_; }
  CUdeviceptr device_ptr() const noexcept { return memory_->slice().device_ptr(); }
  SliceOwner& owner() const noexcept { return memory_->owner(); }

  // A name for diagnostics (Graph::dot()): shared, so a recorded launch keeps it without copying
  // the text; nullptr while the buffer has none (the common case reads one atomic).
  std::shared_ptr<const std::string> label() const {
    if (!labelled_.load(std::memory_order_acquire)) return nullptr;
    std::lock_guard lock(mutex_);
    return label_;
  }
  void set_label(std::string label);

  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  std::optional<Error> failure() const {
    if (!failed()) return std::nullopt;
    std::lock_guard lock(mutex_);
    return failure_;
  }
  // Carry `error` instead of data. The graphs that replay with it are told (ReplayUses), so their
  // replays check their inputs only while one of their buffers carries a failure.
  void fail(const Error& error);
  // The same for good: nothing clears it (the buffer's memory can't hold data any more).
  void fail_for_good(const Error& error);
  // Whether it failed for good: its memory can't hold data, so no operation may use it.
  bool failed_for_good() const noexcept {
    return failed() && for_good_flag_.load(std::memory_order_acquire);
  }
  void clear_failure();

  // Who used this buffer, for the rule of docs/capture-lifecycle.md ("Buffers on several
  // streams"): the stream that wrote it last (the *writer*; the owner until another stream
  // writes it), the sequence numbers of that write and of the writer's last use, and the reads
  // of other streams since. A read elsewhere must be ordered after the write; a write elsewhere
  // after the writer's last use and every read since.
  struct Use {
    const SliceOwner* stream;
    std::uint64_t sequence;
  };
  struct Usage {
    const SliceOwner* writer;
    std::uint64_t write_sequence;
    std::uint64_t use_sequence;
    std::vector<Use> readers;  // other streams' reads since the write (filled only when asked)
  };
  // The writer alone, without locking (the hot path: a stream using its own buffer).
  const SliceOwner* writer() const noexcept {
    const SliceOwner* stream = writer_.load(std::memory_order_acquire);
    return stream == nullptr ? &owner() : stream;
  }
  bool has_readers() const noexcept { return has_readers_.load(std::memory_order_acquire); }
  Usage usage() const;
  // Stamp a use by `stream` at its operation `sequence`; `recording`: the id of the recording
  // it was recorded into (0: eager work, which ran or will).
  void used_by(const SliceOwner& stream, std::uint64_t sequence, bool writes,
               std::uint64_t recording = 0);
  // Recording `recording`, which used this buffer, closed. Its uses were recorded, not run. A
  // refused one's (`made_graph` false) never run: the buffer is left with the users eager work
  // gave it, as if the recording had not used it (its failure is another matter: the claims).
  // A graph's nodes run on the origin's stream: the uses of its side streams `sides` become the
  // origin's, at its operation `sequence` (the close).
  void recording_closed(std::uint64_t recording, bool made_graph,
                        const std::vector<const SliceOwner*>& sides, const SliceOwner& origin,
                        std::uint64_t sequence);
  // The graphs that replay with this buffer: their replays are uses too, kept there (a replay
  // stamps nothing here). An eager use by another stream tells them (used_by).
  ReplayUses& replays() noexcept { return replays_; }
  const ReplayUses& replays() const noexcept { return replays_; }

 private:
  std::shared_ptr<Allocation> memory_;
  std::size_t size_;
  mutable std::mutex mutex_;
  std::optional<Error> failure_;
  std::atomic<bool> failed_{false};
  bool for_good_ = false;  // guarded by mutex_
  std::atomic<bool> for_good_flag_{false};
  std::atomic<const SliceOwner*> writer_{nullptr};
  std::atomic<std::uint64_t> write_sequence_{0};
  std::atomic<std::uint64_t> use_sequence_{0};
  std::atomic<bool> has_readers_{false};
  std::vector<Use> readers_;  // guarded by mutex_
  // While recordings use the buffer: for each, the usage eager work and other recordings left
  // (every use but that recording's), which a refusal goes back to.
  struct Saved {
    std::uint64_t recording;
    Usage usage;
  };
  std::vector<Saved> saved_;                    // guarded by mutex_
  std::atomic<std::size_t> saved_count_{0};     // saved_.size(), read first
  std::atomic<std::uint64_t> saved_for_{0};     // with one saved: its recording
  void used_by_saving(const SliceOwner& stream, std::uint64_t sequence, bool writes,
                      std::uint64_t recording);
  void stamp(const SliceOwner& stream, std::uint64_t sequence, bool writes);
  ReplayUses replays_;
  std::shared_ptr<const std::string> label_;  // guarded by mutex_
  std::atomic<bool> labelled_{false};
};

}  // namespace graphcap::memory
