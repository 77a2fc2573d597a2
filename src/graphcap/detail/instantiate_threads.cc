#include <graphcap/detail/instantiate_threads.h>

#include <string>
#include <utility>

#include <graphcap/detail/device_core.h>
#include <graphcap/detail/pending_graph_state.h>
#include <graphcap/log.h>

namespace graphcap::detail {
namespace {

// A worker's own stream to upload on, waited for and destroyed exactly once when it ends.
class UploadStream {
 public:
  explicit UploadStream(DriverApi& driver) noexcept : driver_(&driver) {
    if (CUresult result = driver.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING);
        result != CUDA_SUCCESS) {
      stream_ = nullptr;  // graphs are then uploaded on their own stream when finished
      log(LogLevel::warn, Error::from_driver("cuStreamCreate", result)
                              .context("an instantiating thread's upload stream")
                              .message());
    }
  }
  UploadStream(const UploadStream&) = delete;
  UploadStream& operator=(const UploadStream&) = delete;
  ~UploadStream() {
    if (stream_ == nullptr) return;
    if (CUresult result = driver_->cuStreamSynchronize(stream_); result != CUDA_SUCCESS) {
      log(LogLevel::warn, Error::from_driver("cuStreamSynchronize", result)
                              .context("waiting for the uploads of an instantiating thread")
                              .message());
    }
    if (CUresult result = driver_->cuStreamDestroy(stream_); result != CUDA_SUCCESS) {
      log(LogLevel::warn, Error::from_driver("cuStreamDestroy", result)
                              .context("an instantiating thread's upload stream")
                              .message());
    }
  }
  CUstream get() const noexcept { return stream_; }

 private:
  DriverApi* driver_;
  CUstream stream_ = nullptr;
};

}  // namespace

InstantiateThreads::InstantiateThreads(std::shared_ptr<DeviceCore> device, unsigned threads)
    : device_(std::move(device)) {
  try {
    threads_.reserve(threads);
    for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  } catch (...) {
    stop();  // the threads started wait for work, not for a stop request: end them first
    throw;
  }
}

InstantiateThreads::~InstantiateThreads() { stop(); }

void InstantiateThreads::stop() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  submitted_.notify_all();
  threads_.clear();  // joins
}

void InstantiateThreads::submit(std::shared_ptr<PendingGraphState> graph) {
  graph->queue();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(graph));
  }
  submitted_.notify_one();
}

void InstantiateThreads::work() noexcept {
  // The thread's own capture mode is RELAXED for good: nothing it does (instantiate, upload, the
  // last wait) can invalidate a recording another thread has open.
  CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
  const bool ready = device_->bind_thread() &&
                     device_->driver().cuThreadExchangeStreamCaptureMode(&relaxed) == CUDA_SUCCESS;
  std::unique_ptr<UploadStream> upload;
  for (;;) {
    std::shared_ptr<PendingGraphState> graph;
    {
      std::unique_lock lock(mutex_);
      submitted_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, and nothing left
      graph = std::move(queue_.front());
      queue_.pop_front();
    }
    if (ready && upload == nullptr && device_->options().upload_on_capture) {
      try {
        upload = std::make_unique<UploadStream>(device_->driver());
      } catch (...) {
        // Without it the graphs are uploaded on their own stream when finished.
      }
    }
    graph->run_queued(upload != nullptr ? upload->get() : nullptr);
  }
}

}  // namespace graphcap::detail
