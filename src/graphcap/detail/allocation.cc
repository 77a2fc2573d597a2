#include <graphcap/detail/allocation.h>

#include <graphcap/detail/stream_core.h>

namespace graphcap::detail {

Allocation::~Allocation() { owner_->drop(slice_, last_use()); }

}  // namespace graphcap::detail
