// Which driver entry points each graphcap operation calls: the table in
// docs/testing-on-the-fake.md ("Which entry point each operation calls"), row by row, asserted from
// the call log of a FaultInjectingDriver around the test driver. A fault test arms the entry point
// its operation calls; a name from this table is one the operation is known to reach. Every
// driver: the same calls are made over the fake and over libcuda.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fault_fixture.h"
#include "matchers.h"

namespace graphcap::testing {
namespace {

using ::testing::IsSupersetOf;

class EntryPointsByOperation : public FaultFixture {
 protected:
  // The distinct entry points `operation` called through the device's driver, in first-call order.
  template <class Operation>
  std::vector<std::string> entry_points_of(Operation&& operation) {
    faults().clear_calls();
    operation();
    std::vector<std::string> names;
    for (const fake::CallRecord& call : faults().calls()) {
      if (std::find(names.begin(), names.end(), call.entry_point) == names.end()) {
        names.push_back(call.entry_point);
      }
    }
    return names;
  }

  Result<void> step(const Buffer& x) { return add_one(x, x, 32); }
};

TEST_F(EntryPointsByOperation, BuffersCopiesAndFills) {
  // A size the pool has not served yet: the pool grows by one driver allocation.
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(device_->alloc(3 << 20, stream()), IsOk()); }),
              Contains("cuMemAlloc"));
  Buffer x;
  EXPECT_THAT(entry_points_of([&] { x = upload_u32(iota_u32(32)); }),
              Contains("cuMemcpyHtoDAsync"));
  EXPECT_THAT(entry_points_of([&] {
                ASSERT_THAT(device_->write(x, to_bytes(iota_u32(32)), stream()), IsOk());
              }),
              Contains("cuMemcpyHtoDAsync"));
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(device_->read(x, stream()), IsOk()); }),
              IsSupersetOf({"cuMemcpyDtoHAsync", "cuStreamSynchronize"}));
  Result<Buffer> y = device_->alloc(x.size(), stream());
  ASSERT_THAT(y, IsOk());
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(device_->copy(*y, x, stream()), IsOk()); }),
              Contains("cuMemcpyDtoDAsync"));
  EXPECT_THAT(entry_points_of([&] {
                ASSERT_THAT(device_->fill(*y, std::uint8_t{0}, stream()), IsOk());
              }),
              Contains("cuMemsetD8Async"));
  EXPECT_THAT(entry_points_of([&] {
                ASSERT_THAT(device_->fill(*y, std::uint32_t{7}, stream()), IsOk());
              }),
              Contains("cuMemsetD32Async"));
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(device_->sync(stream()), IsOk()); }),
              Contains("cuStreamSynchronize"));
}

TEST_F(EntryPointsByOperation, ModulesKernelsAndLaunches) {
  Module module;
  EXPECT_THAT(entry_points_of([&] {
                Result<Module> loaded = device_->load_module(driver_->kernel_image());
                ASSERT_THAT(loaded, IsOk());
                module = std::move(loaded).value();
              }),
              Contains("cuModuleLoadData"));
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(module.kernel("add_one"), IsOk()); }),
              IsSupersetOf({"cuModuleGetFunction", "cuFuncGetParamInfo"}));
  Buffer x = upload_u32(iota_u32(32));
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(step(x), IsOk()); }), Contains("cuLaunchKernel"));
  EXPECT_THAT(entry_points_of([&] {
                ASSERT_THAT(device_->launch(stream(), add_one_, dims_for(32),
                                            {Arg::in(x), Arg::out(x), Arg::value(32u)},
                                            LaunchOptions{.priority = 1}),
                            IsOk());
              }),
              Contains("cuLaunchKernelEx"));
}

TEST_F(EntryPointsByOperation, StreamsAndEvents) {
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(device_->create_stream(), IsOk()); }),
              Contains("cuStreamCreate"));
  Event event;
  EXPECT_THAT(entry_points_of([&] { event = new_event(); }), Contains("cuEventCreate"));
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(device_->record_event(event, stream()), IsOk()); }),
              Contains("cuEventRecord"));
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(device_->wait(stream(), event), IsOk()); }),
              Contains("cuStreamWaitEvent"));
}

