// MockDriver: a gMock DriverApi whose every method delegates to an owned FakeDriver by default
// (gMock's "delegating calls to a fake"), so a test sets expectations on the calls it cares about
// and the fake answers all of them:
//
//   ::testing::NiceMock<graphcap::fake::MockDriver> mock;
//   EXPECT_CALL(mock, cuGraphDestroy(::testing::_)).Times(1);
//   ... drive graphcap through `mock` (a DriverApi&) ...
//   mock.fake().live_handles();
//
// Header-only: include it only where gMock is linked.
#pragma once

#include <cstddef>

#include <gmock/gmock.h>
#include <graphcap/driver/driver_api.h>
#include <graphcap/fake/fake_driver.h>

namespace graphcap::fake {

class MockDriver : public DriverApi {
 public:
  explicit MockDriver(FakeDriverOptions options = {}) : fake_(options) { delegate_to_fake(); }

  // The fake every call goes to unless a test says otherwise.
  FakeDriver& fake() noexcept { return fake_; }
  const FakeDriver& fake() const noexcept { return fake_; }

  MOCK_METHOD(const char*, name, (), (const, noexcept, override));
  MOCK_METHOD(CUresult, cuInit, (unsigned), (override));
  MOCK_METHOD(CUresult, cuDriverGetVersion, (int*), (override));
  MOCK_METHOD(CUresult, cuDeviceGetCount, (int*), (override));
  MOCK_METHOD(CUresult, cuDeviceGet, (CUdevice*, int), (override));
  MOCK_METHOD(CUresult, cuDeviceGetName, (char*, int, CUdevice), (override));
  MOCK_METHOD(CUresult, cuDeviceGetAttribute, (int*, CUdevice_attribute, CUdevice), (override));
  MOCK_METHOD(CUresult, cuDevicePrimaryCtxRetain, (CUcontext*, CUdevice), (override));
  MOCK_METHOD(CUresult, cuDevicePrimaryCtxRelease, (CUdevice), (override));
  MOCK_METHOD(CUresult, cuCtxSetCurrent, (CUcontext), (override));
  MOCK_METHOD(CUresult, cuCtxGetCurrent, (CUcontext*), (override));
  MOCK_METHOD(CUresult, cuCtxSynchronize, (), (override));
  MOCK_METHOD(CUresult, cuStreamCreate, (CUstream*, unsigned), (override));
  MOCK_METHOD(CUresult, cuStreamDestroy, (CUstream), (override));
  MOCK_METHOD(CUresult, cuStreamSynchronize, (CUstream), (override));
  MOCK_METHOD(CUresult, cuStreamQuery, (CUstream), (override));
  MOCK_METHOD(CUresult, cuStreamWaitEvent, (CUstream, CUevent, unsigned), (override));
  MOCK_METHOD(CUresult, cuStreamBeginCapture, (CUstream, CUstreamCaptureMode), (override));
  MOCK_METHOD(CUresult, cuStreamEndCapture, (CUstream, CUgraph*), (override));
  MOCK_METHOD(CUresult, cuStreamIsCapturing, (CUstream, CUstreamCaptureStatus*), (override));
  MOCK_METHOD(CUresult, cuStreamGetCaptureInfo,
              (CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*, const CUgraphNode**,
               const CUgraphEdgeData**, std::size_t*),
              (override));
  MOCK_METHOD(CUresult, cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode*), (override));
  MOCK_METHOD(CUresult, cuEventCreate, (CUevent*, unsigned), (override));
  MOCK_METHOD(CUresult, cuEventDestroy, (CUevent), (override));
  MOCK_METHOD(CUresult, cuEventRecord, (CUevent, CUstream), (override));
  MOCK_METHOD(CUresult, cuEventQuery, (CUevent), (override));
  MOCK_METHOD(CUresult, cuEventSynchronize, (CUevent), (override));
  MOCK_METHOD(CUresult, cuEventElapsedTime, (float*, CUevent, CUevent), (override));
  MOCK_METHOD(CUresult, cuMemGetInfo, (std::size_t*, std::size_t*), (override));
  MOCK_METHOD(CUresult, cuMemAlloc, (CUdeviceptr*, std::size_t), (override));
  MOCK_METHOD(CUresult, cuMemFree, (CUdeviceptr), (override));
  MOCK_METHOD(CUresult, cuMemAllocAsync, (CUdeviceptr*, std::size_t, CUstream), (override));
  MOCK_METHOD(CUresult, cuMemFreeAsync, (CUdeviceptr, CUstream), (override));
  MOCK_METHOD(CUresult, cuMemAllocHost, (void**, std::size_t), (override));
  MOCK_METHOD(CUresult, cuMemFreeHost, (void*), (override));
  MOCK_METHOD(CUresult, cuMemcpyHtoDAsync, (CUdeviceptr, const void*, std::size_t, CUstream),
              (override));
  MOCK_METHOD(CUresult, cuMemcpyDtoHAsync, (void*, CUdeviceptr, std::size_t, CUstream), (override));
  MOCK_METHOD(CUresult, cuMemsetD8Async, (CUdeviceptr, unsigned char, std::size_t, CUstream),
              (override));
  MOCK_METHOD(CUresult, cuModuleLoadData, (CUmodule*, const void*), (override));
  MOCK_METHOD(CUresult, cuModuleUnload, (CUmodule), (override));
  MOCK_METHOD(CUresult, cuModuleGetFunction, (CUfunction*, CUmodule, const char*), (override));
  MOCK_METHOD(CUresult, cuLaunchKernel,
              (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
               CUstream, void**, void**),
              (override));
  MOCK_METHOD(CUresult, cuGraphGetNodes, (CUgraph, CUgraphNode*, std::size_t*), (override));
  MOCK_METHOD(CUresult, cuGraphNodeGetType, (CUgraphNode, CUgraphNodeType*), (override));
  MOCK_METHOD(CUresult, cuGraphInstantiateWithFlags, (CUgraphExec*, CUgraph, unsigned long long),
              (override));
  MOCK_METHOD(CUresult, cuGraphUpload, (CUgraphExec, CUstream), (override));
  MOCK_METHOD(CUresult, cuGraphLaunch, (CUgraphExec, CUstream), (override));
  MOCK_METHOD(CUresult, cuGraphExecUpdate, (CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*),
              (override));
  MOCK_METHOD(CUresult, cuGraphDestroy, (CUgraph), (override));
  MOCK_METHOD(CUresult, cuGraphExecDestroy, (CUgraphExec), (override));
  MOCK_METHOD(CUresult, cuGraphDebugDotPrint, (CUgraph, const char*, unsigned), (override));
  MOCK_METHOD(CUresult, cuGetErrorName, (CUresult, const char**), (override));
  MOCK_METHOD(CUresult, cuGetErrorString, (CUresult, const char**), (override));

