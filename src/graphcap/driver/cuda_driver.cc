#include <graphcap/driver/cuda_driver.h>

#include <dlfcn.h>

#include <string>
#include <utility>

#include <graphcap/try.h>
#include <graphcap/driver/error_names.h>

namespace graphcap {
namespace {

// cuGetProcAddress_v2 (cuda.h's cuGetProcAddress): the one symbol looked up with dlsym.
using GetProcAddressFn = CUresult (*)(const char* symbol, void** function, int cuda_version,
                                      cuuint64_t flags, CUdriverProcAddressQueryResult* status);
constexpr const char* kGetProcAddressSymbol = "cuGetProcAddress_v2";

// Every entry point, typed as the ABI entry_points.def asks for it at: cudaTypedefs.h's
// PFN_<name>_v<version>, with graphcap's mirrored types (cuda_types_check.cc proves they agree).
struct EntryPoints {
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  CUresult (*name)(GRAPHCAP_PARAM_TYPES(params));
#include <graphcap/driver/entry_points.def>
};

// Each ABI the loader asks for must be one a CUDA 13.0 driver knows (asking a driver for a version
// newer than itself is an error).
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...)                 \
  static_assert(version <= kCudaVersion, #name ": entry_points.def asks for a "  \
                                        "CUDA version above graphcap::kCudaVersion");
#include <graphcap/driver/entry_points.def>

// The dlopen handle, closed exactly once.
class Library {
 public:
  explicit Library(void* handle) noexcept : handle_(handle) {}
  Library(Library&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Library& operator=(Library&&) = delete;
  ~Library() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  void* get() const noexcept { return handle_; }

 private:
  void* handle_;
};

const char* query_result_name(CUdriverProcAddressQueryResult status) noexcept {
  switch (status) {
    case CU_GET_PROC_ADDRESS_SUCCESS: return "CU_GET_PROC_ADDRESS_SUCCESS";
    case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: return "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND";
    case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT:
      return "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT";
  }
  return "an unknown CUdriverProcAddressQueryResult";
}

Error not_found(const std::string& library, const std::string& what) {
  return Error(Errc::driver_not_found, "load_cuda_driver(" + library + "): " + what);
}

// Resolves one entry point by base name at the CUDA version whose ABI `out` has.
template <class Fn>
Result<void> resolve(GetProcAddressFn get_proc_address, const std::string& library,
                     const char* name, int cuda_version, Fn& out) {
  void* function = nullptr;
  auto status = static_cast<CUdriverProcAddressQueryResult>(-1);
  const CUresult query = get_proc_address(name, &function, cuda_version,
                                          CU_GET_PROC_ADDRESS_DEFAULT, &status);
  const std::string entry = std::string("entry point ") + name + ": ";
  const std::string version = " (asked for CUDA " + std::to_string(cuda_version) + ")";
  if (query != CUDA_SUCCESS) {
    return not_found(library, entry + kGetProcAddressSymbol + " failed with " +
                                  describe_cu_result(query) + version);
  }
  if (status != CU_GET_PROC_ADDRESS_SUCCESS) {
    return not_found(library, entry + query_result_name(status) + version);
  }
  if (function == nullptr) {
    return not_found(library, entry + "resolved to NULL" + version);
  }
  // POSIX guarantees object and function pointers convert; the driver hands out the latter.
  out = reinterpret_cast<Fn>(function);
  return {};
}

// Each virtual forwards to its entry point and does nothing else: this is the replay hot path.
class CudaDriver final : public DriverApi {
 public:
  CudaDriver(Library library, const EntryPoints& entries)
      : library_(std::move(library)), fn_(entries) {}

  const char* name() const noexcept override { return "cuda"; }

#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  CUresult name(GRAPHCAP_PARAMS(params)) override { return fn_.name(GRAPHCAP_ARGS(params)); }
#include <graphcap/driver/entry_points.def>

 private:
  Library library_;
  EntryPoints fn_;
};

Result<EntryPoints> resolve_all(GetProcAddressFn get, const std::string& library) {
  EntryPoints entries{};
  // The string is the member's name and the version is its ABI's: one line of entry_points.def
  // each, no way for a name, a version and a slot to drift apart.
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  GRAPHCAP_TRY(resolve(get, library, #name, version, entries.name));
#include <graphcap/driver/entry_points.def>
  return entries;
}

}  // namespace

Result<std::unique_ptr<DriverApi>> load_cuda_driver() {
  return load_cuda_driver(kCudaDriverLibrary);
}

Result<std::unique_ptr<DriverApi>> load_cuda_driver(const std::string& library) {
  dlerror();  // clear any stale error, so the one reported is this call's
  Library handle(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (handle.get() == nullptr) {
    const char* reason = dlerror();
    return not_found(library, std::string("cannot open ") + library + ": " +
                                  (reason != nullptr ? reason : "dlopen failed"));
  }

  void* symbol = dlsym(handle.get(), kGetProcAddressSymbol);
  if (symbol == nullptr) {
    return not_found(library, std::string(kGetProcAddressSymbol) +
                                  " not found: not a CUDA driver of CUDA 12.0 or newer");
  }
  const auto get_proc_address = reinterpret_cast<GetProcAddressFn>(symbol);

  GRAPHCAP_ASSIGN_OR_RETURN(const EntryPoints entries, resolve_all(get_proc_address, library));

  // Each entry point was asked for at its own ABI, so an older driver would hand out the right
  // signatures or refuse the newer ones; graphcap still refuses it: CUDA 13.0 is the driver whose
  // behaviour graphcap is built and tested against (the capture rules of the facts file).
  int version = 0;
  if (const CUresult status = entries.cuDriverGetVersion(&version); status != CUDA_SUCCESS) {
    return not_found(library, "cuDriverGetVersion failed with " + describe_cu_result(status));
  }
  if (version < kCudaVersion) {
    return not_found(library, "the driver supports CUDA " + std::to_string(version) +
                                  "; graphcap needs CUDA " + std::to_string(kCudaVersion) +
                                  " or newer");
  }

  return std::unique_ptr<DriverApi>(std::make_unique<CudaDriver>(std::move(handle), entries));
}

}  // namespace graphcap
