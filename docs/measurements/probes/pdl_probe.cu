// Programmatic dependent launch and launch priorities through cuLaunchKernelEx (issue 26 §2): what
// a captured programmatic launch turns into (edge type and ports from cuGraphGetEdges_v2), whether
// such graphs instantiate and replay correctly, the time of a chain of 16 and 64 small kernels
// replayed and eager with and without programmatic serialization, what a programmatic launch that
// never waits (no cudaGridDependencySynchronize) reads, CU_LAUNCH_ATTRIBUTE_PRIORITY on captured
// launches (does the node carry it; USE_NODE_PRIORITY), and CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT.
//   nvcc -O2 -arch=sm_90 -o pdl_probe docs/measurements/probes/pdl_probe.cu -lcuda
//   ./pdl_probe          (every case, one child process each)   ./pdl_probe P03   (one case)
#include "probe_common.h"

using namespace probe;

// Kernel i of a chain: reads its predecessor's output, writes its own (one int per block).
// trigger_first: let the next kernel launch at once (it waits in cudaGridDependencySynchronize);
// otherwise trigger after the write.
__global__ void chain_k(const int* prev, int* mine, int trigger_first) {
  if (trigger_first) cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
  if (threadIdx.x == 0) mine[blockIdx.x] = prev[blockIdx.x] + 1;
  if (!trigger_first) cudaTriggerProgrammaticLaunchCompletion();
}
// Sleeps about `us` microseconds (bounded), then *p = 42.
__global__ void slow_writer(int* p, unsigned long long us, int trigger_first) {
  if (trigger_first) cudaTriggerProgrammaticLaunchCompletion();
  for (unsigned long long i = 0; i < us; ++i) __nanosleep(1000);
  *(volatile int*)p = 42;
}
__global__ void reader(const int* p, int* out, int wait) {
  if (wait) cudaGridDependencySynchronize();
  *out = *(volatile const int*)p;
}
__global__ void plain_k(int* p) { atomicAdd(p, 1); }

