#include <graphcap/capture/recording.h>

namespace graphcap::capture {

const char* node_type_name(CUgraphNodeType type) noexcept {
  static constexpr const char* kNames[] = {
      "KERNEL",       "MEMCPY",       "MEMSET",           "HOST",           "GRAPH",     "EMPTY",
      "WAIT_EVENT",   "EVENT_RECORD", "EXT_SEMAS_SIGNAL", "EXT_SEMAS_WAIT", "MEM_ALLOC", "MEM_FREE",
      "BATCH_MEM_OP", "CONDITIONAL"};
  const auto index = static_cast<std::size_t>(type);
  return index < sizeof kNames / sizeof kNames[0] ? kNames[index] : "UNKNOWN";
}

}  // namespace graphcap::capture
