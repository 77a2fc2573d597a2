#include <graphcap/capture/open_recording.h>

#include <atomic>
#include <cstdlib>
#include <sstream>
#include <thread>
#include <utility>

#include <graphcap/capture/invalidation.h>
#include <graphcap/log.h>

namespace graphcap::capture {

void OpenRecording::prepare(CUstreamCaptureMode mode, bool claim_on_refusal,
                            std::shared_ptr<PoolShare> pool) {
  mode_ = mode;
  claim_on_refusal_ = claim_on_refusal;
  kept_at_close_ = false;
  pool_ = pool ? std::make_unique<PoolWindow>(std::move(pool)) : nullptr;
}

void OpenRecording::unprepare() noexcept {
  claim_on_refusal_ = true;
  pool_.reset();
}

Result<void> OpenRecording::open(int stream_index) {
  registration_ = tracker_->register_recording(mode_);
  if (Result<void> opened = graphs_->begin(stream_, mode_); !opened) {
    registration_.release();  // undo all of it: the stream stays usable
    return opened;
  }
  static std::atomic<std::uint64_t> next_id{1};
  const std::uint64_t id = next_id.fetch_add(1, std::memory_order_relaxed);
  book_.open(id, stream_index, mode_);
  frames_.open();
  begun_ = std::chrono::steady_clock::now();
  // Read once a recording, as it begins, not at every close (a getenv was the largest single
  // part of graphcap's own work in an update close on the fake; docs/performance.md).
  const char* dot_dir = std::getenv("GRAPHCAP_DRIVER_DOT_DIR");
  driver_dot_dir_ = dot_dir != nullptr ? dot_dir : "";
  if (log_enabled(LogLevel::debug)) {
    log(LogLevel::debug, "recording " + std::to_string(id) + " begins on stream " +
                             std::to_string(stream_index) + " (" + mode_name(mode_) + " mode)");
  }
  return {};
}

bool OpenRecording::on_other_thread() const noexcept {
  return mode_ != CU_STREAM_CAPTURE_MODE_RELAXED &&
         registration_.thread() != std::this_thread::get_id();
}

Result<void> OpenRecording::check_thread(const char* operation) const {
  if (!on_other_thread()) return {};
  std::ostringstream message;
  message << operation << ": the recording was begun on thread " << registration_.thread()
          << "; in this capture mode only that thread may end it (the driver would terminate the "
             "recording with CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD); abort_capture from this "
             "thread terminates it";
  return Error(Errc::graph_state, message.str());
}

ClosedRecording OpenRecording::close(CloseRequest request) {
  ClosedRecording closed = RecordingClose(*this).close(std::move(request));
  unprepare();
  return closed;
}

}  // namespace graphcap::capture