 private:
  void delegate_to_fake() {
    using ::testing::Invoke;
    ON_CALL(*this, name()).WillByDefault([this]() { return fake_.name(); });
    ON_CALL(*this, cuInit).WillByDefault(Invoke(&fake_, &FakeDriver::cuInit));
    ON_CALL(*this, cuDriverGetVersion)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuDriverGetVersion));
    ON_CALL(*this, cuDeviceGetCount).WillByDefault(Invoke(&fake_, &FakeDriver::cuDeviceGetCount));
    ON_CALL(*this, cuDeviceGet).WillByDefault(Invoke(&fake_, &FakeDriver::cuDeviceGet));
    ON_CALL(*this, cuDeviceGetName).WillByDefault(Invoke(&fake_, &FakeDriver::cuDeviceGetName));
    ON_CALL(*this, cuDeviceGetAttribute)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuDeviceGetAttribute));
    ON_CALL(*this, cuDevicePrimaryCtxRetain)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuDevicePrimaryCtxRetain));
    ON_CALL(*this, cuDevicePrimaryCtxRelease)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuDevicePrimaryCtxRelease));
    ON_CALL(*this, cuCtxSetCurrent).WillByDefault(Invoke(&fake_, &FakeDriver::cuCtxSetCurrent));
    ON_CALL(*this, cuCtxGetCurrent).WillByDefault(Invoke(&fake_, &FakeDriver::cuCtxGetCurrent));
    ON_CALL(*this, cuCtxSynchronize).WillByDefault(Invoke(&fake_, &FakeDriver::cuCtxSynchronize));
    ON_CALL(*this, cuStreamCreate).WillByDefault(Invoke(&fake_, &FakeDriver::cuStreamCreate));
    ON_CALL(*this, cuStreamDestroy).WillByDefault(Invoke(&fake_, &FakeDriver::cuStreamDestroy));
    ON_CALL(*this, cuStreamSynchronize)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuStreamSynchronize));
    ON_CALL(*this, cuStreamQuery).WillByDefault(Invoke(&fake_, &FakeDriver::cuStreamQuery));
    ON_CALL(*this, cuStreamWaitEvent).WillByDefault(Invoke(&fake_, &FakeDriver::cuStreamWaitEvent));
    ON_CALL(*this, cuStreamBeginCapture)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuStreamBeginCapture));
    ON_CALL(*this, cuStreamEndCapture)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuStreamEndCapture));
    ON_CALL(*this, cuStreamIsCapturing)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuStreamIsCapturing));
    ON_CALL(*this, cuStreamGetCaptureInfo)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuStreamGetCaptureInfo));
    ON_CALL(*this, cuThreadExchangeStreamCaptureMode)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuThreadExchangeStreamCaptureMode));
    ON_CALL(*this, cuEventCreate).WillByDefault(Invoke(&fake_, &FakeDriver::cuEventCreate));
    ON_CALL(*this, cuEventDestroy).WillByDefault(Invoke(&fake_, &FakeDriver::cuEventDestroy));
    ON_CALL(*this, cuEventRecord).WillByDefault(Invoke(&fake_, &FakeDriver::cuEventRecord));
    ON_CALL(*this, cuEventQuery).WillByDefault(Invoke(&fake_, &FakeDriver::cuEventQuery));
    ON_CALL(*this, cuEventSynchronize)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuEventSynchronize));
    ON_CALL(*this, cuEventElapsedTime)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuEventElapsedTime));
    ON_CALL(*this, cuMemGetInfo).WillByDefault(Invoke(&fake_, &FakeDriver::cuMemGetInfo));
    ON_CALL(*this, cuMemAlloc).WillByDefault(Invoke(&fake_, &FakeDriver::cuMemAlloc));
    ON_CALL(*this, cuMemFree).WillByDefault(Invoke(&fake_, &FakeDriver::cuMemFree));
    ON_CALL(*this, cuMemAllocAsync).WillByDefault(Invoke(&fake_, &FakeDriver::cuMemAllocAsync));
    ON_CALL(*this, cuMemFreeAsync).WillByDefault(Invoke(&fake_, &FakeDriver::cuMemFreeAsync));
    ON_CALL(*this, cuMemAllocHost).WillByDefault(Invoke(&fake_, &FakeDriver::cuMemAllocHost));
    ON_CALL(*this, cuMemFreeHost).WillByDefault(Invoke(&fake_, &FakeDriver::cuMemFreeHost));
    ON_CALL(*this, cuMemcpyHtoDAsync).WillByDefault(Invoke(&fake_, &FakeDriver::cuMemcpyHtoDAsync));
    ON_CALL(*this, cuMemcpyDtoHAsync).WillByDefault(Invoke(&fake_, &FakeDriver::cuMemcpyDtoHAsync));
    ON_CALL(*this, cuMemsetD8Async).WillByDefault(Invoke(&fake_, &FakeDriver::cuMemsetD8Async));
    ON_CALL(*this, cuModuleLoadData).WillByDefault(Invoke(&fake_, &FakeDriver::cuModuleLoadData));
    ON_CALL(*this, cuModuleUnload).WillByDefault(Invoke(&fake_, &FakeDriver::cuModuleUnload));
    ON_CALL(*this, cuModuleGetFunction)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuModuleGetFunction));
    ON_CALL(*this, cuLaunchKernel).WillByDefault(Invoke(&fake_, &FakeDriver::cuLaunchKernel));
    ON_CALL(*this, cuGraphGetNodes).WillByDefault(Invoke(&fake_, &FakeDriver::cuGraphGetNodes));
    ON_CALL(*this, cuGraphNodeGetType)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuGraphNodeGetType));
    ON_CALL(*this, cuGraphInstantiateWithFlags)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuGraphInstantiateWithFlags));
    ON_CALL(*this, cuGraphUpload).WillByDefault(Invoke(&fake_, &FakeDriver::cuGraphUpload));
    ON_CALL(*this, cuGraphLaunch).WillByDefault(Invoke(&fake_, &FakeDriver::cuGraphLaunch));
    ON_CALL(*this, cuGraphExecUpdate).WillByDefault(Invoke(&fake_, &FakeDriver::cuGraphExecUpdate));
    ON_CALL(*this, cuGraphDestroy).WillByDefault(Invoke(&fake_, &FakeDriver::cuGraphDestroy));
    ON_CALL(*this, cuGraphExecDestroy)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuGraphExecDestroy));
    ON_CALL(*this, cuGraphDebugDotPrint)
        .WillByDefault(Invoke(&fake_, &FakeDriver::cuGraphDebugDotPrint));
    ON_CALL(*this, cuGetErrorName).WillByDefault(Invoke(&fake_, &FakeDriver::cuGetErrorName));
    ON_CALL(*this, cuGetErrorString).WillByDefault(Invoke(&fake_, &FakeDriver::cuGetErrorString));
  }

  FakeDriver fake_;
};

}  // namespace graphcap::fake
