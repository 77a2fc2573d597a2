#include <graphcap/capture/invalidation.h>

namespace graphcap::capture {

const char* mode_name(CUstreamCaptureMode mode) {
  switch (mode) {
    case CU_STREAM_CAPTURE_MODE_GLOBAL: return "global";
    case CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: return "thread_local";
    case CU_STREAM_CAPTURE_MODE_RELAXED: return "relaxed";
  }
  return "unknown";
}

std::string likely_causes(CUstreamCaptureMode mode) {
  switch (mode) {
    case CU_STREAM_CAPTURE_MODE_GLOBAL:
      return "in global mode, an unsafe call (an allocation, a synchronization, an event query) "
             "made outside graphcap, on this thread or any other, invalidates it; if other threads "
             "must go on allocating or syncing meanwhile, record in thread_local mode "
             "(CaptureOptions::mode)";
    case CU_STREAM_CAPTURE_MODE_THREAD_LOCAL:
      return "in thread_local mode, an unsafe call (an allocation, a synchronization, an event "
             "query) made outside graphcap on the recording thread invalidates it";
    default:
      return "a call made outside graphcap on the recording stream (a synchronization or query "
             "of it, or a failed captured call) invalidates it";
  }
}

std::string driver_account(GraphDriver& graphs, CUstream stream) {
  std::string account = graphs.invalidation_account(stream);
  return account.empty() ? account : "; the driver's account: " + account;
}

}  // namespace graphcap::capture
