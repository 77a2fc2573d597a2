#include <graphcap/fake/internal/work.h>

#include <cstdio>

#include <graphcap/fake/internal/overloaded.h>

namespace graphcap::fake::internal {

CUgraphNodeType node_type(const NodeWork& work) noexcept {
  return std::visit(Overloaded{
                        [](const KernelWork&) { return CU_GRAPH_NODE_TYPE_KERNEL; },
                        [](const CopyToDeviceWork&) { return CU_GRAPH_NODE_TYPE_MEMCPY; },
                        [](const CopyToHostWork&) { return CU_GRAPH_NODE_TYPE_MEMCPY; },
                        [](const MemsetWork&) { return CU_GRAPH_NODE_TYPE_MEMSET; },
                        [](const AllocWork&) { return CU_GRAPH_NODE_TYPE_MEM_ALLOC; },
                        [](const FreeWork&) { return CU_GRAPH_NODE_TYPE_MEM_FREE; },
                        [](const WaitEventWork&) { return CU_GRAPH_NODE_TYPE_WAIT_EVENT; },
                        [](const EmptyWork&) { return CU_GRAPH_NODE_TYPE_EMPTY; },
                        [](const CopyDeviceWork&) { return CU_GRAPH_NODE_TYPE_MEMCPY; },
                        [](const ConditionalWork&) { return CU_GRAPH_NODE_TYPE_CONDITIONAL; },
                    },
                    work);
}

const char* node_type_name(CUgraphNodeType type) noexcept {
  static constexpr const char* kNames[kGraphNodeTypeCount] = {
      "KERNEL",       "MEMCPY",       "MEMSET",           "HOST",           "GRAPH",     "EMPTY",
      "WAIT_EVENT",   "EVENT_RECORD", "EXT_SEMAS_SIGNAL", "EXT_SEMAS_WAIT", "MEM_ALLOC", "MEM_FREE",
      "BATCH_MEM_OP", "CONDITIONAL"};
  const int index = static_cast<int>(type);
  return index >= 0 && index < kGraphNodeTypeCount ? kNames[index] : "UNKNOWN";
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string describe(const NodeWork& work) {
  return std::visit(
      Overloaded{
          [](const KernelWork& k) { return "kernel '" + k.kernel->name + "'"; },
          [](const CopyToDeviceWork& c) {
            return "host-to-device copy of " + std::to_string(c.bytes) + " bytes to " + hex(c.dst);
          },
          [](const CopyToHostWork& c) {
            return "device-to-host copy of " + std::to_string(c.bytes) + " bytes from " +
                   hex(c.src);
          },
          [](const MemsetWork& m) {
            return "memset of " + std::to_string(m.bytes()) + " bytes at " + hex(m.dst);
          },
          [](const AllocWork& a) {
            return "graph allocation of " + std::to_string(a.bytes) + " bytes at " + hex(a.address);
          },
          [](const FreeWork& f) { return "free of " + hex(f.address); },
          [](const WaitEventWork& w) {
            return "wait on event " + hex(reinterpret_cast<std::uintptr_t>(w.event));
          },
          [](const EmptyWork&) { return std::string("empty node"); },
          [](const CopyDeviceWork& c) {
            return "device-to-device copy of " + std::to_string(c.bytes) + " bytes from " +
                   hex(c.src) + " to " + hex(c.dst);
          },
          [](const ConditionalWork& c) {
            static constexpr const char* kTypes[] = {"IF", "WHILE", "SWITCH"};
            const auto type = static_cast<std::size_t>(c.type);
            return std::string("conditional ") + (type < 3 ? kTypes[type] : "?") +
                   " node (handle " + std::to_string(c.handle) + ")";
          },
      },
      work);
}

}  // namespace graphcap::fake::internal
