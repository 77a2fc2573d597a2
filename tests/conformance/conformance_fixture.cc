#include "conformance_fixture.h"

#include <numeric>

#include <graphcap/driver/error_names.h>
#include <graphcap/fake/fake_driver.h>

namespace graphcap {

void PrintTo(CUresult code, std::ostream* os) {
  *os << describe_cu_result(code) << " [" << static_cast<int>(code) << "]";
}

void PrintTo(CUstreamCaptureStatus status, std::ostream* os) {
  switch (status) {
    case CU_STREAM_CAPTURE_STATUS_NONE: *os << "NONE"; return;
    case CU_STREAM_CAPTURE_STATUS_ACTIVE: *os << "ACTIVE"; return;
    case CU_STREAM_CAPTURE_STATUS_INVALIDATED: *os << "INVALIDATED"; return;
  }
  *os << "CUstreamCaptureStatus " << static_cast<int>(status);
}

void PrintTo(CUstreamCaptureMode mode, std::ostream* os) {
  switch (mode) {
    case CU_STREAM_CAPTURE_MODE_GLOBAL: *os << "GLOBAL"; return;
    case CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: *os << "THREAD_LOCAL"; return;
    case CU_STREAM_CAPTURE_MODE_RELAXED: *os << "RELAXED"; return;
  }
  *os << "CUstreamCaptureMode " << static_cast<int>(mode);
}

void PrintTo(CUgraphNodeType type, std::ostream* os) {
  static constexpr const char* kNames[] = {
      "KERNEL",     "MEMCPY",           "MEMSET",          "HOST",      "GRAPH",
      "EMPTY",      "WAIT_EVENT",       "EVENT_RECORD",    "EXT_SEMAS_SIGNAL",
      "EXT_SEMAS_WAIT", "MEM_ALLOC",    "MEM_FREE",        "BATCH_MEM_OP", "CONDITIONAL"};
  const int index = static_cast<int>(type);
  if (index >= 0 && index < kGraphNodeTypeCount) {
    *os << kNames[index];
  } else {
    *os << "CUgraphNodeType " << index;
  }
}

void PrintTo(CUgraphExecUpdateResult result, std::ostream* os) {
  static constexpr const char* kNames[] = {
      "SUCCESS",           "ERROR",         "ERROR_TOPOLOGY_CHANGED",
      "ERROR_NODE_TYPE_CHANGED", "ERROR_FUNCTION_CHANGED", "ERROR_PARAMETERS_CHANGED",
      "ERROR_NOT_SUPPORTED", "ERROR_UNSUPPORTED_FUNCTION_CHANGE", "ERROR_ATTRIBUTES_CHANGED"};
  const int index = static_cast<int>(result);
  if (index >= 0 && index < static_cast<int>(std::size(kNames))) {
    *os << kNames[index];
  } else {
    *os << "CUgraphExecUpdateResult " << index;
  }
}

}  // namespace graphcap

