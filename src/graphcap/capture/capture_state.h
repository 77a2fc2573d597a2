// CaptureState: where a stream is in the capture lifecycle (docs/design.md, "The capture lifecycle").
//   no_capture --prepare_capture--> prepare --begin_capture--> capture --end/abort--> no_capture
#pragma once

namespace graphcap {

enum class CaptureState { no_capture, prepare, capture };

// "no_capture", "prepare", "capture".
const char* to_string(CaptureState state) noexcept;

}  // namespace graphcap
