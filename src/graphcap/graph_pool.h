// GraphPool: graphs that share the memory of their intermediates (Device::create_graph_pool(s),
// CaptureOptions::pool). Every graph of a pool is recorded on the pool's stream and replays on it,
// so stream order runs their replays one at a time and never two at once; that is what makes the
// sharing safe. An intermediate is a buffer allocated inside a pool's window (warm-up or
// recording) and dropped before end_capture; a later window of the pool allocates from the
// intermediates of earlier graphs first (the smallest one that fits and that no live buffer of
// this window uses), so graphs recorded largest first hold about the largest one's intermediates
// between them. Buffers alive after a recording are never shared: a buffer lent from the pool
// that outlives its recording makes end_capture refuse it (Errc::graph_state). The memory is the
// graphs' (pinned by each graph using it) and goes back to the stream's pool when the last graph
// using it goes; the GraphPool handle only reports it. A shared handle: copies name one pool.
#pragma once

#include <cstddef>
#include <memory>

namespace graphcap {

namespace detail {
class GraphPoolState;
}
struct HandleAccess;

class GraphPool {
 public:
  GraphPool() = default;  // empty: naming it in CaptureOptions is Errc::invalid_argument

  explicit operator bool() const noexcept { return state_ != nullptr; }
  // Bytes of intermediate memory the pool's graphs share now (each shared slice once).
  std::size_t bytes_held() const noexcept;
  // How many shared intermediate slices that is.
  std::size_t intermediates() const noexcept;

 private:
  friend struct HandleAccess;
  explicit GraphPool(std::shared_ptr<detail::GraphPoolState> state) noexcept
      : state_(std::move(state)) {}

  std::shared_ptr<detail::GraphPoolState> state_;
};

}  // namespace graphcap
