// A small inference engine and its GoogleTest suite on the fake, written from the README and the
// docs alone against the installed package: its kernels written once (engine_kernels.cu), one
// graph per batch size in a GraphCache with a Param, intermediates in the cache's shared pool,
// and the failures an engine's tests must see: a strict overrun, a doomed recording, an
// instantiate fault and an upload fault. Each fault test checks its fault fired (unfired_faults()).
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <graphcap/fake/fake_driver.h>
#include <graphcap/fake/fault_injecting_driver.h>
#include <graphcap/graphcap.h>

namespace {

using namespace graphcap;
using ::testing::AllOf;
using ::testing::Each;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// y = a * x + x over the first `batch` elements, through an intermediate h = a * x.
class Engine {
 public:
  static constexpr unsigned kMaxBatch = 1024;

  explicit Engine(DriverApi& driver, GraphCacheOptions options = {})
      : device_(Device::open(driver).value()),
        s_(&device_->stream()),
        module_(device_->load_module(fake::compiled_kernels_image()).value()),
        scale_(module_.kernel("scale").value()),
        add_(module_.kernel("add").value()),
        a_(device_->param(2.0f)),
        cache_(*device_, *s_, options) {
    std::vector<float> x(kMaxBatch, 1.5f);
    x_ = device_->upload(std::as_bytes(std::span(x)), *s_).value();
    y_ = device_->alloc(kMaxBatch * sizeof(float), *s_).value();
  }

  // One step of `batch`: recorded on its batch's first run, replayed after.
  Result<void> run(unsigned batch) {
    return cache_.run(batch, [this, batch] { return step(batch); });
  }

  // The scale from the next run on: every cached graph that took the Param, and the Param.
  Result<void> set_scale(float a) { return cache_.set(a_, a); }

  Result<std::vector<float>> output(unsigned batch) {
    GRAPHCAP_ASSIGN_OR_RETURN(std::vector<std::byte> bytes,
                              device_->read(y_, 0, batch * sizeof(float), *s_));
    std::vector<float> values(batch);
    std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
  }

  Result<void> step(unsigned batch) {
    // An intermediate: allocated and dropped inside the step, so recorded into the cache's pool.
    GRAPHCAP_ASSIGN_OR_RETURN(Buffer h, device_->alloc(batch * sizeof(float), *s_));
    const LaunchDims dims{{(batch + 255) / 256, 1, 1}, {256, 1, 1}};
    GRAPHCAP_TRY(device_->launch(*s_, scale_, dims,
                                 {Arg::in(x_), Arg::out(h), Arg::param(a_), Arg::value(batch)}));
    return device_->launch(*s_, add_, dims,
                           {Arg::in(h), Arg::in(x_), Arg::out(y_), Arg::value(batch)});
  }

  Device& device() { return *device_; }
  Stream& stream() { return *s_; }
  GraphCache<unsigned>& cache() { return cache_; }

 private:
  std::unique_ptr<Device> device_;
  Stream* s_;
  Module module_;
  Kernel scale_, add_;
  Buffer x_, y_;
  Param<float> a_;
  GraphCache<unsigned> cache_;
};

// Log lines at warn or worse while the test runs.
class Warnings {
 public:
  Warnings() {
    previous_ = set_log_sink([this](LogLevel level, std::string_view message) {
      if (level <= LogLevel::warn) lines.emplace_back(message);
    });
  }
  ~Warnings() { set_log_sink(previous_); }
  std::vector<std::string> lines;

 private:
  LogSink previous_;
};

// A fake of its own per test (a strict fault is sticky), behind a FaultInjectingDriver.
class EngineTest : public ::testing::Test {
 protected:
  EngineTest() { fake::register_compiled_kernels(fake_); }
  void TearDown() override {
    engine_.reset();
    EXPECT_THAT(faults_.unfired_faults(), IsEmpty()) << "a fault the test armed never fired";
    EXPECT_EQ(fake_.live_handles().total(), 0u) << "the engine leaked driver handles";
  }
  Engine& engine(GraphCacheOptions options = {}) {
    if (!engine_) engine_ = std::make_unique<Engine>(faults_, options);
    return *engine_;
  }
  // An engine whose tests see every refusal as run()'s error (docs/recording.md).
  Engine& strict_engine() { return engine(GraphCacheOptions{.fail_on_refusal = true}); }

