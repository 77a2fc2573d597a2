// Helpers for tests of several devices, on every driver: the fake is made with the devices a test
// asks for; the real driver has the machine's GPUs, and a test needing more than it has skips
// (GTEST_SKIP with the reason) instead of failing.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include <graphcap/driver/driver_api.h>

namespace graphcap::testing {

// cuInit, then the device count; 0 (with a test failure) when either call fails.
inline int device_count(DriverApi& api) {
  if (CUresult result = api.cuInit(0); result != CUDA_SUCCESS) {
    ADD_FAILURE() << "cuInit returned " << static_cast<int>(result);
    return 0;
  }
  int count = 0;
  if (CUresult result = api.cuDeviceGetCount(&count); result != CUDA_SUCCESS) {
    ADD_FAILURE() << "cuDeviceGetCount returned " << static_cast<int>(result);
    return 0;
  }
  return count;
}

inline std::string too_few_devices(int needed, int have) {
  return "needs " + std::to_string(needed) + " devices, the driver has " + std::to_string(have) +
         " (runs on a machine with " + std::to_string(needed) + "+ GPUs)";
}

}  // namespace graphcap::testing

// In SetUp or a test body: skip the test when the driver has fewer than `needed` devices.
#define GRAPHCAP_REQUIRE_DEVICES(api, needed)                                           \
  do {                                                                                  \
    const int graphcap_have_devices = ::graphcap::testing::device_count(api);           \
    if (graphcap_have_devices < (needed)) {                                             \
      GTEST_SKIP() << ::graphcap::testing::too_few_devices((needed), graphcap_have_devices); \
    }                                                                                   \
  } while (0)
