// cuGraphInstantiateWithParams (docs/cuda-driver-facts.md, "cuGraphInstantiateWithParams"): the
// same checks as cuGraphInstantiateWithFlags, and what failed: result_out and the node
// (hErrNode_out, possibly a node of a conditional body). Each test is a row measured on the H200
// by docs/measurements/probes/instantiate_params_probe.cu (its case in brackets); result_out and
// hErrNode_out are preset to values the driver never writes, so a test sees that they were written.
#include <cstdint>
#include <cstring>
#include <vector>

#include <graphcap/driver/node_params.h>

#include "conformance_fixture.h"

namespace graphcap::testing {
namespace {

CUgraphNode unwritten_node() { return reinterpret_cast<CUgraphNode>(std::uintptr_t{0x1}); }
constexpr auto kUnwritten = static_cast<CUgraphInstantiateResult>(99);

class InstantiateParams : public BodiesTest {
 protected:

  CUDA_GRAPH_INSTANTIATE_PARAMS params(unsigned long long flags, CUstream upload = nullptr) {
    CUDA_GRAPH_INSTANTIATE_PARAMS p;
    std::memset(&p, 0, sizeof p);
    p.flags = flags;
    p.hUploadStream = upload;
    p.hErrNode_out = unwritten_node();
    p.result_out = kUnwritten;
    return p;
  }
  // Instantiates `graph` with `p`; the executable (destroyed with the owner) and the code.
  CUresult instantiate_with(CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS& p, Exec* out = nullptr) {
    CUgraphExec exec = nullptr;
    const CUresult result = api().cuGraphInstantiateWithParams(&exec, graph, &p);
    if (result == CUDA_SUCCESS) {
      Exec owned(api(), exec);
      if (out != nullptr) *out = std::move(owned);
    } else {
      EXPECT_EQ(exec, nullptr) << "a refused instantiate handed back an executable";
    }
    return result;
  }
  RawGraph one_kernel() {
    return capture(s_.get(), [&] {
      EXPECT_EQ(launch(fill_, s_.get(), 1, 1, words_.get(), 7u, 1u), CUDA_SUCCESS);
    });
  }
  CUgraphNodeType type_of(CUgraphNode node) {
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    EXPECT_EQ(api().cuGraphNodeGetType(node, &type), CUDA_SUCCESS);
    return type;
  }
  // A WHILE node (default 0) after `stream`'s dependencies: its body graph.
  CUgraph insert_while(CUstream stream) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph graph = nullptr;
    const CUgraphNode* deps = nullptr;
    std::size_t count = 0;
    EXPECT_EQ(api().cuStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, nullptr,
                                           &count),
              CUDA_SUCCESS);
    const std::vector<CUgraphNode> after(deps, deps + count);
    CUgraphConditionalHandle handle = 0;
    EXPECT_EQ(api().cuGraphConditionalHandleCreate(&handle, graph, context(), 0,
                                                   kGraphCondAssignDefault),
              CUDA_SUCCESS);
    CUgraphNodeParams node = conditional_node_params(handle, CU_GRAPH_COND_TYPE_WHILE, 1, context());
    CUgraphNode added = nullptr;
    EXPECT_EQ(api().cuGraphAddNode(&added, graph, after.data(), nullptr, after.size(), &node),
              CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamUpdateCaptureDependencies(stream, &added, nullptr, 1,
                                                      CU_STREAM_SET_CAPTURE_DEPENDENCIES),
              CUDA_SUCCESS);
    return node.conditional.phGraph_out[0];
  }
};

