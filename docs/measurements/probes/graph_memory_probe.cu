// Device memory the driver itself holds per executable graph (issue 25 §2): cuMemGetInfo (free)
// around cuGraphInstantiateWithFlags, cuGraphUpload, the first cuGraphLaunch and cuGraphExecDestroy,
// for chains of 1 to 10,000 nodes of each node type graphcap records (empty kernels, DtoD memcpy,
// memset, empty nodes, event record/wait pairs, WHILE nodes with a 1-kernel body); 8 executables of
// each graph; whether destroying them gives the memory back (at once, after cuCtxSynchronize, 200 ms
// later) and whether a second batch reuses what the driver kept. Each (type, size) runs in a fresh
// process, so what one case leaves with the driver does not hide the next case's memory.
//   nvcc -O2 -arch=sm_90 -o graph_memory_probe docs/measurements/probes/graph_memory_probe.cu -lcuda
//   ./graph_memory_probe          (every case)   ./graph_memory_probe M.kernel.1000   (one case)
#include "probe_common.h"

using namespace probe;

__global__ void empty_k() {}

namespace {

enum Type { KERNEL, MEMCPY, MEMSET, EMPTY, EVENT, WHILE, IF };
const char* type_name[] = {"kernel", "memcpy", "memset", "empty", "event", "while", "if"};
const char* type_desc[] = {"empty kernels", "256-byte DtoD memcpy nodes", "64-word D32 memset nodes",
                           "empty nodes", "event record/wait nodes (alternating, one event)",
                           "WHILE nodes (default 0: the body never runs) with a 1-kernel body",
                           "IF nodes (default 0: the body never runs) with a 1-kernel body"};

CUstream s;
CUdeviceptr src, dst;
CUevent ev;

void setup() {
  init_runtime();
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  cuMemAlloc(&src, 4096);
  cuMemAlloc(&dst, 4096);
  cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
}

CUresult add_kernel(CUgraphNode* n, CUgraph g, const CUgraphNode* dep, size_t ndep) {
  CUDA_KERNEL_NODE_PARAMS kp;
  std::memset(&kp, 0, sizeof kp);
  kp.func = fn((const void*)empty_k);
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
  return cuGraphAddKernelNode(n, g, dep, ndep, &kp);
}

// A chain of n nodes of one type (each depends on the one before, as one captured stream gives).
CUresult build(Type t, int n, CUgraph* out) {
  CUgraph g = nullptr;
  CUresult r = cuGraphCreate(&g, 0);
  if (r) return r;
  CUgraphNode prev = nullptr, node = nullptr;
  for (int i = 0; i < n && r == CUDA_SUCCESS; ++i) {
    const CUgraphNode* dep = prev ? &prev : nullptr;
    size_t ndep = prev ? 1 : 0;
    switch (t) {
      case KERNEL: r = add_kernel(&node, g, dep, ndep); break;
      case MEMCPY: {
        CUDA_MEMCPY3D c;
        std::memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = src;
        c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        c.dstDevice = dst;
        c.WidthInBytes = 256;
        c.Height = 1;
        c.Depth = 1;
        r = cuGraphAddMemcpyNode(&node, g, dep, ndep, &c, env.ctx);
        break;
      }
      case MEMSET: {
        CUDA_MEMSET_NODE_PARAMS m;
        std::memset(&m, 0, sizeof m);
        m.dst = dst;
        m.value = unsigned(i);
        m.elementSize = 4;
        m.width = 64;
        m.height = 1;
        r = cuGraphAddMemsetNode(&node, g, dep, ndep, &m, env.ctx);
        break;
      }
      case EMPTY: r = cuGraphAddEmptyNode(&node, g, dep, ndep); break;
      case EVENT:
        r = i % 2 ? cuGraphAddEventWaitNode(&node, g, dep, ndep, ev)
                  : cuGraphAddEventRecordNode(&node, g, dep, ndep, ev);
        break;
      case WHILE:
      case IF: {
        CUgraphConditionalHandle h = 0;
        r = cuGraphConditionalHandleCreate(&h, g, env.ctx, 0, CU_GRAPH_COND_ASSIGN_DEFAULT);
        if (r) break;
        CUgraphNodeParams p =
            conditional_params(h, t == WHILE ? CU_GRAPH_COND_TYPE_WHILE : CU_GRAPH_COND_TYPE_IF, 1, env.ctx);
        r = cuGraphAddNode(&node, g, dep, nullptr, ndep, &p);
        if (r) break;
        CUgraphNode k;
        r = add_kernel(&k, p.conditional.phGraph_out[0], nullptr, 0);
        break;
      }
    }
    prev = node;
  }
  *out = g;
  return r;
}

// Instantiates, uploads and launches `count` executables of g; returns the MiB each step took.
struct Batch {
  std::vector<CUgraphExec> execs;
  long long inst = 0, upload = 0, launch = 0;
  std::vector<double> t_inst, t_up, t_launch;
  CUresult first_fail = CUDA_SUCCESS;
  const char* fail_at = "";
};
void run_batch(const std::vector<CUgraph>& gs, int count, Batch& b, double deadline_us) {
  for (int i = 0; i < count; ++i) {
    if (now_us() > deadline_us) break;
    size_t f0 = free_bytes();
    CUgraphExec e = nullptr;
    double t0 = now_us();
    CUresult r = cuGraphInstantiateWithFlags(&e, gs[i % gs.size()], 0);
    double t1 = now_us();
    size_t f1 = free_bytes();
    if (r) { b.first_fail = r; b.fail_at = "instantiate"; break; }
    b.execs.push_back(e);
    r = cuGraphUpload(e, s);
    if (!r) r = cuStreamSynchronize(s);
    double t2 = now_us();
    size_t f2 = free_bytes();
    if (r) { b.first_fail = r; b.fail_at = "upload"; break; }
    r = cuGraphLaunch(e, s);
    if (!r) r = sync_bounded(s, 5000);
    double t3 = now_us();
    size_t f3 = free_bytes();
    if (r) { b.first_fail = r; b.fail_at = "launch"; break; }
    b.inst += taken(f0, f1);
    b.upload += taken(f1, f2);
    b.launch += taken(f2, f3);
    b.t_inst.push_back(t1 - t0);
    b.t_up.push_back(t2 - t1);
    b.t_launch.push_back(t3 - t2);
  }
}

// separate: one graph per executable (a graph holding conditional nodes allows one executable at a
// time: a second instantiate of it is 801).
void measure(Type t, int n, int count, bool separate = false) {
  char id[48], what[220];
  std::snprintf(id, sizeof id, "M.%s.%d%s%s", type_name[t], n, count == 8 ? "" : (count == 256 ? "x256" : "x64"),
                separate ? ".sep" : "");
  std::snprintf(what, sizeof what, "%d executables of %s chain of %d %s", count,
                separate ? "as many graphs, each a" : "a", n, type_desc[t]);
  begin(id, what);
  double start = now_us(), deadline = start + 12e6;  // keeps the probe near 90 s in all
  size_t f_start = free_bytes();
  std::vector<CUgraph> gs(separate ? count : 1, nullptr);
  double tb = now_us();
  CUresult br = CUDA_SUCCESS;
  for (CUgraph& one : gs)
    if (br == CUDA_SUCCESS) br = build(t, n, &one);
  if (rec("build", br) != CUDA_SUCCESS) {
    for (CUgraph one : gs)
      if (one) cuGraphDestroy(one);
    end();
    return;
  }
  double t_build = now_us() - tb;
  size_t f_built = free_bytes();
  Batch b1;
  run_batch(gs, count, b1, deadline);
  int k = int(b1.t_inst.size());
  if (b1.first_fail) {
    std::printf(" %s=%s", b1.fail_at, code(b1.first_fail).c_str());
  } else {
    std::printf(" instantiate/upload/launch=SUCCESS x%d", k);
  }
  if (k) {
    obs("build %.1f ms, graph build took %.1f MiB", t_build / 1000, mib(taken(f_start, f_built)));
    obs("per executable: instantiate %.2f MiB, upload %.2f MiB, first launch %.2f MiB; %.0f bytes "
        "per node at instantiate", mib(b1.inst) / k, mib(b1.upload) / k, mib(b1.launch) / k,
        double(b1.inst) / k / n);
    obs("medians: instantiate %.1f us, upload+sync %.1f us, launch+sync %.1f us", median(b1.t_inst),
        median(b1.t_up), median(b1.t_launch));
  }
  size_t f_held = free_bytes();
  for (CUgraphExec e : b1.execs) cuGraphExecDestroy(e);
  size_t f_d0 = free_bytes();
  cuCtxSynchronize();
  size_t f_d1 = free_bytes();
  sleep_ms(200);
  size_t f_d2 = free_bytes();
  obs("held by %d executables %.1f MiB; destroy gave back %.1f at once, %.1f after ctxSync, %.1f "
      "200 ms later", k, mib(taken(f_built, f_held)), mib(taken(f_d0, f_held)),
      mib(taken(f_d1, f_held)), mib(taken(f_d2, f_held)));
  if (now_us() < deadline) {
    Batch b2;
    size_t f_b2 = free_bytes();
    run_batch(gs, count, b2, deadline);
    size_t f_b2e = free_bytes();
    int k2 = int(b2.t_inst.size());
    obs("second batch of %d: took %.1f MiB more (%s)", k2, mib(taken(f_b2, f_b2e)),
        b2.first_fail ? code(b2.first_fail).c_str() : "all SUCCESS");
    for (CUgraphExec e : b2.execs) cuGraphExecDestroy(e);
  }
  size_t f_g0 = free_bytes();
  CUresult gd = CUDA_SUCCESS;
  for (CUgraph one : gs) {
    CUresult r = cuGraphDestroy(one);
    if (r) gd = r;
  }
  rec("graphDestroy", gd);
  size_t f_g1 = free_bytes();
  obs("graphDestroy gave back %.1f MiB; %.1f MiB still taken vs the case's start; case %.1f s",
      mib(taken(f_g1, f_g0)), mib(taken(f_start, f_g1)), (now_us() - start) / 1e6);
  end();
}

#define M(T, N) void m_##T##_##N() { measure(T, N, 8); }
#define ALL(T) M(T, 1) M(T, 10) M(T, 100) M(T, 1000) M(T, 3000) M(T, 10000)
ALL(KERNEL) ALL(MEMCPY) ALL(MEMSET) ALL(EMPTY) ALL(EVENT) ALL(WHILE)
void m_kernel_1x256() { measure(KERNEL, 1, 256); }
void m_kernel_10x256() { measure(KERNEL, 10, 256); }
void m_kernel_100x64() { measure(KERNEL, 100, 64); }
void m_empty_1x256() { measure(EMPTY, 1, 256); }
#define S(T, N) void s_##T##_##N() { measure(T, N, 8, true); }
S(WHILE, 1) S(WHILE, 10) S(WHILE, 100) S(WHILE, 1000) S(WHILE, 3000)
S(IF, 1) S(IF, 10) S(IF, 100) S(IF, 1000) S(IF, 3000)

void m00() { print_env("M00"); }

}  // namespace

