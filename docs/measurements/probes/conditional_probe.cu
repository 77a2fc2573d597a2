// Measures what the driver does with WHILE conditional nodes inserted during stream capture, the way
// graphcap inserts them (docs/cuda-driver-facts.md, "Conditional nodes"). Not part of the build: run
// on a GPU machine with
//   nvcc -std=c++17 -arch=sm_90 -o /tmp/cond_probe docs/measurements/probes/conditional_probe.cu -lcuda
//   for i in $(seq 0 25); do /tmp/cond_probe $i; done   (no argument: all in one process)
// Each probe prints the driver's codes and the values read back; probes clean up after themselves.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "probe_common.h"

namespace {

const char* name(CUresult r) {
  const char* n = nullptr;
  cuGetErrorName(r, &n);
  return n ? n : "?";
}
#define SHOW(call)                                             \
  do {                                                         \
    CUresult r_ = (call);                                      \
    std::printf("  %-60s -> %d %s\n", #call, r_, name(r_));    \
  } while (0)
#define MUST(call)                                                                  \
  do {                                                                              \
    CUresult r_ = (call);                                                           \
    if (r_ != CUDA_SUCCESS) std::printf("  !! %s -> %d %s\n", #call, r_, name(r_)); \
  } while (0)

__global__ void countdown(cudaGraphConditionalHandle h, int* counter, int* iters) {
  int left = --*counter;
  ++*iters;
  cudaGraphSetConditional(h, left > 0 ? 1u : 0u);
}
__global__ void set_cond(cudaGraphConditionalHandle h, unsigned v) { cudaGraphSetConditional(h, v); }
__global__ void store(int* p, int v) { *p = v; }
__global__ void add(int* p, int v) { atomicAdd(p, v); }

CUcontext ctx;
int* dev;  // 64 ints of scratch
int host[64];

void reset() {
  cudaMemset(dev, 0, 64 * sizeof(int));
  cudaDeviceSynchronize();
}
void read() {
  cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost);
}

// Inserts a WHILE node on the capturing stream s; returns the body graph.
CUresult insert_while(CUstream s, unsigned def, unsigned flags, CUgraphConditionalHandle* h,
                      CUgraph* body, CUgraphNode* node, unsigned size = 1, bool create = true) {
  CUstreamCaptureStatus st;
  cuuint64_t id;
  CUgraph g;
  const CUgraphNode* deps;
  const CUgraphEdgeData* edges;
  size_t n;
  CUresult r = cuStreamGetCaptureInfo(s, &st, &id, &g, &deps, &edges, &n);
  if (r != CUDA_SUCCESS) return r;
  std::vector<CUgraphNode> d(deps, deps + n);
  if (create) {
    r = cuGraphConditionalHandleCreate(h, g, ctx, def, flags);
    if (r != CUDA_SUCCESS) return r;
  }
  CUgraphNodeParams p = probe::conditional_params(*h, CU_GRAPH_COND_TYPE_WHILE, size, ctx);
  r = cuGraphAddNode(node, g, d.data(), nullptr, d.size(), &p);
  if (r != CUDA_SUCCESS) return r;
  *body = p.conditional.phGraph_out[0];
  return cuStreamUpdateCaptureDependencies(s, node, nullptr, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES);
}

void print_nodes(const char* what, CUgraph g) {
  size_t n = 0;
  cuGraphGetNodes(g, nullptr, &n);
  std::vector<CUgraphNode> nodes(n);
  cuGraphGetNodes(g, nodes.data(), &n);
  std::printf("  %s: %zu nodes, types", what, n);
  for (auto node : nodes) {
    CUgraphNodeType t;
    cuGraphNodeGetType(node, &t);
    std::printf(" %d", int(t));
  }
  std::printf("\n");
}

void end_if_capturing(CUstream s) {
  CUstreamCaptureStatus st;
  cuStreamIsCapturing(s, &st);
  if (st != CU_STREAM_CAPTURE_STATUS_NONE) {
    CUgraph g = nullptr;
    CUresult r = cuStreamEndCapture(s, &g);
    std::printf("  (cleanup: stream %p was capturing status %d; end -> %s)\n", (void*)s, int(st), name(r));
    if (g) cuGraphDestroy(g);
  }
}

CUstream s, body_s, side_s, inner_s;

// A graph: store(counter, k); WHILE { countdown }; add(after, 1). Returns it.
CUgraph capture_countdown(int k, unsigned def, unsigned flags, int* counter, int* iters, int* after,
                          CUgraph* body_out = nullptr, CUgraphNode* body_kernel = nullptr) {
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  store<<<1, 1, 0, s>>>(counter, k);
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  MUST(insert_while(s, def, flags, &h, &body, &node));
  MUST(cuStreamBeginCaptureToGraph(body_s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  countdown<<<1, 1, 0, body_s>>>(h, counter, iters);
  CUgraph body_end = nullptr;
  MUST(cuStreamEndCapture(body_s, &body_end));
  add<<<1, 1, 0, s>>>(after, 1);
  CUgraph g = nullptr;
  MUST(cuStreamEndCapture(s, &g));
  if (body_out) *body_out = body;
  if (body_kernel) {
    size_t n = 1;
    cuGraphGetNodes(body, body_kernel, &n);
  }
  return g;
}

void p1_basic() {
  std::printf("P1 basic: default 1, ASSIGN_DEFAULT, K=5, launched twice\n");
  reset();
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  store<<<1, 1, 0, s>>>(dev + 0, 5);
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  SHOW(insert_while(s, 1, CU_GRAPH_COND_ASSIGN_DEFAULT, &h, &body, &node));
  std::printf("  handle value %llu\n", (unsigned long long)h);
  SHOW(cuStreamBeginCaptureToGraph(body_s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  {
    CUstreamCaptureStatus st;
    cuuint64_t id;
    CUgraph g;
    const CUgraphNode* deps;
    const CUgraphEdgeData* e;
    size_t n;
    SHOW(cuStreamGetCaptureInfo(body_s, &st, &id, &g, &deps, &e, &n));
    std::printf("  body stream: status %d, graph==body %d, deps %zu\n", int(st), g == body, n);
    SHOW(cuStreamGetCaptureInfo(s, &st, &id, &g, &deps, &e, &n));
    std::printf("  outer stream: status %d, deps %zu, dep==while node %d\n", int(st), n,
                n == 1 && deps[0] == node);
  }
  countdown<<<1, 1, 0, body_s>>>(h, dev + 0, dev + 1);
  CUgraph body_end = nullptr;
  SHOW(cuStreamEndCapture(body_s, &body_end));
  std::printf("  end(body) graph_out==body %d (null %d)\n", body_end == body, body_end == nullptr);
  add<<<1, 1, 0, s>>>(dev + 2, 1);
  CUgraph g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  print_nodes("outer", g);
  print_nodes("body", body);
  CUgraphExec e = nullptr;
  SHOW(cuGraphInstantiateWithFlags(&e, g, 0));
  for (int i = 0; i < 2; ++i) {
    reset();
    SHOW(cuGraphLaunch(e, s));
    SHOW(cuStreamSynchronize(s));
    read();
    std::printf("  launch %d: counter %d iters %d after %d\n", i, host[0], host[1], host[2]);
  }
  cuGraphExecDestroy(e);
  cuGraphDestroy(g);
}

void p2_defaults() {
  std::printf("P2 default 0 + ASSIGN_DEFAULT; P3 default 1, flags 0 (K=3), two launches each\n");
  for (int variant = 0; variant < 2; ++variant) {
    unsigned def = variant == 0 ? 0 : 1, flags = variant == 0 ? CU_GRAPH_COND_ASSIGN_DEFAULT : 0;
    CUgraph g = capture_countdown(3, def, flags, dev + 0, dev + 1, dev + 2);
    CUgraphExec e = nullptr;
    SHOW(cuGraphInstantiateWithFlags(&e, g, 0));
    reset();
    for (int i = 0; i < 2; ++i) {
      MUST(cuGraphLaunch(e, s));
      MUST(cuStreamSynchronize(s));
      read();
      std::printf("  default %u flags %u launch %d: cumulative iters %d counter %d after %d\n", def,
                  flags, i, host[1], host[0], host[2]);
    }
    cuGraphExecDestroy(e);
    cuGraphDestroy(g);
  }
}

void p4_outer_sets() {
  std::printf("P4 a kernel before the WHILE node sets the handle to 0 (default 1, ASSIGN_DEFAULT)\n");
  reset();
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureStatus st;
  cuuint64_t id;
  CUgraph g0;
  const CUgraphNode* deps;
  const CUgraphEdgeData* ed;
  size_t n;
  MUST(cuStreamGetCaptureInfo(s, &st, &id, &g0, &deps, &ed, &n));
  CUgraphConditionalHandle h;
  SHOW(cuGraphConditionalHandleCreate(&h, g0, ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
  store<<<1, 1, 0, s>>>(dev + 0, 4);
  set_cond<<<1, 1, 0, s>>>(h, 0);
  CUgraph body;
  CUgraphNode node;
  SHOW(insert_while(s, 1, 1, &h, &body, &node, 1, false));
  MUST(cuStreamBeginCaptureToGraph(body_s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  countdown<<<1, 1, 0, body_s>>>(h, dev + 0, dev + 1);
  CUgraph x;
  MUST(cuStreamEndCapture(body_s, &x));
  CUgraph g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  CUgraphExec e = nullptr;
  SHOW(cuGraphInstantiateWithFlags(&e, g, 0));
  if (e) {
    reset();
    SHOW(cuGraphLaunch(e, s));
    SHOW(cuStreamSynchronize(s));
    read();
    std::printf("  iters %d (0: the outer kernel's value held; 4: the default won)\n", host[1]);
    cuGraphExecDestroy(e);
  }
  if (g) cuGraphDestroy(g);
  end_if_capturing(body_s);
  end_if_capturing(s);
}

// Body = countdown + something recorded by `extra` on body_s; prints codes.
template <class Extra>
void body_probe(const char* title, Extra extra, int k = 3) {
  std::printf("%s\n", title);
  reset();
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  store<<<1, 1, 0, s>>>(dev + 0, k);
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  MUST(insert_while(s, 1, 1, &h, &body, &node));
  MUST(cuStreamBeginCaptureToGraph(body_s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  extra();
  countdown<<<1, 1, 0, body_s>>>(h, dev + 0, dev + 1);
  CUgraph x = nullptr;
  SHOW(cuStreamEndCapture(body_s, &x));
  CUgraph g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  end_if_capturing(side_s);
  end_if_capturing(body_s);
  end_if_capturing(s);
  if (!g) return;
  print_nodes("body", body);
  CUgraphExec e = nullptr;
  SHOW(cuGraphInstantiateWithFlags(&e, g, 0));
  if (e) {
    SHOW(cuGraphLaunch(e, s));
    SHOW(cuStreamSynchronize(s));
    read();
    std::printf("  iters %d, ints 8..11: %d %d %d %d, int 20: %d\n", host[1], host[8], host[9],
                host[10], host[11], host[20]);
    cuGraphExecDestroy(e);
  }
  cuGraphDestroy(g);
  cudaGetLastError();
}

void p5_copies() {
  body_probe("P5 DtoD copy and D32 memset in the body", [] {
    SHOW(cuMemsetD32Async(CUdeviceptr(dev + 8), 7, 2, body_s));
    SHOW(cuMemcpyDtoDAsync(CUdeviceptr(dev + 10), CUdeviceptr(dev + 8), 2 * sizeof(int), body_s));
  });
}

void p6_fork_join() {
  CUevent e1, e2;
  cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING);
  cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING);
  body_probe("P6 fork/join of a side stream inside the body", [&] {
    SHOW(cuEventRecord(e1, body_s));
    SHOW(cuStreamWaitEvent(side_s, e1, 0));
    add<<<1, 1, 0, side_s>>>(dev + 20, 1);
    SHOW(cuEventRecord(e2, side_s));
    SHOW(cuStreamWaitEvent(body_s, e2, 0));
  });
  std::printf("P7 the body waits on an event recorded on the outer stream before the loop\n");
  reset();
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  store<<<1, 1, 0, s>>>(dev + 0, 3);
  SHOW(cuEventRecord(e1, s));
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  MUST(insert_while(s, 1, 1, &h, &body, &node));
  MUST(cuStreamBeginCaptureToGraph(body_s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  SHOW(cuStreamWaitEvent(body_s, e1, 0));
  countdown<<<1, 1, 0, body_s>>>(h, dev + 0, dev + 1);
  SHOW(cudaGetLastError() == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
  CUgraph x = nullptr;
  SHOW(cuStreamEndCapture(body_s, &x));
  CUgraph g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  end_if_capturing(body_s);
  end_if_capturing(s);
  if (g) {
    CUgraphExec e = nullptr;
    SHOW(cuGraphInstantiateWithFlags(&e, g, 0));
    if (e) cuGraphExecDestroy(e);
    cuGraphDestroy(g);
  }
  cudaGetLastError();
  std::printf("P7b an event recorded in the body, waited on by the outer stream after the loop\n");
  reset();
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  store<<<1, 1, 0, s>>>(dev + 0, 3);
  MUST(insert_while(s, 1, 1, &h, &body, &node));
  MUST(cuStreamBeginCaptureToGraph(body_s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  countdown<<<1, 1, 0, body_s>>>(h, dev + 0, dev + 1);
  SHOW(cuEventRecord(e1, body_s));
  SHOW(cuStreamWaitEvent(s, e1, 0));
  x = nullptr;
  SHOW(cuStreamEndCapture(body_s, &x));
  g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  end_if_capturing(body_s);
  end_if_capturing(s);
  if (g) cuGraphDestroy(g);
  cuEventDestroy(e1);
  cuEventDestroy(e2);
  cudaGetLastError();
}

void p8_alloc() {
  body_probe("P8 cuMemAllocAsync + free in the body", [] {
    CUdeviceptr p = 0;
    SHOW(cuMemAllocAsync(&p, 256, body_s));
    SHOW(cuMemFreeAsync(p, body_s));
  });
}

void p9_update() {
  std::printf("P9 exec update: same topology, other pointers; then a body with one kernel more\n");
  CUgraph g1 = capture_countdown(3, 1, 1, dev + 0, dev + 1, dev + 2);
  CUgraph g2 = capture_countdown(4, 1, 1, dev + 30, dev + 31, dev + 32);
  CUgraphExec e = nullptr;
  SHOW(cuGraphInstantiateWithFlags(&e, g1, 0));
  CUgraphExecUpdateResultInfo info;
  std::memset(&info, 0, sizeof info);
  SHOW(cuGraphExecUpdate(e, g2, &info));
  std::printf("  info.result %d\n", int(info.result));
  reset();
  MUST(cuGraphLaunch(e, s));
  MUST(cuStreamSynchronize(s));
  read();
  std::printf("  after update: iters@1 %d iters@31 %d\n", host[1], host[31]);
  // A body with two kernels.
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  store<<<1, 1, 0, s>>>(dev + 0, 3);
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  MUST(insert_while(s, 1, 1, &h, &body, &node));
  MUST(cuStreamBeginCaptureToGraph(body_s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  add<<<1, 1, 0, body_s>>>(dev + 20, 1);
  countdown<<<1, 1, 0, body_s>>>(h, dev + 0, dev + 1);
  CUgraph x;
  MUST(cuStreamEndCapture(body_s, &x));
  add<<<1, 1, 0, s>>>(dev + 2, 1);
  CUgraph g3 = nullptr;
  MUST(cuStreamEndCapture(s, &g3));
  std::memset(&info, 0, sizeof info);
  SHOW(cuGraphExecUpdate(e, g3, &info));
  std::printf("  info.result %d\n", int(info.result));
  cuGraphExecDestroy(e);
  cuGraphDestroy(g1);
  cuGraphDestroy(g2);
  cuGraphDestroy(g3);
}

void p10_set_params() {
  std::printf("P10 cuGraphExecKernelNodeSetParams on the body's kernel node (other counters)\n");
  CUgraph body;
  CUgraphNode kernel_node;
  CUgraph g = capture_countdown(3, 1, 1, dev + 0, dev + 1, dev + 2, &body, &kernel_node);
  CUgraphExec e = nullptr;
  MUST(cuGraphInstantiateWithFlags(&e, g, 0));
  CUDA_KERNEL_NODE_PARAMS kp;
  SHOW(cuGraphKernelNodeGetParams(kernel_node, &kp));
  cudaGraphConditionalHandle h = *static_cast<cudaGraphConditionalHandle*>(kp.kernelParams[0]);
  int* c = dev + 40;
  int* it = dev + 41;
  void* args[] = {&h, &c, &it};
  kp.kernelParams = args;
  kp.extra = nullptr;
  SHOW(cuGraphExecKernelNodeSetParams(e, kernel_node, &kp));
  reset();
  int three = 3;
  cudaMemcpy(dev + 40, &three, sizeof(int), cudaMemcpyHostToDevice);
  MUST(cuGraphLaunch(e, s));
  MUST(cuStreamSynchronize(s));
  read();
  std::printf("  iters@1 %d iters@41 %d (store still writes @0: %d)\n", host[1], host[41], host[0]);
  cuGraphExecDestroy(e);
  cuGraphDestroy(g);
}

void p11_nested() {
  std::printf("P11 nested WHILE: outer K=3, inner K=4 per outer iteration\n");
  reset();
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  store<<<1, 1, 0, s>>>(dev + 0, 3);
  CUgraphConditionalHandle ho, hi;
  CUgraph bo, bi;
  CUgraphNode no, ni;
  SHOW(insert_while(s, 1, 1, &ho, &bo, &no));
  SHOW(cuStreamBeginCaptureToGraph(body_s, bo, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  store<<<1, 1, 0, body_s>>>(dev + 4, 4);
  SHOW(insert_while(body_s, 1, 1, &hi, &bi, &ni));
  SHOW(cuStreamBeginCaptureToGraph(inner_s, bi, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  countdown<<<1, 1, 0, inner_s>>>(hi, dev + 4, dev + 5);
  CUgraph x;
  SHOW(cuStreamEndCapture(inner_s, &x));
  countdown<<<1, 1, 0, body_s>>>(ho, dev + 0, dev + 1);
  SHOW(cuStreamEndCapture(body_s, &x));
  CUgraph g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  CUgraphExec e = nullptr;
  SHOW(cuGraphInstantiateWithFlags(&e, g, 0));
  if (e) {
    reset();
    SHOW(cuGraphLaunch(e, s));
    SHOW(cuStreamSynchronize(s));
    read();
    std::printf("  outer iters %d inner iters %d\n", host[1], host[5]);
    cuGraphExecDestroy(e);
  }
  if (g) cuGraphDestroy(g);
}

void p12_misuse() {
  std::printf("P12 end the outer capture while the body capture is open\n");
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  store<<<1, 1, 0, s>>>(dev + 0, 3);
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  MUST(insert_while(s, 1, 1, &h, &body, &node));
  MUST(cuStreamBeginCaptureToGraph(body_s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  countdown<<<1, 1, 0, body_s>>>(h, dev + 0, dev + 1);
  CUgraph g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  std::printf("  graph_out null %d\n", g == nullptr);
  CUstreamCaptureStatus st;
  SHOW(cuStreamIsCapturing(body_s, &st));
  std::printf("  body stream status %d\n", int(st));
  CUgraph x = nullptr;
  SHOW(cuStreamEndCapture(body_s, &x));
  std::printf("  body end graph_out==body %d\n", x == body);
  CUgraphExec e = nullptr;
  if (g) {
    SHOW(cuGraphInstantiateWithFlags(&e, g, 0));
    if (e) {
      reset();
      SHOW(cuGraphLaunch(e, s));
      SHOW(cuStreamSynchronize(s));
      read();
      std::printf("  iters %d\n", host[1]);
      cuGraphExecDestroy(e);
    }
    cuGraphDestroy(g);
  }
  end_if_capturing(body_s);
  end_if_capturing(s);
  cudaGetLastError();

  std::printf("P13 begin capture-to-graph on the capturing outer stream itself\n");
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  MUST(insert_while(s, 1, 1, &h, &body, &node));
  SHOW(cuStreamBeginCaptureToGraph(s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  SHOW(cuStreamIsCapturing(s, &st));
  std::printf("  outer status %d\n", int(st));
  g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  if (g) cuGraphDestroy(g);
  end_if_capturing(s);

  std::printf("P14 handle create with flags 2, with a null context, default 5\n");
  CUgraph plain;
  cuGraphCreate(&plain, 0);
  SHOW(cuGraphConditionalHandleCreate(&h, plain, ctx, 1, 2));
  SHOW(cuGraphConditionalHandleCreate(&h, plain, nullptr, 1, 0));
  SHOW(cuGraphConditionalHandleCreate(&h, plain, ctx, 5, 1));
  std::printf("P15 WHILE with size 2; a WHILE node with an empty body, instantiated\n");
  CUgraphNodeParams p = probe::conditional_params(h, CU_GRAPH_COND_TYPE_WHILE, 2, ctx);
  CUgraphNode n2;
  SHOW(cuGraphAddNode(&n2, plain, nullptr, nullptr, 0, &p));
  p.conditional.size = 1;
  SHOW(cuGraphAddNode(&n2, plain, nullptr, nullptr, 0, &p));
  CUgraphExec e2 = nullptr;
  SHOW(cuGraphInstantiateWithFlags(&e2, plain, 0));
  if (e2) cuGraphExecDestroy(e2);
  cuGraphDestroy(plain);
  std::printf("P16 a handle of one graph used by a WHILE node of another graph\n");
  CUgraph ga, gb;
  cuGraphCreate(&ga, 0);
  cuGraphCreate(&gb, 0);
  SHOW(cuGraphConditionalHandleCreate(&h, ga, ctx, 0, 1));
  p.conditional.handle = h;
  SHOW(cuGraphAddNode(&n2, gb, nullptr, nullptr, 0, &p));
  cuGraphDestroy(ga);
  cuGraphDestroy(gb);
  std::printf("P17 a sync of another stream while the body is capturing (global mode)\n");
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  MUST(insert_while(s, 0, 1, &h, &body, &node));
  MUST(cuStreamBeginCaptureToGraph(body_s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  SHOW(cuStreamQuery(side_s));
  SHOW(cuStreamIsCapturing(body_s, &st));
  std::printf("  body status %d\n", int(st));
  SHOW(cuStreamIsCapturing(s, &st));
  std::printf("  outer status %d\n", int(st));
  end_if_capturing(body_s);
  end_if_capturing(s);
  cudaGetLastError();
}


// P18/P19: the body's capture is invalidated (a sync of another stream in global mode); which order
// of ending the two captures is safe? (Ending the body first, then the outer, crashed in P7 and P17.)
void p18_invalidated_outer_first() {
  std::printf("P18 invalidated body: end the outer capture first, then the body\n");
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  MUST(insert_while(s, 0, 1, &h, &body, &node));
  MUST(cuStreamBeginCaptureToGraph(body_s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  SHOW(cuStreamQuery(side_s));
  CUgraph g = nullptr;
  std::printf("  ending outer\n");
  SHOW(cuStreamEndCapture(s, &g));
  std::printf("  ending body\n");
  CUgraph x = nullptr;
  SHOW(cuStreamEndCapture(body_s, &x));
  CUstreamCaptureStatus st;
  SHOW(cuStreamIsCapturing(s, &st));
  SHOW(cuStreamIsCapturing(body_s, &st));
  SHOW(cuStreamSynchronize(s));
  std::printf("  survived\n");
}
void p19_invalidated_body_first() {
  std::printf("P19 invalidated body: end the body capture first, then the outer\n");
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  MUST(insert_while(s, 0, 1, &h, &body, &node));
  MUST(cuStreamBeginCaptureToGraph(body_s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  SHOW(cuStreamQuery(side_s));
  std::printf("  ending body\n");
  CUgraph x = nullptr;
  SHOW(cuStreamEndCapture(body_s, &x));
  std::printf("  ending outer\n");
  CUgraph g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  std::printf("  survived\n");
}
void p20_body_invalid_launch_outer_valid() {
  std::printf("P20 valid body ended, then the outer invalidated by a sync, then ended\n");
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  MUST(insert_while(s, 0, 1, &h, &body, &node));
  MUST(cuStreamBeginCaptureToGraph(body_s, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUgraph x = nullptr;
  SHOW(cuStreamEndCapture(body_s, &x));
  SHOW(cuStreamQuery(side_s));
  CUgraph g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  std::printf("  survived\n");
}

// P21/P22: after an invalidated body's enclosing capture ended (P18's first half), is the body's
// stream still blocking unsafe calls, and can it be destroyed instead of ended?
void p21_destroy_invalidated_body() {
  std::printf("P21 invalidated body: end the outer capture, then destroy the body's stream\n");
  CUstream body2;
  MUST(cuStreamCreate(&body2, CU_STREAM_NON_BLOCKING));
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  MUST(insert_while(s, 0, 1, &h, &body, &node));
  MUST(cuStreamBeginCaptureToGraph(body2, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  SHOW(cuStreamQuery(side_s));
  CUgraph g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  CUstreamCaptureStatus st;
  SHOW(cuStreamIsCapturing(body2, &st));
  std::printf("  body status %d\n", int(st));
  SHOW(cuStreamQuery(side_s));
  SHOW(cuStreamSynchronize(side_s));
  std::printf("  destroying the body stream\n");
  SHOW(cuStreamDestroy(body2));
  SHOW(cuStreamQuery(side_s));
  SHOW(cuStreamSynchronize(side_s));
  SHOW(cuCtxSynchronize());
  std::printf("  survived\n");
}
void p22_leave_invalidated_body() {
  std::printf("P22 invalidated body: end the outer capture, leave the body, capture again\n");
  CUstream body2;
  MUST(cuStreamCreate(&body2, CU_STREAM_NON_BLOCKING));
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  MUST(insert_while(s, 0, 1, &h, &body, &node));
  MUST(cuStreamBeginCaptureToGraph(body2, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  SHOW(cuStreamQuery(side_s));
  CUgraph g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  SHOW(cuStreamSynchronize(side_s));
  SHOW(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  store<<<1, 1, 0, s>>>(dev + 0, 1);
  g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  std::printf("  survived (body stream left capturing)\n");
}

// P23/P24: the body captured in RELAXED mode inside a GLOBAL capture: does an unsafe call on the
// recording thread still invalidate it, and does either order of ending survive?
void relaxed_body(bool body_first) {
  std::printf("P%d relaxed body in a global capture, unsafe call, end %s first\n",
              body_first ? 23 : 24, body_first ? "the body" : "the outer");
  CUstream body2;
  MUST(cuStreamCreate(&body2, CU_STREAM_NON_BLOCKING));
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  MUST(insert_while(s, 0, 1, &h, &body, &node));
  SHOW(cuStreamBeginCaptureToGraph(body2, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED));
  SHOW(cuStreamQuery(side_s));
  CUstreamCaptureStatus st;
  cuStreamIsCapturing(body2, &st);
  std::printf("  body status %d\n", int(st));
  cuStreamIsCapturing(s, &st);
  std::printf("  outer status %d\n", int(st));
  CUgraph g = nullptr, x = nullptr;
  if (body_first) {
    SHOW(cuStreamEndCapture(body2, &x));
    SHOW(cuStreamEndCapture(s, &g));
  } else {
    SHOW(cuStreamEndCapture(s, &g));
    SHOW(cuStreamEndCapture(body2, &x));
  }
  SHOW(cuStreamSynchronize(side_s));
  SHOW(cuStreamDestroy(body2));
  std::printf("  survived\n");
}
void p23_relaxed_body_first() { relaxed_body(true); }
void p24_relaxed_outer_first() { relaxed_body(false); }

// A GLOBAL capture on s holding a WHILE node whose body captures, RELAXED, on a new stream; the
// body's capture then invalidated by a failed launch (2048 threads a block) or by a query of its
// stream. Returns the body's stream.
CUstream invalidated_relaxed_body_stream(bool by_launch) {
  CUstream body2;
  MUST(cuStreamCreate(&body2, CU_STREAM_NON_BLOCKING));
  MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUgraphConditionalHandle h;
  CUgraph body;
  CUgraphNode node;
  MUST(insert_while(s, 0, 1, &h, &body, &node));
  SHOW(cuStreamBeginCaptureToGraph(body2, body, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED));
  store<<<1, 1, 0, body2>>>(dev + 1, 1);
  if (by_launch) {
    store<<<1, 2048, 0, body2>>>(dev + 1, 2);
    std::printf("  failed launch: cudaGetLastError %d\n", int(cudaGetLastError()));
  } else {
    SHOW(cuStreamQuery(body2));
  }
  CUstreamCaptureStatus st;
  cuStreamIsCapturing(body2, &st);
  std::printf("  body status %d\n", int(st));
  return body2;
}

// P25/P26: graphcap's case of an invalidated body: a RELAXED body (inside a GLOBAL capture) whose
// own capture is invalidated by a failed launch on it (P25: a launch of 2048 threads per block)
// or by a query of its own stream (P26: what the fault-injecting driver does after an injected
// failure). Is the enclosing capture invalidated too? After the enclosing capture ends, does the
// body block the thread's syncs, does a new capture on the origin work, and does destroying the
// body's stream survive (it crashed for a GLOBAL body, P21)? The destroy comes last.
void invalidated_relaxed_body(bool by_launch) {
  std::printf("P%d relaxed body invalidated by %s; end the outer, capture again, destroy the body\n",
              by_launch ? 25 : 26, by_launch ? "a failed launch" : "a query of its stream");
  CUstream body2 = invalidated_relaxed_body_stream(by_launch);
  CUstreamCaptureStatus st;
  cuStreamIsCapturing(s, &st);
  std::printf("  outer status %d\n", int(st));
  CUgraph g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  if (g != nullptr) cuGraphDestroy(g);
  cuStreamIsCapturing(s, &st);
  std::printf("  outer status after its end %d\n", int(st));
  cuStreamIsCapturing(body2, &st);
  std::printf("  body status after the outer's end %d\n", int(st));
  SHOW(cuStreamSynchronize(side_s));
  SHOW(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  store<<<1, 1, 0, s>>>(dev + 0, 1);
  g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  if (g != nullptr) cuGraphDestroy(g);
  store<<<1, 1, 0, s>>>(dev + 0, 5);
  SHOW(cuStreamSynchronize(s));
  std::printf("  destroying the body stream\n");
  SHOW(cuStreamDestroy(body2));
  SHOW(cuStreamSynchronize(side_s));
  SHOW(cuCtxSynchronize());
  std::printf("  survived\n");
}
void p25_relaxed_body_failed_launch() { invalidated_relaxed_body(true); }
void p26_relaxed_body_queried() { invalidated_relaxed_body(false); }

// P27-P33: what an invalidated RELAXED body does to the process afterwards. A whole test binary
// over libcuda, run in one process, crashed inside cuMemAlloc called by a second thread (GLOBAL
// mode) while a GLOBAL capture was in progress, long after earlier tests had left invalidated
// bodies' streams to the driver; each test alone passes. P27 is that call with no body ever left;
// P28/P29 leave the body (graphcap's handling: neither ended nor destroyed) first; P30/P31 end the
// invalidated body before the outer capture, then destroy its stream (never measured for a
// RELAXED body: the crash that made graphcap leave bodies was a GLOBAL one's, P7, P17, P19).
// Another thread (its mode GLOBAL) makes a potentially unsafe call: cuMemAlloc, or a query of an
// unrelated stream; while a GLOBAL capture on s is in progress, or with no capture at all.
void cross_thread_unsafe_call(bool during_capture = true, bool query = false) {
  if (during_capture) MUST(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUresult answer = CUDA_SUCCESS;
  CUdeviceptr p = 0;
  std::thread other([&] {
    cuCtxSetCurrent(ctx);
    answer = query ? cuStreamQuery(side_s) : cuMemAlloc(&p, 256);
  });
  other.join();
  std::printf("  %s on another thread (GLOBAL) %s -> %d %s\n", query ? "cuStreamQuery" : "cuMemAlloc",
              during_capture ? "during a GLOBAL capture" : "with no capture", int(answer), name(answer));
  if (p != 0) cuMemFree(p);
  if (!during_capture) return;
  CUgraph g = nullptr;
  SHOW(cuStreamEndCapture(s, &g));
  if (g != nullptr) cuGraphDestroy(g);
}
void p27_cross_thread_alloc_alone() {
  std::printf("P27 another thread's cuMemAlloc during a GLOBAL capture, no body ever left\n");
  cross_thread_unsafe_call();
  SHOW(cuCtxSynchronize());
  std::printf("  survived\n");
}
void invalidated_body_then_cross_thread(int number, bool by_launch, bool end_body_first,
                                        bool during_capture = true, bool query = false) {
  std::printf("P%d relaxed body invalidated by %s, %s; then another thread's cuMemAlloc during a "
              "GLOBAL capture\n",
              number, by_launch ? "a failed launch" : "a query of its stream",
              end_body_first ? "body ended first, its stream destroyed" : "body left to the driver");
  CUstream body2 = invalidated_relaxed_body_stream(by_launch);
  CUstreamCaptureStatus st;
  CUgraph g = nullptr, x = nullptr;
  if (end_body_first) SHOW(cuStreamEndCapture(body2, &x));
  SHOW(cuStreamEndCapture(s, &g));
  if (g != nullptr) cuGraphDestroy(g);
  cuStreamIsCapturing(body2, &st);
  std::printf("  body status after both ends %d\n", int(st));
  SHOW(cuStreamSynchronize(side_s));
  if (end_body_first) SHOW(cuStreamDestroy(body2));
  cross_thread_unsafe_call(during_capture, query);
  SHOW(cuStreamSynchronize(s));
  SHOW(cuCtxSynchronize());
  std::printf("  survived\n");
}
void p28_left_failed_launch() { invalidated_body_then_cross_thread(28, true, false); }
void p29_left_queried() { invalidated_body_then_cross_thread(29, false, false); }
void p30_ended_failed_launch() { invalidated_body_then_cross_thread(30, true, true); }
void p31_ended_queried() { invalidated_body_then_cross_thread(31, false, true); }
// P32/P33: the body left as in P28, then another thread's query of an unrelated stream during a
// GLOBAL capture (P32), or its cuMemAlloc with no capture in progress (P33).
void p32_left_then_query() { invalidated_body_then_cross_thread(32, true, false, true, true); }
void p33_left_then_alloc_uncaptured() { invalidated_body_then_cross_thread(33, true, false, false); }

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  cudaFree(nullptr);
  cuCtxGetCurrent(&ctx);
  int version = 0;
  cuDriverGetVersion(&version);
  std::printf("driver version %d\n", version);
  cudaMalloc(&dev, 64 * sizeof(int));
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  cuStreamCreate(&body_s, CU_STREAM_NON_BLOCKING);
  cuStreamCreate(&side_s, CU_STREAM_NON_BLOCKING);
  cuStreamCreate(&inner_s, CU_STREAM_NON_BLOCKING);
  // One probe per process (argv[1] picks it), so a crash in one loses nothing of the others.
  void (*probes[])() = {p1_basic, p2_defaults, p4_outer_sets, p5_copies, p6_fork_join,
                        p8_alloc, p9_update, p10_set_params, p11_nested, p12_misuse, p18_invalidated_outer_first,
                        p19_invalidated_body_first, p20_body_invalid_launch_outer_valid,
                        p21_destroy_invalidated_body, p22_leave_invalidated_body,
                        p23_relaxed_body_first, p24_relaxed_outer_first,
                        p25_relaxed_body_failed_launch, p26_relaxed_body_queried,
                        p27_cross_thread_alloc_alone, p28_left_failed_launch, p29_left_queried,
                        p30_ended_failed_launch, p31_ended_queried, p32_left_then_query,
                        p33_left_then_alloc_uncaptured};
  int which = argc > 1 ? std::atoi(argv[1]) : -1;
  for (int i = 0; i < int(sizeof probes / sizeof probes[0]); ++i)
    if (which < 0 || which == i) probes[i]();
  std::printf("final cudaGetLastError %d\n", int(cudaGetLastError()));
  return 0;
}