TEST_F(InstantiateParams, SuccessWritesResultSuccessAndNoNode) {  // I01, I01b
  RawGraph graph = one_kernel();
  CUDA_GRAPH_INSTANTIATE_PARAMS p = params(0);
  Exec exec;
  ASSERT_EQ(instantiate_with(graph.get(), p, &exec), CUDA_SUCCESS);
  EXPECT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
  EXPECT_EQ(p.hErrNode_out, nullptr);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(download(words_.get(), 1, s_.get())[0], 7u);
  RawGraph empty = capture(s_.get(), [] {});
  CUDA_GRAPH_INSTANTIATE_PARAMS q = params(0);
  EXPECT_EQ(instantiate_with(empty.get(), q), CUDA_SUCCESS);
  EXPECT_EQ(q.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
}

TEST_F(InstantiateParams, NullArgumentsAreInvalidValue) {  // I01c
  RawGraph graph = one_kernel();
  CUgraphExec exec = nullptr;
  EXPECT_EQ(api().cuGraphInstantiateWithParams(&exec, graph.get(), nullptr),
            CUDA_ERROR_INVALID_VALUE);
  CUDA_GRAPH_INSTANTIATE_PARAMS p = params(0);
  EXPECT_EQ(api().cuGraphInstantiateWithParams(nullptr, graph.get(), &p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
  CUDA_GRAPH_INSTANTIATE_PARAMS q = params(0);
  EXPECT_EQ(api().cuGraphInstantiateWithParams(&exec, nullptr, &q), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(q.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
}

TEST_F(InstantiateParams, AHandleNoNodeUsesIsConditionalHandleUnusedNamingNoNode) {  // I02
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph capturing = nullptr;
  ASSERT_EQ(api().cuStreamGetCaptureInfo(s_.get(), &status, nullptr, &capturing, nullptr, nullptr,
                                         nullptr),
            CUDA_SUCCESS);
  CUgraphConditionalHandle unused = 0;
  ASSERT_EQ(api().cuGraphConditionalHandleCreate(&unused, capturing, context(), 0,
                                                 kGraphCondAssignDefault),
            CUDA_SUCCESS);
  EXPECT_EQ(launch(fill_, s_.get(), 1, 1, words_.get(), 7u, 1u), CUDA_SUCCESS);
  CUgraph raw = nullptr;
  ASSERT_EQ(api().cuStreamEndCapture(s_.get(), &raw), CUDA_SUCCESS);
  RawGraph graph(api(), raw);
  CUDA_GRAPH_INSTANTIATE_PARAMS p = params(0);
  EXPECT_EQ(instantiate_with(graph.get(), p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED);
  EXPECT_EQ(p.hErrNode_out, nullptr);
}

TEST_F(InstantiateParams, MemoryNodesInAConditionalBodyAreNamedInTheBody) {  // I06
  CUgraph body = nullptr;
  RawGraph graph = capture(s_.get(), [&] {
    body = insert_while(s_.get());
    ASSERT_EQ(api().cuStreamBeginCaptureToGraph(body_.get(), body, nullptr, nullptr, 0,
                                                CU_STREAM_CAPTURE_MODE_RELAXED),
              CUDA_SUCCESS);
    CUdeviceptr scratch = 0;
    EXPECT_EQ(api().cuMemAllocAsync(&scratch, 256, body_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemFreeAsync(scratch, body_.get()), CUDA_SUCCESS);
    CUgraph ended = nullptr;
    EXPECT_EQ(api().cuStreamEndCapture(body_.get(), &ended), CUDA_SUCCESS);
  });
  CUDA_GRAPH_INSTANTIATE_PARAMS p = params(0);
  EXPECT_EQ(instantiate_with(graph.get(), p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED);
  ASSERT_NE(p.hErrNode_out, nullptr);
  EXPECT_EQ(type_of(p.hErrNode_out), CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  std::size_t count = 2;
  std::vector<CUgraphNode> in_body(count);
  ASSERT_EQ(api().cuGraphGetNodes(body, in_body.data(), &count), CUDA_SUCCESS);
  EXPECT_EQ(p.hErrNode_out, in_body[0]) << "the body's own MEM_ALLOC node";
}

TEST_F(InstantiateParams, DeviceLaunchTakesOnlyKernelCopyAndMemsetNodesAndNamesTheFirstOther) {
  // I04.kernel, I04.memset: accepted, and launchable from the host.
  RawGraph kernels = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, words_.get(), 7u, 1u), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemsetD32Async(words_.get() + 16, 3, 4, s_.get()), CUDA_SUCCESS);
  });
  CUDA_GRAPH_INSTANTIATE_PARAMS ok = params(CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH);
  Exec exec;
  ASSERT_EQ(instantiate_with(kernels.get(), ok, &exec), CUDA_SUCCESS);
  EXPECT_EQ(ok.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
  EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
  EXPECT_EQ(download(words_.get(), 1, s_.get())[0], 7u);
  // I04.alloc: a MEM_ALLOC node is named.
  RawGraph alloc = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, words_.get(), 7u, 1u), CUDA_SUCCESS);
    CUdeviceptr scratch = 0;
    EXPECT_EQ(api().cuMemAllocAsync(&scratch, 256, s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemFreeAsync(scratch, s_.get()), CUDA_SUCCESS);
  });
  CUDA_GRAPH_INSTANTIATE_PARAMS refused = params(CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH);
  EXPECT_EQ(instantiate_with(alloc.get(), refused), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(refused.result_out, CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED);
  ASSERT_NE(refused.hErrNode_out, nullptr);
  EXPECT_EQ(type_of(refused.hErrNode_out), CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  // I04.cond: a conditional node is named.
  RawGraph conditional = capture(s_.get(), [&] {
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, words_.get(), 7u, 1u), CUDA_SUCCESS);
    (void)insert_while(s_.get());
  });
  CUDA_GRAPH_INSTANTIATE_PARAMS named = params(CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH);
  EXPECT_EQ(instantiate_with(conditional.get(), named), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(named.result_out, CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED);
  ASSERT_NE(named.hErrNode_out, nullptr);
  EXPECT_EQ(type_of(named.hErrNode_out), CU_GRAPH_NODE_TYPE_CONDITIONAL);
  // I04.none: an empty graph, naming nothing.
  RawGraph empty = capture(s_.get(), [] {});
  CUDA_GRAPH_INSTANTIATE_PARAMS none = params(CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH);
  EXPECT_EQ(instantiate_with(empty.get(), none), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(none.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
  EXPECT_EQ(none.hErrNode_out, nullptr);
}

TEST_F(InstantiateParams, FlagsAreCheckedAsWithFlagsAndUploadIsAccepted) {  // I05
  RawGraph graph = one_kernel();
  for (unsigned long long flags :
       {static_cast<unsigned long long>(CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY),
        static_cast<unsigned long long>(CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY |
                                        CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)}) {
    CUDA_GRAPH_INSTANTIATE_PARAMS p = params(flags);
    EXPECT_EQ(instantiate_with(graph.get(), p), CUDA_SUCCESS) << "flags " << flags;
    EXPECT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
  }
  for (unsigned long long flags :
       {static_cast<unsigned long long>(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                        CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH),
        1ULL << 10}) {
    CUDA_GRAPH_INSTANTIATE_PARAMS p = params(flags);
    EXPECT_EQ(instantiate_with(graph.get(), p), CUDA_ERROR_INVALID_VALUE) << "flags " << flags;
    EXPECT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
    EXPECT_EQ(p.hErrNode_out, nullptr);
  }
  // UPLOAD on a stream, on NULL (the legacy stream), and a stream without UPLOAD (ignored).
  for (CUstream upload : {s_.get(), static_cast<CUstream>(nullptr)}) {
    CUDA_GRAPH_INSTANTIATE_PARAMS p = params(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, upload);
    Exec exec;
    ASSERT_EQ(instantiate_with(graph.get(), p, &exec), CUDA_SUCCESS);
    EXPECT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    EXPECT_EQ(api().cuGraphLaunch(exec.get(), s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(api().cuStreamSynchronize(s_.get()), CUDA_SUCCESS);
  }
  CUDA_GRAPH_INSTANTIATE_PARAMS ignored = params(0, s_.get());
  EXPECT_EQ(instantiate_with(graph.get(), ignored), CUDA_SUCCESS);
}

TEST_F(InstantiateParams, TheGraphACaptureBuildsOrAnUploadIntoACapturingStreamInvalidates) {
  // I05.capturing: as cuGraphInstantiateWithFlags, 900 and the capture invalidated.
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph building = nullptr;
  ASSERT_EQ(api().cuStreamGetCaptureInfo(s_.get(), &status, nullptr, &building, nullptr, nullptr,
                                         nullptr),
            CUDA_SUCCESS);
  CUDA_GRAPH_INSTANTIATE_PARAMS p = params(0);
  EXPECT_EQ(instantiate_with(building, p), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(p.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
  expect_invalidated(s_.get(), empty_);
  // I05.upload_capturing: UPLOAD into a stream that captures.
  RawGraph graph = one_kernel();
  ASSERT_EQ(api().cuStreamBeginCapture(s_.get(), CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUDA_GRAPH_INSTANTIATE_PARAMS q = params(CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, s_.get());
  EXPECT_EQ(instantiate_with(graph.get(), q), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(q.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
  expect_invalidated(s_.get(), empty_);
}

TEST_F(InstantiateParams, ASecondExecutableOfAGraphWithMemoryNodesIsNotSupported) {  // I06b
  RawGraph graph = capture(s_.get(), [&] {
    CUdeviceptr scratch = 0;
    EXPECT_EQ(api().cuMemAllocAsync(&scratch, 256, s_.get()), CUDA_SUCCESS);
    EXPECT_EQ(launch(fill_, s_.get(), 1, 1, scratch, 7u, 1u), CUDA_SUCCESS);
    EXPECT_EQ(api().cuMemFreeAsync(scratch, s_.get()), CUDA_SUCCESS);
  });
  CUDA_GRAPH_INSTANTIATE_PARAMS first = params(0);
  Exec exec;
  ASSERT_EQ(instantiate_with(graph.get(), first, &exec), CUDA_SUCCESS);
  CUDA_GRAPH_INSTANTIATE_PARAMS second = params(0);
  EXPECT_EQ(instantiate_with(graph.get(), second), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(second.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
  EXPECT_EQ(second.hErrNode_out, nullptr);
}

}  // namespace
}  // namespace graphcap::testing
