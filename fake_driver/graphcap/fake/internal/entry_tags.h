// One empty type per entry point (entry::cuStreamEndCapture, ...), to pick an overload by: what
// an injected failure of that entry point does (FakeState::injected, and FaultInjectingDriver's
// undo table), what a successful one creates or destroys.
#pragma once

#include <graphcap/driver/entry_points.h>

namespace graphcap::fake::entry {
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params) \
  struct name {};
#include <graphcap/driver/entry_points.def>
}  // namespace graphcap::fake::entry
