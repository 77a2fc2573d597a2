// CaptureOptions: what holds for one capture window, from prepare_capture to end_capture.
#pragma once

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

class GraphPool;

struct CaptureOptions {
  // The mode the recording opens in (cuStreamBeginCapture's; PyTorch's capture_error_mode), and
  // the one graphcap's own cross-thread checks follow for this recording: GLOBAL refuses unsafe
  // calls (allocations from the driver, waits) from every thread while it records; THREAD_LOCAL
  // only from the recording thread; RELAXED from none.
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  GraphPool* pool = nullptr;  // share intermediate memory with the other graphs of this pool
};

}  // namespace graphcap
