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
  return HandleAccess::core(s).prepare_capture(core_->options().capture_mode, true, nullptr);
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
  return stream.prepare_capture(mode, options.claim_on_refusal, std::move(pool));
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
  return HandleAccess::core(s).begin_capture();
}

Result<Graph> Device::end_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "end_capture"));
  GRAPHCAP_ASSIGN_OR_RETURN(std::shared_ptr<detail::GraphState> state,
                            HandleAccess::core(s).end_capture());
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
  return HandleAccess::core(s).end_capture(*target);
}

Result<void> Device::abort_capture(Stream& s) {
  GRAPHCAP_TRY(check_stream(s, "abort_capture"));
  return HandleAccess::core(s).abort_capture();
}

}  // namespace graphcap