int main(int argc, char** argv) {
  std::vector<Case> cases = {{"M00", m00}};
#define C(T, t, N) cases.push_back({"M." #t "." #N, m_##T##_##N, 25});
#define CALL(T, t) C(T, t, 1) C(T, t, 10) C(T, t, 100) C(T, t, 1000) C(T, t, 3000) C(T, t, 10000)
  CALL(KERNEL, kernel)
  cases.push_back({"M.kernel.1x256", m_kernel_1x256, 40});
  cases.push_back({"M.kernel.10x256", m_kernel_10x256, 40});
  cases.push_back({"M.kernel.100x64", m_kernel_100x64, 40});
  cases.push_back({"M.empty.1x256", m_empty_1x256, 40});
  CALL(MEMCPY, memcpy) CALL(MEMSET, memset) CALL(EMPTY, empty) CALL(EVENT, event) CALL(WHILE, while)
#define CS(T, t, N) cases.push_back({"M." #t "." #N ".sep", s_##T##_##N, 25});
  CS(WHILE, while, 1) CS(WHILE, while, 10) CS(WHILE, while, 100) CS(WHILE, while, 1000) CS(WHILE, while, 3000)
  CS(IF, if, 1) CS(IF, if, 10) CS(IF, if, 100) CS(IF, if, 1000) CS(IF, if, 3000)
  return run(argc, argv, cases, setup);
}
