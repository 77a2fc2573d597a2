// GraphDriver: the CUDA half of graph capture, the seed's four operations: open the recording,
// close it into an executable, stage that executable, replay it (Executable::launch). It makes
// the driver calls and knows nothing of pools, buffers or windows; the Window drives it.
#pragma once

#include <optional>

#include <graphcap/capture/executable.h>
#include <graphcap/driver/cuda_types.h>
#include <graphcap/error.h>
#include <graphcap/graph.h>
#include <graphcap/result.h>

namespace graphcap::capture {

struct Instantiated {
  Executable executable;
  GraphReport report;  // node counts and timings; pinning is filled in by the window
};

class GraphDriver {
 public:
  virtual ~GraphDriver() = default;

  // Open the driver's recording on `stream`.
  virtual Result<void> begin(CUstream stream, CUstreamCaptureMode mode) = 0;

  // Close the recording on `stream` (always, even when doomed: a stream left capturing records
  // every launch that follows) and instantiate it. Refuses a doomed recording with its error,
  // and a recording that holds memory nodes. The intermediate graph is freed on every path.
  // `recorded` counts the nodes the window's own operations added, by type: when the graph holds
  // exactly that many nodes, every node is one of them (each adds one node, and anything else on
  // the stream would add more), so the memory-node check needs no per-node query.
  virtual Result<Instantiated> instantiate(CUstream stream, const std::optional<Error>& doomed,
                                           const GraphReport& recorded) = 0;

  // Stage the executable on the device ahead of the first replay. A failure is only a warning
  // (the first replay uploads on demand); returns whether it succeeded.
  virtual bool upload(const Executable& executable, CUstream stream, GraphReport& report) = 0;
};

}  // namespace graphcap::capture
