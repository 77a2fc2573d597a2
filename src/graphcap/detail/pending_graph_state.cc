#include <graphcap/detail/pending_graph_state.h>

#include <utility>

#include <graphcap/capture/instantiation.h>
#include <graphcap/detail/device_core.h>
#include <graphcap/detail/graph_state.h>
#include <graphcap/detail/stream_core.h>

namespace graphcap::detail {
namespace {

// The calling thread's own capture mode is RELAXED while it lives, then what it was.
class RelaxedCaptureMode {
 public:
  explicit RelaxedCaptureMode(DriverApi& driver) noexcept
      : driver_(&driver), result_(driver.cuThreadExchangeStreamCaptureMode(&previous_)) {}
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;
  ~RelaxedCaptureMode() {
    if (result_ == CUDA_SUCCESS) (void)driver_->cuThreadExchangeStreamCaptureMode(&previous_);
  }
  CUresult result() const noexcept { return result_; }

 private:
  DriverApi* driver_;
  CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  CUresult result_;
};

}  // namespace

PendingGraphState::PendingGraphState(std::shared_ptr<StreamCore> stream,
                                     std::unique_ptr<capture::Recording> recording,
                                     std::vector<capture::BodyGraph> bodies) noexcept
    : stream_(std::move(stream)), recording_(std::move(recording)), bodies_(std::move(bodies)) {}

// What was never finished nor abandoned goes with it: its pins back through the drop queue.
PendingGraphState::~PendingGraphState() = default;

void PendingGraphState::queue() noexcept {
  std::lock_guard lock(mutex_);
  if (phase_ == Phase::recorded) phase_ = Phase::queued;
}

void PendingGraphState::run_queued(CUstream upload) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (phase_ != Phase::queued) return;  // finished inline or dropped meanwhile
    phase_ = Phase::instantiating;
  }
  instantiate(upload);
  {
    std::lock_guard lock(mutex_);
    phase_ = Phase::instantiated;
  }
  instantiated_.notify_all();
}

bool PendingGraphState::ready() const {
  std::lock_guard lock(mutex_);
  return phase_ == Phase::instantiated;
}

void PendingGraphState::instantiate(CUstream upload) noexcept {
  try {
    DeviceCore& device = stream_->device();
    if (Result<void> bound = device.bind_thread(); !bound) {
      failure_ = bound.error().context("end_capture: instantiating");
      return;
    }
    const RelaxedCaptureMode relaxed(device.driver());
    if (relaxed.result() != CUDA_SUCCESS) {
      failure_ = Error::from_driver("cuThreadExchangeStreamCaptureMode", relaxed.result())
                     .context("end_capture: instantiating beside the recording thread");
      return;
    }
    if (Result<void> made =
            capture::instantiate_deferred(device.graph_driver(), *recording_, bodies_);
        !made) {
      failure_ = made.error();
      return;
    }
    if (upload != nullptr && device.options().upload_on_capture) {
      upload_tried_ = true;  // a failure is only a warning, logged once: not tried again
      device.graph_driver().upload(recording_->executable, upload, recording_->report);
    }
  } catch (...) {
    failure_ = Error(Errc::driver, "end_capture: instantiating failed unexpectedly");
  }
}

void PendingGraphState::settle(std::unique_lock<std::mutex>& lock) noexcept {
  if (phase_ == Phase::recorded || phase_ == Phase::queued) {
    phase_ = Phase::instantiating;  // a worker that comes to it now skips it
    lock.unlock();
    instantiate(nullptr);
    lock.lock();
    phase_ = Phase::instantiated;
    return;
  }
  instantiated_.wait(lock, [&] { return phase_ != Phase::instantiating; });
}

Result<std::shared_ptr<GraphState>> PendingGraphState::finish() {
  std::unique_lock lock(mutex_);
  if (phase_ == Phase::taken) {
    return Error(Errc::graph_state, "PendingGraph::finish: it was finished or dropped already");
  }
  if (stream_->recording()) {
    return Error(Errc::graph_state,
                 "PendingGraph::finish: its stream is recording (uploading into it would "
                 "invalidate that recording); finish it once that recording has closed");
  }
  DeviceCore& device = stream_->device();
  if (Result<void> open = device.check_open("PendingGraph::finish"); !open) return open.error();
  settle(lock);
  phase_ = Phase::taken;
  std::unique_ptr<capture::Recording> recording = std::move(recording_);
  std::optional<Error> failure = std::move(failure_);
  const bool upload_tried = upload_tried_;
  lock.unlock();
  if (failure) return *failure;  // the recording goes back as a refused one does
  if (device.options().upload_on_capture && !upload_tried) {
    if (Result<void> bound = device.bind_thread(); bound) {
      device.graph_driver().upload(recording->executable, stream_->handle(), recording->report);
    }
  }
  auto state = std::make_shared<GraphState>(stream_, std::move(recording));
  device.add_graph(state);
  device.collect_deferred();
  return state;
}

std::shared_ptr<GraphState> PendingGraphState::abandon() noexcept {
  std::unique_lock lock(mutex_);
  instantiated_.wait(lock, [&] { return phase_ != Phase::instantiating; });
  phase_ = Phase::taken;
  std::unique_ptr<capture::Recording> recording = std::move(recording_);
  lock.unlock();
  if (!recording || !recording->executable) return nullptr;  // dropped here
  try {
    auto state = std::make_shared<GraphState>(stream_, std::move(recording));
    stream_->device().add_graph(state);
    return state;
  } catch (...) {
    return nullptr;  // the executable goes with the recording
  }
}

}  // namespace graphcap::detail
