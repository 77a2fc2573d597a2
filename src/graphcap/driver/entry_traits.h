// The traits column of entry_points.def as values: what each driver entry point does to streams,
// captures and handles, and which errors a failure of it may return. One type per entry point
// (graphcap::entry::cuStreamEndCapture, ...: compile-time traits, and a tag to pick an overload
// by) and one table of all of them (kEntryTraits, in entry_points.def's order). The fake's
// injected-failure rules, FaultInjectingDriver's undo rules and handle tracker, the fault sweep and
// the fidelity generator read them here, so none of them keeps a list of entry points of its own.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/entry_points.h>

namespace graphcap {

// The kinds of handle a call creates or releases: fake::LiveHandles has one count of each, in
// this order. Contexts are reference-counted (each retain is one); the others are one each.
#define GRAPHCAP_HANDLE_KINDS(X) \
  X(contexts) X(streams) X(events) X(modules) X(graphs) X(execs) X(device_allocations) \
  X(host_allocations)

enum class HandleKind {
  none,
#define GRAPHCAP_HANDLE_KIND_ENUMERATOR(kind) kind,
  GRAPHCAP_HANDLE_KINDS(GRAPHCAP_HANDLE_KIND_ENUMERATOR)
#undef GRAPHCAP_HANDLE_KIND_ENUMERATOR
};

// HandleKind's enumerators, none included.
#define GRAPHCAP_HANDLE_KIND_ONE(kind) +1
inline constexpr std::size_t kHandleKindCount = 1 GRAPHCAP_HANDLE_KINDS(GRAPHCAP_HANDLE_KIND_ONE);
#undef GRAPHCAP_HANDLE_KIND_ONE

enum class EntryOrder { unordered, ordered };
enum class EntryCapture { none, begins, ends, unsafe };
enum class EntryHost { none, waits, queries };
enum class EntryHandle { none, creates, releases };

struct EntryTraits {
  std::string_view name;
  bool takes_stream;  // the stream column names a parameter
  EntryOrder order;
  EntryCapture capture;
  EntryHost host;
  EntryHandle handle;
  HandleKind kind;
  std::span<const CUresult> codes;  // never empty; codes[0] is what the fault sweep injects
};

namespace entry {
// struct cuStreamEndCapture { static constexpr std::string_view kName = "cuStreamEndCapture"; ...
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, traits)                     \
  struct name {                                                                            \
    static constexpr std::string_view kName = #name;                                       \
    static constexpr EntryOrder order = EntryOrder::GRAPHCAP_TRAIT_ORDER(traits);          \
    static constexpr EntryCapture capture = EntryCapture::GRAPHCAP_TRAIT_CAPTURE(traits);  \
    static constexpr EntryHost host = EntryHost::GRAPHCAP_TRAIT_HOST(traits);              \
    static constexpr EntryHandle handle = EntryHandle::GRAPHCAP_TRAIT_HANDLE(traits);      \
    static constexpr HandleKind kind = HandleKind::GRAPHCAP_TRAIT_HANDLE_KIND(traits);     \
    static constexpr CUresult codes[] = {GRAPHCAP_TRAIT_CODES(traits)};                    \
  };
#include <graphcap/driver/entry_points.def>
}  // namespace entry

namespace detail {
// True unless the stream column is nullptr (it names a parameter).
constexpr bool names_stream(std::string_view column) { return column != "nullptr"; }
}  // namespace detail

// Every entry point's traits, in entry_points.def's order.
inline constexpr EntryTraits kEntryTraits[] = {
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, traits)                         \
  {entry::name::kName, detail::names_stream(GRAPHCAP_PP_STRINGIZE(GRAPHCAP_TRAIT_STREAM(traits))), \
   entry::name::order, entry::name::capture, entry::name::host, entry::name::handle,            \
   entry::name::kind, entry::name::codes},
#include <graphcap/driver/entry_points.def>
};

// The traits of the entry point named `name` ("cuGraphLaunch"), or nullptr.
constexpr const EntryTraits* find_entry_traits(std::string_view name) {
  for (const EntryTraits& traits : kEntryTraits) {
    if (traits.name == name) return &traits;
  }
  return nullptr;
}

// LiveHandles' field name of a kind ("streams"); "none" for HandleKind::none.
constexpr std::string_view handle_kind_name(HandleKind kind) {
  switch (kind) {
#define GRAPHCAP_HANDLE_KIND_NAME(k) \
  case HandleKind::k:                \
    return #k;
    GRAPHCAP_HANDLE_KINDS(GRAPHCAP_HANDLE_KIND_NAME)
#undef GRAPHCAP_HANDLE_KIND_NAME
    case HandleKind::none:
      break;
  }
  return "none";
}

}  // namespace graphcap
