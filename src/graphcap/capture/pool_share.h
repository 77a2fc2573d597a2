// PoolShare: what a graph pool's graphs share: the device memory of their intermediates. Graphs of
// one pool are recorded and replayed on the pool's stream, so stream order runs their replays one
// at a time, and an intermediate is dead between replays: a later recording of the pool may use
// the same memory for its own intermediates. Two layouts (docs/capture-lifecycle.md, "Capture
// options and graph pools"):
//  - on virtual memory (where the device supports it): one reserved range (memory::VirtualRange)
//    that every recording lays its intermediates out in from the base, in the order it allocates
//    them, so every graph of the pool uses the same bytes from the base and the pool holds the
//    largest graph's intermediates, whatever order the graphs are recorded in. The warm-up plans
//    the layout; begin_capture maps what the plan needs (never the recording: the pool may not
//    grow inside it), one physical allocation a granule, so the granules no graph uses any more
//    can be given back when graphs go, whatever order they came and go in.
//  - on plain allocations: the intermediates of earlier graphs, lent whole to a later recording
//    that fits in one (so graphs share when recorded largest first). The memory is held weakly
//    (the graphs' pins own it; it goes back to the stream's pool with the last graph using it).
// Neither lends one recording the same memory twice: an allocation of a recording is its own
// memory for the recording's whole life (PoolWindow::lent_memory_ says why).
//
// PoolWindow: one capture window of a pool, prepare_capture to its close: what it allocated (an
// intermediate is memory allocated inside the window and nothing else) and what the pool lent it.
// The pool lends only to the recording, never to the warm-up: a warm-up's buffer may be kept as a
// result (a lazily allocated output), and a result must never share memory with scratch. A buffer
// lent to the recording that is alive when the window closes is a result in scratch memory: a
// graph of it is refused, and without a graph it carries an error for good, and is never lent
// over again while it lives.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <graphcap/error.h>
#include <graphcap/memory/allocation.h>
#include <graphcap/memory/buffer_state.h>
#include <graphcap/memory/slice_owner.h>
#include <graphcap/memory/virtual_range.h>
#include <graphcap/result.h>

namespace graphcap::capture {

class PoolShare {
 public:
  PoolShare() = default;  // on plain allocations
  // On virtual memory: its graphs' intermediates are laid out in `range`.
  explicit PoolShare(std::shared_ptr<memory::VirtualRange> range) noexcept
      : range_(std::move(range)) {}
  PoolShare(const PoolShare&) = delete;
  PoolShare& operator=(const PoolShare&) = delete;
  virtual ~PoolShare() = default;

  // The device memory the pool holds for its graphs: the range's mapped memory, or the shared
  // intermediates (each once).
  std::size_t bytes_held() const;
  // How many pieces of memory that is: physical allocations mapped into the range, or shared
  // intermediate slices.
  std::size_t intermediates() const;
  bool virtual_memory() const noexcept { return range_ != nullptr; }
  // The range (nullptr on plain allocations).
  const std::shared_ptr<memory::VirtualRange>& range() const noexcept { return range_; }

 private:
  friend class PoolWindow;
  // ---- plain allocations ----
  struct Entry {
    std::weak_ptr<memory::Allocation> memory;
    const memory::Allocation* address = nullptr;  // identity, valid while `memory` is alive
    std::size_t capacity = 0;
    std::weak_ptr<memory::BufferState> borrower;  // the live buffer using it, of any window
  };
  // The smallest shared intermediate of at least `bytes` that no live buffer uses and that is
  // not in `lent` (what the asking window lent already), or nullptr.
  std::shared_ptr<memory::Allocation> take(
      std::size_t bytes, const std::vector<std::shared_ptr<memory::Allocation>>& lent);
  void borrowed(const memory::Allocation* memory, const std::shared_ptr<memory::BufferState>& by);
  std::size_t adopt(const std::vector<std::shared_ptr<memory::Allocation>>& pins,
                    const std::vector<const memory::Allocation*>& allocated);

  // ---- virtual memory ----
  // A buffer lent from the range, of any window, while it lives: nothing is laid out over it.
  struct Lent {
    std::weak_ptr<memory::BufferState> buffer;
    std::size_t begin = 0;
    std::size_t end = 0;
  };
  // Where `bytes` go at or after offset `from`: past every live lent buffer in the way.
  std::size_t place_locked(std::size_t from, std::size_t bytes);

  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  std::shared_ptr<memory::VirtualRange> range_;
  std::vector<Lent> lent_;
};

class PoolWindow {
 public:
  PoolWindow() = default;
  explicit PoolWindow(std::shared_ptr<PoolShare> share) noexcept : share_(std::move(share)) {}
  PoolWindow(const PoolWindow&) = delete;
  PoolWindow& operator=(const PoolWindow&) = delete;
  // Lets go of what the window held mapped (a graph's views keep what it uses).
  ~PoolWindow();

  explicit operator bool() const noexcept { return share_ != nullptr; }
  const std::shared_ptr<PoolShare>& share() const noexcept { return share_; }
  bool virtual_memory() const noexcept { return share_ && share_->virtual_memory(); }

  // Memory the window allocated itself (warm-up or recording); in the warm-up of a pool on
  // virtual memory it also plans the recording's layout.
  void allocated(const std::shared_ptr<memory::Allocation>& memory, bool warm_up);
  // begin_capture, before the recording opens (a pool on virtual memory): map what the warm-up's
  // allocations take laid out as the recording will lay them out, and hold it for the window. A
  // failure maps nothing more. Nothing for a pool on plain allocations.
  Result<void> lay_out();
  // Inside the recording: a buffer of `bytes` in memory the pool lends (a view of the range
  // owned by `owner`, the pool's stream, at the layout's next place; or a shared intermediate),
  // or nullptr: the place is beyond what is mapped, or no shared intermediate fits.
  std::shared_ptr<memory::BufferState> lend(std::size_t bytes,
                                            const std::shared_ptr<memory::SliceOwner>& owner);

  // At the close: a buffer lent to this window that is still alive (the refusal), if any.
  std::optional<Error> outlived() const;
  // A graph was made: its intermediates join the pool; the bytes of `pins` that are the pool's.
  std::size_t adopt(const std::vector<std::shared_ptr<memory::Allocation>>& pins);
  // The window closed without a graph: a buffer lent to it that is still alive carries an error
  // for good (its memory is the pool's graphs' scratch).
  void poison_survivors() const;

 private:
  std::shared_ptr<memory::BufferState> lend_view(std::size_t bytes,
                                                 const std::shared_ptr<memory::SliceOwner>& owner);

  std::shared_ptr<PoolShare> share_;
  std::vector<std::weak_ptr<memory::BufferState>> lent_;
  // Plain allocations: every shared intermediate lent to this window, kept to its close. Each
  // allocation of a recording is its own memory for the recording's whole life: a buffer
  // dropped inside the recording still has its uses in the graph, which run in the order of the
  // graph's edges, not in the order the recording allocated (a side stream forked into it may
  // still read the first buffer while the origin writes the next one).
  std::vector<std::shared_ptr<memory::Allocation>> lent_memory_;
  std::vector<const memory::Allocation*> allocated_;  // identities, for adopt only
  // Virtual memory: the warm-up's allocations in order (their exact sizes), the end of their
  // layout, and where the recording lays out next.
  std::vector<std::size_t> plan_;
  std::size_t planned_ = 0;
  std::size_t cursor_ = 0;
  bool holding_ = false;
};

}  // namespace graphcap::capture
