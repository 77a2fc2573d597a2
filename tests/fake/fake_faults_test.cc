// Fault injection and observation: fail_call / fail_always with the real failure's side effects
// and no others, the call log and counts, live handles, and the error-name entry points.
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/driver/error_names.h>
#include <graphcap/fake/fault_injecting_driver.h>

#include "fake_fixture.h"

namespace graphcap::fake::unit {
namespace {

using ::testing::Field;

class FakeFaults : public FakeDriverTest {};

TEST_F(FakeFaults, FailCallFailsExactlyTheNthNextCall) {
  fake_.fail_call("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY, 3);
  CUdeviceptr p[4] = {};
  EXPECT_EQ(fake_.cuMemAlloc(&p[0], 16), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuMemAlloc(&p[1], 16), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuMemAlloc(&p[2], 16), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(p[2], 0u);  // no side effect: nothing written, nothing allocated
  EXPECT_EQ(fake_.cuMemAlloc(&p[3], 16), CUDA_SUCCESS);
  EXPECT_EQ(fake_.live_handles().device_allocations, baseline_.device_allocations + 3);
  for (CUdeviceptr pointer : {p[0], p[1], p[3]}) free(pointer);
}

TEST_F(FakeFaults, FailCallDefaultsToTheNextCallAndOnlyThatEntryPoint) {
  fake_.fail_call("cuStreamSynchronize", CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(fake_.cuStreamQuery(stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
}

TEST_F(FakeFaults, FailAlwaysLastsUntilClearFaults) {
  fake_.fail_always("cuEventCreate", CUDA_ERROR_OUT_OF_MEMORY);
  CUevent event = nullptr;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(fake_.cuEventCreate(&event, 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(event, nullptr);
  fake_.fail_call("cuEventCreate", CUDA_ERROR_INVALID_VALUE);  // a planned call wins
  EXPECT_EQ(fake_.cuEventCreate(&event, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuEventCreate(&event, 0), CUDA_ERROR_OUT_OF_MEMORY);
  fake_.clear_faults();
  EXPECT_EQ(fake_.cuEventCreate(&event, 0), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuEventDestroy(event), CUDA_SUCCESS);
}

TEST_F(FakeFaults, FailWhenFailsTheCallsItsPredicatePicks) {
  CUstream other = nullptr;
  ASSERT_EQ(fake_.cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  std::vector<std::size_t> seen;  // CallInfo::nth of each cuStreamSynchronize the predicate saw
  const CUstream target = other;
  fake_.fail_when("cuStreamSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS,
                  [&seen, target](const CallInfo& call) {
                    seen.push_back(call.nth);
                    return call.stream == target;
                  });
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamSynchronize(other), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(fake_.cuStreamQuery(other), CUDA_SUCCESS) << "only the entry point named";
  EXPECT_THAT(seen, ElementsAre(1u, 2u));
  fake_.fail_when("", CUDA_ERROR_NOT_READY,
                  [target](const CallInfo& call) { return call.stream == target; });
  EXPECT_EQ(fake_.cuStreamQuery(other), CUDA_ERROR_NOT_READY) << "\"\" is every entry point";
  EXPECT_EQ(fake_.cuStreamQuery(stream_), CUDA_SUCCESS);
  fake_.clear_faults();
  EXPECT_EQ(fake_.cuStreamSynchronize(other), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(other), CUDA_SUCCESS);
}

TEST_F(FakeFaults, AnInjectedEndCaptureStillEndsTheCapture) {
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(empty(stream_), CUDA_SUCCESS);
  fake_.fail_call("cuStreamEndCapture", CUDA_ERROR_OUT_OF_MEMORY);
  CUgraph graph = reinterpret_cast<CUgraph>(std::uintptr_t{0x10});
  EXPECT_EQ(fake_.cuStreamEndCapture(stream_, &graph), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(status(stream_), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(fake_.live_handles().graphs, 0u);
  // Nothing of it lingers: unsafe calls are allowed again.
  CUdeviceptr p = alloc(16);
  free(p);
}

TEST_F(FakeFaults, AnInjectedCapturedOperationInvalidatesTheCapture) {
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  fake_.fail_call("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(empty(stream_), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(status(stream_), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  end_any_capture(stream_);
  // Every other stream-ordered entry point alike.
  int host = 0;
  const std::pair<const char*, std::function<CUresult()>> calls[] = {
      {"cuStreamWaitEvent", [&] { return fake_.cuStreamWaitEvent(stream_, nullptr, 0); }},
      {"cuEventRecord", [&] { return fake_.cuEventRecord(nullptr, stream_); }},
      {"cuMemAllocAsync",
       [&] {
         CUdeviceptr p = 0;
         return fake_.cuMemAllocAsync(&p, 16, stream_);
       }},
      {"cuMemFreeAsync", [&] { return fake_.cuMemFreeAsync(1, stream_); }},
      {"cuMemcpyHtoDAsync", [&] { return fake_.cuMemcpyHtoDAsync(1, &host, 4, stream_); }},
      {"cuMemcpyDtoHAsync", [&] { return fake_.cuMemcpyDtoHAsync(&host, 1, 4, stream_); }},
      {"cuMemsetD8Async", [&] { return fake_.cuMemsetD8Async(1, 0, 4, stream_); }},
      {"cuGraphUpload", [&] { return fake_.cuGraphUpload(nullptr, stream_); }},
      {"cuGraphLaunch", [&] { return fake_.cuGraphLaunch(nullptr, stream_); }},
  };
  for (const auto& [entry, call] : calls) {
    ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    fake_.fail_call(entry, CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(call(), CUDA_ERROR_INVALID_VALUE) << entry;
    EXPECT_EQ(fake_.calls().back().entry_point, entry);
    EXPECT_TRUE(fake_.calls().back().injected) << entry;
    EXPECT_EQ(status(stream_), CU_STREAM_CAPTURE_STATUS_INVALIDATED) << entry;
    end_any_capture(stream_);
  }
}

TEST_F(FakeFaults, AnInjectedCallThatIsNotStreamOrderedLeavesTheCaptureAlone) {
  // Really called on a capturing stream, these would invalidate its capture; injected, they never
  // ran, so it stays active.
  ASSERT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  fake_.fail_call("cuStreamQuery", CUDA_ERROR_NOT_READY);
  EXPECT_EQ(fake_.cuStreamQuery(stream_), CUDA_ERROR_NOT_READY);
  fake_.fail_call("cuStreamSynchronize", CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(fake_.cuStreamSynchronize(stream_), CUDA_ERROR_LAUNCH_FAILED);
  fake_.fail_call("cuCtxSynchronize", CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(fake_.cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_EQ(status(stream_), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  end_any_capture(stream_);
}

TEST_F(FakeFaults, AnInjectedOperationOutsideCaptureHasNoEffect) {
  const CUdeviceptr a = alloc(16);
  fake_.fail_call("cuLaunchKernel", CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(fill(stream_, a, 1, 4), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(fake_.pending_operations(), 0u);
  fake_.fail_call("cuStreamBeginCapture", CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(fake_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(status(stream_), CU_STREAM_CAPTURE_STATUS_NONE);
  fake_.fail_call("cuMemFree", CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake_.cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
  free(a);  // still allocated
}

TEST_F(FakeFaults, EveryCallIsLoggedWithItsResultAndThread) {
  fake_.clear_calls();
  fake_.fail_call("cuStreamQuery", CUDA_ERROR_NOT_READY);
  EXPECT_EQ(fake_.cuStreamQuery(stream_), CUDA_ERROR_NOT_READY);
  CUdeviceptr p = 0;
  EXPECT_EQ(fake_.cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
  // (Not cuStreamQuery: a user stream carries its context, measured on the H200.)
  std::thread other([&] {
    std::size_t free = 0, total = 0;
    EXPECT_EQ(fake_.cuMemGetInfo(&free, &total), CUDA_ERROR_INVALID_CONTEXT);
  });
  const std::thread::id other_id = other.get_id();
  other.join();
  const auto calls = fake_.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].entry_point, "cuStreamQuery");
  EXPECT_EQ(calls[0].result, CUDA_ERROR_NOT_READY);
  EXPECT_TRUE(calls[0].injected);
  EXPECT_EQ(calls[0].thread, std::this_thread::get_id());
  EXPECT_EQ(calls[1].entry_point, "cuMemAlloc");
  EXPECT_EQ(calls[1].result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_FALSE(calls[1].injected);
  EXPECT_EQ(calls[2].thread, other_id);
  EXPECT_EQ(calls[2].result, CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(fake_.call_count("cuStreamQuery"), 1u);
  EXPECT_EQ(fake_.call_count("cuMemGetInfo"), 1u);
  EXPECT_EQ(fake_.call_count("cuMemAlloc"), 1u);
  EXPECT_EQ(fake_.call_count("cuGraphLaunch"), 0u);
  EXPECT_EQ(fake_.total_calls(), 3u);
  fake_.clear_calls();
  EXPECT_THAT(fake_.calls(), IsEmpty());
  EXPECT_EQ(fake_.total_calls(), 0u);
}

TEST_F(FakeFaults, EntryPointsAreLoggedUnderCudasNames) {
  fake_.clear_calls();
  const CUgraph graph = capture(stream_, [&] { EXPECT_EQ(empty(stream_), CUDA_SUCCESS); });
  const CUgraphExec exec = instantiate(graph);
  EXPECT_EQ(fake_.cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
  std::vector<std::string> names;
  for (const CallRecord& call : fake_.calls()) names.push_back(call.entry_point);
  EXPECT_THAT(names, ElementsAre("cuStreamBeginCapture", "cuLaunchKernel", "cuStreamEndCapture",
                                 "cuGraphInstantiateWithFlags", "cuGraphLaunch",
                                 "cuGraphExecDestroy", "cuGraphDestroy"));
}

TEST(FakeCallLog, RecordCallsOffKeepsCountsOnly) {
  FakeDriverOptions options;
  options.record_calls = false;
  FakeDriver fake(options);
  int version = 0;
  EXPECT_EQ(fake.cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(fake.cuInit(0), CUDA_SUCCESS);
  EXPECT_THAT(fake.calls(), IsEmpty());
  EXPECT_EQ(fake.call_count("cuInit"), 1u);
  EXPECT_EQ(fake.total_calls(), 2u);
}

TEST(FakeErrorNames, AnswerFromTheSharedTable) {
  FakeDriver fake;  // no cuInit needed
  for (std::size_t i = 0; i < known_cu_result_count(); ++i) {
    const CUresult code = known_cu_result(i);
    const char* name = nullptr;
    const char* text = nullptr;
    EXPECT_EQ(fake.cuGetErrorName(code, &name), CUDA_SUCCESS);
    EXPECT_EQ(fake.cuGetErrorString(code, &text), CUDA_SUCCESS);
    EXPECT_STREQ(name, cu_result_name(code));
    EXPECT_STREQ(text, cu_result_string(code));
  }
  const char* name = "x";
  EXPECT_EQ(fake.cuGetErrorName(static_cast<CUresult>(123456), &name), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(name, nullptr);
  const char* text = "x";
  EXPECT_EQ(fake.cuGetErrorString(static_cast<CUresult>(123456), &text), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(text, nullptr);
  EXPECT_EQ(fake.cuGetErrorName(CUDA_SUCCESS, nullptr), CUDA_ERROR_INVALID_VALUE);
  const char* success = nullptr;
  EXPECT_EQ(fake.cuGetErrorString(CUDA_SUCCESS, &success), CUDA_SUCCESS);
  EXPECT_STREQ(success, "no error");
}

TEST_F(FakeFaults, LiveHandlesCountEveryKind) {
  const LiveHandles before = fake_.live_handles();
  EXPECT_EQ(before.contexts, 1u);
  EXPECT_EQ(before.streams, 1u);
  EXPECT_EQ(before.modules, 1u);
  CUstream stream = new_stream();
  CUevent event = new_event();
  const CUdeviceptr device = alloc(8);
  CUdeviceptr async = 0;
  ASSERT_EQ(fake_.cuMemAllocAsync(&async, 8, stream_), CUDA_SUCCESS);
  void* host = nullptr;
  ASSERT_EQ(fake_.cuMemAllocHost(&host, 8), CUDA_SUCCESS);
  const CUgraph graph = capture(stream, [] {});
  const CUgraphExec exec = instantiate(graph);
  const LiveHandles during = fake_.live_handles();
  EXPECT_EQ(during.streams, 2u);
  EXPECT_EQ(during.events, 1u);
  EXPECT_EQ(during.device_allocations, 2u);
  EXPECT_EQ(during.host_allocations, 1u);
  EXPECT_EQ(during.graphs, 1u);
  EXPECT_EQ(during.execs, 1u);
  EXPECT_EQ(during.total(), before.total() + 7);
  EXPECT_EQ(fake_.cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuMemFreeHost(host), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuMemFreeAsync(async, stream_), CUDA_SUCCESS);
  free(device);
  EXPECT_EQ(fake_.cuEventDestroy(event), CUDA_SUCCESS);
  EXPECT_EQ(fake_.cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(fake_.live_handles(), before);
}

// A name that is no entry point (misspelt, or cuda.h's versioned export) would arm a fault that
// can never fire, and a test of the error path it meant would pass for another reason: each way
// of arming refuses it, on both drivers that speak the vocabulary, and arms nothing.
template <class Driver>
void expect_unknown_names_refused(Driver& driver) {
  const auto message = [&](auto&& arm) -> std::string {
    try {
      arm();
    } catch (const std::invalid_argument& refused) {
      return refused.what();
    }
    return "(not refused)";
  };
  EXPECT_THAT(message([&] { driver.fail_call("cuNoSuchCall", CUDA_ERROR_OUT_OF_MEMORY); }),
              AllOf(HasSubstr("fail_call"), HasSubstr("\"cuNoSuchCall\" is not an entry point")));
  EXPECT_THAT(message([&] { driver.fail_always("cuGraphInstantiate_v2", CUDA_ERROR_UNKNOWN); }),
              AllOf(HasSubstr("fail_always"),
                    HasSubstr("the nearest: cuGraphInstantiateWithFlags, "
                              "cuGraphInstantiateWithParams")));
  EXPECT_THAT(message([&] {
                driver.fail_when("cuMemAlloc_v2", CUDA_ERROR_UNKNOWN,
                                 [](const CallInfo&) { return true; });
              }),
              AllOf(HasSubstr("fail_when"), HasSubstr("the nearest: cuMemAlloc")));
  EXPECT_THAT(driver.unfired_faults(), IsEmpty()) << "nothing was armed";
  EXPECT_NO_THROW(driver.fail_when("", CUDA_ERROR_UNKNOWN, [](const CallInfo&) { return false; }));
  EXPECT_NO_THROW(driver.fail_always("cuGraphInstantiateWithFlags", CUDA_ERROR_UNKNOWN));
  driver.clear_faults();
}

TEST_F(FakeFaults, AnUnknownEntryPointIsRefusedWhenArmed) {
  expect_unknown_names_refused(fake_);
  FaultInjectingDriver faults(fake_);
  expect_unknown_names_refused(faults);
  const CUdeviceptr p = alloc(16);  // nothing was armed: the next allocation succeeds
  free(p);
}

template <class Driver>
void expect_unfired_listed(Driver& driver, CUstream stream) {
  driver.fail_call("cuGraphInstantiateWithFlags", CUDA_ERROR_OUT_OF_MEMORY);
  driver.fail_call("cuStreamSynchronize", CUDA_ERROR_LAUNCH_FAILED, 2);
  EXPECT_EQ(driver.cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_THAT(driver.unfired_faults(),
              ElementsAre("cuGraphInstantiateWithFlags: call 1 from when it was armed never came "
                          "(0 calls since), CUDA_ERROR_OUT_OF_MEMORY not returned",
                          "cuStreamSynchronize: call 2 from when it was armed never came (1 call "
                          "since), CUDA_ERROR_LAUNCH_FAILED not returned"));
  EXPECT_EQ(driver.cuStreamSynchronize(stream), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_THAT(driver.unfired_faults(), ElementsAre(HasSubstr("cuGraphInstantiateWithFlags")));
  driver.clear_faults();
  EXPECT_THAT(driver.unfired_faults(), IsEmpty());
}

TEST_F(FakeFaults, UnfiredFaultsListsTheFailCallsThatNeverFired) {
  expect_unfired_listed(fake_, stream_);
  FaultInjectingDriver faults(fake_);
  expect_unfired_listed(faults, stream_);
  // fail_always and fail_when have no moment to miss: they are not listed.
  fake_.fail_always("cuGraphLaunch", CUDA_ERROR_UNKNOWN);
  fake_.fail_when("cuGraphLaunch", CUDA_ERROR_UNKNOWN, [](const CallInfo&) { return true; });
  EXPECT_THAT(fake_.unfired_faults(), IsEmpty());
  fake_.clear_faults();
}

}  // namespace
}  // namespace graphcap::fake::unit
