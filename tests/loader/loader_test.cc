// load_cuda_driver against libraries that are not (quite) libcuda: a missing file, a library with
// no cuGetProcAddress_v2, and a stub driver (stub_cuda_driver.cc) steered to refuse one entry
// point at a time. Also what the process's own libcuda.so.1 says, where there is one.
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/driver/cuda_driver.h>

#include "matchers.h"
#include "stub_driver_control.h"

namespace graphcap::testing {
namespace {

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
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
}

// cuCtxSynchronize is asked for at 2000, whose ABI takes no context: not at 13000, where the driver
// (and the stub) hand out cuCtxSynchronize_v2, which takes one.
TEST(LoadCudaDriver, CtxSynchronizeIsTheAbiWithoutAContext) {
  Dl stub_library(kStubPath);
  ASSERT_NE(stub_library.get(), nullptr) << dlerror();
  const auto last_entry =
      reinterpret_cast<stub::LastEntryFn>(dlsym(stub_library.get(), stub::kLastEntrySymbol));
  ASSERT_NE(last_entry, nullptr);
  auto driver = load_cuda_driver(kStubPath);
  ASSERT_THAT(driver, IsOk());
  EXPECT_EQ((*driver)->cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_STREQ(last_entry(), "cuCtxSynchronize");
}

// Each virtual reaches the stub of its own line, the export its version resolves to: no two entry
// points are crossed, and none reaches another ABI of its name. Every argument is zero (the stubs
// write through no null pointer).
TEST(LoadCudaDriver, EveryEntryPointForwardsToItsOwnStub) {
  Dl stub_library(kStubPath);
  ASSERT_NE(stub_library.get(), nullptr) << dlerror();
  const auto last_entry =
      reinterpret_cast<stub::LastEntryFn>(dlsym(stub_library.get(), stub::kLastEntrySymbol));
  ASSERT_NE(last_entry, nullptr);

  auto loaded = load_cuda_driver(kStubPath);
  ASSERT_THAT(loaded, IsOk());
  DriverApi& api = **loaded;

  std::size_t called = 0;
#define GRAPHCAP_ZERO(type, param) std::type_identity_t<type>{}
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...)                       \
  EXPECT_EQ(api.name(GRAPHCAP_PP_EACH(GRAPHCAP_ZERO, params)), CUDA_SUCCESS) << #name; \
  EXPECT_STREQ(last_entry(), #versioned) << #name;                                      \
  ++called;
#include <graphcap/driver/entry_points.def>
#undef GRAPHCAP_ZERO
  EXPECT_EQ(called, std::size(stub::kEntryPoints));
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
class OneEntryRefused : public ::testing::TestWithParam<stub::EntryPoint> {};

// The message names the entry point and the version it was asked for at: its own, not the same
// one for all.
std::string asked_for(const stub::EntryPoint& entry) {
  return "(asked for CUDA " + std::to_string(entry.version) + ")";
}

TEST_P(OneEntryRefused, UnknownSymbolIsDriverNotFoundNamingIt) {
  const std::string entry(GetParam().name);
  ScopedEnv missing(stub::kMissingVar, entry);
  EXPECT_THAT(load_cuda_driver(kStubPath),
              StatusIs(Errc::driver_not_found, CUDA_SUCCESS,
                       AllOf(HasSubstr(entry_message(entry)),
                             HasSubstr("CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND"),
                             HasSubstr(asked_for(GetParam())), HasSubstr(kStubPath))));
}

TEST_P(OneEntryRefused, VersionNotSufficientIsDriverNotFoundNamingIt) {
  const std::string entry(GetParam().name);
  ScopedEnv too_new(stub::kTooNewVar, entry);
  EXPECT_THAT(load_cuda_driver(kStubPath),
              StatusIs(Errc::driver_not_found, CUDA_SUCCESS,
                       AllOf(HasSubstr(entry_message(entry)),
                             HasSubstr("CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT"),
                             HasSubstr(asked_for(GetParam())))));
}

INSTANTIATE_TEST_SUITE_P(EveryEntryPoint, OneEntryRefused,
                         ::testing::ValuesIn(stub::kEntryPoints),
                         [](const ::testing::TestParamInfo<stub::EntryPoint>& param) {
                           return std::string(param.param.name);
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
  for (const stub::EntryPoint& other : stub::kEntryPoints) {
    if (other.name == "cuMemAllocAsync") continue;
    EXPECT_THAT(driver.error().message(), Not(HasSubstr(entry_message(other.name)))) << other.name;
  }
}

TEST(LoadCudaDriver, DriverOlderThanCuda13IsDriverNotFound) {
  // Every entry point is asked for at its own ABI, which an older driver may well have; graphcap
  // refuses it all the same: CUDA 13.0 is the driver it is built and tested against.
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

TEST_F(RealLibcuda, EveryEntryPointResolvesAtItsOwnVersion) {
  for (const stub::EntryPoint& entry : stub::kEntryPoints) {
    void* function = nullptr;
    auto status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    EXPECT_EQ(get_(std::string(entry.name).c_str(), &function, entry.version,
                   CU_GET_PROC_ADDRESS_DEFAULT, &status),
              CUDA_SUCCESS)
        << entry.name;
    EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS) << entry.name;
    EXPECT_NE(function, nullptr) << entry.name;
  }
}

TEST_F(RealLibcuda, CtxSynchronizeHasAnotherAbiAt13000) {
  // Why entry_points.def asks for cuCtxSynchronize at 2000: at 13000 the driver hands out another
  // function (cuCtxSynchronize_v2, which takes a context).
  void* at_2000 = nullptr;
  void* at_13000 = nullptr;
  auto status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  ASSERT_EQ(get_("cuCtxSynchronize", &at_2000, 2000, CU_GET_PROC_ADDRESS_DEFAULT, &status),
            CUDA_SUCCESS);
  ASSERT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  ASSERT_EQ(get_("cuCtxSynchronize", &at_13000, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status),
            CUDA_SUCCESS);
  ASSERT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_NE(at_2000, at_13000);
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
