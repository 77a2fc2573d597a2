// access_of: how a recording counts a launch argument's use of its buffer (Arg::in a read,
// Arg::out a whole write, Arg::inout both). One place for launches and record_external. Beside
// handle_access.h: it maps the public Arg onto the capture layer's terms, so it sits above both
// (not installed).
#pragma once

#include <graphcap/arg.h>
#include <graphcap/capture/recording.h>

namespace graphcap::detail {

inline capture::Access access_of(Arg::Access access) noexcept {
  switch (access) {
    case Arg::Access::out: return capture::Access::write_whole;
    case Arg::Access::inout: return capture::Access::read_write;
    case Arg::Access::in:
    case Arg::Access::value:
    case Arg::Access::param:
    case Arg::Access::condition: break;
  }
  return capture::Access::read;
}

}  // namespace graphcap::detail
