// What every driver probe under docs/measurements/probes/ shares: one output line per case, each case run in a
// child process of its own with a timeout (a fault kills a context, a crash kills a process: either
// loses only its own case), and small helpers for launches, timing and memory figures.
//
// Output: one line per case,
//   <case id> | <what was called> | <call>=<result> ... [<observation>] ...
// where a result is the CUresult's name without the CUDA_ERROR_ prefix and its number
// (e.g. ILLEGAL_ADDRESS/700; SUCCESS/0). A line is printed piece by piece (stdout unbuffered), so a
// case that dies leaves what it saw; the parent then appends how the child ended.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace probe {

inline std::string code(CUresult r) {
  const char* n = nullptr;
  cuGetErrorName(r, &n);
  std::string s = n ? n : "UNKNOWN";
  if (s.rfind("CUDA_ERROR_", 0) == 0) s = s.substr(11);
  if (s == "CUDA_SUCCESS") s = "SUCCESS";
  return s + "/" + std::to_string(int(r));
}

// --- one line per case ------------------------------------------------------------------------
inline void begin(const char* id, const char* what) { std::printf("%s | %s |", id, what); }
inline CUresult rec(const char* label, CUresult r) {
  std::printf(" %s=%s", label, code(r).c_str());
  return r;
}
inline void obs(const char* fmt, ...) {
  std::printf(" [");
  va_list ap;
  va_start(ap, fmt);
  std::vprintf(fmt, ap);
  va_end(ap);
  std::printf("]");
}
inline void end() { std::printf("\n"); }

// --- clocks -----------------------------------------------------------------------------------
inline double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
inline void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// --- memory -----------------------------------------------------------------------------------
inline size_t free_bytes() {
  size_t f = 0, t = 0;
  cuMemGetInfo(&f, &t);
  return f;
}
// Bytes taken from the device's free memory between two cuMemGetInfo readings (negative: given back).
inline long long taken(size_t before, size_t after) { return (long long)before - (long long)after; }
inline double mib(long long b) { return double(b) / (1024.0 * 1024.0); }

// Waits for a stream at most `ms` milliseconds (polling cuStreamQuery). Work that is still running
// then (a conditional loop that never ends) is abandoned by ending the process, which ends the
// context and its work: no probe leaves the GPU busy.
inline CUresult sync_bounded(CUstream st, int ms = 3000) {
  double t0 = now_us();
  for (;;) {
    CUresult r = cuStreamQuery(st);
    if (r != CUDA_ERROR_NOT_READY) return r;
    if (now_us() - t0 > ms * 1000.0) {
      std::printf(" [still running after %d ms: the process ends to stop it]\n", ms);
      std::fflush(stdout);
      _exit(3);
    }
    usleep(50);
  }
}

// --- contexts and kernels -----------------------------------------------------------------------
struct Env {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
};
inline Env env;

// The primary context through the runtime, as graphcap's users have it (kernels of this file are
// then reachable through cudaGetFuncBySymbol).
inline void init_runtime() {
  cudaFree(nullptr);
  cuCtxGetCurrent(&env.ctx);
  cuCtxGetDevice(&env.dev);
}
// The primary context through the driver alone (no runtime state that a context reset could strand).
inline void init_driver() {
  cuInit(0);
  cuDeviceGet(&env.dev, 0);
  cuDevicePrimaryCtxRetain(&env.ctx, env.dev);
  cuCtxSetCurrent(env.ctx);
}

// A kernel of this translation unit as a CUfunction (the runtime registers it with the primary context).
inline CUfunction fn(const void* kernel) {
  cudaFunction_t f = nullptr;
  cudaGetFuncBySymbol(&f, kernel);
  return reinterpret_cast<CUfunction>(f);
}
// cuLaunchKernel of a kernel of this file; the arguments must have the kernel's parameter types.
template <class... A>
CUresult launch(const void* kernel, unsigned grid, unsigned block, CUstream s, A... a) {
  void* args[] = {static_cast<void*>(&a)..., nullptr};
  return cuLaunchKernel(fn(kernel), grid, 1, 1, block, 1, 1, 0, s, args, nullptr);
}
template <class... A>
CUresult launch_f(CUfunction f, unsigned grid, unsigned block, CUstream s, A... a) {
  void* args[] = {static_cast<void*>(&a)..., nullptr};
  return cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, args, nullptr);
}

// Ends the capture on `st` (the call shown as `label`) and drops the graph it gave.
inline void end_capture_dropping(CUstream st, const char* label = "endCapture") {
  CUgraph g = nullptr;
  rec(label, cuStreamEndCapture(st, &g));
  if (g) cuGraphDestroy(g);
}

