// SliceHome: where a slice goes back to when it is not its stream pool's: the range a graph pool
// lays its graphs' intermediates out in (memory/virtual_range.h). As for any slice, its stream's
// drop queue hands it back only once the stream has passed its last use; the home is kept alive
// until then.
#pragma once

#include <graphcap/memory/slice.h>

namespace graphcap::memory {

class SliceHome {
 public:
  // The stream has passed the last use of `slice`, a piece of this home.
  virtual void release(const Slice& slice) noexcept = 0;

 protected:
  ~SliceHome() = default;
};

}  // namespace graphcap::memory