  fake::FakeDriver fake_;
  fake::FaultInjectingDriver faults_{fake_};
  std::unique_ptr<Engine> engine_;
};

TEST(EngineVersion, TheHeaderSaysThePackagesVersion) {
  EXPECT_STREQ(GRAPHCAP_VERSION_STRING, ENGINE_GRAPHCAP_PACKAGE_VERSION);
  EXPECT_EQ(GRAPHCAP_VERSION, GRAPHCAP_VERSION_MAJOR * 10000 + GRAPHCAP_VERSION_MINOR * 100 +
                                  GRAPHCAP_VERSION_PATCH);
  EXPECT_GE(GRAPHCAP_VERSION, 400);
}

TEST_F(EngineTest, EachBatchIsRecordedOnceAndReplaysWithTheParam) {
  // fail_on_refusal: a refused recording would be run()'s error, so fallbacks == 0 is asserted
  // by every ASSERT_TRUE below as much as by the count.
  for (unsigned batch : {256u, 1024u, 256u, 1024u}) ASSERT_TRUE(strict_engine().run(batch));
  GraphCacheStats stats = engine().cache().stats();
  EXPECT_EQ(stats.captures, 2u);
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.fallbacks, 0u);
  EXPECT_THAT(engine().output(1024).value(), Each(4.5f));  // 2 * 1.5 + 1.5

  ASSERT_TRUE(engine().set_scale(3.0f));
  ASSERT_TRUE(engine().run(1024));
  EXPECT_THAT(engine().output(1024).value(), Each(6.0f));  // 3 * 1.5 + 1.5
  EXPECT_EQ(engine().cache().stats().hits, 3u);
}

// docs/recording.md: the pool holds what its largest graph needs, rounded up to the driver's
// mapping granularity: 2 MiB on the fake as on the H200, for 4 KiB of intermediates here.
TEST_F(EngineTest, IntermediatesShareThePoolsOneGranule) {
  ASSERT_TRUE(engine().run(256));
  ASSERT_TRUE(engine().run(1024));
  const GraphCacheFootprint footprint = engine().cache().footprint();
  EXPECT_EQ(footprint.graphs, 2u);
  EXPECT_TRUE(footprint.pool_on_virtual_memory);
  EXPECT_EQ(footprint.pool_bytes, std::size_t{2} << 20);
  const Graph* graph = engine().cache().graph(1024);
  ASSERT_NE(graph, nullptr);
  // The graph's own share: its 4 KiB intermediate, in the pool's granule.
  EXPECT_EQ(graph->report().pool_shared_bytes, Engine::kMaxBatch * sizeof(float));
  EXPECT_EQ(graph->report().nodes(CU_GRAPH_NODE_TYPE_KERNEL), 2u);
}

