// The device whose context was last made current on this thread (0: none). Inline so that the
// replay hot path checks it without a call (DeviceCore::bind_thread keeps it).
#pragma once

namespace graphcap::detail {

inline thread_local unsigned long long t_bound_device = 0;

}  // namespace graphcap::detail
