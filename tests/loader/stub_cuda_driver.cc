// A stand-in for libcuda, loaded by the loader tests: it exports cuGetProcAddress_v2 (and nothing
// else a loader may use) and answers for every line of entry_points.def with a stub, named as the
// export the line resolves to, that records that name and returns CUDA_SUCCESS. Environment
// variables (stub_driver_control.h) make one entry missing, too new, NULL or failing, so each of
// the loader's refusals can be provoked. Links no CUDA library; uses graphcap's mirrored types for
// the ABI.
#include <atomic>
#include <cstdlib>
#include <string_view>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/driver/entry_points.h>

#include "stub_driver_control.h"

namespace {

using namespace graphcap;  // the mirrored CUDA types, as cuda.h would spell them
namespace control = graphcap::testing::stub;

std::atomic<const char*> last_entry{""};

// One empty type per entry point, to pick a stub's answer by overload.
namespace entry {
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) struct name {};
#include <graphcap/driver/entry_points.def>
}  // namespace entry

// What a stub answers: CUDA_SUCCESS, writing nothing, unless an overload below says otherwise.
template <class Entry, class... Args>
CUresult answer(Entry, const Args&...) {
  return CUDA_SUCCESS;
}

// The stubs whose outputs the tests read back (null-safe: the tests call every stub with zeros).
CUresult answer(entry::cuDriverGetVersion, int* version) {
  const char* text = std::getenv(control::kDriverVersionVar);
  if (version != nullptr) *version = text != nullptr ? std::atoi(text) : control::kStubVersion;
  return CUDA_SUCCESS;
}

CUresult answer(entry::cuDeviceGet, CUdevice* device, int ordinal) {
  if (device != nullptr) *device = ordinal + control::kDeviceOffset;
  return CUDA_SUCCESS;
}

// One stub per line, named as its export: cuMemAlloc_v2(CUdeviceptr* pointer, std::size_t bytes).
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  CUresult versioned(GRAPHCAP_PARAMS(params)) {                  \
    last_entry.store(#versioned);                                \
    return answer(entry::name{} GRAPHCAP_TRAILING_ARGS(params));  \
  }
#include <graphcap/driver/entry_points.def>

// Not a line of entry_points.def: the ABI a real CUDA 13 driver hands out for cuCtxSynchronize when
// asked for 13000 (the loader asks for 2000's, which takes no context). Served here too, so a
// loader asking for the wrong version would load, call it without its argument, and the tests
// would see "cuCtxSynchronize_v2" as the entry called.
CUresult cuCtxSynchronize_v2(CUcontext context) {
  last_entry.store("cuCtxSynchronize_v2");
  return context == nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// What cuGetProcAddress_v2 hands out: each name at exactly one version.
struct Abi {
  std::string_view name;
  int version;
  void* function;
};

template <class Fn>
void* address(Fn* function) {
  return reinterpret_cast<void*>(function);
}

const Abi kAbis[] = {
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  {#name, version, address(&versioned)},
#include <graphcap/driver/entry_points.def>
    {"cuCtxSynchronize", 13000, address(&cuCtxSynchronize_v2)},
};

bool named_by(const char* variable, std::string_view symbol) {
  const char* value = std::getenv(variable);
  return value != nullptr && symbol == value;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** function, int cuda_version, cuuint64_t flags,
    CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *function = nullptr;
  const std::string_view name(symbol);
  if (named_by(control::kQueryFailsVar, name)) return CUDA_ERROR_INVALID_VALUE;

  // As the real driver does, an unknown name or a too-old version is a status, not an error.
  // Stricter than it: a known name asked for at any version but one of its ABIs' is too old.
  CUdriverProcAddressQueryResult result = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (!named_by(control::kMissingVar, name)) {
    for (const Abi& abi : kAbis) {
      if (abi.name != name) continue;
      if (abi.version != cuda_version || flags != CU_GET_PROC_ADDRESS_DEFAULT ||
          named_by(control::kTooNewVar, name)) {
        if (result != CU_GET_PROC_ADDRESS_SUCCESS) {
          result = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        }
        continue;
      }
      result = CU_GET_PROC_ADDRESS_SUCCESS;
      if (!named_by(control::kNullVar, name)) *function = abi.function;
    }
  }
  if (status != nullptr) *status = result;
  return CUDA_SUCCESS;
}

extern "C" __attribute__((visibility("default"))) const char* graphcap_stub_last_entry() {
  return last_entry.load();
}
