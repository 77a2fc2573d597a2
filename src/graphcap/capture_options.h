// CaptureOptions: what one capture window runs with (Device::prepare_capture(s, options)). The
// options hold for the whole window: the recording opens in `mode`, and the warm-up primes the
// pool named by `pool`.
#pragma once

#include <optional>

#include <graphcap/driver/cuda_types.h>

namespace graphcap {

class GraphPool;

struct CaptureOptions {
  // The mode the recording opens in (cuStreamBeginCapture's; PyTorch's capture_error_mode), and
  // the one graphcap's own cross-thread checks follow for this recording: GLOBAL refuses unsafe
  // calls (allocations from the driver, waits) from every thread while it records; THREAD_LOCAL
  // only from the recording thread; RELAXED from none. Unset (the default): the device's
  // DeviceOptions::capture_mode, as prepare_capture(s) without options uses, so
  // prepare_capture(s) and prepare_capture(s, {}) open the same mode.
  std::optional<CUstreamCaptureMode> mode;
  // Share intermediate memory with the other graphs of this pool (nullptr: the graph owns its
  // memory); see graph_pool.h. A pool of another stream, or an empty one, is
  // Errc::invalid_argument.
  GraphPool* pool = nullptr;
  // A refused (or aborted) recording marks the buffers it would have written as carrying the
  // refusal, since the graph never wrote them (the claims). false: leave them as they are, for a
  // caller whose warm-up ran the very same step and so produced them (GraphCache does this).
  bool claim_on_refusal = true;
};

}  // namespace graphcap
