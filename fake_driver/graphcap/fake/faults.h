// The vocabulary of fault injection and observation that FakeDriver and FaultInjectingDriver share,
// so that one fault plan (which call fails, with which code) and one set of checks (the call log,
// live handles) drive either: FakeDriver on its own, or FaultInjectingDriver wrapped around any
// DriverApi (FakeDriver, or libcuda on a GPU).
//
// Both drivers offer, with these exact names and meanings:
//   fail_call(entry, code, nth)      the nth next call of `entry` (1 = the very next) returns `code`
//   fail_always(entry, code)         every call of `entry` returns `code`, until clear_faults()
//   fail_when(entry, code, pred)     every call of `entry` ("" = of any entry point) for which
//                                    pred(CallInfo) is true returns `code`, until clear_faults()
//   clear_faults()
//   unfired_faults()                 the fail_call faults armed and not yet fired (a sentence each,
//                                    starting with the entry point); empty once all have fired
// Each of fail_call, fail_always and fail_when throws std::invalid_argument for a name that is
// not an entry point of entry_points.def ("" is fail_when's "any"), arming nothing.
//   calls(), call_count(entry), total_calls(), clear_calls()     the ordered log of CallRecords
//   live_handles()                   LiveHandles: what has been created and not yet destroyed
// A due fail_call wins over fail_when, which wins over fail_always.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/entry_traits.h>

namespace graphcap::fake {

// Live handles by kind: what has been created and not yet destroyed. One field per kind of
// graphcap::HandleKind (entry_traits.h), the kinds entry_points.def's handle column names:
//   contexts            primary contexts retained (each retain counts)
//   streams, events, modules, graphs, execs
//   device_allocations  cuMemAlloc + cuMemAllocAsync not yet freed
//   host_allocations    cuMemAllocHost not yet freed
//   address_ranges      cuMemAddressReserve not yet freed
//   memory_handles      cuMemCreate not yet released
//   mappings            cuMemMap not yet unmapped
struct LiveHandles {
#define GRAPHCAP_LIVE_HANDLES_FIELD(kind) std::size_t kind = 0;
  GRAPHCAP_HANDLE_KINDS(GRAPHCAP_LIVE_HANDLES_FIELD)
#undef GRAPHCAP_LIVE_HANDLES_FIELD
  std::size_t total() const noexcept {
    std::size_t sum = 0;
#define GRAPHCAP_LIVE_HANDLES_ADD(kind) sum += kind;
    GRAPHCAP_HANDLE_KINDS(GRAPHCAP_LIVE_HANDLES_ADD)
#undef GRAPHCAP_LIVE_HANDLES_ADD
    return sum;
  }
  // The field counting `kind`; nullptr for HandleKind::none.
  using Field = std::size_t LiveHandles::*;
  static constexpr Field field(HandleKind kind) noexcept {
    switch (kind) {
#define GRAPHCAP_LIVE_HANDLES_CASE(k) \
  case HandleKind::k:                 \
    return &LiveHandles::k;
      GRAPHCAP_HANDLE_KINDS(GRAPHCAP_LIVE_HANDLES_CASE)
#undef GRAPHCAP_LIVE_HANDLES_CASE
      case HandleKind::none:
        break;
    }
    return nullptr;
  }
  friend bool operator==(const LiveHandles&, const LiveHandles&) = default;
};

// One logged DriverApi call.
struct CallRecord {
  std::string entry_point;  // "cuGraphLaunch"
  CUresult result;
  bool injected;            // the result came from fail_call / fail_always / fail_when
  std::thread::id thread;
};

// What a fail_when predicate sees of one call, before it is made.
struct CallInfo {
  std::string_view entry_point;  // "cuLaunchKernel"
  std::size_t nth = 0;           // 1 for the first call of this entry point since clear_faults()
  CUstream stream = nullptr;     // the call's CUstream argument; nullptr if it takes none
};

using FaultPredicate = std::function<bool(const CallInfo&)>;

}  // namespace graphcap::fake
