// StreamCore: the capture verbs, the one door of every capture step of a stream (the public
// calls convert their handles and check their arguments, then enter here). Each takes the
// stream's lock; the rules are the capture window's, the recording's bookkeeping its owners'.
#include <memory>
#include <utility>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/graph_state.h>
#include <graphcap/detail/pending_graph_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/try.h>

namespace graphcap::detail {

Result<void> StreamCore::prepare_capture(CUstreamCaptureMode mode, bool claim_on_refusal,
                                         std::shared_ptr<capture::PoolShare> pool) {
  std::lock_guard lock(mutex_);
  return window_.prepare(mode, claim_on_refusal, std::move(pool));
}

Result<void> StreamCore::begin_capture() {
  GRAPHCAP_TRY(device_->bind_thread());
  std::lock_guard lock(mutex_);
  return window_.begin();
}

Result<std::unique_ptr<capture::Recording>> StreamCore::close_recording(
    std::vector<capture::BodyGraph>* deferred_bodies) {
  GRAPHCAP_TRY(device_->bind_thread());
  Result<std::unique_ptr<capture::Recording>> closed = [&] {
    std::lock_guard lock(mutex_);
    Result<std::unique_ptr<capture::Recording>> recording =
        deferred_bodies == nullptr ? window_.end(device_->options().upload_on_capture)
                                   : window_.end_deferred();
    if (recording && deferred_bodies != nullptr) {
      *deferred_bodies = window_.own_recording().frames().body_graphs();
    }
    forget_abandoned_loop_streams();
    return recording;
  }();
  device_->collect_deferred();
  return closed;
}

Result<std::shared_ptr<GraphState>> StreamCore::end_capture() {
  GRAPHCAP_ASSIGN_OR_RETURN(std::unique_ptr<capture::Recording> closed, close_recording(nullptr));
  auto state = std::make_shared<GraphState>(shared_from_this(), std::move(closed));
  device_->add_graph(state);
  return state;
}

Result<std::shared_ptr<PendingGraphState>> StreamCore::end_capture_deferred() {
  std::vector<capture::BodyGraph> bodies;
  GRAPHCAP_ASSIGN_OR_RETURN(std::unique_ptr<capture::Recording> closed, close_recording(&bodies));
  return std::make_shared<PendingGraphState>(shared_from_this(), std::move(closed),
                                             std::move(bodies));
}

Result<void> StreamCore::end_capture(GraphState& into) {
  GRAPHCAP_TRY(device_->bind_thread());
  const capture::IntoGraph into_graph{into.executable(), into.source_nodes(), into.report()};
  Result<std::unique_ptr<capture::Recording>> closed = [&] {
    std::lock_guard lock(mutex_);
    Result<std::unique_ptr<capture::Recording>> recording =
        window_.end(device_->options().upload_on_capture, &into_graph);
    forget_abandoned_loop_streams();
    return recording;
  }();
  if (!closed) {
    device_->collect_deferred();
    return closed.error();
  }
  std::unique_ptr<capture::Recording> old = into.adopt(std::move(*closed));
  {
    // Its node records are not needed by replays: their room goes to the next recording here;
    // updated in place, its pins are fenced behind the replays already enqueued.
    std::lock_guard lock(mutex_);
    window_.retire(*old);
  }
  if (old->executable) {
    // Re-instantiated: the old executable may still be replaying. Release it as a graph is
    // destroyed (wait for the stream, destroy, unpin), deferred while a recording forbids that.
    auto replaced = std::make_shared<GraphState>(shared_from_this(), std::move(old));
    if (!replaced->try_release()) device_->defer(std::move(replaced));
  }
  device_->collect_deferred();
  return {};
}

Result<void> StreamCore::abort_capture() {
  GRAPHCAP_TRY(device_->bind_thread());
  Result<void> aborted = [&] {
    std::lock_guard lock(mutex_);
    Result<void> result = window_.abort();
    forget_abandoned_loop_streams();
    return result;
  }();
  device_->collect_deferred();
  return aborted;
}

Result<StreamCore::Conditional> StreamCore::conditional(const capture::ConditionalStep& step) {
  GRAPHCAP_TRY(device_->bind_thread());
  std::lock_guard lock(mutex_);
  GRAPHCAP_ASSIGN_OR_RETURN(const std::size_t depth, window_.check_conditional(step));
  CUstream body = nullptr;
  if (step.opens_node()) {
    GRAPHCAP_ASSIGN_OR_RETURN(body, loop_stream(depth, step.name()));
  }
  GRAPHCAP_ASSIGN_OR_RETURN(const capture::ConditionalHandle made,
                            window_.own_recording().frames().apply(step, body));
  return Conditional{made, window_.recording_id()};
}

Result<std::shared_ptr<memory::Allocation>> StreamCore::copy_to_host(
    const std::shared_ptr<memory::BufferState>& src, std::size_t offset, std::size_t count) {
  GRAPHCAP_TRY(device_->bind_thread());
  std::lock_guard lock(mutex_);
  GRAPHCAP_ASSIGN_OR_RETURN(std::shared_ptr<memory::Allocation> staging,
                            take_slice(staging_pool_, count));
  const CUresult result = device_->driver().cuMemcpyDtoHAsync(
      staging->slice().host_ptr(), src->device_ptr() + offset, count, target());
  const std::uint64_t use = drops_.next_use();
  staging->used_at(use);
  // A buffer of another stream needs no stamp: the read is complete when it returns.
  if (&src->owner() == this) {
    src->memory()->used_at(use);
    src->used_by(*this, use, false);
  }
  if (result != CUDA_SUCCESS) {
    return Error::from_driver("cuMemcpyDtoHAsync", result).context("read");
  }
  return staging;
}

}  // namespace graphcap::detail
