// GraphPoolState: the state behind a GraphPool handle: the memory its graphs share
// (capture::PoolShare, which the capture windows of the pool lend from and adopt into), and the
// stream the pool belongs to (its graphs are recorded and replayed there, one at a time).
#pragma once

#include <graphcap/capture/pool_share.h>

namespace graphcap::detail {

class StreamCore;

class GraphPoolState final : public capture::PoolShare {
 public:
  explicit GraphPoolState(const StreamCore* stream) noexcept : stream_(stream) {}

  const StreamCore* stream() const noexcept { return stream_; }

 private:
  const StreamCore* stream_;
};

}  // namespace graphcap::detail
