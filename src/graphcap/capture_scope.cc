#include <graphcap/capture_scope.h>

namespace graphcap {

CaptureScope::CaptureScope(Device& device, Stream& s) : sequence_(device, s) {
  sequence_.adopt_prepared();
  began_ = sequence_.begin();  // refused: the window prepare opened is aborted
  open_ = static_cast<bool>(began_);
}

Result<Graph> CaptureScope::end() {
  if (!began_) return began_.error();
  if (!open_) {
    return Error(Errc::graph_state, "CaptureScope::end: the recording was already ended or aborted");
  }
  Result<Graph> graph = sequence_.end();
  // Refused with the recording still open (a loop left open, ended from another thread): the
  // scope still owns it, and aborts it when it goes unless end() is called again.
  open_ = sequence_.owns();
  return graph;
}

Result<void> CaptureScope::abort() {
  if (!began_) return began_.error();
  if (!open_) {
    return Error(Errc::graph_state,
                 "CaptureScope::abort: the recording was already ended or aborted");
  }
  open_ = false;
  return sequence_.abort();
}

}  // namespace graphcap