// What a capturing stream's capture builds: its graph and the nodes the next captured node will
// depend on (cuStreamGetCaptureInfo).
struct CaptureInfo {
  CUgraph g = nullptr;
  std::vector<CUgraphNode> deps;
};
inline CUresult capture_info(CUstream st, CaptureInfo* ci) {
  CUstreamCaptureStatus status;
  cuuint64_t id;
  const CUgraphNode* d = nullptr;
  const CUgraphEdgeData* e = nullptr;
  size_t n = 0;
  CUresult r = cuStreamGetCaptureInfo(st, &status, &id, &ci->g, &d, &e, &n);
  ci->deps.assign(d, d + n);
  return r;
}

// A conditional node's parameters for cuGraphAddNode: `type` with `size` bodies (a SWITCH's
// cases; 1 otherwise), steered by `handle`, in context `ctx`. The bodies come back in
// conditional.phGraph_out.
inline CUgraphNodeParams conditional_params(CUgraphConditionalHandle handle, CUgraphConditionalNodeType type,
                                            unsigned size, CUcontext ctx) {
  CUgraphNodeParams p;
  std::memset(&p, 0, sizeof p);
  p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  p.conditional = CUDA_CONDITIONAL_NODE_PARAMS{handle, type, size, /*phGraph_out=*/nullptr, ctx};
  return p;
}

// Kernels as PTX text, loaded with cuModuleLoadData: reachable with the driver alone, also after a
// context reset, and the image a "does cuModuleLoadData still work" check loads.
inline const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

// p[idx] = v (a 32-bit store)
.visible .entry store_at(.param .u64 p, .param .u64 idx, .param .u32 v)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [p];
  ld.param.u64 %rd2, [idx];
  ld.param.u32 %r1, [v];
  cvta.to.global.u64 %rd3, %rd1;
  shl.b64 %rd4, %rd2, 2;
  add.s64 %rd5, %rd3, %rd4;
  st.global.u32 [%rd5], %r1;
  ret;
}

// *out = p[idx] (a 32-bit load)
.visible .entry load_at(.param .u64 p, .param .u64 idx, .param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [p];
  ld.param.u64 %rd2, [idx];
  ld.param.u64 %rd6, [out];
  cvta.to.global.u64 %rd3, %rd1;
  shl.b64 %rd4, %rd2, 2;
  add.s64 %rd5, %rd3, %rd4;
  ld.volatile.global.u32 %r1, [%rd5];
  cvta.to.global.u64 %rd7, %rd6;
  st.global.u32 [%rd7], %r1;
  ret;
}

.visible .entry trap_k()
{
  trap;
  ret;
}

// Sleeps about `iters` microseconds (bounded), then *flag = 1.
.visible .entry spin(.param .u64 flag, .param .u64 iters)
{
  .reg .pred %p;
  .reg .b32 %r<2>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [iters];
  cvta.to.global.u64 %rd4, %rd1;
  mov.u64 %rd3, 0;
LOOP:
  setp.ge.u64 %p, %rd3, %rd2;
  @%p bra DONE;
  nanosleep.u32 1000;
  add.u64 %rd3, %rd3, 1;
  bra LOOP;
DONE:
  mov.u32 %r1, 1;
  st.volatile.global.u32 [%rd4], %r1;
  ret;
}
)";

struct PtxModule {
  CUmodule mod = nullptr;
  CUfunction store_at = nullptr, load_at = nullptr, trap_k = nullptr, spin = nullptr;
  CUresult load() {
    CUresult r = cuModuleLoadData(&mod, kPtx);
    if (r != CUDA_SUCCESS) return r;
    cuModuleGetFunction(&store_at, mod, "store_at");
    cuModuleGetFunction(&load_at, mod, "load_at");
    cuModuleGetFunction(&trap_k, mod, "trap_k");
    return cuModuleGetFunction(&spin, mod, "spin");
  }
};