namespace {

CUstream s, s2;
CUevent e0, e1;
int* bufs;  // (64 + 1) * 256 ints
constexpr int kMaxN = 64, kMaxBlocks = 256, kThreads = 128;

void setup() {
  init_runtime();
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
  cuEventCreate(&e0, 0);
  cuEventCreate(&e1, 0);
  cudaMalloc(&bufs, (kMaxN + 1) * kMaxBlocks * sizeof(int));
}

// cuLaunchKernelEx of a kernel of this file with up to two attributes.
template <class... A>
CUresult launch_ex(const void* k, unsigned grid, unsigned block, CUstream st, const CUlaunchAttribute* attrs,
                   unsigned nattrs, A... a) {
  void* args[] = {static_cast<void*>(&a)..., nullptr};
  CUlaunchConfig cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = grid;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = block;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = st;
  cfg.attrs = const_cast<CUlaunchAttribute*>(attrs);
  cfg.numAttrs = nattrs;
  return cuLaunchKernelEx(&cfg, fn(k), args, nullptr);
}
CUlaunchAttribute pdl_attr(int allowed = 1) {
  CUlaunchAttribute a;
  std::memset(&a, 0, sizeof a);
  a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  a.value.programmaticStreamSerializationAllowed = allowed;
  return a;
}
CUresult chain(int n, int blocks, bool pdl, int trigger_first) {
  CUlaunchAttribute a = pdl_attr();
  CUresult worst = CUDA_SUCCESS;
  for (int i = 0; i < n; ++i) {
    const int* prev = bufs + i * kMaxBlocks;
    int* mine = bufs + (i + 1) * kMaxBlocks;
    CUresult r = launch_ex((const void*)chain_k, blocks, kThreads, s, &a, pdl ? 1 : 0, prev, mine, trigger_first);
    if (r) worst = r;
  }
  return worst;
}
// Every block's last value equals n after a run from zeroed buffers.
int wrong_blocks(int n, int blocks) {
  std::vector<int> h(blocks);
  cuMemcpyDtoH(h.data(), CUdeviceptr(bufs + n * kMaxBlocks), blocks * sizeof(int));
  int bad = 0;
  for (int v : h) bad += v != n;
  return bad;
}
void clear() {
  cuMemsetD32(CUdeviceptr(bufs), 0, (kMaxN + 1) * kMaxBlocks);
  cuCtxSynchronize();
}
void print_edges(CUgraph g, int max) {
  size_t n = 0;
  cuGraphGetEdges(g, nullptr, nullptr, nullptr, &n);
  std::vector<CUgraphNode> from(n), to(n);
  std::vector<CUgraphEdgeData> data(n);
  rec("getEdges_v2", cuGraphGetEdges(g, from.data(), to.data(), data.data(), &n));
  std::string out = std::to_string(n) + " edges:";
  for (size_t i = 0; i < n && int(i) < max; ++i) {
    CUgraphNodeType ft, tt;
    cuGraphNodeGetType(from[i], &ft);
    cuGraphNodeGetType(to[i], &tt);
    out += " (" + std::to_string(int(ft)) + "->" + std::to_string(int(tt)) + " type " +
           std::to_string(int(data[i].type)) + " from_port " + std::to_string(int(data[i].from_port)) +
           " to_port " + std::to_string(int(data[i].to_port)) + ")";
  }
  obs("%s", out.c_str());
}
// Ends the capture on s, shows the graph's first `edges` edges, then replays it once and counts
// the chain's wrong blocks.
void end_and_replay(CUstream s, int edges) {
  CUgraph g = nullptr;
  rec("endCapture", cuStreamEndCapture(s, &g));
  if (g) {
    print_edges(g, edges);
    CUgraphExec e = nullptr;
    rec("instantiate", cuGraphInstantiate(&e, g, 0));
    if (e) {
      rec("graphLaunch", cuGraphLaunch(e, s));
      rec("sync", cuStreamSynchronize(s));
      obs("%d of 8 blocks wrong", wrong_blocks(2, 8));
      cuGraphExecDestroy(e);
    }
    cuGraphDestroy(g);
  }
}

void p00() { print_env("P00"); }

// What a captured programmatic launch records, and whether the graph replays correctly.
void p01() {
  begin("P01", "capture 4 chain kernels, kernels 2-4 with PROGRAMMATIC_STREAM_SERIALIZATION=1");
  clear();
  rec("beginCapture", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUlaunchAttribute a = pdl_attr();
  for (int i = 0; i < 4; ++i)
    rec(i ? "launchEx(pdl)" : "launchEx(plain)",
        launch_ex((const void*)chain_k, 8, kThreads, s, &a, i ? 1 : 0, (const int*)(bufs + i * kMaxBlocks),
                  bufs + (i + 1) * kMaxBlocks, 1));
  CUgraph g = nullptr;
  rec("endCapture", cuStreamEndCapture(s, &g));
  print_edges(g, 4);
  CUgraphExec e = nullptr;
  rec("instantiate", cuGraphInstantiate(&e, g, 0));
  for (int t = 0; t < 3; ++t) {
    clear();
    rec("graphLaunch", cuGraphLaunch(e, s));
    rec("sync", cuStreamSynchronize(s));
    obs("replay %d: %d of 8 blocks wrong", t + 1, wrong_blocks(4, 8));
  }
  cuGraphExecDestroy(e);
  cuGraphDestroy(g);
  end();

  begin("P01b", "capture: memset node, then a PDL kernel; an event record/wait hop, then a PDL kernel");
  rec("beginCapture", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  rec("memsetAsync", cuMemsetD32Async(CUdeviceptr(bufs), 0, kMaxBlocks, s));
  rec("launchEx(pdl after memset)", launch_ex((const void*)chain_k, 8, kThreads, s, &a, 1,
                                               (const int*)bufs, bufs + kMaxBlocks, 1));
  CUevent ev;
  cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
  rec("evRecord", cuEventRecord(ev, s));
  rec("waitEvent(s2)", cuStreamWaitEvent(s2, ev, 0));
  rec("launchEx(pdl on s2 after the hop)", launch_ex((const void*)chain_k, 8, kThreads, s2, &a, 1,
                                                      (const int*)(bufs + kMaxBlocks), bufs + 2 * kMaxBlocks, 1));
  rec("evRecord(s2)", cuEventRecord(ev, s2));
  rec("waitEvent(s)", cuStreamWaitEvent(s, ev, 0));
  end_and_replay(s, 4);
  end();

  begin("P01c", "a programmatic edge added with the graph API (cuGraphAddDependencies_v2, type 1, from_port 1)");
  CUgraph gg;
  cuGraphCreate(&gg, 0);
  CUDA_KERNEL_NODE_PARAMS kp;
  std::memset(&kp, 0, sizeof kp);
  kp.func = fn((const void*)chain_k);
  kp.gridDimX = 8;
  kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = kThreads;
  kp.blockDimY = kp.blockDimZ = 1;
  const int* p0 = bufs;
  int* p1 = bufs + kMaxBlocks;
  int* p2 = bufs + 2 * kMaxBlocks;
  int tf = 1;
  void* a1[] = {&p0, &p1, &tf};
  void* a2[] = {&p1, &p2, &tf};
  CUgraphNode n1, n2;
  kp.kernelParams = a1;
  cuGraphAddKernelNode(&n1, gg, nullptr, 0, &kp);
  kp.kernelParams = a2;
  cuGraphAddKernelNode(&n2, gg, nullptr, 0, &kp);
  CUgraphEdgeData ed;
  std::memset(&ed, 0, sizeof ed);
  ed.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  ed.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
  rec("addDependencies(programmatic)", cuGraphAddDependencies(gg, &n1, &n2, &ed, 1));
  print_edges(gg, 2);
  e = nullptr;
  rec("instantiate", cuGraphInstantiate(&e, gg, 0));
  if (e) {
    clear();
    rec("graphLaunch", cuGraphLaunch(e, s));
    rec("sync", cuStreamSynchronize(s));
    obs("%d of 8 blocks wrong", wrong_blocks(2, 8));
    cuGraphExecDestroy(e);
  }
  CUgraph g3;
  cuGraphCreate(&g3, 0);
  CUgraphNode m1, m2;
  cuGraphAddEmptyNode(&m1, g3, nullptr, 0);
  kp.kernelParams = a1;
  cuGraphAddKernelNode(&m2, g3, nullptr, 0, &kp);
  rec("addDependencies(programmatic from an EMPTY node)", cuGraphAddDependencies(g3, &m1, &m2, &ed, 1));
  ed.from_port = CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER;
  CUgraphNode m3;
  cuGraphAddKernelNode(&m3, g3, nullptr, 0, &kp);
  rec("addDependencies(programmatic, LAUNCH_ORDER port)", cuGraphAddDependencies(g3, &m2, &m3, &ed, 1));
  print_edges(g3, 3);
  cuGraphDestroy(g3);
  cuGraphDestroy(gg);
  end();
}

// Chains: device time per pass, median of 25 after 5 warm-ups.
void p02() {
  for (int n : {16, 64}) {
    for (int blocks : {1, 8, 132, 256}) {
      char id[32];
      std::snprintf(id, sizeof id, "P02.%d.%d", n, blocks);
      begin(id, "chain of n kernels x blocks (128 threads), us per pass (median of 25 CUDA-event timings)");
      obs("n=%d blocks=%d", n, blocks);
      double med[6] = {0};
      const char* names[] = {"graph plain", "graph PDL (trigger first)", "graph PDL (trigger last)",
                             "eager plain", "eager PDL (trigger first)", "eager PDL (trigger last)"};
      for (int v = 0; v < 6; ++v) {
        bool graph = v < 3;
        bool pdl = v % 3 != 0;
        int trigger_first = v % 3 == 2 ? 0 : 1;
        CUgraphExec ge = nullptr;
        CUgraph g = nullptr;
        if (graph) {
          cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
          CUresult r = chain(n, blocks, pdl, trigger_first);
          cuStreamEndCapture(s, &g);
          if (r || !g || cuGraphInstantiate(&ge, g, 0)) { rec(names[v], r ? r : CUDA_ERROR_UNKNOWN); continue; }
          cuGraphUpload(ge, s);
        }
        auto pass = [&] { return graph ? cuGraphLaunch(ge, s) : chain(n, blocks, pdl, trigger_first); };
        clear();
        CUresult r = pass();
        cuStreamSynchronize(s);
        int bad = wrong_blocks(n, blocks);
        std::vector<double> t;
        for (int i = 0; i < 30; ++i) {
          cuEventRecord(e0, s);
          pass();
          cuEventRecord(e1, s);
          cuEventSynchronize(e1);
          float ms = 0;
          cuEventElapsedTime(&ms, e0, e1);
          if (i >= 5) t.push_back(ms * 1000.0);
        }
        med[v] = median(t);
        obs("%s %.1f us%s%s", names[v], med[v], r ? " LAUNCH FAILED" : "", bad ? " WRONG RESULT" : "");
        if (ge) cuGraphExecDestroy(ge);
        if (g) cuGraphDestroy(g);
      }
      obs("ratios plain/PDL: graph %.2fx (trigger last %.2fx), eager %.2fx (trigger last %.2fx); eager PDL / "
          "graph PDL %.2fx", med[0] / med[1], med[0] / med[2], med[3] / med[4], med[3] / med[5], med[4] / med[1]);
      end();
    }
  }
}

// A programmatic launch that never waits: what does it read of a slow predecessor's output?
void p03() {
  struct V { const char* id; const char* what; int trigger_first, wait, pdl; };
  V vs[] = {{"P03.a", "writer triggers at start; reader PDL, no wait", 1, 0, 1},
            {"P03.b", "writer never triggers; reader PDL, no wait", 0, 0, 1},
            {"P03.c", "writer triggers at start; reader PDL, waits (cudaGridDependencySynchronize)", 1, 1, 1},
            {"P03.d", "writer triggers at start; reader launched plainly, no wait", 1, 0, 0}};
  int* p = bufs;
  int* out = bufs + 1;
  for (int graph = 0; graph < 2; ++graph) {
    for (const V& v : vs) {
      char id[24];
      std::snprintf(id, sizeof id, "%s.%s", v.id, graph ? "graph" : "eager");
      begin(id, v.what);
      obs("writer sleeps 200 us then writes 42; 10 trials, %s", graph ? "replayed graph" : "eager");
      CUlaunchAttribute a = pdl_attr();
      CUgraphExec ge = nullptr;
      CUgraph g = nullptr;
      auto issue = [&] {
        CUresult r1 = launch((const void*)slow_writer, 1, 1, s, p, 200ull, v.trigger_first);
        CUresult r2 = launch_ex((const void*)reader, 1, 1, s, &a, v.pdl ? 1 : 0, (const int*)p, out, v.wait);
        return r1 ? r1 : r2;
      };
      if (graph) {
        cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        rec("capture", issue());
        rec("endCapture", cuStreamEndCapture(s, &g));
        rec("instantiate", cuGraphInstantiate(&ge, g, 0));
        if (ge) cuGraphUpload(ge, s);
        if (g) print_edges(g, 1);
      }
      int stale = 0, fresh = 0, other = 0;
      CUresult r = CUDA_SUCCESS;
      for (int t = 0; t < 10; ++t) {
        cuMemsetD32(CUdeviceptr(p), 0, 1);
        cuMemsetD32(CUdeviceptr(out), 0xffffffff, 1);
        cuCtxSynchronize();
        CUresult x = graph ? (ge ? cuGraphLaunch(ge, s) : CUDA_ERROR_INVALID_VALUE) : issue();
        if (x) r = x;
        cuStreamSynchronize(s);
        int got = 0;
        cuMemcpyDtoH(&got, CUdeviceptr(out), 4);
        stale += got == 0;
        fresh += got == 42;
        other += got != 0 && got != 42;
      }
      rec("launches", r);
      obs("reads: %d stale (0), %d fresh (42), %d other", stale, fresh, other);
      if (ge) cuGraphExecDestroy(ge);
      if (g) cuGraphDestroy(g);
      end();
    }
  }
}

// Launch priority: eager, captured, on a prioritized stream, out of range; USE_NODE_PRIORITY.
void p04() {
  int least = 0, greatest = 0;
  begin("P04", "CU_LAUNCH_ATTRIBUTE_PRIORITY on cuLaunchKernelEx, eager and captured");
  rec("streamPriorityRange", cuCtxGetStreamPriorityRange(&least, &greatest));
  obs("least %d greatest %d", least, greatest);
  CUlaunchAttribute a;
  std::memset(&a, 0, sizeof a);
  a.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  a.value.priority = greatest;
  int* p = bufs;
  rec("launchEx(eager, greatest)", launch_ex((const void*)plain_k, 1, 1, s, &a, 1, p));
  a.value.priority = greatest - 10;
  rec("launchEx(eager, greatest-10)", launch_ex((const void*)plain_k, 1, 1, s, &a, 1, p));
  a.value.priority = least + 10;
  rec("launchEx(eager, least+10)", launch_ex((const void*)plain_k, 1, 1, s, &a, 1, p));
  rec("sync", cuStreamSynchronize(s));
  CUstream hi = nullptr;
  rec("streamCreateWithPriority(greatest)", cuStreamCreateWithPriority(&hi, CU_STREAM_NON_BLOCKING, greatest));
  // Captured: attr greatest, no attr, attr out of range; then a launch on the prioritized stream.
  CUevent ev;
  cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
  rec("beginCapture", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  a.value.priority = greatest;
  rec("launchEx(captured, greatest)", launch_ex((const void*)plain_k, 1, 1, s, &a, 1, p));
  rec("launchEx(captured, none)", launch_ex((const void*)plain_k, 1, 1, s, nullptr, 0, p));
  a.value.priority = greatest - 10;
  rec("launchEx(captured, greatest-10)", launch_ex((const void*)plain_k, 1, 1, s, &a, 1, p));
  cuEventRecord(ev, s);
  cuStreamWaitEvent(hi, ev, 0);
  rec("launchEx(captured on the greatest-priority stream, none)", launch_ex((const void*)plain_k, 1, 1, hi, nullptr, 0, p));
  cuEventRecord(ev, hi);
  cuStreamWaitEvent(s, ev, 0);
  CUgraph g = nullptr;
  rec("endCapture", cuStreamEndCapture(s, &g));
  size_t n = 0;
  cuGraphGetNodes(g, nullptr, &n);
  std::vector<CUgraphNode> nodes(n);
  cuGraphGetNodes(g, nodes.data(), &n);
  std::string pr;
  for (CUgraphNode nd : nodes) {
    CUlaunchAttributeValue v;
    std::memset(&v, 0, sizeof v);
    CUresult r = cuGraphKernelNodeGetAttribute(nd, CU_LAUNCH_ATTRIBUTE_PRIORITY, &v);
    pr += r ? " " + code(r) : " " + std::to_string(v.priority);
  }
  obs("node priorities in capture order:%s", pr.c_str());
  CUgraphExec e0x = nullptr, e8 = nullptr;
  rec("instantiate(flags 0)", cuGraphInstantiateWithFlags(&e0x, g, 0));
  rec("instantiate(USE_NODE_PRIORITY)", cuGraphInstantiateWithFlags(&e8, g, CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY));
  if (e0x) rec("launch(flags 0)", cuGraphLaunch(e0x, s));
  if (e8) rec("launch(USE_NODE_PRIORITY)", cuGraphLaunch(e8, s));
  rec("sync", cuStreamSynchronize(s));
  // Setting the attribute on a node, and exec update between graphs that differ only in priority.
  CUlaunchAttributeValue v;
  std::memset(&v, 0, sizeof v);
  v.priority = least;
  rec("kernelNodeSetAttribute(priority least)", cuGraphKernelNodeSetAttribute(nodes[0], CU_LAUNCH_ATTRIBUTE_PRIORITY, &v));
  std::memset(&v, 0, sizeof v);
  cuGraphKernelNodeGetAttribute(nodes[0], CU_LAUNCH_ATTRIBUTE_PRIORITY, &v);
  obs("node 0 now %d", v.priority);
  CUgraphExecUpdateResultInfo info;
  std::memset(&info, 0, sizeof info);
  if (e8) {
    rec("execUpdate(priority changed)", cuGraphExecUpdate(e8, g, &info));
    obs("info.result %d", int(info.result));
  }
  if (e0x) cuGraphExecDestroy(e0x);
  if (e8) cuGraphExecDestroy(e8);
  cuGraphDestroy(g);
  end();
}

// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT: eager and captured.
void p05() {
  CUevent ev, evt;
  cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
  cuEventCreate(&evt, 0);
  for (int at_start : {0, 1}) {
    char id[24];
    std::snprintf(id, sizeof id, "P05.eager.%d", at_start);
    begin(id, "chain kernel 1 on s with PROGRAMMATIC_EVENT; s2 waits the event, runs chain kernel 2 (plain)");
    obs("triggerAtBlockStart %d", at_start);
    clear();
    CUlaunchAttribute a;
    std::memset(&a, 0, sizeof a);
    a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
    a.value.programmaticEvent.event = ev;
    a.value.programmaticEvent.flags = 0;
    a.value.programmaticEvent.triggerAtBlockStart = at_start;
    rec("launchEx(event)", launch_ex((const void*)chain_k, 8, kThreads, s, &a, 1, (const int*)bufs, bufs + kMaxBlocks, 0));
    rec("waitEvent(s2)", cuStreamWaitEvent(s2, ev, 0));
    rec("launch(s2)", launch((const void*)chain_k, 8, kThreads, s2, (const int*)(bufs + kMaxBlocks), bufs + 2 * kMaxBlocks, 0));
    rec("sync(s)", cuStreamSynchronize(s));
    rec("sync(s2)", cuStreamSynchronize(s2));
    obs("%d of 8 blocks wrong", wrong_blocks(2, 8));
    rec("evQuery", cuEventQuery(ev));
    end();
  }
  begin("P05.timing", "PROGRAMMATIC_EVENT with an event that records timing");
  CUlaunchAttribute a;
  std::memset(&a, 0, sizeof a);
  a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
  a.value.programmaticEvent.event = evt;
  rec("launchEx(event with timing)", launch_ex((const void*)chain_k, 8, kThreads, s, &a, 1, (const int*)bufs, bufs + kMaxBlocks, 0));
  rec("sync", cuStreamSynchronize(s));
  end();
  begin("P05.capture", "the same pattern captured (s2 joined by the programmatic event)");
  clear();
  a.value.programmaticEvent.event = ev;
  CUevent join;
  cuEventCreate(&join, CU_EVENT_DISABLE_TIMING);
  rec("beginCapture", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  rec("launchEx(event)", launch_ex((const void*)chain_k, 8, kThreads, s, &a, 1, (const int*)bufs, bufs + kMaxBlocks, 0));
  rec("waitEvent(s2)", cuStreamWaitEvent(s2, ev, 0));
  CUstreamCaptureStatus st;
  cuStreamIsCapturing(s2, &st);
  obs("s2 capture status %d", int(st));
  rec("launch(s2)", launch((const void*)chain_k, 8, kThreads, s2, (const int*)(bufs + kMaxBlocks), bufs + 2 * kMaxBlocks, 0));
  rec("evRecord(join,s2)", cuEventRecord(join, s2));
  rec("waitEvent(s,join)", cuStreamWaitEvent(s, join, 0));
  end_and_replay(s, 3);
  end();
}

// Exec update between a plain chain and a programmatic one (same kernels, other edge types).
void p06() {
  begin("P06", "cuGraphExecUpdate: plain 4-kernel chain executable updated to the PDL chain, and back");
  CUgraph gp = nullptr, gq = nullptr;
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  chain(4, 8, false, 1);
  cuStreamEndCapture(s, &gp);
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  chain(4, 8, true, 1);
  cuStreamEndCapture(s, &gq);
  CUgraphExec e = nullptr;
  rec("instantiate(plain)", cuGraphInstantiate(&e, gp, 0));
  CUgraphExecUpdateResultInfo info;
  std::memset(&info, 0, sizeof info);
  rec("execUpdate(plain -> PDL)", cuGraphExecUpdate(e, gq, &info));
  obs("info.result %d", int(info.result));
  CUgraphExec f = nullptr;
  rec("instantiate(PDL)", cuGraphInstantiate(&f, gq, 0));
  std::memset(&info, 0, sizeof info);
  rec("execUpdate(PDL -> plain)", cuGraphExecUpdate(f, gp, &info));
  obs("info.result %d", int(info.result));
  cuGraphExecDestroy(e);
  cuGraphExecDestroy(f);
  cuGraphDestroy(gp);
  cuGraphDestroy(gq);
  end();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Case> cases = {{"P00", p00}, {"P01", p01}, {"P02", p02}, {"P03", p03},
                             {"P04", p04}, {"P05", p05}, {"P06", p06}};
  for (Case& c : cases) c.timeout_s = 40;
  return run(argc, argv, cases, setup);
}
