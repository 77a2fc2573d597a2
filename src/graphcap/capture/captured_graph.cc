#include <graphcap/capture/captured_graph.h>

#include <graphcap/error.h>
#include <graphcap/log.h>

namespace graphcap::capture {

void CapturedGraph::reset() noexcept {
  if (graph_ == nullptr) return;
  if (CUresult result = driver_->cuGraphDestroy(std::exchange(graph_, nullptr));
      result != CUDA_SUCCESS) {
    log(LogLevel::warn, Error::from_driver("cuGraphDestroy", result)
                            .context("end_capture: freeing the captured graph").message());
  }
}

}  // namespace graphcap::capture
