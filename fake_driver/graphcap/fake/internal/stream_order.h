// The eager half of the race check: which executed work happens before which across streams
// (a vector clock per stream: a stream's own order, the event waits between streams, the legacy
// stream's implicit waits, the host's waits for work it then enqueued after), and who last wrote
// each device byte range. Two writes of the same bytes by work that no such order relates are a
// race.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <graphcap/driver/cuda_types.h>

namespace graphcap::fake::internal {

// (stream id, how many of its operations) pairs, sorted by stream id: everything a piece of work
// happens after.
class VectorClock {
 public:
  std::uint64_t of(std::uint64_t stream) const noexcept;
  void join(const VectorClock& other);
  std::uint64_t advance(std::uint64_t stream);  // the stream's next operation: its count

 private:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> counts_;
};

// One write: by which stream, its count there, and what it was ("cuLaunchKernel of kernel 'fill'").
struct EagerWrite {
  std::uint64_t stream = 0;
  std::uint64_t count = 0;
  std::string what;
};

// The last writer of each device byte range.
class LastWrites {
 public:
  // Records `write` over [begin, end), returning the earlier writes there that `clock` (the
  // writer's) does not follow, with the bytes each overlaps.
  struct Conflict {
    EagerWrite earlier;
    CUdeviceptr begin = 0;
    CUdeviceptr end = 0;
  };
  std::vector<Conflict> write(CUdeviceptr begin, CUdeviceptr end, const EagerWrite& write,
                              const VectorClock& clock);

 private:
  struct Entry {
    CUdeviceptr end = 0;
    std::shared_ptr<const EagerWrite> write;
  };
  std::map<CUdeviceptr, Entry> ranges_;  // by begin; disjoint
};

}  // namespace graphcap::fake::internal