TEST_F(EngineTest, AnInstantiateFaultFallsBackToTheEagerStep) {
  faults_.fail_call("cuGraphInstantiateWithParams", CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_TRUE(engine().run(256));  // the warm-up did the step's work: not run()'s error
  EXPECT_EQ(engine().cache().stats().fallbacks, 1u);
  EXPECT_EQ(engine().cache().stats().captures, 0u);
  ASSERT_NE(engine().cache().last_refusal(), nullptr);
  EXPECT_EQ(engine().cache().last_refusal()->driver_code(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_THAT(engine().output(256).value(), Each(4.5f));
  ASSERT_TRUE(engine().run(256));  // tried again: recorded this time
  EXPECT_EQ(engine().cache().stats().captures, 1u);

  // The same fault under Device::record: the recording's error, with the driver's code.
  faults_.fail_call("cuGraphInstantiateWithParams", CUDA_ERROR_OUT_OF_MEMORY);
  Result<Graph> graph =
      engine().device().record(engine().stream(), [&] { return engine().step(512); });
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.error().code(), Errc::out_of_memory);
  EXPECT_EQ(graph.error().driver_code(), CUDA_ERROR_OUT_OF_MEMORY);
}

TEST_F(EngineTest, WithFailOnRefusalAnInstantiateFaultIsRunsError) {
  faults_.fail_call("cuGraphInstantiateWithParams", CUDA_ERROR_OUT_OF_MEMORY);
  Result<void> ran = strict_engine().run(256);
  ASSERT_FALSE(ran);
  EXPECT_EQ(ran.error().code(), Errc::out_of_memory);
  EXPECT_EQ(ran.error().driver_code(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(engine().cache().stats().fallbacks, 0u);
  EXPECT_EQ(engine().stream().capture_state(), CaptureState::no_capture);
  ASSERT_TRUE(engine().run(256));  // tried again: recorded this time
  EXPECT_EQ(engine().cache().stats().captures, 1u);
  EXPECT_EQ(engine().cache().stats().fallbacks, 0u);
}

TEST_F(EngineTest, AnUploadFaultIsAWarningAndTheFirstReplayUploads) {
  Warnings log;
  faults_.fail_call("cuGraphUpload", CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_TRUE(engine().run(256));
  const Graph* graph = engine().cache().graph(256);
  ASSERT_NE(graph, nullptr);
  EXPECT_FALSE(graph->report().uploaded);
  ASSERT_TRUE(engine().run(256));
  EXPECT_EQ(engine().cache().stats().hits, 1u);
  EXPECT_THAT(engine().output(256).value(), Each(4.5f));
  ASSERT_EQ(log.lines.size(), 1u) << "the report is the only other place that says so";
  EXPECT_THAT(log.lines[0], AllOf(HasSubstr("cuGraphUpload"), HasSubstr("CUDA_ERROR_OUT_OF_MEMORY")));
}

// By hand: a launch that fails inside the recording dooms it; end_capture refuses it with
// Errc::doomed and the launch's own driver code, and the stream is usable again.
TEST_F(EngineTest, AFailedLaunchDoomsTheRecording) {
  Engine& e = engine();
  ASSERT_TRUE(e.device().prepare_capture(e.stream()));
  ASSERT_TRUE(e.step(256));  // the warm-up
  ASSERT_TRUE(e.device().begin_capture(e.stream()));
  faults_.fail_call("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  Result<void> recorded = e.step(256);
  ASSERT_FALSE(recorded);
  EXPECT_EQ(recorded.error().driver_code(), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  Result<Graph> graph = e.device().end_capture(e.stream());
  ASSERT_FALSE(graph);
  EXPECT_EQ(graph.error().code(), Errc::doomed);
  EXPECT_EQ(graph.error().driver_code(), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_THAT(graph.error().message(), HasSubstr("cuLaunchKernel"));
  EXPECT_EQ(e.stream().capture_state(), CaptureState::no_capture);
  ASSERT_TRUE(e.run(256));  // the stream records again
  EXPECT_EQ(e.cache().stats().captures, 1u);
}

// The strict fake: one element past a Buffer fails the next sync with the GPU's code, the
// message naming the violation. Expected paths are quiet: the sync said it, so closing the device
// after the (sticky) fault warns of nothing.
TEST(EngineStrict, AnOverrunFailsTheNextSync) {
  fake::FakeDriver strict;
  fake::register_compiled_kernels(strict);
  Warnings log;
  {
    std::unique_ptr<Device> device = Device::open(strict).value();
    Stream& s = device->stream();
    Module module = device->load_module(fake::compiled_kernels_image()).value();
    Kernel write_past = module.kernel("write_past").value();
    Buffer y = device->alloc(16 * sizeof(float), s).value();
    ASSERT_TRUE(device->launch(s, write_past, LaunchDims{}, {Arg::inout(y), Arg::value(16u)}));
    Result<void> synced = device->sync(s);
    ASSERT_FALSE(synced);
    EXPECT_EQ(synced.error().driver_code(), CUDA_ERROR_ILLEGAL_ADDRESS);
    EXPECT_THAT(synced.error().message(),
                AllOf(HasSubstr("write_past"), HasSubstr("past the end of the Buffer")));
    EXPECT_EQ(strict.violations().size(), 1u);
  }
  EXPECT_THAT(log.lines, IsEmpty());
}

}  // namespace