TEST_F(EntryPointsByOperation, RecordingReplayingAndDestroyingAGraph) {
  Buffer x = upload_u32(iota_u32(32));
  EXPECT_THAT(entry_points_of([&] {
                ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
                ASSERT_THAT(step(x), IsOk());  // the warm-up
              }),
              Not(Contains("cuStreamBeginCapture")));
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(device_->begin_capture(stream()), IsOk()); }),
              Contains("cuStreamBeginCapture"));
  ASSERT_THAT(step(x), IsOk());
  Graph graph;
  EXPECT_THAT(entry_points_of([&] {
                Result<Graph> closed = device_->end_capture(stream());
                ASSERT_THAT(closed, IsOk());
                graph = std::move(closed).value();
              }),
              IsSupersetOf({"cuStreamEndCapture", "cuGraphInstantiateWithParams", "cuGraphUpload",
                            "cuGraphDestroy"}));
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(graph.replay(), IsOk()); }),
              Contains("cuGraphLaunch"));
  // Re-recording into the graph: the executable takes the new recording in place.
  EXPECT_THAT(entry_points_of([&] {
                ASSERT_THAT(device_->prepare_capture(stream()), IsOk());
                ASSERT_THAT(step(x), IsOk());
                ASSERT_THAT(device_->begin_capture(stream()), IsOk());
                ASSERT_THAT(step(x), IsOk());
                ASSERT_THAT(device_->end_capture(stream(), graph), IsOk());
              }),
              Contains("cuGraphExecUpdate"));
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(graph.destroy(), IsOk()); }),
              IsSupersetOf({"cuStreamSynchronize", "cuGraphExecDestroy"}));
}

TEST_F(EntryPointsByOperation, DeviceRecordAndAParamOfAGraph) {
  Buffer x = upload_u32(iota_u32(32));
  Param<std::uint32_t> n = device_->param(32u);
  auto launch = [&] {
    return device_->launch(stream(), add_one_, dims_for(32),
                           {Arg::in(x), Arg::out(x), Arg::param(n)});
  };
  Graph graph;
  EXPECT_THAT(entry_points_of([&] {
                Result<Graph> recorded = device_->record(stream(), launch);
                ASSERT_THAT(recorded, IsOk());
                graph = std::move(recorded).value();
              }),
              IsSupersetOf({"cuLaunchKernel", "cuStreamBeginCapture", "cuStreamEndCapture",
                            "cuGraphInstantiateWithParams", "cuGraphUpload"}));
  EXPECT_THAT(entry_points_of([&] { ASSERT_THAT(graph.set(n, 16u), IsOk()); }),
              Contains("cuGraphExecKernelNodeSetParams"));
}

TEST_F(EntryPointsByOperation, AGraphPoolOnVirtualMemory) {
  std::optional<Result<GraphPool>> created_pool;
  const std::vector<std::string> created =
      entry_points_of([&] { created_pool = device_->create_graph_pool(stream()); });
  ASSERT_TRUE(created_pool.has_value());
  Result<GraphPool>& pool = *created_pool;
  ASSERT_THAT(pool, IsOk());
  if (!pool->stats().virtual_memory) GTEST_SKIP() << "this device's pools are on plain allocations";
  EXPECT_THAT(created, Contains("cuMemAddressReserve"));
  Buffer x = upload_u32(iota_u32(32));
  CaptureOptions options;
  options.pool = &*pool;
  EXPECT_THAT(entry_points_of([&] {
                Result<Graph> recorded = device_->record(
                    stream(),
                    [&]() -> Result<void> {
                      Result<Buffer> scratch = device_->alloc(x.size(), stream());
                      if (!scratch) return scratch.error();
                      if (Result<void> r = add_one(x, *scratch, 32); !r) return r;
                      return add_one(*scratch, x, 32);
                    },
                    options);
                ASSERT_THAT(recorded, IsOk());
              }),
              IsSupersetOf({"cuMemCreate", "cuMemMap", "cuMemSetAccess"}));
}

}  // namespace
}  // namespace graphcap::testing
