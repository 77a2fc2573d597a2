// Device: the capture lifecycle, per stream (the rules are the capture window's).
#include <memory>
#include <string>
#include <utility>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/graph_pool_state.h>
#include <graphcap/detail/graph_state.h>
#include <graphcap/detail/stream_core.h>
#include <graphcap/device.h>
#include <graphcap/handle_access.h>
#include <graphcap/try.h>

namespace graphcap {

using detail::StreamCore;

Result<void> Device::prepare_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "prepare_capture"));
  StreamCore& stream = HandleAccess::core(s);
  std::lock_guard lock(stream.mutex());
  return stream.window().prepare(core_->options().capture_mode, true, nullptr);
}

Result<void> Device::prepare_capture(Stream& s, CaptureOptions options) {
  GRAPHCAP_TRY(check_stream(s, "prepare_capture"));
  const CUstreamCaptureMode mode = options.mode.value_or(core_->options().capture_mode);
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return Error(Errc::invalid_argument,
                 "prepare_capture: capture mode " + std::to_string(static_cast<int>(mode)) +
                     " is not one CUDA defines (GLOBAL 0, THREAD_LOCAL 1, RELAXED 2)");
  }
  StreamCore& stream = HandleAccess::core(s);
  std::shared_ptr<detail::GraphPoolState> pool;
  if (options.pool != nullptr) {
    pool = HandleAccess::state(*options.pool);
    if (!pool) return Error(Errc::invalid_argument, "prepare_capture: an empty GraphPool");
    if (&pool->stream()->device() != core_.get()) {
      return Error(Errc::invalid_argument, "prepare_capture: the graph pool belongs to " +
                                               core_->another_device(pool->stream()->device()));
    }
    if (pool->stream() != &stream) {
      return Error(Errc::invalid_argument,
                   "prepare_capture: the graph pool belongs to another stream (a pool's graphs "
                   "are recorded and replayed on its stream, one at a time)");
    }
  }
  std::lock_guard lock(stream.mutex());
  return stream.window().prepare(mode, options.claim_on_refusal, std::move(pool));
}

Result<GraphPool> Device::create_graph_pool(Stream& s) {
  return create_graph_pool(s, GraphPoolOptions{});
}

Result<GraphPool> Device::create_graph_pool(Stream& s, GraphPoolOptions options) {
  GRAPHCAP_TRY(check_stream(s, "create_graph_pool"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  std::shared_ptr<memory::VirtualRange> range;
  if (options.virtual_memory) {
    DriverApi& driver = core_->driver();
    Result<std::size_t> granularity = memory::VirtualRange::granularity(driver, core_->device());
    if (!granularity) return std::move(granularity).error().context("create_graph_pool");
    if (*granularity != 0) {
      std::size_t bytes = options.reserve_bytes;
      if (bytes == 0) {
        std::size_t free = 0;
        if (CUresult result = driver.cuMemGetInfo(&free, &bytes); result != CUDA_SUCCESS) {
          return Error::from_driver("cuMemGetInfo", result)
              .context("create_graph_pool: sizing the pool's range of addresses");
        }
      }
      Result<std::shared_ptr<memory::VirtualRange>> reserved =
          memory::VirtualRange::reserve(driver, core_->device(), bytes, *granularity);
      if (!reserved) return std::move(reserved).error().context("create_graph_pool");
      range = std::move(*reserved);
      stream.keep_range(range);
    }
  }
  return HandleAccess::pool(std::make_shared<detail::GraphPoolState>(&stream, std::move(range)));
}

Result<void> Device::begin_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "begin_capture"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  std::lock_guard lock(stream.mutex());
  return stream.window().begin();
}

namespace {

// What a re-recording replaced: released once the stream has passed the replays that used it.
void release_replaced(detail::DeviceCore& device, const std::shared_ptr<StreamCore>& stream,
                      std::unique_ptr<capture::Recording> old) {
  // Its node records are not needed by replays: their room goes to the stream's next recording.
  if (old->executable) {
    {
      std::lock_guard lock(stream->mutex());
      stream->window().recycle(*old);
    }
    // Re-instantiated: the old executable may still be replaying. Release it as a graph is
    // destroyed (wait for the stream, destroy, unpin), deferred while a recording forbids that.
    auto replaced = std::make_shared<detail::GraphState>(stream, std::move(old));
    if (!replaced->try_release()) device.defer(std::move(replaced));
    return;
  }
  // Updated in place: replays already enqueued still run the old recording's nodes, so its pins
  // count as used by them (the drop queue fences them behind the stream). What the new
  // recording uses is pinned by it, so it stays pinned.
  std::lock_guard lock(stream->mutex());
  stream->window().recycle(*old);
  const std::uint64_t use = stream->drops().next_use();
  for (const auto& pin : old->pins) pin->used_at(use);
  old->pins.clear();
}

}  // namespace

Result<Graph> Device::end_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "end_capture"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  Result<std::unique_ptr<capture::Recording>> closed = [&] {
    std::lock_guard lock(stream.mutex());
    Result<std::unique_ptr<capture::Recording>> recording =
        stream.window().end(core_->options().upload_on_capture);
    stream.forget_abandoned_loop_streams();
    return recording;
  }();
  core_->collect_deferred();
  if (!closed) return closed.error();
  auto state = std::make_shared<detail::GraphState>(HandleAccess::core_ptr(s), std::move(*closed));
  core_->add_graph(state);
  return HandleAccess::graph(std::move(state));
}


Result<void> Device::end_capture(Stream& s, Graph& into) {
  GRAPHCAP_TRY(check_stream(s, "end_capture"));
  const std::shared_ptr<detail::GraphState>& target = HandleAccess::state(into);
  if (!target || target->released()) {
    return Error(Errc::graph_state,
                 "end_capture: the graph to re-record into is empty or destroyed (the recording "
                 "stays open: end it into a live graph, end_capture(s) or abort_capture)");
  }
  if (&target->stream().device() != core_.get()) {
    return Error(Errc::invalid_argument,
                 "end_capture: the graph to re-record into belongs to " +
                     core_->another_device(target->stream().device()) +
                     " (the recording stays open)");
  }
  if (&target->stream() != &HandleAccess::core(s)) {
    return Error(Errc::invalid_argument,
                 "end_capture: the graph to re-record into replays on another stream (a graph "
                 "replays on the stream it was captured on; the recording stays open)");
  }
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  Result<std::unique_ptr<capture::Recording>> closed = [&] {
    std::lock_guard lock(stream.mutex());
    const capture::IntoGraph into_graph{target->executable(), target->source_nodes(),
                                        target->report()};
    Result<std::unique_ptr<capture::Recording>> recording =
        stream.window().end(core_->options().upload_on_capture, &into_graph);
    stream.forget_abandoned_loop_streams();
    return recording;
  }();
  if (!closed) {
    core_->collect_deferred();
    return closed.error();
  }
  release_replaced(*core_, HandleAccess::core_ptr(s), target->adopt(std::move(*closed)));
  core_->collect_deferred();
  return {};
}

Result<void> Device::abort_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "abort_capture"));
  GRAPHCAP_TRY(core_->bind_thread());
  StreamCore& stream = HandleAccess::core(s);
  Result<void> aborted = [&] {
    std::lock_guard lock(stream.mutex());
    Result<void> result = stream.window().abort();
    stream.forget_abandoned_loop_streams();
    return result;
  }();
  core_->collect_deferred();
  return aborted;
}

}  // namespace graphcap
