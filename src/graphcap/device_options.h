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
};

}  // namespace graphcap
