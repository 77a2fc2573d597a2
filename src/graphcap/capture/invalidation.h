// What the messages of a recording's refusals say about an invalidated capture: what usually
// invalidates one in each capture mode, and the driver's own account of it.
#pragma once

#include <string>

#include <graphcap/capture/graph_driver.h>
#include <graphcap/driver/cuda_types.h>

namespace graphcap::capture {

// "global", "thread_local", "relaxed".
const char* mode_name(CUstreamCaptureMode mode);
// What usually invalidates a recording in `mode`, for the message that refuses it.
std::string likely_causes(CUstreamCaptureMode mode);
// The driver's own account of the invalidation (the fake names the offending call and thread
// from its call log), as "; the driver's account: ..."; empty where the driver keeps none
// (libcuda).
std::string driver_account(GraphDriver& graphs, CUstream stream);

}  // namespace graphcap::capture
