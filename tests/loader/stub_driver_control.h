// How the loader tests steer the stub driver (stub_cuda_driver.cc), a shared library exporting
// cuGetProcAddress_v2 that hands out a stub for every entry point graphcap resolves. Each variable
// is read on every query, so a test sets it, loads, and unsets it.
#pragma once

#include <string_view>

namespace graphcap::testing::stub {

// The named entry point is unknown: CUDA_SUCCESS, NULL, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND.
inline constexpr const char* kMissingVar = "GRAPHCAP_STUB_MISSING";
// The named entry point needs a newer CUDA: CUDA_SUCCESS, NULL,
// CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT.
inline constexpr const char* kTooNewVar = "GRAPHCAP_STUB_TOO_NEW";
// The query for the named entry point itself fails: CUDA_ERROR_INVALID_VALUE.
inline constexpr const char* kQueryFailsVar = "GRAPHCAP_STUB_QUERY_FAILS";
// The named entry point "resolves" to NULL with a success status (a broken driver).
inline constexpr const char* kNullVar = "GRAPHCAP_STUB_NULL";
// What the stub's cuDriverGetVersion reports (13000 when unset).
inline constexpr const char* kDriverVersionVar = "GRAPHCAP_STUB_DRIVER_VERSION";

// What the stub's cuDriverGetVersion reports by default.
inline constexpr int kStubVersion = 13000;
// What the stub's cuDeviceGet writes: the ordinal plus this, so forwarding of arguments shows.
inline constexpr int kDeviceOffset = 100;

// Exported by the stub (look up with dlsym): the export name (entry_points.def's `versioned`) of
// the last stub entry point called, e.g. "cuStreamBeginCapture_v2".
inline constexpr const char* kLastEntrySymbol = "graphcap_stub_last_entry";
using LastEntryFn = const char* (*)();

// One line of entry_points.def.
struct EntryPoint {
  std::string_view name;       // cuda.h's base name: what the loader asks for
  int version;                 // the CUDA version the loader asks for it at
  std::string_view versioned;  // the export that version resolves to
};

// Every entry point DriverApi declares, in entry_points.def's order. The stub serves exactly these,
// each only when asked for at exactly its version (stricter than a real driver, which answers any
// version from the symbol's first one on): a loader asking for any other ABI fails to load.
inline constexpr EntryPoint kEntryPoints[] = {
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) {#name, version, #versioned},
#include <graphcap/driver/entry_points.def>
};

}  // namespace graphcap::testing::stub
