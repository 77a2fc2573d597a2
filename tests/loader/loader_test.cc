// load_cuda_driver against libraries that are not (quite) libcuda: a missing file, a library with
// no cuGetProcAddress_v2, and a stub driver (stub_cuda_driver.cc) steered to refuse one entry
// point at a time. Also what the process's own libcuda.so.1 says, where there is one.
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/driver/cuda_driver.h>

#include "matchers.h"
#include "stub_driver_control.h"

namespace graphcap::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kStubPath = GRAPHCAP_STUB_DRIVER;

// Sets an environment variable for one scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A dlopen handle held by the test itself (to reach the stub's observation hook).
class Dl {
 public:
  explicit Dl(const char* path, int flags = RTLD_NOW | RTLD_LOCAL) : handle_(dlopen(path, flags)) {}
  Dl(const Dl&) = delete;
  Dl& operator=(const Dl&) = delete;
  ~Dl() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  void* get() const { return handle_; }

 private:
  void* handle_;
};

std::string entry_message(std::string_view entry) {
  return "entry point " + std::string(entry) + ":";
}

TEST(LoadCudaDriver, NonexistentPathIsDriverNotFoundNamingThePath) {
  const std::string path = "/nonexistent/graphcap/libcuda.so.1";
  auto driver = load_cuda_driver(path);
  EXPECT_THAT(driver, StatusIs(Errc::driver_not_found, CUDA_SUCCESS,
                               AllOf(HasSubstr("cannot open " + path),
                                     HasSubstr("No such file or directory"))));
}

TEST(LoadCudaDriver, LibraryWithoutGetProcAddressIsDriverNotFoundNamingIt) {
  // The C math library: a real shared object, and certainly not a CUDA driver.
  auto driver = load_cuda_driver("libm.so.6");
  EXPECT_THAT(driver, StatusIs(Errc::driver_not_found, CUDA_SUCCESS,
                               AllOf(HasSubstr("libm.so.6"), HasSubstr("cuGetProcAddress_v2"))));
}

TEST(LoadCudaDriver, StubWithEveryEntryLoadsAndForwards) {
  auto driver = load_cuda_driver(kStubPath);
  ASSERT_THAT(driver, IsOk());
  DriverApi& api = **driver;
  EXPECT_STREQ(api.name(), "cuda");
  int version = 0;
  EXPECT_EQ(api.cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, stub::kStubVersion);
  CUdevice device = -1;
  EXPECT_EQ(api.cuDeviceGet(&device, 3), CUDA_SUCCESS);
  EXPECT_EQ(device, 3 + stub::kDeviceOffset);
  // The 13.0 cuCtxSynchronize takes a context; the stub refuses anything but NULL (current).
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
}

