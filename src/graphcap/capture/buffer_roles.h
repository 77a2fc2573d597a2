// BufferRoles: the buffers a recording uses, by role, and what happens to them as a whole: a
// refusal or a failed replay marks what the recording writes, a replay checks what it reads and
// clears what it produces whole. Held weakly: a graph must not keep a buffer's failure
// bookkeeping alive after its last handle (its memory is pinned separately).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <graphcap/error.h>
#include <graphcap/memory/buffer_state.h>

namespace graphcap::memory {
class SliceOwner;
}

namespace graphcap::capture {

struct BufferRoles {
  std::vector<std::weak_ptr<memory::BufferState>> reads;     // read by a recorded operation
  std::vector<std::weak_ptr<memory::BufferState>> writes;    // written (the claims)
  std::vector<std::weak_ptr<memory::BufferState>> produces;  // written whole

  // Every buffer the recording writes carries `error` (a refusal, a replay that did not run).
  void fail_writes(const Error& error) const;
  // The failure of the first buffer the recording reads that carries one.
  std::optional<Error> first_failed_read() const;
  // A replay was enqueued: what it produces whole replaces whatever those buffers carried.
  void clear_produced() const;
  // Recording `recording` closed, into a graph or refused: what it leaves each buffer's users
  // (memory::BufferState::recording_closed).
  void recording_closed(std::uint64_t recording, bool made_graph,
                        const std::vector<const memory::SliceOwner*>& sides,
                        const memory::SliceOwner& origin, std::uint64_t sequence) const;
  // One entry per buffer (a buffer used by 150 launches is listed once).
  void dedupe();
};

}  // namespace graphcap::capture
