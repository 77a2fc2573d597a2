// PoolShare: what a graph pool's graphs share: the device memory of their intermediates. Graphs of
// one pool are recorded and replayed on the pool's stream, so stream order runs their replays one
// at a time, and an intermediate is dead between replays: a later recording of the pool may use
// the same memory for its own intermediates. The memory is held weakly (the graphs' pins own it;
// it goes back to the stream's pool with the last graph using it).
//
// PoolWindow: one capture window of a pool, prepare_capture to its close: what it allocated (an
// intermediate is memory allocated inside the window and nothing else) and what the pool lent it.
// The pool lends only to the recording, never to the warm-up: a warm-up's buffer may be kept as a
// result (a lazily allocated output), and a result must never share memory with scratch. A buffer
// lent to the recording that is alive when the window closes is a result in scratch memory: a
// graph of it is refused, and without a graph it carries an error for good.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <graphcap/error.h>
#include <graphcap/memory/allocation.h>
#include <graphcap/memory/buffer_state.h>

namespace graphcap::capture {

class PoolShare {
 public:
  PoolShare() = default;
  PoolShare(const PoolShare&) = delete;
  PoolShare& operator=(const PoolShare&) = delete;
  virtual ~PoolShare() = default;

  std::size_t bytes_held() const;
  std::size_t intermediates() const;

 private:
  friend class PoolWindow;
  struct Entry {
    std::weak_ptr<memory::Allocation> memory;
    const memory::Allocation* address = nullptr;  // identity, valid while `memory` is alive
    std::size_t capacity = 0;
    std::weak_ptr<memory::BufferState> borrower;  // the live buffer using it, of any window
  };
  // The smallest shared intermediate of at least `bytes` that no live buffer uses, or nullptr.
  std::shared_ptr<memory::Allocation> take(std::size_t bytes);
  void borrowed(const memory::Allocation* memory, const std::shared_ptr<memory::BufferState>& by);
  std::size_t adopt(const std::vector<std::shared_ptr<memory::Allocation>>& pins,
                    const std::vector<const memory::Allocation*>& allocated);

  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
};

class PoolWindow {
 public:
  PoolWindow() = default;
  explicit PoolWindow(std::shared_ptr<PoolShare> share) noexcept : share_(std::move(share)) {}

  explicit operator bool() const noexcept { return share_ != nullptr; }
  const std::shared_ptr<PoolShare>& share() const noexcept { return share_; }

  // Inside the recording: a buffer of `bytes` in memory the pool lends, or nullptr.
  std::shared_ptr<memory::BufferState> lend(std::size_t bytes);
  // Memory the window allocated itself (warm-up or recording).
  void allocated(const std::shared_ptr<memory::Allocation>& memory);

  // At the close: a buffer lent to this window that is still alive (the refusal), if any.
  std::optional<Error> outlived() const;
  // A graph was made: its intermediates join the pool; the bytes of `pins` that are the pool's.
  std::size_t adopt(const std::vector<std::shared_ptr<memory::Allocation>>& pins);
  // The window closed without a graph: a buffer lent to it that is still alive carries an error
  // for good (its memory is the pool's graphs' scratch).
  void poison_survivors() const;

 private:
  std::shared_ptr<PoolShare> share_;
  std::vector<std::weak_ptr<memory::BufferState>> lent_;
  std::vector<const memory::Allocation*> allocated_;  // identities, for adopt only
};

}  // namespace graphcap::capture