// Each virtual reaches the stub of its own name: no two entry points are crossed.
TEST(LoadCudaDriver, EveryEntryPointForwardsToItsOwnStub) {
  Dl stub_library(kStubPath);
  ASSERT_NE(stub_library.get(), nullptr) << dlerror();
  const auto last_entry =
      reinterpret_cast<stub::LastEntryFn>(dlsym(stub_library.get(), stub::kLastEntrySymbol));
  ASSERT_NE(last_entry, nullptr);

  auto loaded = load_cuda_driver(kStubPath);
  ASSERT_THAT(loaded, IsOk());
  DriverApi& api = **loaded;

  int i = 0;
  std::size_t size = 0;
  float ms = 0;
  void* host = nullptr;
  char text[8] = {};
  const char* str = nullptr;
  CUdevice device{};
  CUcontext context{};
  CUstream stream{};
  CUevent event{};
  CUdeviceptr pointer{};
  CUmodule module{};
  CUfunction function{};
  CUgraph graph{};
  CUgraphNode node{};
  CUgraphExec exec{};
  CUgraphNodeType type{};
  CUstreamCaptureStatus status{};
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  cuuint64_t id = 0;
  const CUgraphNode* dependencies = nullptr;
  const CUgraphEdgeData* edges = nullptr;
  CUgraphExecUpdateResultInfo info{};

  const std::vector<std::pair<std::string_view, std::function<CUresult()>>> calls = {
      {"cuInit", [&] { return api.cuInit(0); }},
      {"cuDriverGetVersion", [&] { return api.cuDriverGetVersion(&i); }},
      {"cuDeviceGetCount", [&] { return api.cuDeviceGetCount(&i); }},
      {"cuDeviceGet", [&] { return api.cuDeviceGet(&device, 0); }},
      {"cuDeviceGetName", [&] { return api.cuDeviceGetName(text, sizeof text, device); }},
      {"cuDeviceGetAttribute",
       [&] { return api.cuDeviceGetAttribute(&i, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0); }},
      {"cuDevicePrimaryCtxRetain", [&] { return api.cuDevicePrimaryCtxRetain(&context, 0); }},
      {"cuDevicePrimaryCtxRelease", [&] { return api.cuDevicePrimaryCtxRelease(0); }},
      {"cuCtxSetCurrent", [&] { return api.cuCtxSetCurrent(context); }},
      {"cuCtxGetCurrent", [&] { return api.cuCtxGetCurrent(&context); }},
      {"cuCtxSynchronize", [&] { return api.cuCtxSynchronize(); }},
      {"cuStreamCreate", [&] { return api.cuStreamCreate(&stream, 0); }},
      {"cuStreamDestroy", [&] { return api.cuStreamDestroy(stream); }},
      {"cuStreamSynchronize", [&] { return api.cuStreamSynchronize(stream); }},
      {"cuStreamQuery", [&] { return api.cuStreamQuery(stream); }},
      {"cuStreamWaitEvent", [&] { return api.cuStreamWaitEvent(stream, event, 0); }},
      {"cuStreamBeginCapture", [&] { return api.cuStreamBeginCapture(stream, mode); }},
      {"cuStreamEndCapture", [&] { return api.cuStreamEndCapture(stream, &graph); }},
      {"cuStreamIsCapturing", [&] { return api.cuStreamIsCapturing(stream, &status); }},
      {"cuStreamGetCaptureInfo",
       [&] {
         return api.cuStreamGetCaptureInfo(stream, &status, &id, &graph, &dependencies, &edges,
                                           &size);
       }},
      {"cuThreadExchangeStreamCaptureMode",
       [&] { return api.cuThreadExchangeStreamCaptureMode(&mode); }},
      {"cuEventCreate", [&] { return api.cuEventCreate(&event, 0); }},
      {"cuEventDestroy", [&] { return api.cuEventDestroy(event); }},
      {"cuEventRecord", [&] { return api.cuEventRecord(event, stream); }},
      {"cuEventQuery", [&] { return api.cuEventQuery(event); }},
      {"cuEventSynchronize", [&] { return api.cuEventSynchronize(event); }},
      {"cuEventElapsedTime", [&] { return api.cuEventElapsedTime(&ms, event, event); }},
      {"cuMemGetInfo", [&] { return api.cuMemGetInfo(&size, &size); }},
      {"cuMemAlloc", [&] { return api.cuMemAlloc(&pointer, 4); }},
      {"cuMemFree", [&] { return api.cuMemFree(pointer); }},
      {"cuMemAllocAsync", [&] { return api.cuMemAllocAsync(&pointer, 4, stream); }},
      {"cuMemFreeAsync", [&] { return api.cuMemFreeAsync(pointer, stream); }},
      {"cuMemAllocHost", [&] { return api.cuMemAllocHost(&host, 4); }},
      {"cuMemFreeHost", [&] { return api.cuMemFreeHost(host); }},
      {"cuMemcpyHtoDAsync", [&] { return api.cuMemcpyHtoDAsync(pointer, text, 1, stream); }},
      {"cuMemcpyDtoHAsync", [&] { return api.cuMemcpyDtoHAsync(text, pointer, 1, stream); }},
      {"cuMemsetD8Async", [&] { return api.cuMemsetD8Async(pointer, 1, 1, stream); }},
      {"cuModuleLoadData", [&] { return api.cuModuleLoadData(&module, text); }},
      {"cuModuleUnload", [&] { return api.cuModuleUnload(module); }},
      {"cuModuleGetFunction", [&] { return api.cuModuleGetFunction(&function, module, "f"); }},
      {"cuLaunchKernel",
       [&] { return api.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr); }},
      {"cuGraphGetNodes", [&] { return api.cuGraphGetNodes(graph, &node, &size); }},
      {"cuGraphNodeGetType", [&] { return api.cuGraphNodeGetType(node, &type); }},
      {"cuGraphInstantiateWithFlags",
       [&] { return api.cuGraphInstantiateWithFlags(&exec, graph, 0); }},
      {"cuGraphUpload", [&] { return api.cuGraphUpload(exec, stream); }},
      {"cuGraphLaunch", [&] { return api.cuGraphLaunch(exec, stream); }},
      {"cuGraphExecUpdate", [&] { return api.cuGraphExecUpdate(exec, graph, &info); }},
      {"cuGraphDestroy", [&] { return api.cuGraphDestroy(graph); }},
      {"cuGraphExecDestroy", [&] { return api.cuGraphExecDestroy(exec); }},
      {"cuGraphDebugDotPrint", [&] { return api.cuGraphDebugDotPrint(graph, "/dev/null", 0); }},
      {"cuGetErrorName", [&] { return api.cuGetErrorName(CUDA_SUCCESS, &str); }},
      {"cuGetErrorString", [&] { return api.cuGetErrorString(CUDA_SUCCESS, &str); }},
  };

  ASSERT_EQ(calls.size(), stub::kEntryPoints.size());
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const auto& [entry, call] = calls[k];
    EXPECT_EQ(entry, stub::kEntryPoints[k]);
    EXPECT_EQ(call(), CUDA_SUCCESS) << entry;
    EXPECT_EQ(std::string_view(last_entry()), entry);
  }
}