namespace graphcap::testing {

ThreadCaptureMode::ThreadCaptureMode(DriverApi& api, CUstreamCaptureMode mode)
    : api_(&api), previous_(mode) {
  status_ = api_->cuThreadExchangeStreamCaptureMode(&previous_);
}

ThreadCaptureMode::~ThreadCaptureMode() {
  if (status_ != CUDA_SUCCESS) return;
  CUstreamCaptureMode mode = previous_;
  api_->cuThreadExchangeStreamCaptureMode(&mode);
}

void RawStream::reset() {
  if (stream_ == nullptr) return;
  const CUstream stream = std::exchange(stream_, nullptr);
  ThreadCaptureMode relaxed(*api_, CU_STREAM_CAPTURE_MODE_RELAXED);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (api_->cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS &&
      status != CU_STREAM_CAPTURE_STATUS_NONE) {
    // A test that failed mid-capture: end it here, or the stream (and, on libcuda, the thread)
    // stays in capture for whatever runs next.
    CUgraph graph = nullptr;
    api_->cuStreamEndCapture(stream, &graph);
    if (graph != nullptr) api_->cuGraphDestroy(graph);
  }
  api_->cuStreamDestroy(stream);
}

std::string capture_mode_name(const ::testing::TestParamInfo<CUstreamCaptureMode>& param) {
  return ::testing::PrintToString(param.param);
}

std::vector<std::uint32_t> iota(std::size_t n, std::uint32_t first) {
  std::vector<std::uint32_t> values(n);
  std::iota(values.begin(), values.end(), first);
  return values;
}

void ConformanceTest::SetUp() {
  test_driver_ = devices() == 1 ? make_test_driver() : make_test_driver(devices());
  api_ = &test_driver_->api();
  ASSERT_EQ(api().cuInit(0), CUDA_SUCCESS);
  ASSERT_EQ(api().cuDeviceGet(&device_, 0), CUDA_SUCCESS);
  ASSERT_EQ(api().cuDevicePrimaryCtxRetain(&context_, device_), CUDA_SUCCESS);
  context_retained_ = true;
  ASSERT_EQ(api().cuCtxSetCurrent(context_), CUDA_SUCCESS);
  // Remember the thread's capture mode (reading it means exchanging it twice).
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  ASSERT_EQ(api().cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  initial_mode_ = mode;
  ASSERT_EQ(api().cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
}

void ConformanceTest::TearDown() {
  if (api_ == nullptr) return;
  CUstreamCaptureMode mode = initial_mode_;
  EXPECT_EQ(api().cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
  EXPECT_EQ(mode, initial_mode_) << "the test did not restore the thread's capture mode";
  if (fake::FakeDriver* fake = test_driver().fake()) {
    // Only the fake can count handles; on it, every test must have cleaned up after itself.
    fake::LiveHandles live = fake->live_handles();
    live.contexts = 0;
    EXPECT_EQ(live.total(), 0u)
        << "leaked: streams " << live.streams << ", events " << live.events << ", modules "
        << live.modules << ", graphs " << live.graphs << ", execs " << live.execs
        << ", device allocations " << live.device_allocations << ", host allocations "
        << live.host_allocations << ", address ranges " << live.address_ranges
        << ", memory handles " << live.memory_handles << ", mappings " << live.mappings;
  }
  if (context_retained_) {
    EXPECT_EQ(api().cuDevicePrimaryCtxRelease(device_), CUDA_SUCCESS);
  }
}

RawStream ConformanceTest::new_stream() {
  CUstream stream = nullptr;
  EXPECT_EQ(api().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  return RawStream(api(), stream);
}

RawEvent ConformanceTest::new_event() {
  CUevent event = nullptr;
  EXPECT_EQ(api().cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  return RawEvent(api(), event);
}

DeviceMemory ConformanceTest::alloc(std::size_t bytes) {
  CUdeviceptr pointer = 0;
  EXPECT_EQ(api().cuMemAlloc(&pointer, bytes), CUDA_SUCCESS);
  return DeviceMemory(api(), pointer);
}

std::size_t ConformanceTest::free_memory() {
  std::size_t free = 0;
  std::size_t total = 0;
  EXPECT_EQ(api().cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  return free;
}

void KernelsTest::SetUp() {
  ConformanceTest::SetUp();
  if (HasFatalFailure()) return;
  module_ = load_test_kernels();
  empty_ = kernel(module_, "empty");
  fill_ = kernel(module_, "fill");
  add_one_ = kernel(module_, "add_one");
  copy_ = kernel(module_, "copy");
  axpy_ = kernel(module_, "axpy");
  set_condition_ = kernel(module_, "set_condition");
  countdown_ = kernel(module_, "countdown");
  pdl_add_one_ = kernel(module_, "pdl_add_one");
  s_ = new_stream();
  ASSERT_FALSE(HasFailure());
}

void KernelsTest::TearDown() {
  s_.reset();
  module_.reset();
  ConformanceTest::TearDown();
}

void BodiesTest::SetUp() {
  KernelsTest::SetUp();
  if (HasFatalFailure()) return;
  words_ = alloc(64 * sizeof(std::uint32_t));
  body_ = new_stream();
  inner_ = new_stream();
  ASSERT_FALSE(HasFailure());
}

void BodiesTest::TearDown() {
  inner_.reset();
  body_.reset();
  words_.reset();
  KernelsTest::TearDown();
}

CUresult BodiesTest::capture_point(CUstream stream, CUgraph* graph, std::vector<CUgraphNode>* after) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUgraphNode* deps = nullptr;
  std::size_t count = 0;
  const CUresult r = api().cuStreamGetCaptureInfo(stream, &status, nullptr, graph, &deps, nullptr, &count);
  if (r == CUDA_SUCCESS) after->assign(deps, deps + count);
  return r;
}

RawModule ConformanceTest::load_test_kernels() {
  CUmodule module = nullptr;
  EXPECT_EQ(api().cuModuleLoadData(&module, test_driver().kernel_image().data()), CUDA_SUCCESS);
  return RawModule(api(), module);
}

CUfunction ConformanceTest::kernel(const RawModule& module, const char* name) {
  CUfunction function = nullptr;
  EXPECT_EQ(api().cuModuleGetFunction(&function, module.get(), name), CUDA_SUCCESS) << name;
  return function;
}

Exec ConformanceTest::instantiate(CUgraph graph, unsigned long long flags) {
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithFlags(&exec, graph, flags), CUDA_SUCCESS);
  return Exec(api(), exec);
}

void ConformanceTest::upload(CUdeviceptr dst, const std::vector<std::uint32_t>& values,
                             CUstream stream) {
  EXPECT_EQ(api().cuMemcpyHtoDAsync(dst, values.data(), values.size() * sizeof(std::uint32_t),
                                    stream),
            CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(stream), CUDA_SUCCESS);
}

std::vector<std::uint32_t> ConformanceTest::download(CUdeviceptr src, std::size_t count,
                                                     CUstream stream) {
  std::vector<std::uint32_t> values(count);
  EXPECT_EQ(api().cuMemcpyDtoHAsync(values.data(), src, count * sizeof(std::uint32_t), stream),
            CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(stream), CUDA_SUCCESS);
  return values;
}

std::vector<std::uint8_t> ConformanceTest::download_bytes(CUdeviceptr src, std::size_t count,
                                                          CUstream stream) {
  std::vector<std::uint8_t> bytes(count);
  EXPECT_EQ(api().cuMemcpyDtoHAsync(bytes.data(), src, count, stream), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(stream), CUDA_SUCCESS);
  return bytes;
}

CUstreamCaptureStatus ConformanceTest::capture_status(CUstream stream) {
  auto status = static_cast<CUstreamCaptureStatus>(-1);
  EXPECT_EQ(api().cuStreamIsCapturing(stream, &status), CUDA_SUCCESS);
  return status;
}

std::vector<CUgraphNodeType> ConformanceTest::node_types(CUgraph graph) {
  std::size_t count = 0;
  EXPECT_EQ(api().cuGraphGetNodes(graph, nullptr, &count), CUDA_SUCCESS);
  std::vector<CUgraphNode> nodes(count);
  if (count > 0) {
    EXPECT_EQ(api().cuGraphGetNodes(graph, nodes.data(), &count), CUDA_SUCCESS);
  }
  std::vector<CUgraphNodeType> types;
  for (CUgraphNode node : nodes) {
    auto type = static_cast<CUgraphNodeType>(-1);
    EXPECT_EQ(api().cuGraphNodeGetType(node, &type), CUDA_SUCCESS);
    types.push_back(type);
  }
  return types;
}

RawGraph ConformanceTest::capture(CUstream stream, const std::function<void()>& body,
                               CUstreamCaptureMode mode) {
  EXPECT_EQ(api().cuStreamBeginCapture(stream, mode), CUDA_SUCCESS);
  body();
  CUgraph graph = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  EXPECT_NE(graph, nullptr);
  return RawGraph(api(), graph);
}

void ConformanceTest::expect_invalidated(CUstream stream, CUfunction probe_kernel) {
  EXPECT_EQ(capture_status(stream), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(launch(probe_kernel, stream, 1, 1), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
      << "a call captured after the invalidation";
  CUgraph graph = reinterpret_cast<CUgraph>(std::uintptr_t{0x1});  // must come back NULL
  EXPECT_EQ(api().cuStreamEndCapture(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(capture_status(stream), CU_STREAM_CAPTURE_STATUS_NONE);
  // Usable again: work runs eagerly and completes.
  EXPECT_EQ(launch(probe_kernel, stream, 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(api().cuStreamSynchronize(stream), CUDA_SUCCESS);
}

void ConformanceTest::expect_still_active(CUstream stream, std::size_t nodes) {
  EXPECT_EQ(capture_status(stream), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUgraph graph = nullptr;
  EXPECT_EQ(api().cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  ASSERT_NE(graph, nullptr);
  RawGraph owned(api(), graph);
  EXPECT_EQ(node_types(graph).size(), nodes);
  EXPECT_EQ(capture_status(stream), CU_STREAM_CAPTURE_STATUS_NONE);
}

}  // namespace graphcap::testing
