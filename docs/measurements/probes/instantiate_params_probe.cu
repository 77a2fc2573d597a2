// cuGraphInstantiateWithParams (issue 26 §3): for graphs that fail to instantiate, what the call
// returns and what CUDA_GRAPH_INSTANTIATE_PARAMS::result_out and hErrNode_out say (which node, of
// which type); the flag combinations; and whether CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD with
// hUploadStream uploads (first-launch cost), timed against instantiate + cuGraphUpload.
//   nvcc -O2 -arch=sm_90 -o instantiate_params_probe docs/measurements/probes/instantiate_params_probe.cu -lcuda
//   ./instantiate_params_probe          (every case)   ./instantiate_params_probe I03   (one case)
#include "probe_common.h"

using namespace probe;

__global__ void add(int* p, int v) { atomicAdd(p, v); }
__global__ void empty_k() {}

namespace {

CUstream s;
int* dev;

void setup() {
  init_runtime();
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  cudaMalloc(&dev, 4096);
}

const char* result_name(int r) {
  switch (r) {
    case CUDA_GRAPH_INSTANTIATE_SUCCESS: return "SUCCESS";
    case CUDA_GRAPH_INSTANTIATE_ERROR: return "ERROR";
    case CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE: return "INVALID_STRUCTURE";
    case CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED: return "NODE_OPERATION_NOT_SUPPORTED";
    case CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED: return "MULTIPLE_CTXS_NOT_SUPPORTED";
    case CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED: return "CONDITIONAL_HANDLE_UNUSED";
    default: return "(not written)";
  }
}
const CUgraphNode kSentinel = reinterpret_cast<CUgraphNode>(0x1);

// Instantiates g with params (flags, upload stream); prints the return, result_out and hErrNode_out
// (which of the named nodes it is, and its type). The out fields start as sentinels (99, 0x1) so a
// field the driver leaves alone shows as "(not written)".
CUgraphExec inst(CUgraph g, cuuint64_t flags, CUstream up, std::vector<std::pair<const char*, CUgraphNode>> named = {}) {
  CUDA_GRAPH_INSTANTIATE_PARAMS p;
  std::memset(&p, 0, sizeof p);
  p.flags = flags;
  p.hUploadStream = up;
  p.hErrNode_out = kSentinel;
  p.result_out = CUgraphInstantiateResult(99);
  CUgraphExec e = nullptr;
  rec("instantiateWithParams", cuGraphInstantiateWithParams(&e, g, &p));
  const char* which = "another node";
  if (p.hErrNode_out == nullptr) which = "NULL";
  else if (p.hErrNode_out == kSentinel) which = "(not written)";
  else
    for (auto& [n, node] : named)
      if (node == p.hErrNode_out) which = n;
  CUgraphNodeType t = CUgraphNodeType(-1);
  if (p.hErrNode_out && p.hErrNode_out != kSentinel) cuGraphNodeGetType(p.hErrNode_out, &t);
  obs("result_out %d %s, hErrNode_out %s (type %d), exec %s", int(p.result_out), result_name(int(p.result_out)),
      which, int(t), e ? "set" : "NULL");
  return e;
}
CUresult add_kernel(CUgraph g, CUgraphNode* n, CUfunction f, void** args, unsigned block = 1,
                    unsigned shmem = 0, unsigned grid = 1, const CUgraphNode* dep = nullptr) {
  CUDA_KERNEL_NODE_PARAMS kp;
  std::memset(&kp, 0, sizeof kp);
  kp.func = f;
  kp.gridDimX = grid;
  kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = block;
  kp.blockDimY = kp.blockDimZ = 1;
  kp.sharedMemBytes = shmem;
  kp.kernelParams = args;
  return cuGraphAddKernelNode(n, g, dep, dep ? 1 : 0, &kp);
}
CUfunction f_empty() { return fn((const void*)empty_k); }
CUresult add_alloc(CUgraph g, CUgraphNode* n, CUdeviceptr* out, const CUgraphNode* dep = nullptr) {
  CUDA_MEM_ALLOC_NODE_PARAMS ap;
  std::memset(&ap, 0, sizeof ap);
  ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  ap.poolProps.location.id = env.dev;
  ap.bytesize = 1 << 20;
  CUresult r = cuGraphAddMemAllocNode(n, g, dep, dep ? 1 : 0, &ap);
  *out = ap.dptr;
  return r;
}
void destroy(CUgraphExec e, CUgraph g) {
  if (e) cuGraphExecDestroy(e);
  if (g) cuGraphDestroy(g);
}
void host_fn(void*) {}

void i00() { print_env("I00"); }

void i01() {
  begin("I01", "a graph of one kernel, flags 0, no upload stream");
  CUgraph g;
  cuGraphCreate(&g, 0);
  CUgraphNode k;
  add_kernel(g, &k, f_empty(), nullptr);
  CUgraphExec e = inst(g, 0, nullptr, {{"the kernel", k}});
  if (e) { rec("launch", cuGraphLaunch(e, s)); rec("sync", cuStreamSynchronize(s)); }
  destroy(e, g);
  end();
  begin("I01b", "an empty graph (0 nodes), flags 0");
  cuGraphCreate(&g, 0);
  e = inst(g, 0, nullptr);
  if (e) { rec("launch", cuGraphLaunch(e, s)); rec("sync", cuStreamSynchronize(s)); }
  destroy(e, g);
  end();
  begin("I01c", "NULL params / NULL phGraphExec");
  cuGraphCreate(&g, 0);
  add_kernel(g, &k, f_empty(), nullptr);
  CUgraphExec x = nullptr;
  rec("instantiateWithParams(params NULL)", cuGraphInstantiateWithParams(&x, g, nullptr));
  CUDA_GRAPH_INSTANTIATE_PARAMS p;
  std::memset(&p, 0, sizeof p);
  rec("instantiateWithParams(exec NULL)", cuGraphInstantiateWithParams(nullptr, g, &p));
  rec("instantiateWithParams(graph NULL)", cuGraphInstantiateWithParams(&x, nullptr, &p));
  obs("result_out %d", int(p.result_out));
  destroy(x, g);
  end();
}

void i02() {
  begin("I02", "a conditional handle no node uses (graph: one kernel + the handle)");
  CUgraph g;
  cuGraphCreate(&g, 0);
  CUgraphNode k;
  add_kernel(g, &k, f_empty(), nullptr);
  CUgraphConditionalHandle h;
  rec("handleCreate", cuGraphConditionalHandleCreate(&h, g, env.ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
  destroy(inst(g, 0, nullptr, {{"the kernel", k}}), nullptr);
  CUgraphExec e = nullptr;
  rec("instantiateWithFlags(for comparison)", cuGraphInstantiateWithFlags(&e, g, 0));
  destroy(e, g);
  end();
  begin("I02b", "an unused handle created by capture inside a WHILE body (graphcap's insertion)");
  rec("beginCapture", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CaptureInfo ci;
  capture_info(s, &ci);
  CUgraphConditionalHandle hw, hu;
  cuGraphConditionalHandleCreate(&hw, ci.g, env.ctx, 0, CU_GRAPH_COND_ASSIGN_DEFAULT);
  CUgraphNodeParams np = conditional_params(hw, CU_GRAPH_COND_TYPE_WHILE, 1, env.ctx);
  CUgraphNode wn;
  rec("addNode(WHILE)", cuGraphAddNode(&wn, ci.g, ci.deps.data(), nullptr, ci.deps.size(), &np));
  cuStreamUpdateCaptureDependencies(s, &wn, nullptr, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES);
  rec("handleCreate(unused, on the body)", cuGraphConditionalHandleCreate(&hu, np.conditional.phGraph_out[0], env.ctx, 0, 0));
  CUgraphNode bk;
  add_kernel(np.conditional.phGraph_out[0], &bk, f_empty(), nullptr);
  g = nullptr;
  rec("endCapture", cuStreamEndCapture(s, &g));
  destroy(inst(g, 0, nullptr, {{"the WHILE node", wn}, {"the body kernel", bk}}), g);
  end();
}

void i03() {
  begin("I03", "a kernel node of a module unloaded before instantiate");
  PtxModule m;
  rec("moduleLoad", m.load());
  CUgraph g;
  cuGraphCreate(&g, 0);
  CUdeviceptr p = CUdeviceptr(dev);
  unsigned long long idx = 0;
  unsigned v = 3;
  void* args[] = {&p, &idx, &v};
  CUgraphNode k;
  rec("addKernelNode", add_kernel(g, &k, m.store_at, args));
  rec("moduleUnload", cuModuleUnload(m.mod));
  CUgraphExec e = inst(g, 0, nullptr, {{"the kernel", k}});
  if (e) { rec("launch", cuGraphLaunch(e, s)); rec("sync", cuStreamSynchronize(s)); }
  destroy(e, g);
  end();
}
void i03b() {
  CUdeviceptr p = CUdeviceptr(dev);
  unsigned long long idx = 0;
  unsigned v = 3;
  void* args[] = {&p, &idx, &v};
  CUgraph g;
  CUgraphNode k;
  CUgraphExec e;
  begin("I03b", "a kernel node whose module is unloaded after instantiate; launch the executable");
  PtxModule m2;
  m2.load();
  cuGraphCreate(&g, 0);
  add_kernel(g, &k, m2.store_at, args);
  e = inst(g, 0, nullptr, {{"the kernel", k}});
  rec("moduleUnload", cuModuleUnload(m2.mod));
  if (e) {
    cuMemsetD32(CUdeviceptr(dev), 0, 1);
    rec("launch", cuGraphLaunch(e, s));
    rec("sync", cuStreamSynchronize(s));
    unsigned got = 0;
    cuMemcpyDtoH(&got, CUdeviceptr(dev), 4);
    obs("word %u (3 = the kernel ran)", got);
  }
  destroy(e, g);
  end();
}

void i04() {
  struct D { const char* id; const char* what; int kind; };
  D ds[] = {{"I04.kernel", "DEVICE_LAUNCH: one kernel", 0},
            {"I04.alloc", "DEVICE_LAUNCH: kernel + MEM_ALLOC + MEM_FREE", 1},
            {"I04.empty", "DEVICE_LAUNCH: kernel + EMPTY node", 2},
            {"I04.event", "DEVICE_LAUNCH: kernel + EVENT_RECORD node", 3},
            {"I04.host", "DEVICE_LAUNCH: kernel + HOST node", 4},
            {"I04.memset", "DEVICE_LAUNCH: kernel + MEMSET node", 5},
            {"I04.cond", "DEVICE_LAUNCH: kernel + IF node with a kernel body", 6},
            {"I04.none", "DEVICE_LAUNCH: an empty graph", 7},
            {"I04.ctx2", "DEVICE_LAUNCH: kernels of two contexts (primary + cuCtxCreate)", 8},
            {"I04.ctx2host", "flags 0: kernels of two contexts", 9}};
  for (const D& d : ds) {
    begin(d.id, d.what);
    CUgraph g;
    cuGraphCreate(&g, 0);
    CUgraphNode k = nullptr, x = nullptr, y = nullptr;
    if (d.kind != 7) add_kernel(g, &k, f_empty(), nullptr);
    CUevent ev = nullptr;
    CUcontext c2 = nullptr;
    switch (d.kind) {
      case 1: {
        CUdeviceptr p;
        rec("addMemAlloc", add_alloc(g, &x, &p, &k));
        rec("addMemFree", cuGraphAddMemFreeNode(&y, g, &x, 1, p));
        break;
      }
      case 2: rec("addEmpty", cuGraphAddEmptyNode(&x, g, &k, 1)); break;
      case 3:
        cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
        rec("addEventRecord", cuGraphAddEventRecordNode(&x, g, &k, 1, ev));
        break;
      case 4: {
        CUDA_HOST_NODE_PARAMS hp{host_fn, nullptr};
        rec("addHost", cuGraphAddHostNode(&x, g, &k, 1, &hp));
        break;
      }
      case 5: {
        CUDA_MEMSET_NODE_PARAMS mp;
        std::memset(&mp, 0, sizeof mp);
        mp.dst = CUdeviceptr(dev);
        mp.elementSize = 4;
        mp.width = 4;
        mp.height = 1;
        rec("addMemset", cuGraphAddMemsetNode(&x, g, &k, 1, &mp, env.ctx));
        break;
      }
      case 6: {
        CUgraphConditionalHandle h;
        cuGraphConditionalHandleCreate(&h, g, env.ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
        CUgraphNodeParams np = conditional_params(h, CU_GRAPH_COND_TYPE_IF, 1, env.ctx);
        rec("addNode(IF)", cuGraphAddNode(&x, g, &k, nullptr, 1, &np));
        CUgraphNode bk;
        add_kernel(np.conditional.phGraph_out[0], &bk, f_empty(), nullptr);
        break;
      }
      case 8:
      case 9: {
        rec("ctxCreate", cuCtxCreate(&c2, nullptr, 0, env.dev));
        PtxModule pm;
        rec("moduleLoad(ctx2)", pm.load());
        CUdeviceptr p = 0;
        cuMemAlloc(&p, 64);
        unsigned long long idx = 0;
        unsigned v = 1;
        void* args[] = {&p, &idx, &v};
        rec("addKernel(ctx2's function)", add_kernel(g, &x, pm.store_at, args, 1, 0, 1, &k));
        cuCtxSetCurrent(env.ctx);
        break;
      }
      default: break;
    }
    cuuint64_t flags = d.kind == 9 ? 0 : CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
    CUgraphExec e = inst(g, flags, nullptr, {{"the kernel", k}, {"the added node", x}, {"the third node", y}});
    if (e) {
      rec("launch(host)", cuGraphLaunch(e, s));
      rec("sync", cuStreamSynchronize(s));
    }
    destroy(e, g);
    if (ev) cuEventDestroy(ev);
    if (c2) {
      cuCtxDestroy(c2);
      cuCtxSetCurrent(env.ctx);
    }
    end();
  }
}

void i05() {
  struct F { const char* id; const char* what; cuuint64_t flags; bool upload_stream; };
  F fs[] = {{"I05.prio", "flags USE_NODE_PRIORITY", CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY, false},
            {"I05.autofree_dev", "flags AUTO_FREE_ON_LAUNCH | DEVICE_LAUNCH", 5, false},
            {"I05.prio_dev", "flags USE_NODE_PRIORITY | DEVICE_LAUNCH", 12, false},
            {"I05.unknown", "flags 1<<10 (no such flag)", 1u << 10, false},
            {"I05.upload_null", "flags UPLOAD, hUploadStream NULL", CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, false},
            {"I05.upload", "flags UPLOAD, hUploadStream s", CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, true},
            {"I05.upload_prio", "flags UPLOAD | USE_NODE_PRIORITY, hUploadStream s", 10, true},
            {"I05.stream_no_upload", "flags 0, hUploadStream s (stream given without the flag)", 0, true},
            {"I05.upload_dev", "flags UPLOAD | DEVICE_LAUNCH, hUploadStream s", 6, true}};
  for (const F& f : fs) {
    begin(f.id, f.what);
    CUgraph g;
    cuGraphCreate(&g, 0);
    CUgraphNode k;
    add_kernel(g, &k, f_empty(), nullptr);
    CUgraphExec e = inst(g, f.flags, f.upload_stream ? s : nullptr, {{"the kernel", k}});
    if (e) {
      rec("launch", cuGraphLaunch(e, s));
      rec("sync", cuStreamSynchronize(s));
    }
    destroy(e, g);
    end();
  }
  begin("I05.capturing", "instantiateWithParams of the graph a capture is still building, UPLOAD into another stream");
  rec("beginCapture", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  launch((const void*)empty_k, 1, 1, s);
  CaptureInfo ci;
  capture_info(s, &ci);
  CUstream other;
  cuStreamCreate(&other, CU_STREAM_NON_BLOCKING);
  destroy(inst(ci.g, 0, nullptr), nullptr);
  CUstreamCaptureStatus st;
  cuStreamIsCapturing(s, &st);
  obs("capture status %d", int(st));
  end_capture_dropping(s);
  end();
  begin("I05.upload_capturing", "flags UPLOAD with hUploadStream = a stream that is capturing");
  CUgraph g2;
  cuGraphCreate(&g2, 0);
  CUgraphNode k2;
  add_kernel(g2, &k2, f_empty(), nullptr);
  rec("beginCapture(other)", cuStreamBeginCapture(other, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUgraphExec e2 = inst(g2, CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, other, {{"the kernel", k2}});
  cuStreamIsCapturing(other, &st);
  obs("capture status %d", int(st));
  end_capture_dropping(other, "endCapture(other)");
  destroy(e2, g2);
  end();
}

void i06() {
  begin("I06", "cuMemAllocAsync + cuMemFreeAsync captured into a WHILE body");
  rec("beginCapture", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CaptureInfo ci;
  capture_info(s, &ci);
  CUgraphConditionalHandle h;
  cuGraphConditionalHandleCreate(&h, ci.g, env.ctx, 0, CU_GRAPH_COND_ASSIGN_DEFAULT);
  CUgraphNodeParams np = conditional_params(h, CU_GRAPH_COND_TYPE_WHILE, 1, env.ctx);
  CUgraphNode wn;
  cuGraphAddNode(&wn, ci.g, ci.deps.data(), nullptr, ci.deps.size(), &np);
  cuStreamUpdateCaptureDependencies(s, &wn, nullptr, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES);
  CUstream b;
  cuStreamCreate(&b, CU_STREAM_NON_BLOCKING);
  rec("beginBody", cuStreamBeginCaptureToGraph(b, np.conditional.phGraph_out[0], nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED));
  CUdeviceptr p = 0;
  rec("memAllocAsync(body)", cuMemAllocAsync(&p, 256, b));
  rec("memFreeAsync(body)", cuMemFreeAsync(p, b));
  CUgraph x;
  rec("endBody", cuStreamEndCapture(b, &x));
  CUgraph g = nullptr;
  rec("endCapture", cuStreamEndCapture(s, &g));
  size_t bn = 2;
  CUgraphNode bodyn[2] = {nullptr, nullptr};
  cuGraphGetNodes(np.conditional.phGraph_out[0], bodyn, &bn);
  destroy(inst(g, 0, nullptr, {{"the WHILE node", wn}, {"the body's MEM_ALLOC", bodyn[0]}, {"the body's MEM_FREE", bodyn[1]}}), g);
  end();

  begin("I06b", "a graph with a MEM_ALLOC node instantiated twice (the first executable alive)");
  cuGraphCreate(&g, 0);
  CUgraphNode a, f;
  add_alloc(g, &a, &p);
  cuGraphAddMemFreeNode(&f, g, &a, 1, p);
  CUgraphExec e1 = inst(g, 0, nullptr, {{"the MEM_ALLOC", a}, {"the MEM_FREE", f}});
  CUgraphExec e2 = inst(g, 0, nullptr, {{"the MEM_ALLOC", a}, {"the MEM_FREE", f}});
  destroy(e2, nullptr);
  destroy(e1, g);
  end();

  begin("I06c", "a cycle: kernel a -> b, then b -> a (cuGraphAddDependencies)");
  cuGraphCreate(&g, 0);
  CUgraphNode ka, kb;
  add_kernel(g, &ka, f_empty(), nullptr);
  add_kernel(g, &kb, f_empty(), nullptr, 1, 0, 1, &ka);
  rec("addDependencies(b->a)", cuGraphAddDependencies(g, &kb, &ka, nullptr, 1));
  destroy(inst(g, 0, nullptr, {{"a", ka}, {"b", kb}}), g);
  end();

  begin("I06d", "kernel nodes with shapes past the limits: block 2048; 1 MiB dynamic shared memory; grid 0");
  for (auto [label, block, shmem, grid] : {std::tuple{"block 2048", 2048u, 0u, 1u},
                                           std::tuple{"shmem 1 MiB", 1u, 1u << 20, 1u},
                                           std::tuple{"shmem 64 KiB (over the 48 KiB default)", 1u, 65536u, 1u},
                                           std::tuple{"grid 0", 1u, 0u, 0u}}) {
    cuGraphCreate(&g, 0);
    CUgraphNode kk = nullptr;
    CUresult r = add_kernel(g, &kk, f_empty(), nullptr, block, shmem, grid);
    obs("%s", label);
    rec("addKernelNode", r);
    if (!r) destroy(inst(g, 0, nullptr, {{"the kernel", kk}}), nullptr);
    cuGraphDestroy(g);
  }
  end();

  begin("I06e", "a memset node whose destination was cuMemFree'd before instantiate");
  CUdeviceptr d = 0;
  cuMemAlloc(&d, 1 << 20);
  cuGraphCreate(&g, 0);
  CUDA_MEMSET_NODE_PARAMS mp;
  std::memset(&mp, 0, sizeof mp);
  mp.dst = d;
  mp.elementSize = 4;
  mp.width = 4;
  mp.height = 1;
  CUgraphNode ms;
  rec("addMemset", cuGraphAddMemsetNode(&ms, g, nullptr, 0, &mp, env.ctx));
  rec("memFree", cuMemFree(d));
  CUgraphExec e = inst(g, 0, nullptr, {{"the memset", ms}});
  obs("launch not attempted (it would write freed memory)");
  destroy(e, g);
  end();
}

// Instantiate + upload in one call against instantiate then cuGraphUpload, and against no upload.
void i07() {
  for (int n : {100, 1000}) {
    char id[24];
    std::snprintf(id, sizeof id, "I07.%d", n);
    begin(id, "chain of n empty kernels: host us, median of 10 (variants interleaved)");
    CUgraph g;
    cuGraphCreate(&g, 0);
    CUgraphNode prev = nullptr;
    for (int i = 0; i < n; ++i) {
      CUgraphNode k;
      add_kernel(g, &k, f_empty(), nullptr, 1, 0, 1, prev ? &prev : nullptr);
      prev = k;
    }
    const char* names[] = {"WithParams(UPLOAD, s) + sync", "WithFlags(0) + cuGraphUpload(s) + sync",
                           "WithFlags(0) alone", "WithParams(flags 0) alone"};
    std::vector<double> t_inst[4], t_first[4];
    CUresult worst = CUDA_SUCCESS;
    for (int rep = 0; rep < 11; ++rep) {
      for (int v = 0; v < 4; ++v) {
        CUgraphExec e = nullptr;
        double t0 = now_us();
        CUresult r;
        if (v == 0 || v == 3) {
          CUDA_GRAPH_INSTANTIATE_PARAMS p;
          std::memset(&p, 0, sizeof p);
          p.flags = v == 0 ? CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD : 0;
          p.hUploadStream = v == 0 ? s : nullptr;
          r = cuGraphInstantiateWithParams(&e, g, &p);
          if (!r && v == 0) r = cuStreamSynchronize(s);
        } else {
          r = cuGraphInstantiateWithFlags(&e, g, 0);
          if (!r && v == 1) r = cuGraphUpload(e, s);
          if (!r && v == 1) r = cuStreamSynchronize(s);
        }
        double t1 = now_us();
        CUresult l = cuGraphLaunch(e, s);
        CUresult y = cuStreamSynchronize(s);
        double t2 = now_us();
        if (r) worst = r;
        if (l) worst = l;
        if (y) worst = y;
        if (rep > 0) {  // the first round warms up
          t_inst[v].push_back(t1 - t0);
          t_first[v].push_back(t2 - t1);
        }
        cuGraphExecDestroy(e);
      }
    }
    rec("all calls", worst);
    for (int v = 0; v < 4; ++v)
      obs("%s: %.0f us, then first launch+sync %.0f us, total %.0f us", names[v], median(t_inst[v]),
          median(t_first[v]), median(t_inst[v]) + median(t_first[v]));
    cuGraphDestroy(g);
    end();
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Case> cases = {{"I00", i00}, {"I01", i01}, {"I02", i02}, {"I03", i03}, {"I03b", i03b},
                             {"I04", i04}, {"I05", i05}, {"I06", i06}, {"I07", i07}};
  for (Case& c : cases) c.timeout_s = 40;
  return run(argc, argv, cases, setup);
}
