// DeviceOptions: how Device::open sets a device up.
#pragma once

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

struct DeviceOptions {
  int ordinal = 0;
  // How recordings open (cuStreamBeginCapture's mode). GLOBAL, as CUDA's default: an unsafe call
  // during the recording from this thread, or from any other thread whose own mode is GLOBAL, is
  // an error. THREAD_LOCAL lets other threads work (and
  // capture on their own streams) meanwhile. RELAXED is accepted but gives up the driver's checks.
  CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  // Stage each new executable on the device at end_capture, so the first replay is not slower.
  bool upload_on_capture = true;
  // Measure the driver's own memory for an executable the model puts at one of its 2 MiB chunks
  // or more (about 900 kernel nodes): cuMemGetInfo before and after the instantiate
  // (GraphMemory::driver_source `measured`; docs/capture-lifecycle.md, "The device memory a graph
  // holds"). On the H200 that costs about 0.2 ms of a 1,000-node end_capture (docs/performance.md);
  // false: the model's figure, and no query.
  bool measure_driver_memory = true;
};

}  // namespace graphcap
