// What the driver does with IF, IF/ELSE and SWITCH conditional nodes (issue 26 §1), inserted during
// stream capture the way graphcap inserts WHILE loops (docs/cuda-driver-facts.md, "Conditional nodes
// through the driver API"): cuStreamGetCaptureInfo, cuGraphConditionalHandleCreate, cuGraphAddNode
// (CONDITIONAL) on the capture's dependencies, cuStreamUpdateCaptureDependencies(SET), each body
// captured with cuStreamBeginCaptureToGraph (RELAXED, as graphcap captures bodies). Measures which
// body runs for each value, defaults with and without CU_GRAPH_COND_ASSIGN_DEFAULT, SWITCH values
// past the last case, SWITCH sizes, empty bodies, nesting and its depth limit, exec update, and the
// replay cost of a taken and a skipped branch.
//   nvcc -O2 -arch=sm_90 -o branch_probe docs/measurements/probes/branch_probe.cu -lcuda
//   ./branch_probe          (every case, one child process each)   ./branch_probe B03   (one case)
#include "probe_common.h"

#include <functional>

using namespace probe;

__global__ void set_cond(cudaGraphConditionalHandle h, unsigned v) { cudaGraphSetConditional(h, v); }
__global__ void add(int* p, int v) { atomicAdd(p, v); }
__global__ void store(int* p, int v) { *p = v; }
__global__ void empty_k() {}
__global__ void countdown(cudaGraphConditionalHandle h, int* counter, int* iters) {
  int left = --*counter;
  ++*iters;
  cudaGraphSetConditional(h, left > 0 ? 1u : 0u);
}
// h = *counter % 2 (an IF decided per WHILE iteration)
__global__ void set_odd(cudaGraphConditionalHandle h, const int* counter) {
  cudaGraphSetConditional(h, unsigned(*counter) % 2u);
}
// h = *counter - 1 (a SWITCH case chosen per WHILE iteration)
__global__ void set_minus1(cudaGraphConditionalHandle h, const int* counter) {
  cudaGraphSetConditional(h, unsigned(*counter - 1));
}

