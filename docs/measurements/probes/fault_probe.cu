// What the driver does when a kernel faults (issue 22 §3, "the fake is strict"): out-of-bounds and
// far accesses, freed memory, __trap(), a fault inside a replayed graph; what every later call on the
// faulting stream, another stream, events and the context returns; whether a context reset, a
// release + retain of the primary context, or a second context gets work running again.
// Driver API only (kernels are PTX loaded with cuModuleLoadData), so a reset strands no runtime state.
// Every case runs in a process of its own: a fault leaves the context unusable.
//   nvcc -O2 -arch=sm_90 -o fault_probe docs/measurements/probes/fault_probe.cu -lcuda
//   ./fault_probe          (every case, one child process each)   ./fault_probe F06   (one case)
#include "probe_common.h"

using namespace probe;

namespace {

PtxModule m;
CUstream A, B;
CUevent evA;

void setup() {
  init_driver();
  if (m.load() != CUDA_SUCCESS) std::printf("!! PTX module did not load\n");
  cuStreamCreate(&A, CU_STREAM_NON_BLOCKING);
  cuStreamCreate(&B, CU_STREAM_NON_BLOCKING);
  cuEventCreate(&evA, CU_EVENT_DISABLE_TIMING);
}

CUresult store(CUstream s, CUdeviceptr p, unsigned long long idx, unsigned v) {
  return launch_f(m.store_at, 1, 1, s, p, idx, v);
}
CUresult load(CUstream s, CUdeviceptr p, unsigned long long idx, CUdeviceptr out) {
  return launch_f(m.load_at, 1, 1, s, p, idx, out);
}

// The common shape of a fault case: a good kernel on B first, then `fault` enqueues on A, an event
// is recorded behind it, and after 100 ms (the fault has happened by then) every later call is
// tried. `old` is an allocation made before the fault (read and freed afterwards).
template <class F>
void fault_case(const char* id, const char* what, F fault, CUdeviceptr old = 0) {
  begin(id, what);
  CUdeviceptr scratch = 0;
  cuMemAlloc(&scratch, 4096);
  rec("launch(B,before)", store(B, scratch, 0, 1));
  rec("sync(B,before)", cuStreamSynchronize(B));
  rec("launch", fault(A));
  rec("evRecord(A)", cuEventRecord(evA, A));
  rec("query(A)now", cuStreamQuery(A));
  sleep_ms(100);
  rec("query(B)first", cuStreamQuery(B));
  after_fault(A, B, evA, old ? old : scratch);
  end();
}

void f00() {
  print_env("F00");
  int pageable = 0, uva = 0, hmm = 0;
  cuDeviceGetAttribute(&pageable, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, env.dev);
  cuDeviceGetAttribute(&uva, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, env.dev);
  cuDeviceGetAttribute(&hmm, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                       env.dev);
  begin("F00b", "device attributes");
  obs("PAGEABLE_MEMORY_ACCESS %d, ..._USES_HOST_PAGE_TABLES %d, UNIFIED_ADDRESSING %d", pageable,
      hmm, uva);
  end();
}

// One element past the end of a cuMemAlloc allocation of `bytes`.
void past_end(const char* id, const char* what, size_t bytes, bool write) {
  CUdeviceptr p = 0, next = 0, out = 0;
  cuMemAlloc(&p, bytes);
  cuMemAlloc(&next, bytes);
  cuMemAlloc(&out, 4);
  cuMemsetD32(out, 0xdeadbeef, 1);
  unsigned long long idx = bytes / 4;
  fault_case(id, what, [&](CUstream s) {
    obs("alloc at 0x%llx, next alloc at 0x%llx (distance %lld bytes), 2MiB-aligned offset of end "
        "%llu", (unsigned long long)p, (unsigned long long)next, (long long)(next - p),
        (unsigned long long)((p + bytes) % (2u << 20)));
    return write ? store(s, p, idx, 42) : load(s, p, idx, out);
  });
  unsigned v = 0;
  if (cuMemcpyDtoH(&v, write ? next : out, 4) == CUDA_SUCCESS) {
    begin(id, "after: the word read back");
    obs(write ? "next allocation's word 0 = 0x%x (42 = the overrun landed in it)"
              : "value loaded = 0x%x", v);
    end();
  }
}
void f01() { past_end("F01", "kernel writes 1 element past a 1 KiB cuMemAlloc", 1024, true); }
void f02() { past_end("F02", "kernel reads 1 element past a 1 KiB cuMemAlloc", 1024, false); }
void f03() { past_end("F03", "kernel writes 1 element past a 2 MiB cuMemAlloc", 2u << 20, true); }
void f04() { past_end("F04", "kernel writes 1 element past a 64 MiB cuMemAlloc", 64u << 20, true); }

void f05() {
  CUdeviceptr p = 0;
  cuMemAlloc(&p, 1 << 20);
  fault_case("F05", "kernel writes 49 floats past a 64-byte slice at offset 0 of a 1 MiB cuMemAlloc",
             [&](CUstream s) { return store(s, p, 16 + 49, 42); });
}

void far_access(const char* id, const char* what, bool write, unsigned long long offset) {
  CUdeviceptr p = 0, out = 0;
  cuMemAlloc(&p, 4096);
  cuMemAlloc(&out, 4);
  fault_case(id, what, [&](CUstream s) {
    CUdeviceptr far = p + offset;
    obs("address 0x%llx", (unsigned long long)far);
    return write ? store(s, far, 0, 42) : load(s, far, 0, out);
  });
}
void f06() { far_access("F06", "kernel writes 1 TiB past a cuMemAlloc (no allocation there)", true, 1ull << 40); }
void f07() { far_access("F07", "kernel reads 1 TiB past a cuMemAlloc (no allocation there)", false, 1ull << 40); }
void f08() {
  fault_case("F08", "kernel writes through a NULL pointer", [&](CUstream s) { return store(s, 0, 0, 42); });
}

void freed(const char* id, const char* what, size_t bytes, bool write) {
  CUdeviceptr keep = 0, p = 0, out = 0;
  cuMemAlloc(&keep, bytes);  // a live neighbour, so a small freed block shares its page with it
  cuMemAlloc(&p, bytes);
  cuMemAlloc(&out, 4);
  cuMemsetD32(p, 0x1234, bytes / 4);
  cuMemsetD32(out, 0xdeadbeef, 1);
  cuCtxSynchronize();
  CUresult fr = cuMemFree(p);
  fault_case(id, what, [&](CUstream s) {
    rec("memFree(before)", fr);
    return write ? store(s, p, 0, 42) : load(s, p, 0, out);
  });
  unsigned v = 0;
  if (!write && cuMemcpyDtoH(&v, out, 4) == CUDA_SUCCESS) {
    begin(id, "after: the word read back");
    obs("0x%x (0x1234 = the freed bytes were still there; 0xdeadbeef = the load never stored)", v);
    end();
  }
}
void f09() { freed("F09", "kernel reads a freed 64 MiB cuMemAlloc", 64u << 20, false); }
void f10() { freed("F10", "kernel reads a freed 1 KiB cuMemAlloc (a live 1 KiB neighbour)", 1024, false); }
void f11() { freed("F11", "kernel writes a freed 64 MiB cuMemAlloc", 64u << 20, true); }

void f12() {
  fault_case("F12", "kernel executes __trap() (PTX trap)",
             [&](CUstream s) { return launch_f(m.trap_k, 1, 1, s); });
}

// The fault inside an executable: a graph of one kernel node, launched twice.
void graph_fault(const char* id, const char* what, bool trap) {
  CUdeviceptr p = 0;
  cuMemAlloc(&p, 4096);
  CUdeviceptr far = p + (1ull << 40);
  unsigned long long idx = 0;
  unsigned v = 42;
  void* args[] = {&far, &idx, &v};
  CUDA_KERNEL_NODE_PARAMS kp;
  std::memset(&kp, 0, sizeof kp);
  kp.func = trap ? m.trap_k : m.store_at;
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = trap ? nullptr : args;
  CUgraph g = nullptr;
  CUgraphNode n = nullptr;
  CUgraphExec e = nullptr;
  cuGraphCreate(&g, 0);
  begin(id, what);
  rec("addKernelNode", cuGraphAddKernelNode(&n, g, nullptr, 0, &kp));
  rec("instantiate", cuGraphInstantiate(&e, g, 0));
  rec("graphLaunch", cuGraphLaunch(e, A));
  rec("evRecord(A)", cuEventRecord(evA, A));
  sleep_ms(100);
  rec("query(B)first", cuStreamQuery(B));
  rec("sync(A)", cuStreamSynchronize(A));
  rec("graphLaunch(again)", cuGraphLaunch(e, A));
  rec("sync(A)", cuStreamSynchronize(A));
  rec("graphExecDestroy", cuGraphExecDestroy(e));
  CUgraphExec e2 = nullptr;
  rec("instantiate(again)", cuGraphInstantiate(&e2, g, 0));
  rec("graphDestroy", cuGraphDestroy(g));
  after_fault(A, B, evA, p);
  end();
}
void f13() { graph_fault("F13", "replayed graph: a kernel node writes 1 TiB past a cuMemAlloc", false); }
void f14() { graph_fault("F14", "replayed graph: a kernel node executes __trap()", true); }

// Work on another stream while a fault happens: does it run to completion?
void f15() {
  CUdeviceptr flag = 0, p = 0;
  cuMemAlloc(&flag, 4);
  cuMemAlloc(&p, 4096);
  cuMemsetD32(flag, 0, 1);
  cuCtxSynchronize();
  begin("F15", "B runs a 50 ms kernel that then sets a flag; A faults (far write) 5 ms into it");
  unsigned long long iters = 50000;
  rec("launch(B,spin)", launch_f(m.spin, 1, 1, B, flag, iters));
  sleep_ms(5);
  rec("launch(A,fault)", store(A, p + (1ull << 40), 0, 42));
  double t0 = now_us();
  rec("sync(B)", cuStreamSynchronize(B));
  obs("sync(B) returned after %.1f ms", (now_us() - t0) / 1000);
  unsigned v = 0xffffffff;
  rec("DtoH(flag)", cuMemcpyDtoH(&v, flag, 4));
  obs("flag %u (1 = B's kernel finished; 0 = it was killed)", v);
  rec("sync(A)", cuStreamSynchronize(A));
  end();
}

// F15 cannot tell (every call after the fault fails, the flag's copy too): here the flag lives in
// mapped pinned host memory, read by the host without any CUDA call, and B's kernel outlasts the
// ~150 ms the driver takes to report the fault.
void f15b() {
  unsigned* hflag = nullptr;
  cuMemHostAlloc((void**)&hflag, 4, CU_MEMHOSTALLOC_DEVICEMAP);
  CUdeviceptr dflag = 0;
  cuMemHostGetDevicePointer(&dflag, hflag, 0);
  *(volatile unsigned*)hflag = 0;
  CUdeviceptr p = 0;
  cuMemAlloc(&p, 4096);
  begin("F15b", "B runs a ~400 ms kernel that then sets a flag in mapped host memory; A faults 5 ms in");
  unsigned long long iters = 400000;
  double t0 = now_us();
  rec("launch(B,spin)", launch_f(m.spin, 1, 1, B, dflag, iters));
  sleep_ms(5);
  rec("launch(A,fault)", store(A, p + (1ull << 40), 0, 42));
  rec("sync(A)", cuStreamSynchronize(A));
  obs("sync(A) returned %.1f ms after B's launch", (now_us() - t0) / 1000);
  rec("sync(B)", cuStreamSynchronize(B));
  obs("sync(B) returned %.1f ms after B's launch", (now_us() - t0) / 1000);
  double seen = -1;
  while (now_us() - t0 < 2.5e6) {
    if (*(volatile unsigned*)hflag == 1) { seen = (now_us() - t0) / 1000; break; }
    usleep(1000);
  }
  if (seen >= 0) obs("B's flag became 1 at %.1f ms: B's kernel ran to its end", seen);
  else obs("B's flag still 0 after 2.5 s: B's kernel was killed with the context");
  end();
}
void f15c() {
  unsigned* hflag = nullptr;
  cuMemHostAlloc((void**)&hflag, 4, CU_MEMHOSTALLOC_DEVICEMAP);
  CUdeviceptr dflag = 0;
  cuMemHostGetDevicePointer(&dflag, hflag, 0);
  *(volatile unsigned*)hflag = 0;
  begin("F15c", "control for F15b: the same ~400 ms spin kernel on B, no fault");
  double t0 = now_us();
  rec("launch(B,spin)", launch_f(m.spin, 1, 1, B, dflag, 400000ull));
  rec("sync(B)", cuStreamSynchronize(B));
  obs("sync(B) %.1f ms, flag %u", (now_us() - t0) / 1000, *(volatile unsigned*)hflag);
  end();
}

// Recovery after a far write on A: the context is reset or replaced, then a fresh module's kernel
// stores a value that is read back.
bool run_store_and_check(const char* label) {
  PtxModule m2;
  rec("moduleLoad", m2.load());
  CUdeviceptr q = 0;
  rec("memAlloc", cuMemAlloc(&q, 4));
  CUstream s = nullptr;
  rec("streamCreate", cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  if (!m2.store_at || !q || !s) return false;
  rec("launch", launch_f(m2.store_at, 1, 1, s, q, 0ull, 77u));
  rec("sync", cuStreamSynchronize(s));
  unsigned v = 0;
  rec("DtoH", cuMemcpyDtoH(&v, q, 4));
  obs("%s: read back %u (77 = works again)", label, v);
  return v == 77;
}
void fault_now(CUdeviceptr p) {
  rec("fault", store(A, p + (1ull << 40), 0, 42));
  rec("sync(A)", cuStreamSynchronize(A));
}
void f16() {
  CUdeviceptr p = 0;
  cuMemAlloc(&p, 4096);
  begin("F16", "after a fault: cuDevicePrimaryCtxReset, then retain + set current, new work");
  fault_now(p);
  rec("primaryCtxReset", cuDevicePrimaryCtxReset(env.dev));
  CUcontext cur = nullptr;
  rec("ctxGetCurrent", cuCtxGetCurrent(&cur));
  obs("current after reset %s the old handle", cur == env.ctx ? "is" : "is not");
  rec("ctxSync(no retain)", cuCtxSynchronize());
  CUcontext again = nullptr;
  rec("primaryCtxRetain", cuDevicePrimaryCtxRetain(&again, env.dev));
  obs("retained handle %s the old one", again == env.ctx ? "is" : "is not");
  rec("ctxSetCurrent", cuCtxSetCurrent(again));
  rec("ctxSync", cuCtxSynchronize());
  run_store_and_check("after reset");
  unsigned v = 0;
  rec("DtoH(pre-reset alloc)", cuMemcpyDtoH(&v, p, 4));
  rec("query(pre-reset stream A)", cuStreamQuery(A));
  end();
}
void f17() {
  CUdeviceptr p = 0;
  cuMemAlloc(&p, 4096);
  begin("F17", "after a fault: cuDevicePrimaryCtxRelease (count 1 -> 0), retain again, new work");
  fault_now(p);
  unsigned flags = 0;
  int active = -1;
  rec("primaryCtxRelease", cuDevicePrimaryCtxRelease(env.dev));
  rec("primaryCtxGetState", cuDevicePrimaryCtxGetState(env.dev, &flags, &active));
  obs("active %d after release", active);
  CUcontext again = nullptr;
  rec("primaryCtxRetain", cuDevicePrimaryCtxRetain(&again, env.dev));
  obs("retained handle %s the old one", again == env.ctx ? "is" : "is not");
  rec("ctxSetCurrent", cuCtxSetCurrent(again));
  rec("ctxSync", cuCtxSynchronize());
  run_store_and_check("after release+retain");
  end();
}
void f18() {
  CUdeviceptr p = 0;
  cuMemAlloc(&p, 4096);
  CUcontext second = nullptr;
  begin("F18", "a second context (cuCtxCreate) made before a fault in the primary context");
  rec("ctxCreate", cuCtxCreate(&second, nullptr, 0, env.dev));
  rec("ctxSetCurrent(primary)", cuCtxSetCurrent(env.ctx));
  fault_now(p);
  rec("ctxSetCurrent(second)", cuCtxSetCurrent(second));
  rec("ctxSync(second)", cuCtxSynchronize());
  run_store_and_check("second context");
  rec("ctxSetCurrent(primary)", cuCtxSetCurrent(env.ctx));
  rec("ctxSync(primary)", cuCtxSynchronize());
  rec("ctxDestroy(second)", cuCtxDestroy(second));
  end();
}

// More ways back after a fault: retain again later, a brand-new context, cuInit again.
void f16b() {
  CUdeviceptr p = 0;
  cuMemAlloc(&p, 4096);
  begin("F16b", "after a fault: reset, then retain 5 times 200 ms apart, cuInit again, cuCtxCreate");
  fault_now(p);
  rec("primaryCtxReset", cuDevicePrimaryCtxReset(env.dev));
  CUcontext again = nullptr;
  for (int i = 0; i < 5; ++i) {
    char label[32];
    std::snprintf(label, sizeof label, "retain#%d", i + 1);
    if (rec(label, cuDevicePrimaryCtxRetain(&again, env.dev)) == CUDA_SUCCESS) break;
    sleep_ms(200);
  }
  rec("cuInit(again)", cuInit(0));
  CUcontext fresh = nullptr;
  rec("ctxCreate(fresh)", cuCtxCreate(&fresh, nullptr, 0, env.dev));
  if (fresh || again) {
    rec("ctxSetCurrent", cuCtxSetCurrent(fresh ? fresh : again));
    run_store_and_check("after reset, new context");
  }
  int count = -1;
  rec("deviceGetCount", cuDeviceGetCount(&count));
  obs("count %d", count);
  end();
}
void f16c() {
  CUdeviceptr p = 0;
  cuMemAlloc(&p, 4096);
  begin("F16c", "after a fault, no reset: cuCtxCreate a new context and use it");
  fault_now(p);
  CUcontext fresh = nullptr;
  rec("ctxCreate(fresh)", cuCtxCreate(&fresh, nullptr, 0, env.dev));
  if (fresh) run_store_and_check("new context after a fault");
  end();
}
void f18b() {
  CUcontext second = nullptr;
  begin("F18b", "the fault in a second context (cuCtxCreate): is the primary context still usable?");
  rec("ctxCreate", cuCtxCreate(&second, nullptr, 0, env.dev));
  PtxModule m2;
  rec("moduleLoad(second)", m2.load());
  CUdeviceptr p = 0;
  cuMemAlloc(&p, 4096);
  CUstream s2 = nullptr;
  cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
  rec("fault(second)", launch_f(m2.store_at, 1, 1, s2, p + (1ull << 40), 0ull, 1u));
  rec("sync(second)", cuStreamSynchronize(s2));
  rec("ctxSetCurrent(primary)", cuCtxSetCurrent(env.ctx));
  rec("ctxSync(primary)", cuCtxSynchronize());
  run_store_and_check("primary after a fault in the second context");
  end();
}

void f19() {
  PtxModule m2;
  m2.load();
  CUdeviceptr p = 0;
  cuMemAlloc(&p, 4096);
  begin("F19", "cuLaunchKernel of a function whose module was unloaded");
  rec("moduleUnload", cuModuleUnload(m2.mod));
  rec("launch(stale function)", launch_f(m2.store_at, 1, 1, A, p, 0ull, 5u));
  rec("sync(A)", cuStreamSynchronize(A));
  rec("launch(live module)", store(A, p, 0, 6));
  rec("sync(A)", cuStreamSynchronize(A));
  unsigned v = 0;
  cuMemcpyDtoH(&v, p, 4);
  obs("word 0 = %u (6 = the live launch ran, 5 = the stale one did)", v);
  end();
}

void f20() {
  static unsigned host_word = 0;
  fault_case("F20", "kernel writes a pageable host address (a static host variable, not registered)", [&](CUstream s) {
    return store(s, (CUdeviceptr)(uintptr_t)&host_word, 0, 42);
  });
  begin("F20", "after: the host word");
  obs("host word %u (42 = the GPU wrote pageable memory)", host_word);
  end();
}

// Copies and memsets that reach past an allocation: refused at the call, or a fault?
void f21() {
  CUdeviceptr p = 0, q = 0;
  cuMemAlloc(&p, 1024);
  cuMemAlloc(&q, 1024);
  std::vector<unsigned char> h(4096);
  begin("F21", "copies/memsets past a 1 KiB cuMemAlloc and to an address with no allocation");
  rec("DtoD(src 1 past end, 4 B)", cuMemcpyDtoD(q, p + 1024, 4));
  rec("DtoD(src straddles end, 8 B)", cuMemcpyDtoD(q, p + 1020, 8));
  rec("DtoH(2048 B of a 1 KiB alloc)", cuMemcpyDtoH(h.data(), p, 2048));
  rec("memsetD32(straddles end)", cuMemsetD32(p + 1020, 0, 2));
  rec("DtoDAsync(src straddles end)", cuMemcpyDtoDAsync(q, p + 1020, 8, A));
  rec("sync(A)", cuStreamSynchronize(A));
  CUdeviceptr far = p + (1ull << 40);
  rec("DtoD(src far)", cuMemcpyDtoD(q, far, 4));
  rec("DtoH(src far)", cuMemcpyDtoH(h.data(), far, 4));
  rec("memsetD32(far)", cuMemsetD32(far, 0, 1));
  rec("memsetD32Async(far)", cuMemsetD32Async(far, 0, 1, A));
  rec("DtoDAsync(src far)", cuMemcpyDtoDAsync(q, far, 4, A));
  rec("sync(A)", cuStreamSynchronize(A));
  rec("ctxSync", cuCtxSynchronize());
  rec("launch(ok)", store(B, q, 0, 3));
  rec("sync(B)", cuStreamSynchronize(B));
  end();
}

// The same fault captured into a graph through stream capture (graphcap's way of building graphs).
void f22() {
  CUdeviceptr p = 0;
  cuMemAlloc(&p, 4096);
  begin("F22", "stream-captured graph: store 1 TiB past, then a good store; instantiate, launch");
  rec("beginCapture", cuStreamBeginCapture(A, CU_STREAM_CAPTURE_MODE_GLOBAL));
  rec("launch(captured fault)", store(A, p + (1ull << 40), 0, 42));
  rec("launch(captured good)", store(A, p, 0, 8));
  CUgraph g = nullptr;
  rec("endCapture", cuStreamEndCapture(A, &g));
  CUgraphExec e = nullptr;
  rec("instantiate", cuGraphInstantiate(&e, g, 0));
  rec("upload", cuGraphUpload(e, A));
  rec("graphLaunch", cuGraphLaunch(e, A));
  double t0 = now_us();
  rec("sync(A)", cuStreamSynchronize(A));
  obs("%.1f ms", (now_us() - t0) / 1000);
  rec("query(B)", cuStreamQuery(B));
  end();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Case> cases = {
      {"F00", f00}, {"F01", f01}, {"F02", f02}, {"F03", f03}, {"F04", f04}, {"F05", f05},
      {"F06", f06}, {"F07", f07}, {"F08", f08}, {"F09", f09}, {"F10", f10}, {"F11", f11},
      {"F12", f12}, {"F13", f13}, {"F14", f14}, {"F15", f15}, {"F16", f16}, {"F17", f17},
      {"F18", f18}, {"F19", f19}, {"F20", f20}, {"F21", f21}, {"F22", f22},
      {"F15b", f15b}, {"F15c", f15c}, {"F16b", f16b}, {"F16c", f16c}, {"F18b", f18b}};
  for (Case& c : cases) c.timeout_s = 20;
  return run(argc, argv, cases, setup);
}
