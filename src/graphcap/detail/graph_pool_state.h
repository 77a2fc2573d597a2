// GraphPoolState: what a GraphPool shares between the graphs recorded into it: the device memory
// of their intermediates (buffers allocated and dropped inside a recording). Graphs of one pool
// are recorded and replayed on the pool's stream, so stream order runs their replays one at a
// time, and an intermediate is dead between replays: the next graph's recording may use the same
// memory for its own intermediates. Held weakly: the graphs' pins own the memory, which goes back
// to the stream's pool when the last graph pinning it goes.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <graphcap/error.h>
#include <graphcap/memory/allocation.h>
#include <graphcap/memory/buffer_state.h>

namespace graphcap::detail {

class StreamCore;

class GraphPoolState {
 public:
  explicit GraphPoolState(const StreamCore* stream) noexcept : stream_(stream) {}

  const StreamCore* stream() const noexcept { return stream_; }

  // A window of this pool allocates `bytes`: the smallest shared intermediate of at least that
  // size that no live buffer uses now (the borrower), or nullptr.
  std::shared_ptr<memory::Allocation> lend(std::size_t bytes,
                                           const std::shared_ptr<memory::BufferState>& borrower);
  // The buffer `lend` handed out, made once the Allocation is wrapped.
  void lent(const std::shared_ptr<memory::Allocation>& memory,
            const std::shared_ptr<memory::BufferState>& borrower);

  // A recording of this pool closed with `pins`: a buffer lent from the pool that is still alive
  // would share memory with other graphs' intermediates after the recording: the error then.
  std::optional<Error> check_borrowers() const;
  // Adopt the recording's intermediates (device pins no handle but the recording's holds) as
  // shared; the bytes of `pins` that belong to the pool now.
  std::size_t adopt(const std::vector<std::shared_ptr<memory::Allocation>>& pins);
  // The window closed: borrowers are forgotten.
  void window_closed();

  std::size_t bytes_held() const;
  std::size_t intermediates() const;

 private:
  struct Entry {
    std::weak_ptr<memory::Allocation> memory;
    const memory::Allocation* address = nullptr;  // identity, valid while `memory` is alive
    std::size_t capacity = 0;
    std::weak_ptr<memory::BufferState> borrower;  // the live buffer using it in this window
  };

  const StreamCore* stream_;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace graphcap::detail