TEST(LoadCudaDriver, DestroyingTheDriverClosesTheLibrary) {
  {
    auto driver = load_cuda_driver(kStubPath);
    ASSERT_THAT(driver, IsOk());
    Dl probe(kStubPath, RTLD_NOW | RTLD_NOLOAD);
    EXPECT_NE(probe.get(), nullptr) << "the stub is not loaded while its driver lives";
  }
  Dl probe(kStubPath, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_EQ(probe.get(), nullptr) << "the stub is still loaded after its driver was destroyed";
}

// One entry point refused at a time, for each in turn: the error names exactly that one.
class OneEntryRefused : public ::testing::TestWithParam<std::string_view> {};

TEST_P(OneEntryRefused, UnknownSymbolIsDriverNotFoundNamingIt) {
  const std::string entry(GetParam());
  ScopedEnv missing(stub::kMissingVar, entry);
  EXPECT_THAT(load_cuda_driver(kStubPath),
              StatusIs(Errc::driver_not_found, CUDA_SUCCESS,
                       AllOf(HasSubstr(entry_message(entry)),
                             HasSubstr("CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND"),
                             HasSubstr("CUDA 13000"), HasSubstr(kStubPath))));
}

TEST_P(OneEntryRefused, VersionNotSufficientIsDriverNotFoundNamingIt) {
  const std::string entry(GetParam());
  ScopedEnv too_new(stub::kTooNewVar, entry);
  EXPECT_THAT(load_cuda_driver(kStubPath),
              StatusIs(Errc::driver_not_found, CUDA_SUCCESS,
                       AllOf(HasSubstr(entry_message(entry)),
                             HasSubstr("CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT"))));
}

INSTANTIATE_TEST_SUITE_P(EveryEntryPoint, OneEntryRefused,
                         ::testing::ValuesIn(stub::kEntryPoints),
                         [](const ::testing::TestParamInfo<std::string_view>& param) {
                           return std::string(param.param);
                         });

TEST(LoadCudaDriver, FailedQueryIsDriverNotFoundNamingEntryAndError) {
  ScopedEnv fails(stub::kQueryFailsVar, "cuGraphLaunch");
  EXPECT_THAT(load_cuda_driver(kStubPath),
              StatusIs(Errc::driver_not_found, CUDA_SUCCESS,
                       AllOf(HasSubstr(entry_message("cuGraphLaunch")),
                             HasSubstr("cuGetProcAddress_v2 failed"),
                             HasSubstr("CUDA_ERROR_INVALID_VALUE"))));
}

TEST(LoadCudaDriver, EntryResolvedToNullIsDriverNotFound) {
  ScopedEnv null_entry(stub::kNullVar, "cuStreamEndCapture");
  EXPECT_THAT(load_cuda_driver(kStubPath),
              StatusIs(Errc::driver_not_found, CUDA_SUCCESS,
                       AllOf(HasSubstr(entry_message("cuStreamEndCapture")),
                             HasSubstr("NULL"))));
}

TEST(LoadCudaDriver, MissingEntryErrorNamesNoOtherEntry) {
  // cuMemAlloc is a prefix of cuMemAllocAsync and cuMemAllocHost: the message must not be
  // ambiguous about which one is missing.
  ScopedEnv missing(stub::kMissingVar, "cuMemAllocAsync");
  auto driver = load_cuda_driver(kStubPath);
  ASSERT_FALSE(driver);
  for (std::string_view other : stub::kEntryPoints) {
    if (other == "cuMemAllocAsync") continue;
    EXPECT_THAT(driver.error().message(), Not(HasSubstr(entry_message(other)))) << other;
  }
}

TEST(LoadCudaDriver, DriverOlderThanCuda13IsDriverNotFound) {
  // An older driver hands out older ABIs for some base names; the loader must not call them.
  ScopedEnv old(stub::kDriverVersionVar, "12080");
  EXPECT_THAT(load_cuda_driver(kStubPath),
              StatusIs(Errc::driver_not_found, CUDA_SUCCESS,
                       AllOf(HasSubstr("CUDA 12080"), HasSubstr("13000"))));
}

bool system_has_libcuda() {
  Dl probe(kCudaDriverLibrary);
  return probe.get() != nullptr;
}

TEST(LoadCudaDriver, DefaultLoadsLibcudaSo1) {
  if (system_has_libcuda()) GTEST_SKIP() << "libcuda.so.1 is present; see RealLibcuda.*";
  EXPECT_THAT(load_cuda_driver(), StatusIs(Errc::driver_not_found, CUDA_SUCCESS,
                                           HasSubstr("cannot open libcuda.so.1")));
}

// What the real libcuda's cuGetProcAddress_v2 does (docs/cuda-driver-facts.md, "Loading entry
// points"), on machines that have one.
using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);

class RealLibcuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (library_.get() == nullptr) GTEST_SKIP() << "no libcuda.so.1 on this machine";
    get_ = reinterpret_cast<GetProcAddressFn>(dlsym(library_.get(), "cuGetProcAddress_v2"));
    ASSERT_NE(get_, nullptr);
  }
  Dl library_{kCudaDriverLibrary};
  GetProcAddressFn get_ = nullptr;
};

TEST_F(RealLibcuda, UnknownSymbolIsSuccessWithNullAndSymbolNotFound) {
  void* function = reinterpret_cast<void*>(std::uintptr_t{1});
  auto status = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(get_("cuGraphcapNoSuchEntryPoint", &function, kCudaVersion,
                 CU_GET_PROC_ADDRESS_DEFAULT, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(function, nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

TEST_F(RealLibcuda, VersionTooLowIsVersionNotSufficient) {
  // cuMemAllocAsync first appeared in CUDA 11.2.
  void* function = reinterpret_cast<void*>(std::uintptr_t{1});
  auto status = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(get_("cuMemAllocAsync", &function, 11000, CU_GET_PROC_ADDRESS_DEFAULT, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(function, nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

TEST_F(RealLibcuda, EveryEntryPointResolvesAtCuda13) {
  for (std::string_view entry : stub::kEntryPoints) {
    void* function = nullptr;
    auto status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    EXPECT_EQ(get_(std::string(entry).c_str(), &function, kCudaVersion,
                   CU_GET_PROC_ADDRESS_DEFAULT, &status),
              CUDA_SUCCESS)
        << entry;
    EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS) << entry;
    EXPECT_NE(function, nullptr) << entry;
  }
}

TEST_F(RealLibcuda, DefaultLoadSucceeds) {
  auto driver = load_cuda_driver();
  ASSERT_THAT(driver, IsOk());
  EXPECT_STREQ((*driver)->name(), "cuda");
  int version = 0;
  EXPECT_EQ((*driver)->cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_GE(version, kCudaVersion);
}

}  // namespace
}  // namespace graphcap::testing
