// GraphPoolState: the state behind a GraphPool handle: the memory its graphs share
// (capture::PoolShare, which the capture windows of the pool lend from and adopt into: one
// reserved range on virtual memory, or earlier graphs' intermediates), and the stream the pool
// belongs to (its graphs are recorded and replayed there, one at a time).
#pragma once

#include <memory>

#include <graphcap/capture/pool_share.h>

namespace graphcap::detail {

class StreamCore;

class GraphPoolState final : public capture::PoolShare {
 public:
  GraphPoolState(const StreamCore* stream, std::shared_ptr<memory::VirtualRange> range) noexcept
      : PoolShare(std::move(range)), stream_(stream) {}

  const StreamCore* stream() const noexcept { return stream_; }

 private:
  const StreamCore* stream_;
};

}  // namespace graphcap::detail