// What the context still does after a kernel faulted on stream `a`: every later call, in order, on
// the faulting stream, another stream `b`, events, allocation, copies, launches, creation, modules.
// `ev_a` was recorded on `a` right after the faulting launch.
inline void after_fault(CUstream a, CUstream b, CUevent ev_a, CUdeviceptr old_alloc) {
  double t0 = now_us();
  rec("sync(A)", cuStreamSynchronize(a));
  obs("first sync after %.1f ms", (now_us() - t0) / 1000);
  rec("sync(A)again", cuStreamSynchronize(a));
  rec("query(A)", cuStreamQuery(a));
  rec("sync(B)", cuStreamSynchronize(b));
  rec("query(B)", cuStreamQuery(b));
  rec("ctxSync", cuCtxSynchronize());
  rec("evSync(A)", cuEventSynchronize(ev_a));
  rec("evQuery(A)", cuEventQuery(ev_a));
  CUdeviceptr p = 0;
  rec("memAlloc", cuMemAlloc(&p, 1 << 20));
  unsigned v = 7, back = 0;
  if (p) {
    rec("HtoD", cuMemcpyHtoD(p, &v, 4));
    rec("DtoH", cuMemcpyDtoH(&back, p, 4));
  }
  if (old_alloc) rec("DtoH(old)", cuMemcpyDtoH(&back, old_alloc, 4));
  PtxModule m;
  rec("moduleLoadData", m.load());
  if (m.store_at && p) {
    unsigned long long idx = 0;
    unsigned nine = 9;
    rec("launch(B)", launch_f(m.store_at, 1, 1, b, p, idx, nine));
    rec("sync(B)", cuStreamSynchronize(b));
  }
  CUstream s2 = nullptr;
  rec("streamCreate", cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CUevent e2 = nullptr;
  rec("eventCreate", cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING));
  CUgraph g = nullptr;
  rec("graphCreate", cuGraphCreate(&g, 0));
  if (g) {
    CUgraphExec ge = nullptr;
    rec("instantiate(empty)", cuGraphInstantiate(&ge, g, 0));
    if (ge) rec("graphLaunch(B)", cuGraphLaunch(ge, b));
  }
  size_t f = 0, t = 0;
  rec("memGetInfo", cuMemGetInfo(&f, &t));
  if (p) rec("memFree", cuMemFree(p));
  if (old_alloc) rec("memFree(old)", cuMemFree(old_alloc));
  rec("ctxSync(end)", cuCtxSynchronize());
}

// --- the case runner ---------------------------------------------------------------------------
struct Case {
  const char* id;
  void (*fn)();
  int timeout_s = 30;
};

// With a case id (argv[1]): runs that case in this process. With --only id...: runs those cases as
// children. Without arguments: runs every case as a child
// process (fork + exec of this program with the case id), each killed after its timeout, and
// reports any child that did not exit with 0. The parent never touches CUDA.
inline int run(int argc, char** argv, const std::vector<Case>& cases, void (*setup)()) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::vector<Case> chosen = cases;
  if (argc > 2 && std::strcmp(argv[1], "--only") == 0) {  // the listed cases, each as a child
    chosen.clear();
    for (int i = 2; i < argc; ++i)
      for (const Case& c : cases)
        if (std::strcmp(c.id, argv[i]) == 0) chosen.push_back(c);
  } else if (argc > 1) {
    for (const Case& c : cases)
      if (std::strcmp(c.id, argv[1]) == 0) {
        setup();
        c.fn();
        std::fflush(stdout);
        return 0;
      }
    std::printf("no case %s\n", argv[1]);
    return 2;
  }
  double t_all = now_us();
  for (const Case& c : chosen) {
    double t0 = now_us();
    pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", argv[0], c.id, (char*)nullptr);
      _exit(127);
    }
    int status = 0;
    bool timed_out = false;
    for (;;) {
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      if (now_us() - t0 > c.timeout_s * 1e6) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        timed_out = true;
        break;
      }
      usleep(2000);
    }
    double secs = (now_us() - t0) / 1e6;
    if (timed_out)
      std::printf(" <<%s: killed after the %d s timeout>>\n", c.id, c.timeout_s);
    else if (WIFSIGNALED(status))
      std::printf(" <<%s: child ended by signal %d after %.2f s>>\n", c.id, WTERMSIG(status), secs);
    else if (WEXITSTATUS(status) != 0)
      std::printf(" <<%s: child exited %d after %.2f s>>\n", c.id, WEXITSTATUS(status), secs);
    std::fprintf(stderr, "%s %.2f s\n", c.id, secs);
  }
  std::printf("# %zu cases in %.1f s\n", chosen.size(), (now_us() - t_all) / 1e6);
  return 0;
}

// The machine and driver, printed as a probe's first case.
inline void print_env(const char* id) {
  int version = 0;
  cuDriverGetVersion(&version);
  char nm[256] = {0};
  cuDeviceGetName(nm, sizeof nm, env.dev);
  size_t f = 0, t = 0;
  cuMemGetInfo(&f, &t);
  int sms = 0, cc_major = 0, cc_minor = 0;
  cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, env.dev);
  cuDeviceGetAttribute(&cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, env.dev);
  cuDeviceGetAttribute(&cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, env.dev);
  begin(id, "environment");
  obs("%s, sm_%d%d, %d SMs, driver API %d, %.0f MiB total, %.0f MiB free", nm, cc_major, cc_minor,
      sms, version, mib((long long)t), mib((long long)f));
  end();
}

}  // namespace probe