namespace {

CUstream s;
CUstream bs[8];  // body streams, one per nesting level
int* dev;        // 16384 ints of scratch
std::vector<int> host(16384);

void setup() {
  init_runtime();
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  for (CUstream& b : bs) cuStreamCreate(&b, CU_STREAM_NON_BLOCKING);
  cudaMalloc(&dev, 16384 * sizeof(int));
}
void reset() {
  cuMemsetD32(CUdeviceptr(dev), 0, 16384);
  cuCtxSynchronize();
}
void read() { cuMemcpyDtoH(host.data(), CUdeviceptr(dev), host.size() * sizeof(int)); }

// The graph a stream is capturing into, and its current dependencies.
CUresult make_handle(CUstream st, unsigned def, unsigned flags, CUgraphConditionalHandle* h) {
  CaptureInfo ci;
  CUresult r = capture_info(st, &ci);
  if (r) return r;
  return cuGraphConditionalHandleCreate(h, ci.g, env.ctx, def, flags);
}
// Adds a conditional node on the capturing stream st, using handle h; bodies come back in `bodies`.
CUresult insert_cond(CUstream st, CUgraphConditionalNodeType type, unsigned size,
                     CUgraphConditionalHandle h, std::vector<CUgraph>* bodies, CUgraphNode* node) {
  CaptureInfo ci;
  CUresult r = capture_info(st, &ci);
  if (r) return r;
  CUgraphNodeParams p = conditional_params(h, type, size, env.ctx);
  r = cuGraphAddNode(node, ci.g, ci.deps.data(), nullptr, ci.deps.size(), &p);
  if (r) return r;
  bodies->assign(p.conditional.phGraph_out, p.conditional.phGraph_out + size);
  return cuStreamUpdateCaptureDependencies(st, node, nullptr, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES);
}
// Ends the capture on s; when it gave a graph and `ready` (what instantiating needs was captured),
// instantiates it and replays it `times` times, each from reset device words, calling `report(t)`
// with the words read back after replay t.
template <class Report>
void end_and_replay(bool ready, int times, Report&& report) {
  CUgraph g = nullptr;
  rec("endCapture", cuStreamEndCapture(s, &g));
  CUgraphExec e = nullptr;
  if (g && ready && !rec("instantiate", cuGraphInstantiate(&e, g, 0))) {
    for (int t = 0; t < times; ++t) {
      reset();
      rec("launch", cuGraphLaunch(e, s));
      rec("sync", sync_bounded(s));
      read();
      report(t);
    }
    cuGraphExecDestroy(e);
  }
  if (g) cuGraphDestroy(g);
  end();
}
// Captures body i of `bodies` on body stream `b` (RELAXED), recording what `work(i, b)` launches.
CUresult capture_bodies(const std::vector<CUgraph>& bodies, CUstream b,
                        const std::function<void(unsigned, CUstream)>& work) {
  CUresult worst = CUDA_SUCCESS;
  for (unsigned i = 0; i < bodies.size(); ++i) {
    CUresult r = cuStreamBeginCaptureToGraph(b, bodies[i], nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED);
    if (r) return r;
    work(i, b);
    CUgraph x = nullptr;
    r = cuStreamEndCapture(b, &x);
    if (r) worst = r;
  }
  return worst;
}
using Handle = CUgraphConditionalHandle;
CUresult L_set(CUstream st, Handle h, unsigned v) { return launch((const void*)set_cond, 1, 1, st, (cudaGraphConditionalHandle)h, v); }
CUresult L_add(CUstream st, int i, int v = 1) { return launch((const void*)add, 1, 1, st, dev + i, v); }

// A one-branch graph: [setter(v) if set] -> COND(type, size, handle default def, flags) with body i
// adding 1 to dev[i] -> add(dev[100]). Returns the graph (or NULL after printing the failure).
CUgraph one_node_graph(CUgraphConditionalNodeType type, unsigned size, unsigned def, unsigned flags,
                       bool set, unsigned v, bool set_after = false, unsigned v_after = 0) {
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  Handle h = 0;
  rec("handleCreate", make_handle(s, def, flags, &h));
  if (set) L_set(s, h, v);
  std::vector<CUgraph> bodies;
  CUgraphNode node;
  CUresult r = insert_cond(s, type, size, h, &bodies, &node);
  if (r) rec("insert", r);
  if (!r) rec("bodies", capture_bodies(bodies, bs[0], [](unsigned i, CUstream b) { L_add(b, int(i)); }));
  if (set_after) L_set(s, h, v_after);
  L_add(s, 100);
  CUgraph g = nullptr;
  CUresult e = cuStreamEndCapture(s, &g);
  if (e) rec("endCapture", e);
  return g;
}
// Launches an executable of g `times` times; after each launch prints dev[0..size) and dev[100].
void run_and_show(CUgraph g, unsigned size, int times, bool reset_between = true) {
  if (!g) return;
  CUgraphExec e = nullptr;
  if (rec("instantiate", cuGraphInstantiate(&e, g, 0))) { cuGraphDestroy(g); return; }
  reset();
  for (int t = 0; t < times; ++t) {
    if (reset_between) reset();
    CUresult r1 = cuGraphLaunch(e, s), r2 = sync_bounded(s);
    if (r1 || r2) { rec("launch", r1); rec("sync", r2); }
    read();
    std::string bodies;
    for (unsigned i = 0; i < size && i < 8; ++i) bodies += std::to_string(host[i]) + (i + 1 < size && i < 7 ? "," : "");
    obs("launch %d: body runs [%s]%s after-node %d", t + 1, bodies.c_str(), size > 8 ? "..." : "", host[100]);
  }
  cuGraphExecDestroy(e);
  cuGraphDestroy(g);
}

void b00() { print_env("B00"); }

void b01() {
  for (unsigned def : {1u, 0u}) {
    begin(def ? "B01.1" : "B01.0", def ? "IF size 1, handle default 1 + ASSIGN_DEFAULT, no setter, 2 launches"
                                       : "IF size 1, handle default 0 + ASSIGN_DEFAULT, no setter, 2 launches");
    run_and_show(one_node_graph(CU_GRAPH_COND_TYPE_IF, 1, def, CU_GRAPH_COND_ASSIGN_DEFAULT, false, 0), 1, 2);
    end();
  }
}

void b02() {
  for (unsigned def : {1u, 0u}) {
    begin(def ? "B02.d1" : "B02.d0", def ? "IF/ELSE (size 2), default 1 + ASSIGN_DEFAULT, no setter"
                                         : "IF/ELSE (size 2), default 0 + ASSIGN_DEFAULT, no setter");
    run_and_show(one_node_graph(CU_GRAPH_COND_TYPE_IF, 2, def, CU_GRAPH_COND_ASSIGN_DEFAULT, false, 0), 2, 1);
    end();
  }
  for (unsigned v : {0u, 1u, 7u}) {
    char id[16], what[120];
    std::snprintf(id, sizeof id, "B02.s%u", v);
    std::snprintf(what, sizeof what, "IF/ELSE (size 2), default 0, a kernel before the node sets %u", v);
    begin(id, what);
    run_and_show(one_node_graph(CU_GRAPH_COND_TYPE_IF, 2, 0, CU_GRAPH_COND_ASSIGN_DEFAULT, true, v), 2, 1);
    end();
  }
  begin("B02.bodies", "IF size 2: phGraph_out[0] and [1]");
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  Handle h;
  make_handle(s, 0, 1, &h);
  std::vector<CUgraph> b;
  CUgraphNode n;
  rec("insert", insert_cond(s, CU_GRAPH_COND_TYPE_IF, 2, h, &b, &n));
  obs("body0 %s, body1 %s, distinct %d", b[0] ? "set" : "NULL", b.size() > 1 && b[1] ? "set" : "NULL",
      b.size() > 1 && b[0] != b[1]);
  CUgraph g = nullptr;
  rec("endCapture(bodies left empty)", cuStreamEndCapture(s, &g));
  CUgraphExec e = nullptr;
  rec("instantiate", cuGraphInstantiate(&e, g, 0));
  if (e) { rec("launch", cuGraphLaunch(e, s)); rec("sync", sync_bounded(s)); cuGraphExecDestroy(e); }
  if (g) cuGraphDestroy(g);
  end();
}

void b03() {
  for (unsigned v : {0u, 1u, 2u, 3u, 4u, 100u, 0xffffffffu}) {
    char id[24], what[120];
    std::snprintf(id, sizeof id, "B03.s%u", v);
    std::snprintf(what, sizeof what, "SWITCH size 4, default 0, a kernel before the node sets %u", v);
    begin(id, what);
    run_and_show(one_node_graph(CU_GRAPH_COND_TYPE_SWITCH, 4, 0, CU_GRAPH_COND_ASSIGN_DEFAULT, true, v), 4, 1);
    end();
  }
  for (unsigned def : {2u, 9u}) {
    char id[24], what[120];
    std::snprintf(id, sizeof id, "B03.d%u", def);
    std::snprintf(what, sizeof what, "SWITCH size 4, default %u + ASSIGN_DEFAULT, no setter, 2 launches", def);
    begin(id, what);
    run_and_show(one_node_graph(CU_GRAPH_COND_TYPE_SWITCH, 4, def, CU_GRAPH_COND_ASSIGN_DEFAULT, false, 0), 4, 2);
    end();
  }
}

void b04() {
  begin("B04.a", "IF, default 1, flags 0 (no ASSIGN_DEFAULT), no setter, 2 launches");
  run_and_show(one_node_graph(CU_GRAPH_COND_TYPE_IF, 1, 1, 0, false, 0), 1, 2);
  end();
  begin("B04.b", "IF, default 0, flags 0; a kernel AFTER the node sets 1; 3 launches (does it persist?)");
  run_and_show(one_node_graph(CU_GRAPH_COND_TYPE_IF, 1, 0, 0, false, 0, true, 1), 1, 3);
  end();
  begin("B04.c", "IF, default 0 + ASSIGN_DEFAULT; a kernel AFTER the node sets 1; 3 launches");
  run_and_show(one_node_graph(CU_GRAPH_COND_TYPE_IF, 1, 0, CU_GRAPH_COND_ASSIGN_DEFAULT, false, 0, true, 1), 1, 3);
  end();
  begin("B04.d", "IF, default 1 + ASSIGN_DEFAULT; a kernel AFTER the node sets 0; 3 launches");
  run_and_show(one_node_graph(CU_GRAPH_COND_TYPE_IF, 1, 1, CU_GRAPH_COND_ASSIGN_DEFAULT, false, 0, true, 0), 1, 3);
  end();
  begin("B04.e", "SWITCH size 4, default 0, flags 0; a kernel AFTER the node sets 2; 3 launches");
  run_and_show(one_node_graph(CU_GRAPH_COND_TYPE_SWITCH, 4, 0, 0, false, 0, true, 2), 4, 3);
  end();
  // The value of a handle without ASSIGN_DEFAULT across two executables of one graph.
  begin("B04.f", "as B04.b, two executables of the same graph, launched alternately (e1, e2, e1)");
  CUgraph g = one_node_graph(CU_GRAPH_COND_TYPE_IF, 1, 0, 0, false, 0, true, 1);
  CUgraphExec e1 = nullptr, e2 = nullptr;
  rec("instantiate(e1)", cuGraphInstantiate(&e1, g, 0));
  rec("instantiate(e2)", cuGraphInstantiate(&e2, g, 0));
  for (CUgraphExec e : {e1, e2, e1}) {
    reset();
    cuGraphLaunch(e, s);
    sync_bounded(s);
    read();
    obs("%s: body ran %d", e == e1 ? "e1" : "e2", host[0]);
  }
  cuGraphExecDestroy(e1);
  cuGraphExecDestroy(e2);
  cuGraphDestroy(g);
  end();
}

// SWITCH sizes on a plain graph (graph API): the node, instantiate, and the last case run.
void b05() {
  for (unsigned size : {0u, 1u, 2u, 8u, 64u, 256u, 1000u, 1024u, 4096u, 10000u}) {
    char id[24], what[120];
    std::snprintf(id, sizeof id, "B05.%u", size);
    std::snprintf(what, sizeof what, "SWITCH size %u (graph API), default = size-1, one add kernel per body", size);
    begin(id, what);
    CUgraph g;
    cuGraphCreate(&g, 0);
    Handle h = 0;
    rec("handleCreate", cuGraphConditionalHandleCreate(&h, g, env.ctx, size ? size - 1 : 0, CU_GRAPH_COND_ASSIGN_DEFAULT));
    CUgraphNodeParams p = conditional_params(h, CU_GRAPH_COND_TYPE_SWITCH, size, env.ctx);
    CUgraphNode n;
    double t0 = now_us();
    if (rec("addNode", cuGraphAddNode(&n, g, nullptr, nullptr, 0, &p)) == CUDA_SUCCESS) {
      obs("add %.0f us", now_us() - t0);
      CUresult worst = CUDA_SUCCESS;
      for (unsigned i = 0; i < size; ++i) {
        CUDA_KERNEL_NODE_PARAMS kp;
        std::memset(&kp, 0, sizeof kp);
        int* target = dev + (i % 16384);
        int one = 1;
        void* args[] = {&target, &one};
        kp.func = fn((const void*)add);
        kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
        kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
        kp.kernelParams = args;
        CUgraphNode k;
        CUresult r = cuGraphAddKernelNode(&k, p.conditional.phGraph_out[i], nullptr, 0, &kp);
        if (r) worst = r;
      }
      rec("bodyKernels", worst);
      CUgraphExec e = nullptr;
      t0 = now_us();
      if (rec("instantiate", cuGraphInstantiate(&e, g, 0)) == CUDA_SUCCESS) {
        obs("instantiate %.0f us", now_us() - t0);
        reset();
        rec("launch", cuGraphLaunch(e, s));
        rec("sync", sync_bounded(s));
        read();
        long long sum = 0;
        for (int v : host) sum += v;
        obs("case %u ran %d time(s); runs over all cases %lld", size - 1, host[(size - 1) % 16384], sum);
        cuGraphExecDestroy(e);
      }
    }
    cuGraphDestroy(g);
    end();
  }
  begin("B05.ifsize", "IF with size 0 and 3; WHILE with size 0 (graph API)");
  for (auto [type, size] : {std::pair{CU_GRAPH_COND_TYPE_IF, 0u}, std::pair{CU_GRAPH_COND_TYPE_IF, 3u},
                            std::pair{CU_GRAPH_COND_TYPE_WHILE, 0u}}) {
    CUgraph g;
    cuGraphCreate(&g, 0);
    Handle h = 0;
    cuGraphConditionalHandleCreate(&h, g, env.ctx, 0, 0);
    CUgraphNodeParams p = conditional_params(h, type, size, env.ctx);
    CUgraphNode n;
    char label[32];
    std::snprintf(label, sizeof label, "%s(size %u)", type == CU_GRAPH_COND_TYPE_IF ? "IF" : "WHILE", size);
    rec(label, cuGraphAddNode(&n, g, nullptr, nullptr, 0, &p));
    cuGraphDestroy(g);
  }
  end();
}

void b06() {
  struct E { const char* id; const char* what; CUgraphConditionalNodeType t; unsigned size, def; };
  E es[] = {{"B06.if", "IF size 1 with an empty body, default 1", CU_GRAPH_COND_TYPE_IF, 1, 1},
            {"B06.ifelse", "IF/ELSE with both bodies empty, default 0", CU_GRAPH_COND_TYPE_IF, 2, 0},
            {"B06.switch", "SWITCH size 4 with every body empty, default 2", CU_GRAPH_COND_TYPE_SWITCH, 4, 2},
            {"B06.while", "WHILE with an empty body, default 0", CU_GRAPH_COND_TYPE_WHILE, 1, 0}};
  for (const E& x : es) {
    begin(x.id, x.what);
    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    L_add(s, 0);
    Handle h;
    rec("handleCreate", make_handle(s, x.def, CU_GRAPH_COND_ASSIGN_DEFAULT, &h));
    std::vector<CUgraph> b;
    CUgraphNode n;
    rec("insert", insert_cond(s, x.t, x.size, h, &b, &n));
    rec("bodies(empty captures)", capture_bodies(b, bs[0], [](unsigned, CUstream) {}));
    L_add(s, 1);
    end_and_replay(true, 1, [&](int) { obs("before %d after %d", host[0], host[1]); });
  }
}

// Nesting, built by capture as graphcap would.
void b07a() {
  begin("B07a", "IF inside WHILE: counter 4; body: set IF = counter%2, IF{add}, countdown");
  reset();
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  launch((const void*)store, 1, 1, s, dev + 10, 4);
  Handle hw, hi;
  make_handle(s, 1, CU_GRAPH_COND_ASSIGN_DEFAULT, &hw);
  std::vector<CUgraph> wb, ib;
  CUgraphNode wn, in;
  rec("insertWhile", insert_cond(s, CU_GRAPH_COND_TYPE_WHILE, 1, hw, &wb, &wn));
  rec("beginBody", cuStreamBeginCaptureToGraph(bs[0], wb[0], nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED));
  rec("handleCreate(IF, in the WHILE body)", make_handle(bs[0], 0, CU_GRAPH_COND_ASSIGN_DEFAULT, &hi));
  launch((const void*)set_odd, 1, 1, bs[0], (cudaGraphConditionalHandle)hi, (const int*)(dev + 10));
  rec("insertIf", insert_cond(bs[0], CU_GRAPH_COND_TYPE_IF, 1, hi, &ib, &in));
  rec("ifBody", capture_bodies(ib, bs[1], [](unsigned, CUstream b) { L_add(b, 0); }));
  CUresult cd = rec("countdown(captured)", launch((const void*)countdown, 1, 1, bs[0], (cudaGraphConditionalHandle)hw, dev + 10, dev + 11));
  CUgraph x;
  rec("endBody", cuStreamEndCapture(bs[0], &x));
  end_and_replay(cd == CUDA_SUCCESS, 1, [&](int) {
    obs("WHILE iterations %d, IF body runs %d (expected 4 and 2)", host[11], host[0]);
  });
}
void b07b() {
  begin("B07b", "WHILE inside IF: IF(default 1){ store counter 3; WHILE{countdown} }");
  reset();
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  Handle hi, hw;
  make_handle(s, 1, CU_GRAPH_COND_ASSIGN_DEFAULT, &hi);
  std::vector<CUgraph> ib, wb;
  CUgraphNode in, wn;
  rec("insertIf", insert_cond(s, CU_GRAPH_COND_TYPE_IF, 1, hi, &ib, &in));
  rec("beginBody", cuStreamBeginCaptureToGraph(bs[0], ib[0], nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED));
  launch((const void*)store, 1, 1, bs[0], dev + 10, 3);
  rec("handleCreate(WHILE, in the IF body)", make_handle(bs[0], 1, CU_GRAPH_COND_ASSIGN_DEFAULT, &hw));
  rec("insertWhile", insert_cond(bs[0], CU_GRAPH_COND_TYPE_WHILE, 1, hw, &wb, &wn));
  CUresult cd = CUDA_ERROR_UNKNOWN;  // stays an error unless the loop's terminating kernel was captured
  rec("whileBody", capture_bodies(wb, bs[1], [&](unsigned, CUstream b) {
        cd = launch((const void*)countdown, 1, 1, b, (cudaGraphConditionalHandle)hw, dev + 10, dev + 11);
      }));
  CUgraph x;
  rec("endBody", cuStreamEndCapture(bs[0], &x));
  end_and_replay(cd == CUDA_SUCCESS, 2, [&](int t) {
    obs("launch %d: WHILE iterations %d (expected 3)", t + 1, host[11]);
  });
}
void b07c() {
  begin("B07c", "SWITCH inside IF: IF(default 1){ SWITCH size 3, default 1 {add i} }");
  reset();
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  Handle hi, hs;
  make_handle(s, 1, CU_GRAPH_COND_ASSIGN_DEFAULT, &hi);
  std::vector<CUgraph> ib, sb;
  CUgraphNode in, sn;
  rec("insertIf", insert_cond(s, CU_GRAPH_COND_TYPE_IF, 1, hi, &ib, &in));
  rec("beginBody", cuStreamBeginCaptureToGraph(bs[0], ib[0], nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED));
  rec("handleCreate(SWITCH, in the IF body)", make_handle(bs[0], 1, CU_GRAPH_COND_ASSIGN_DEFAULT, &hs));
  rec("insertSwitch", insert_cond(bs[0], CU_GRAPH_COND_TYPE_SWITCH, 3, hs, &sb, &sn));
  rec("switchBodies", capture_bodies(sb, bs[1], [](unsigned i, CUstream b) { L_add(b, int(i)); }));
  CUgraph x;
  rec("endBody", cuStreamEndCapture(bs[0], &x));
  end_and_replay(true, 1, [&](int) {
    obs("cases run [%d,%d,%d] (expected 0,1,0)", host[0], host[1], host[2]);
  });
}
void b07d() {
  begin("B07d", "SWITCH inside WHILE: counter 3; body: set SWITCH = counter-1, SWITCH size 3 {add i}, countdown");
  reset();
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  launch((const void*)store, 1, 1, s, dev + 10, 3);
  Handle hw, hs;
  make_handle(s, 1, CU_GRAPH_COND_ASSIGN_DEFAULT, &hw);
  std::vector<CUgraph> wb, sb;
  CUgraphNode wn, sn;
  rec("insertWhile", insert_cond(s, CU_GRAPH_COND_TYPE_WHILE, 1, hw, &wb, &wn));
  rec("beginBody", cuStreamBeginCaptureToGraph(bs[0], wb[0], nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED));
  rec("handleCreate(SWITCH)", make_handle(bs[0], 0, CU_GRAPH_COND_ASSIGN_DEFAULT, &hs));
  launch((const void*)set_minus1, 1, 1, bs[0], (cudaGraphConditionalHandle)hs, (const int*)(dev + 10));
  rec("insertSwitch", insert_cond(bs[0], CU_GRAPH_COND_TYPE_SWITCH, 3, hs, &sb, &sn));
  rec("switchBodies", capture_bodies(sb, bs[1], [](unsigned i, CUstream b) { L_add(b, int(i)); }));
  CUresult cd = rec("countdown(captured)", launch((const void*)countdown, 1, 1, bs[0], (cudaGraphConditionalHandle)hw, dev + 10, dev + 11));
  CUgraph x;
  rec("endBody", cuStreamEndCapture(bs[0], &x));
  end_and_replay(cd == CUDA_SUCCESS, 1, [&](int) {
    obs("iterations %d, cases run [%d,%d,%d] (expected 3 and 1,1,1)", host[11], host[0], host[1], host[2]);
  });
}
// A handle created on the outer graph, used by a node inside a body (and set by a kernel outside).
void b07e() {
  begin("B07e", "IF inside IF whose handle was created on the OUTER graph and set by an outer kernel");
  reset();
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  Handle ho, hin;
  make_handle(s, 1, CU_GRAPH_COND_ASSIGN_DEFAULT, &ho);
  rec("handleCreate(inner, on the outer graph)", make_handle(s, 0, CU_GRAPH_COND_ASSIGN_DEFAULT, &hin));
  L_set(s, hin, 1);
  std::vector<CUgraph> ob, ib;
  CUgraphNode on, inn;
  rec("insertOuterIf", insert_cond(s, CU_GRAPH_COND_TYPE_IF, 1, ho, &ob, &on));
  rec("beginBody", cuStreamBeginCaptureToGraph(bs[0], ob[0], nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED));
  rec("insertInnerIf(outer handle)", insert_cond(bs[0], CU_GRAPH_COND_TYPE_IF, 1, hin, &ib, &inn));
  if (!ib.empty()) rec("innerBody", capture_bodies(ib, bs[1], [](unsigned, CUstream b) { L_add(b, 0); }));
  CUgraph x;
  rec("endBody", cuStreamEndCapture(bs[0], &x));
  end_and_replay(true, 1, [&](int) { obs("inner body ran %d", host[0]); });
}

// Depth ladders (graph API: each level's node in the previous level's body; the innermost body adds 1
// to dev[0]; WHILE levels end their body with a kernel setting their handle to 0, so each runs once).
// kind: 0 IF, 1 WHILE, 2 alternating IF/WHILE, 3 SWITCH (size 2, default 1).
CUresult add_level(CUgraph g, int kind_here, CUgraph* body, Handle* h, CUgraphNode* node) {
  CUgraphConditionalNodeType t = kind_here == 1 ? CU_GRAPH_COND_TYPE_WHILE
                                 : kind_here == 3 ? CU_GRAPH_COND_TYPE_SWITCH
                                                  : CU_GRAPH_COND_TYPE_IF;
  unsigned size = kind_here == 3 ? 2 : 1;
  CUresult r = cuGraphConditionalHandleCreate(h, g, env.ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
  if (r) return r;
  CUgraphNodeParams p = conditional_params(*h, t, size, env.ctx);
  r = cuGraphAddNode(node, g, nullptr, nullptr, 0, &p);
  if (r) return r;
  *body = p.conditional.phGraph_out[size - 1];
  return CUDA_SUCCESS;
}
CUresult add_kernel_node(CUgraph g, const void* k, void** args, CUgraphNode* dep, CUgraphNode* out) {
  CUDA_KERNEL_NODE_PARAMS kp;
  std::memset(&kp, 0, sizeof kp);
  kp.func = fn(k);
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = args;
  return cuGraphAddKernelNode(out, g, dep, dep ? 1 : 0, &kp);
}
void ladder(int kind) {
  const char* kname[] = {"if", "while", "ifwhile", "switch"};
  int depths[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 24, 32, 64, 128};
  for (int d : depths) {
    char id[32], what[120];
    std::snprintf(id, sizeof id, "B08.%s.%d", kname[kind], d);
    std::snprintf(what, sizeof what, "%d nested %s levels (graph API), innermost adds 1", d,
                  kind == 0 ? "IF" : kind == 1 ? "WHILE" : kind == 2 ? "alternating IF/WHILE" : "SWITCH(2, case 1)");
    begin(id, what);
    CUgraph root;
    cuGraphCreate(&root, 0);
    CUgraph g = root;
    CUresult bad = CUDA_SUCCESS;
    int level = 0;
    std::vector<std::pair<CUgraph, Handle>> whiles;  // (graph holding the node, handle) per level
    for (; level < d; ++level) {
      int here = kind == 2 ? (level % 2) : kind;
      CUgraph body;
      Handle h;
      CUgraphNode node;
      bad = add_level(g, here, &body, &h, &node);
      if (bad) break;
      if (here == 1) whiles.push_back({body, h});
      g = body;
    }
    if (bad) {
      obs("level %d refused", level + 1);
      rec("addLevel", bad);
      cuGraphDestroy(root);
      end();
      break;
    }
    // Innermost: add(dev, 1), then each WHILE level's body ends with set_cond(h, 0) after its content.
    int* target = dev;
    int one = 1;
    void* aargs[] = {&target, &one};
    CUgraphNode k;
    rec("innermostKernel", add_kernel_node(g, (const void*)add, aargs, nullptr, &k));
    for (auto& [body, h] : whiles) {
      size_t n = 0;
      cuGraphGetNodes(body, nullptr, &n);
      std::vector<CUgraphNode> nodes(n);
      cuGraphGetNodes(body, nodes.data(), &n);
      cudaGraphConditionalHandle hh = h;
      unsigned zero = 0;
      void* sargs[] = {&hh, &zero};
      CUgraphNode sn;
      CUgraphNode dep = n ? nodes[0] : nullptr;
      CUresult r = add_kernel_node(body, (const void*)set_cond, sargs, dep ? &dep : nullptr, &sn);
      if (r) bad = r;  // a WHILE level without its terminating kernel is never launched
    }
    if (bad) {
      rec("terminatingKernel", bad);
      cuGraphDestroy(root);
      end();
      break;
    }
    CUgraphExec e = nullptr;
    double t0 = now_us();
    CUresult ir = rec("instantiate", cuGraphInstantiate(&e, root, 0));
    if (!ir) {
      obs("instantiate %.0f us", now_us() - t0);
      reset();
      rec("launch", cuGraphLaunch(e, s));
      rec("sync", sync_bounded(s));
      read();
      obs("innermost ran %d", host[0]);
      cuGraphExecDestroy(e);
    }
    cuGraphDestroy(root);
    end();
    if (ir) break;
  }
}
void b08if() { ladder(0); }
void b08while() { ladder(1); }
void b08mix() { ladder(2); }
void b08switch() { ladder(3); }

// Exec update of graphs with IF / SWITCH nodes (each captured graph has its own handle).
struct Variant {
  CUgraphConditionalNodeType type;
  unsigned size, def;
  int base;        // body i adds to dev[base + i]
  int extra = 0;   // kernels added to body 0 beyond the one add
};
CUgraph capture_variant(const Variant& v, std::vector<CUgraph>* bodies_out = nullptr) {
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  L_add(s, 200);
  Handle h;
  make_handle(s, v.def, CU_GRAPH_COND_ASSIGN_DEFAULT, &h);
  std::vector<CUgraph> b;
  CUgraphNode n;
  insert_cond(s, v.type, v.size, h, &b, &n);
  capture_bodies(b, bs[0], [&](unsigned i, CUstream st) {
    L_add(st, v.base + int(i));
    if (i == 0)
      for (int k = 0; k < v.extra; ++k) L_add(st, 300);
  });
  L_add(s, 201);
  CUgraph g = nullptr;
  cuStreamEndCapture(s, &g);
  if (bodies_out) *bodies_out = b;
  return g;
}
void update_case(const char* id, const char* what, const Variant& from, const Variant& to, int show_from, int show_n) {
  begin(id, what);
  CUgraph g1 = capture_variant(from), g2 = capture_variant(to);
  CUgraphExec e = nullptr;
  rec("instantiate", cuGraphInstantiate(&e, g1, 0));
  CUgraphExecUpdateResultInfo info;
  std::memset(&info, 0, sizeof info);
  rec("execUpdate", cuGraphExecUpdate(e, g2, &info));
  CUgraphNodeType et = CUgraphNodeType(-1);
  if (info.errorNode) cuGraphNodeGetType(info.errorNode, &et);
  obs("info.result %d, errorNode %s (type %d)", int(info.result), info.errorNode ? "set" : "NULL", int(et));
  reset();
  rec("launch", cuGraphLaunch(e, s));
  rec("sync", sync_bounded(s));
  read();
  std::string v;
  for (int i = 0; i < show_n; ++i) v += std::to_string(host[show_from + i]) + (i + 1 < show_n ? "," : "");
  obs("dev[%d..%d) = [%s]", show_from, show_from + show_n, v.c_str());
  cuGraphExecDestroy(e);
  cuGraphDestroy(g1);
  cuGraphDestroy(g2);
  end();
}
void b09() {
  using T = CUgraphConditionalNodeType;
  T IF = CU_GRAPH_COND_TYPE_IF, SW = CU_GRAPH_COND_TYPE_SWITCH;
  update_case("B09.a", "IF body kernel's args change (adds to dev[1] instead of dev[0]); after update dev[0..2)",
              {IF, 1, 1, 0}, {IF, 1, 1, 1}, 0, 2);
  update_case("B09.b", "SWITCH size 3 default 1: bodies add dev[3+i] instead of dev[i]; dev[0..6)",
              {SW, 3, 1, 0}, {SW, 3, 1, 3}, 0, 6);
  update_case("B09.c", "IF default 1 -> a graph whose handle default is 0 (same bodies); dev[0]",
              {IF, 1, 1, 0}, {IF, 1, 0, 0}, 0, 1);
  update_case("B09.d", "SWITCH default 1 -> default 2; dev[0..3)", {SW, 3, 1, 0}, {SW, 3, 2, 0}, 0, 3);
  update_case("B09.e", "IF size 1 -> IF/ELSE size 2", {IF, 1, 1, 0}, {IF, 2, 1, 0}, 0, 2);
  update_case("B09.f", "IF size 1 -> SWITCH size 1", {IF, 1, 1, 0}, {SW, 1, 0, 0}, 0, 1);
  update_case("B09.g", "SWITCH size 3 -> size 4", {SW, 3, 1, 0}, {SW, 4, 1, 0}, 0, 4);
  update_case("B09.h", "IF body with one kernel more", {IF, 1, 1, 0, 0}, {IF, 1, 1, 0, 1}, 0, 1);
  // cuGraphExecKernelNodeSetParams on a kernel of an IF body.
  begin("B09.i", "cuGraphExecKernelNodeSetParams on the IF body's kernel (dev[0] -> dev[5])");
  std::vector<CUgraph> b;
  CUgraph g = capture_variant({IF, 1, 1, 0}, &b);
  CUgraphExec e = nullptr;
  rec("instantiate", cuGraphInstantiate(&e, g, 0));
  CUgraphNode k = nullptr;
  size_t n = 1;
  cuGraphGetNodes(b[0], &k, &n);
  CUDA_KERNEL_NODE_PARAMS kp;
  rec("kernelNodeGetParams", cuGraphKernelNodeGetParams(k, &kp));
  int* target = dev + 5;
  int one = 1;
  void* args[] = {&target, &one};
  kp.kernelParams = args;
  kp.extra = nullptr;
  rec("execKernelNodeSetParams", cuGraphExecKernelNodeSetParams(e, k, &kp));
  reset();
  rec("launch", cuGraphLaunch(e, s));
  rec("sync", sync_bounded(s));
  read();
  obs("dev[0] %d dev[5] %d", host[0], host[5]);
  cuGraphExecDestroy(e);
  cuGraphDestroy(g);
  end();
}

// Device time per replay (CUDA events, median of 50 after 5 warm-ups) of a taken and a skipped branch.
void b10() {
  CUevent e0, e1;
  cuEventCreate(&e0, 0);
  cuEventCreate(&e1, 0);
  for (int k : {10, 100}) {
    struct V { const char* name; int mode; };  // 0 plain, 1 IF true, 2 IF false, 3 setter only, 4 SWITCH case 3 of 4
    V vs[] = {{"setter + k kernels", 0}, {"setter + IF(true){k}", 1}, {"setter + IF(false){k}", 2},
              {"setter only", 3}, {"setter + SWITCH(4 bodies of k) case 3", 4}};
    char id[24];
    std::snprintf(id, sizeof id, "B10.%d", k);
    begin(id, "replay device time (us, median of 50) with k empty kernels per body");
    obs("k=%d", k);
    for (const V& v : vs) {
      cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
      Handle h = 0;
      bool branch = v.mode == 1 || v.mode == 2 || v.mode == 4;
      if (branch) {
        make_handle(s, 0, CU_GRAPH_COND_ASSIGN_DEFAULT, &h);
        L_set(s, h, v.mode == 1 ? 1 : v.mode == 4 ? 3 : 0);
      } else {
        launch((const void*)empty_k, 1, 1, s);  // stands in for the setter (a handle no node uses fails instantiate)
      }
      if (v.mode == 0)
        for (int i = 0; i < k; ++i) launch((const void*)empty_k, 1, 1, s);
      if (branch) {
        std::vector<CUgraph> b;
        CUgraphNode n;
        insert_cond(s, v.mode == 4 ? CU_GRAPH_COND_TYPE_SWITCH : CU_GRAPH_COND_TYPE_IF, v.mode == 4 ? 4 : 1, h, &b, &n);
        capture_bodies(b, bs[0], [&](unsigned, CUstream st) {
          for (int i = 0; i < k; ++i) launch((const void*)empty_k, 1, 1, st);
        });
      }
      CUgraph g = nullptr;
      cuStreamEndCapture(s, &g);
      CUgraphExec e = nullptr;
      CUresult r = cuGraphInstantiate(&e, g, 0);
      if (r) { rec(v.name, r); if (g) cuGraphDestroy(g); continue; }
      cuGraphUpload(e, s);
      std::vector<double> t, host_t;
      for (int i = 0; i < 55; ++i) {
        cuEventRecord(e0, s);
        double h0 = now_us();
        cuGraphLaunch(e, s);
        double h1 = now_us();
        cuEventRecord(e1, s);
        cuEventSynchronize(e1);
        float ms = 0;
        cuEventElapsedTime(&ms, e0, e1);
        if (i >= 5) { t.push_back(ms * 1000.0); host_t.push_back(h1 - h0); }
      }
      obs("%s: %.2f us (host cuGraphLaunch %.2f us)", v.name, median(t), median(host_t));
      cuGraphExecDestroy(e);
      cuGraphDestroy(g);
    }
    end();
  }
}

// One executable at a time? (B04.f: a second instantiate of a graph holding an IF was 801.)
void b11() {
  struct G { const char* id; const char* what; CUgraphConditionalNodeType t; unsigned size, def; };
  G gs[] = {{"B11.if", "IF (ASSIGN_DEFAULT, default 1)", CU_GRAPH_COND_TYPE_IF, 1, 1},
            {"B11.while", "WHILE (ASSIGN_DEFAULT, default 0)", CU_GRAPH_COND_TYPE_WHILE, 1, 0},
            {"B11.switch", "SWITCH size 3 (ASSIGN_DEFAULT, default 1)", CU_GRAPH_COND_TYPE_SWITCH, 3, 1}};
  for (const G& x : gs) {
    begin(x.id, x.what);
    obs("a graph with one such node: instantiate twice, destroy the first, instantiate again; a clone");
    CUgraph g = one_node_graph(x.t, x.size, x.def, CU_GRAPH_COND_ASSIGN_DEFAULT, false, 0);
    CUgraphExec e1 = nullptr, e2 = nullptr, e3 = nullptr, ec = nullptr;
    rec("instantiate(e1)", cuGraphInstantiate(&e1, g, 0));
    rec("instantiate(e2, e1 alive)", cuGraphInstantiate(&e2, g, 0));
    CUgraph clone = nullptr;
    rec("graphClone", cuGraphClone(&clone, g));
    if (clone) rec("instantiate(clone, e1 alive)", cuGraphInstantiate(&ec, clone, 0));
    if (ec) {
      reset();
      rec("launch(clone's exec)", cuGraphLaunch(ec, s));
      rec("sync", sync_bounded(s));
      read();
      obs("clone's exec: bodies [%d,%d,%d] after-node %d", host[0], host[1], host[2], host[100]);
    }
    rec("execDestroy(e1)", cuGraphExecDestroy(e1));
    rec("instantiate(e3, after e1 destroyed)", cuGraphInstantiate(&e3, g, 0));
    if (e2) cuGraphExecDestroy(e2);
    if (e3) cuGraphExecDestroy(e3);
    if (ec) cuGraphExecDestroy(ec);
    if (clone) cuGraphDestroy(clone);
    cuGraphDestroy(g);
    end();
  }
  begin("B11.nested", "a child graph node whose graph holds an IF: instantiate the parent twice");
  CUgraph child = one_node_graph(CU_GRAPH_COND_TYPE_IF, 1, 1, CU_GRAPH_COND_ASSIGN_DEFAULT, false, 0);
  CUgraph parent;
  cuGraphCreate(&parent, 0);
  CUgraphNode cn;
  rec("addChildGraphNode(graph with an IF)", cuGraphAddChildGraphNode(&cn, parent, nullptr, 0, child));
  CUgraphExec p1 = nullptr, p2 = nullptr;
  rec("instantiate(p1)", cuGraphInstantiate(&p1, parent, 0));
  rec("instantiate(p2, p1 alive)", cuGraphInstantiate(&p2, parent, 0));
  if (p1) cuGraphExecDestroy(p1);
  if (p2) cuGraphExecDestroy(p2);
  cuGraphDestroy(parent);
  cuGraphDestroy(child);
  end();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Case> cases = {{"B00", b00},         {"B01", b01},           {"B02", b02},
                             {"B03", b03},         {"B04", b04},           {"B05", b05},
                             {"B06", b06},         {"B07a", b07a},         {"B07b", b07b},
                             {"B07c", b07c},       {"B07d", b07d},         {"B07e", b07e},
                             {"B08if", b08if},     {"B08while", b08while}, {"B08mix", b08mix},
                             {"B08switch", b08switch}, {"B09", b09},       {"B10", b10},
                             {"B11", b11}};
  for (Case& c : cases) c.timeout_s = 30;
  return run(argc, argv, cases, setup);
}
