// What CUDA's virtual memory management does on this driver (issue 25 §1, pools on VMM): granularity,
// reserve/free, create/release, map/unmap, set access; growth in place at the end of what is mapped
// (addresses stay, a graph captured before the growth still replays); copies and memsets over two
// physical allocations; memory figures around each step; what a kernel touching an unmapped, an
// inaccessible or a read-only part does; unmapping under a queued kernel; and every VMM call during
// an open stream capture in each mode and from another thread.
//   nvcc -O2 -arch=sm_90 -o vmm_probe docs/measurements/probes/vmm_probe.cu -lcuda
//   ./vmm_probe          (every case, one child process each)   ./vmm_probe V05   (one case)
#include "probe_common.h"

using namespace probe;

__global__ void fill(unsigned* p, unsigned long long n, unsigned base) {
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    p[i] = base + unsigned(i);
}
__global__ void count_bad(const unsigned* p, unsigned long long n, unsigned base, unsigned* bad) {
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    if (p[i] != base + unsigned(i)) atomicAdd(bad, 1u);
}
__global__ void touch(unsigned* p, unsigned v) { *p = v; }
__global__ void peek(const unsigned* p, unsigned* out) { *out = *(volatile const unsigned*)p; }
// Sleeps about `us` microseconds (bounded), then writes *p = 1.
__global__ void spin_write(unsigned* p, unsigned long long us) {
  for (unsigned long long i = 0; i < us; ++i) __nanosleep(1000);
  *(volatile unsigned*)p = 1;
}

namespace {

size_t G = 2u << 20;  // minimum granularity, read in setup
CUstream s, s2;
unsigned* bad;        // device counter for count_bad
PtxModule m;

CUmemAllocationProp prop() {
  CUmemAllocationProp p;
  std::memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = env.dev;
  return p;
}
CUmemAccessDesc access(CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
  CUmemAccessDesc d;
  std::memset(&d, 0, sizeof d);
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = env.dev;
  d.flags = f;
  return d;
}
CUresult create(CUmemGenericAllocationHandle* h, size_t bytes) {
  CUmemAllocationProp p = prop();
  return cuMemCreate(h, bytes, &p, 0);
}
CUresult set_rw(CUdeviceptr va, size_t bytes) {
  CUmemAccessDesc d = access();
  return cuMemSetAccess(va, bytes, &d, 1);
}
// Largest power of two dividing an address (capped at 2^44), as "2^k".
int align_log2(CUdeviceptr a) {
  if (!a) return -1;
  int k = 0;
  while (k < 44 && !(a & (1ull << k))) ++k;
  return k;
}
unsigned errors(CUdeviceptr p, unsigned long long n, unsigned base) {
  cuMemsetD32(CUdeviceptr(bad), 0, 1);
  launch((const void*)count_bad, 1024, 256, s, (const unsigned*)p, n, base, bad);
  cuStreamSynchronize(s);
  unsigned v = 0xffffffff;
  cuMemcpyDtoH(&v, CUdeviceptr(bad), 4);
  return v;
}
CUresult fill_range(CUdeviceptr p, unsigned long long n, unsigned base, CUstream st) {
  return launch((const void*)fill, 1024, 256, st, (unsigned*)p, n, base);
}

void setup() {
  init_runtime();
  CUmemAllocationProp p = prop();
  cuMemGetAllocationGranularity(&G, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
  cudaMalloc(&bad, 4);
  m.load();
}

void v00() {
  print_env("V00");
  begin("V00b", "device attributes and cuMemGetAllocationGranularity (PINNED, DEVICE 0)");
  int vmm = -1, posix = -1, comp = -1, rdma = -1;
  cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, env.dev);
  cuDeviceGetAttribute(&posix, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, env.dev);
  cuDeviceGetAttribute(&comp, CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, env.dev);
  cuDeviceGetAttribute(&rdma, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, env.dev);
  obs("VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED %d, POSIX_FD handles %d, GENERIC_COMPRESSION %d, "
      "GPU_DIRECT_RDMA_WITH_CUDA_VMM %d", vmm, posix, comp, rdma);
  CUmemAllocationProp p = prop();
  size_t mn = 0, rc = 0;
  rec("granularity(MINIMUM)", cuMemGetAllocationGranularity(&mn, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  rec("granularity(RECOMMENDED)", cuMemGetAllocationGranularity(&rc, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  obs("minimum %zu, recommended %zu bytes", mn, rc);
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  rec("granularity(POSIX_FD, MINIMUM)", cuMemGetAllocationGranularity(&mn, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  obs("%zu", mn);
  p = prop();
  p.location.id = 7;
  rec("granularity(device 7)", cuMemGetAllocationGranularity(&mn, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  rec("granularity(option 5)", cuMemGetAllocationGranularity(&mn, &p, CUmemAllocationGranularity_flags(5)));
  end();
}

void v01() {
  struct R { const char* what; size_t size, align; };
  const size_t GiB = 1ull << 30;
  R rs[] = {{"G, align 0", G, 0},
            {"G, align G", G, G},
            {"4 KiB (host page), align 0", 4096, 0},
            {"1 MiB, align 0", 1 << 20, 0},
            {"G+4 KiB, align 0", G + 4096, 0},
            {"1000 bytes, align 0", 1000, 0},
            {"0 bytes", 0, 0},
            {"G, align 3G (not a power of two)", G, 3 * G},
            {"G, align 4 KiB", G, 4096},
            {"G, align 1 GiB", G, GiB},
            {"64 GiB, align 0", 64 * GiB, 0},
            {"64 GiB, align 64 GiB", 64 * GiB, 64 * GiB},
            {"256 GiB (more than the device has), align 0", 256 * GiB, 0},
            {"1 TiB, align 0", 1024 * GiB, 0},
            {"16 TiB, align 0", 16 * 1024 * GiB, 0},
            {"128 TiB, align 0", 128 * 1024 * GiB, 0}};
  int i = 0;
  for (const R& r : rs) {
    char id[16];
    std::snprintf(id, sizeof id, "V01.%02d", i++);
    begin(id, "cuMemAddressReserve / cuMemAddressFree");
    obs("%s", r.what);
    CUdeviceptr va = 0;
    double t0 = now_us();
    CUresult rr = rec("reserve", cuMemAddressReserve(&va, r.size, r.align, 0, 0));
    double t1 = now_us();
    if (rr == CUDA_SUCCESS) {
      obs("va 0x%llx, aligned to 2^%d, reserve %.1f us", (unsigned long long)va, align_log2(va), t1 - t0);
      t0 = now_us();
      rec("free", cuMemAddressFree(va, r.size));
      obs("free %.1f us", now_us() - t0);
    }
    end();
  }
  begin("V01.90", "cuMemAddressFree misuse on a reservation of 4G");
  CUdeviceptr va = 0;
  rec("reserve", cuMemAddressReserve(&va, 4 * G, 0, 0, 0));
  rec("free(half the size)", cuMemAddressFree(va, 2 * G));
  rec("free(interior address, G)", cuMemAddressFree(va + G, G));
  rec("free(whole)", cuMemAddressFree(va, 4 * G));
  rec("free(again)", cuMemAddressFree(va, 4 * G));
  CUdeviceptr d = 0;
  cuMemAlloc(&d, G);
  rec("free(a cuMemAlloc pointer)", cuMemAddressFree(d, G));
  rec("memFree(cuMemAlloc pointer)", cuMemFree(d));
  CUdeviceptr hint = 0;
  rec("reserve(hint = the freed address)", cuMemAddressReserve(&hint, 4 * G, 0, va, 0));
  obs("%s the hint", hint == va ? "got" : "did not get");
  CUdeviceptr hint2 = 0;
  rec("reserve(hint = an address already reserved)", cuMemAddressReserve(&hint2, G, 0, hint, 0));
  obs("got 0x%llx (hint 0x%llx)", (unsigned long long)hint2, (unsigned long long)hint);
  CUdeviceptr hint3 = 0;
  rec("reserve(hint right after it)", cuMemAddressReserve(&hint3, G, 0, hint + 4 * G, 0));
  obs("%s the hint", hint3 == hint + 4 * G ? "got" : "did not get");
  cuMemAddressFree(hint, 4 * G);
  if (hint2) cuMemAddressFree(hint2, G);
  if (hint3) cuMemAddressFree(hint3, G);
  // cuMemAlloc pointers next to a reservation: the driver's own allocations share the VA space.
  end();
}

void v02() {
  const size_t GiB = 1ull << 30;
  begin("V02", "cuMemGetInfo (free) around create / map / set access / unmap / release of 1 GiB");
  size_t f0 = free_bytes();
  CUmemGenericAllocationHandle h = 0;
  rec("create(1 GiB)", create(&h, GiB));
  size_t f1 = free_bytes();
  CUdeviceptr va = 0;
  rec("reserve", cuMemAddressReserve(&va, GiB, 0, 0, 0));
  size_t f2 = free_bytes();
  rec("map", cuMemMap(va, GiB, 0, h, 0));
  size_t f3 = free_bytes();
  rec("setAccess", set_rw(va, GiB));
  size_t f4 = free_bytes();
  rec("fill", fill_range(va, GiB / 4, 0, s));
  rec("sync", cuStreamSynchronize(s));
  size_t f5 = free_bytes();
  rec("unmap", cuMemUnmap(va, GiB));
  size_t f6 = free_bytes();
  rec("release", cuMemRelease(h));
  size_t f7 = free_bytes();
  obs("MiB taken vs start: create %.0f, reserve %.0f, map %.0f, setAccess %.0f, kernel %.0f, unmap %.0f, "
      "release %.0f", mib(taken(f0, f1)), mib(taken(f0, f2)), mib(taken(f0, f3)), mib(taken(f0, f4)),
      mib(taken(f0, f5)), mib(taken(f0, f6)), mib(taken(f0, f7)));
  // Release while still mapped: the memory stays until the unmap.
  size_t g0 = free_bytes();
  rec("create(1 GiB)", create(&h, GiB));
  rec("map", cuMemMap(va, GiB, 0, h, 0));
  rec("setAccess", set_rw(va, GiB));
  rec("release(while mapped)", cuMemRelease(h));
  size_t g1 = free_bytes();
  rec("fill(after release)", fill_range(va, GiB / 4, 5, s));
  rec("sync", cuStreamSynchronize(s));
  unsigned e = errors(va, GiB / 4, 5);
  obs("errors reading back after release %u", e);
  rec("release(again)", cuMemRelease(h));
  rec("unmap", cuMemUnmap(va, GiB));
  size_t g2 = free_bytes();
  obs("release while mapped: MiB taken after release %.0f, after unmap %.0f", mib(taken(g0, g1)),
      mib(taken(g0, g2)));
  rec("addressFree", cuMemAddressFree(va, GiB));
  CUmemGenericAllocationHandle h2 = 0;
  rec("create(G/2)", create(&h2, G / 2));
  rec("create(G+4 KiB)", create(&h2, G + 4096));
  rec("create(0)", create(&h2, 0));
  CUmemAllocationProp p = prop();
  p.location.id = 7;
  rec("create(device 7)", cuMemCreate(&h2, G, &p, 0));
  p = prop();
  p.type = CU_MEM_ALLOCATION_TYPE_INVALID;
  rec("create(type INVALID)", cuMemCreate(&h2, G, &p, 0));
  rec("create(flags 1)", cuMemCreate(&h2, G, &(p = prop()), 1));
  rec("create(200 GiB, more than the device)", create(&h2, 200 * GiB));
  rec("release(handle 0)", cuMemRelease(0));
  end();
}

// Cost of each step of a pool growth, by size.
void v03() {
  size_t sizes[] = {G, 32 * G, 512 * G, 8192 * G};  // 2 MiB, 64 MiB, 1 GiB, 16 GiB at G = 2 MiB
  for (size_t bytes : sizes) {
    char id[24];
    std::snprintf(id, sizeof id, "V03.%zuMiB", bytes >> 20);
    begin(id, "time (us) of reserve, create, map, setAccess, unmap, release, free");
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle h = 0;
    double t[8];
    t[0] = now_us();
    rec("reserve", cuMemAddressReserve(&va, bytes, 0, 0, 0));
    t[1] = now_us();
    rec("create", create(&h, bytes));
    t[2] = now_us();
    rec("map", cuMemMap(va, bytes, 0, h, 0));
    t[3] = now_us();
    rec("setAccess", set_rw(va, bytes));
    t[4] = now_us();
    rec("unmap", cuMemUnmap(va, bytes));
    t[5] = now_us();
    rec("release", cuMemRelease(h));
    t[6] = now_us();
    rec("free", cuMemAddressFree(va, bytes));
    t[7] = now_us();
    obs("reserve %.0f, create %.0f, map %.0f, setAccess %.0f, unmap %.0f, release %.0f, free %.0f",
        t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3], t[5] - t[4], t[6] - t[5], t[7] - t[6]);
    end();
  }
  begin("V03.alloc", "for comparison: cuMemAlloc / cuMemFree of 64 MiB and 1 GiB (us)");
  for (size_t bytes : {32 * G, 512 * G}) {
    CUdeviceptr d = 0;
    double t0 = now_us();
    rec("memAlloc", cuMemAlloc(&d, bytes));
    double t1 = now_us();
    rec("memFree", cuMemFree(d));
    obs("%zu MiB: alloc %.0f, free %.0f", bytes >> 20, t1 - t0, now_us() - t1);
  }
  end();
}

void v04() {
  begin("V04", "cuMemMap / cuMemSetAccess / cuMemUnmap rules on a reservation of 8G");
  CUdeviceptr va = 0;
  rec("reserve(8G)", cuMemAddressReserve(&va, 8 * G, 0, 0, 0));
  CUmemGenericAllocationHandle h1 = 0, h2 = 0;
  rec("create(h1, G)", create(&h1, G));
  rec("create(h2, 2G)", create(&h2, 2 * G));
  rec("map(misaligned va+G/2)", cuMemMap(va + G / 2, G, 0, h1, 0));
  rec("map(h2 at offset G)", cuMemMap(va, G, G, h2, 0));
  rec("map(size 2G of the G handle)", cuMemMap(va, 2 * G, 0, h1, 0));
  rec("map(size G/2)", cuMemMap(va, G / 2, 0, h1, 0));
  rec("map(flags 1)", cuMemMap(va, G, 0, h1, 1));
  rec("map(h1 at va)", cuMemMap(va, G, 0, h1, 0));
  rec("map(h1 at va again)", cuMemMap(va, G, 0, h1, 0));
  rec("map(h2 over va..va+2G, half mapped)", cuMemMap(va, 2 * G, 0, h2, 0));
  rec("map(h1 a second time at va+G)", cuMemMap(va + G, G, 0, h1, 0));
  rec("map(an address outside any reservation)", cuMemMap(va + (1ull << 40), G, 0, h2, 0));
  rec("setAccess(va..va+3G, partly unmapped)", set_rw(va, 3 * G));
  rec("setAccess(va, G/2)", set_rw(va, G / 2));
  rec("setAccess(va, G)", set_rw(va, G));
  unsigned long long fl = 99;
  CUmemLocation loc = access().location;
  rec("getAccess(va)", cuMemGetAccess(&fl, &loc, va));
  obs("flags %llu", fl);
  rec("getAccess(va+G, no access set)", cuMemGetAccess(&fl, &loc, va + G));
  obs("flags %llu", fl);
  rec("setAccess(va, 2G: two mappings of h1)", set_rw(va, 2 * G));
  // Both views of h1 see the same bytes.
  rec("touch(va)=5", launch((const void*)touch, 1, 1, s, (unsigned*)va, 5u));
  rec("peek(va+G)", launch((const void*)peek, 1, 1, s, (const unsigned*)(va + G), bad));
  rec("sync", cuStreamSynchronize(s));
  unsigned v = 0;
  cuMemcpyDtoH(&v, CUdeviceptr(bad), 4);
  obs("second view reads %u (5 = one physical allocation, two addresses)", v);
  rec("map(h2 at va+2G)", cuMemMap(va + 2 * G, 2 * G, 0, h2, 0));
  rec("unmap(va, G/2: part of a mapping)", cuMemUnmap(va, G / 2));
  rec("unmap(va+2G, G: half of h2's mapping)", cuMemUnmap(va + 2 * G, G));
  rec("unmap(va+G, 3G: h1's second view + all of h2)", cuMemUnmap(va + G, 3 * G));
  rec("unmap(va+G, G)", cuMemUnmap(va + G, G));
  rec("unmap(va+2G, 2G)", cuMemUnmap(va + 2 * G, 2 * G));
  CUdeviceptr base = 0;
  size_t size = 0;
  rec("getAddressRange(va+100)", cuMemGetAddressRange(&base, &size, va + 100));
  obs("base %s va, size %zu", base == va ? "==" : "!=", size);
  rec("getAddressRange(va+3G, reserved, unmapped)", cuMemGetAddressRange(&base, &size, va + 3 * G));
  CUmemGenericAllocationHandle hr = 0;
  rec("retainAllocationHandle(va+100)", cuMemRetainAllocationHandle(&hr, (void*)(va + 100)));
  obs("retained %s h1", hr == h1 ? "==" : "!=");
  if (hr) rec("release(retained)", cuMemRelease(hr));
  rec("retainAllocationHandle(va+3G, unmapped)", cuMemRetainAllocationHandle(&hr, (void*)(va + 3 * G)));
  rec("release(h1 while mapped at va)", cuMemRelease(h1));
  rec("touch(va) after release", launch((const void*)touch, 1, 1, s, (unsigned*)va, 6u));
  rec("sync", cuStreamSynchronize(s));
  rec("addressFree(8G while va..va+G mapped)", cuMemAddressFree(va, 8 * G));
  rec("unmap(va, G)", cuMemUnmap(va, G));
  rec("addressFree(8G)", cuMemAddressFree(va, 8 * G));
  rec("release(h2)", cuMemRelease(h2));
  end();
}

// Growth in place: what is mapped stays where it is; a graph captured before the growth replays.
void v05() {
  const size_t GiB = 1ull << 30;
  begin("V05", "grow a 64 GiB reservation in place (map G, then G, then 2G at the end)");
  CUdeviceptr va = 0;
  rec("reserve(64 GiB)", cuMemAddressReserve(&va, 64 * GiB, 0, 0, 0));
  CUmemGenericAllocationHandle h0 = 0, h1 = 0, h2 = 0;
  rec("create(h0,G)", create(&h0, G));
  rec("map(h0,va)", cuMemMap(va, G, 0, h0, 0));
  rec("setAccess(va,G)", set_rw(va, G));
  const unsigned long long n0 = G / 4;
  // A graph over the first piece, captured before any growth.
  rec("beginCapture", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  rec("fill(captured)", fill_range(va, n0, 1000, s));
  CUgraph g = nullptr;
  rec("endCapture", cuStreamEndCapture(s, &g));
  CUgraphExec ge = nullptr;
  rec("instantiate", cuGraphInstantiate(&ge, g, 0));
  rec("graphLaunch", cuGraphLaunch(ge, s));
  rec("sync", cuStreamSynchronize(s));
  obs("piece 0 errors after replay %u", errors(va, n0, 1000));
  rec("create(h1,G)", create(&h1, G));
  rec("map(h1,va+G)", cuMemMap(va + G, G, 0, h1, 0));
  rec("setAccess(va+G,G: the new piece only)", set_rw(va + G, G));
  obs("piece 0 errors after growth (no relaunch) %u", errors(va, n0, 1000));
  rec("fill(va..va+2G, one kernel over two allocations)", fill_range(va, 2 * n0, 7, s));
  rec("sync", cuStreamSynchronize(s));
  obs("errors over both pieces %u", errors(va, 2 * n0, 7));
  // Copies and memsets across the boundary between the two allocations.
  const size_t span = 8192;
  CUdeviceptr edge = va + G - span / 2;
  std::vector<unsigned> hbuf(span / 4), want(span / 4);
  for (size_t i = 0; i < hbuf.size(); ++i) want[i] = 0xabc00000u + unsigned(i);
  rec("HtoD(across the boundary)", cuMemcpyHtoD(edge, want.data(), span));
  rec("DtoH(across the boundary)", cuMemcpyDtoH(hbuf.data(), edge, span));
  obs("HtoD/DtoH round trip %s", hbuf == want ? "equal" : "DIFFERENT");
  CUdeviceptr plain = 0;
  cuMemAlloc(&plain, span);
  rec("DtoD(boundary -> cuMemAlloc)", cuMemcpyDtoD(plain, edge, span));
  std::fill(hbuf.begin(), hbuf.end(), 0);
  cuMemcpyDtoH(hbuf.data(), plain, span);
  obs("DtoD out %s", hbuf == want ? "equal" : "DIFFERENT");
  rec("memsetD32(across the boundary)", cuMemsetD32(edge, 0x5a5a5a5a, span / 4));
  cuMemcpyDtoH(hbuf.data(), edge, span);
  bool all = std::all_of(hbuf.begin(), hbuf.end(), [](unsigned x) { return x == 0x5a5a5a5a; });
  obs("memset %s", all ? "every word set" : "NOT every word set");
  rec("DtoDAsync(cuMemAlloc -> boundary)", cuMemcpyDtoDAsync(edge, plain, span, s));
  rec("memsetD32Async(boundary, 2 words)", cuMemsetD32Async(edge, 1, 2, s));
  rec("sync", cuStreamSynchronize(s));
  cuMemFree(plain);
  // The graph captured before the growth still replays over piece 0.
  rec("graphLaunch(after growth)", cuGraphLaunch(ge, s));
  rec("sync", cuStreamSynchronize(s));
  obs("piece 0 errors after growth + replay %u", errors(va, n0, 1000));
  // A graph over both pieces, then growth by 2G at the end, then its replay.
  CUgraph g2 = nullptr;
  CUgraphExec ge2 = nullptr;
  rec("beginCapture", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  fill_range(va, 2 * n0, 2000, s);
  rec("endCapture", cuStreamEndCapture(s, &g2));
  rec("instantiate", cuGraphInstantiate(&ge2, g2, 0));
  rec("create(h2,2G)", create(&h2, 2 * G));
  rec("map(h2,va+2G)", cuMemMap(va + 2 * G, 2 * G, 0, h2, 0));
  rec("setAccess(va, 4G: over three allocations in one call)", set_rw(va, 4 * G));
  rec("graphLaunch(g2)", cuGraphLaunch(ge2, s));
  rec("sync", cuStreamSynchronize(s));
  obs("pieces 0-1 errors after g2 replay %u", errors(va, 2 * n0, 2000));
  rec("fill(va..va+4G)", fill_range(va, 4 * n0, 3, s));
  rec("sync", cuStreamSynchronize(s));
  obs("errors over 4G %u", errors(va, 4 * n0, 3));
  // Shrink the tail: unmap and release the last piece; graphs over pieces 0-1 still replay.
  size_t f0 = free_bytes();
  rec("unmap(va+2G,2G)", cuMemUnmap(va + 2 * G, 2 * G));
  rec("release(h2)", cuMemRelease(h2));
  size_t f1 = free_bytes();
  obs("tail unmap+release gave back %.1f MiB at once", mib(-taken(f0, f1)));
  rec("graphLaunch(g2 after shrink)", cuGraphLaunch(ge2, s));
  rec("sync", cuStreamSynchronize(s));
  obs("pieces 0-1 errors %u", errors(va, 2 * n0, 2000));
  cuGraphExecDestroy(ge);
  cuGraphExecDestroy(ge2);
  cuGraphDestroy(g);
  cuGraphDestroy(g2);
  rec("unmap(va,G)", cuMemUnmap(va, G));
  rec("unmap(va+G,G)", cuMemUnmap(va + G, G));
  rec("release(h0)", cuMemRelease(h0));
  rec("release(h1)", cuMemRelease(h1));
  rec("addressFree", cuMemAddressFree(va, 64 * GiB));
  end();
}

// Unmapping (and releasing) memory a queued kernel is about to write: does cuMemUnmap wait for it?
void v06() {
  begin("V06", "a 50 ms kernel then writes the mapped piece; unmap + release + free right after launch");
  CUdeviceptr va = 0;
  CUmemGenericAllocationHandle h = 0;
  cuMemAddressReserve(&va, G, 0, 0, 0);
  create(&h, G);
  cuMemMap(va, G, 0, h, 0);
  set_rw(va, G);
  cuMemsetD32(va, 0, G / 4);
  rec("launch(spin_write)", launch((const void*)spin_write, 1, 1, s, (unsigned*)va, 50000ull));
  double t0 = now_us();
  rec("unmap", cuMemUnmap(va, G));
  double t1 = now_us();
  rec("release", cuMemRelease(h));
  rec("addressFree", cuMemAddressFree(va, G));
  double t2 = now_us();
  rec("query(s)", cuStreamQuery(s));
  rec("sync(s)", cuStreamSynchronize(s));
  double t3 = now_us();
  obs("unmap took %.1f ms, release+free %.1f ms, then sync %.1f ms (unmap ~50 ms = it waited)",
      (t1 - t0) / 1000, (t2 - t1) / 1000, (t3 - t2) / 1000);
  rec("ctxSync", cuCtxSynchronize());
  end();
}

// Growth while other work runs: do create / map / set access wait for the GPU?
void v06b() {
  begin("V06b", "a 50 ms kernel on other memory; create + map + setAccess of a new piece meanwhile");
  CUdeviceptr va = 0, flag = 0;
  CUmemGenericAllocationHandle h0 = 0, h1 = 0;
  cuMemAlloc(&flag, 4);
  cuMemAddressReserve(&va, 2 * G, 0, 0, 0);
  create(&h0, G);
  cuMemMap(va, G, 0, h0, 0);
  set_rw(va, G);
  rec("launch(spin_write on piece 0)", launch((const void*)spin_write, 1, 1, s, (unsigned*)va, 50000ull));
  double t0 = now_us();
  rec("create", create(&h1, G));
  rec("map(va+G)", cuMemMap(va + G, G, 0, h1, 0));
  rec("setAccess(va+G)", set_rw(va + G, G));
  double t1 = now_us();
  rec("query(s)", cuStreamQuery(s));
  rec("unmap(va+G) of the idle piece", cuMemUnmap(va + G, G));
  double t2 = now_us();
  rec("query(s)", cuStreamQuery(s));
  rec("sync", cuStreamSynchronize(s));
  obs("create+map+setAccess %.2f ms, unmap of an idle piece %.2f ms while the kernel ran "
      "(~50 ms = waited for it)", (t1 - t0) / 1000, (t2 - t1) / 1000);
  cuMemUnmap(va, G);
  cuMemRelease(h0);
  cuMemRelease(h1);
  cuMemAddressFree(va, 2 * G);
  end();
}

// Kernel accesses to parts of a reservation that are not usable; each in its own process.
void bad_access(const char* id, const char* what, bool map, bool set, CUmemAccess_flags f,
                bool write, size_t offset) {
  CUdeviceptr va = 0;
  CUmemGenericAllocationHandle h = 0;
  cuMemAddressReserve(&va, 4 * G, 0, 0, 0);
  create(&h, G);
  if (map) cuMemMap(va, G, 0, h, 0);
  if (map && set) {
    CUmemAccessDesc d = access(f);
    cuMemSetAccess(va, G, &d, 1);
  }
  CUevent ev;
  cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
  begin(id, what);
  if (f == CU_MEM_ACCESS_FLAGS_PROT_READ && set) {
    rec("peek(read-only piece)", launch((const void*)peek, 1, 1, s, (const unsigned*)va, bad));
    rec("sync", cuStreamSynchronize(s));
  }
  CUresult r = write ? launch((const void*)touch, 1, 1, s, (unsigned*)(va + offset), 1u)
                     : launch((const void*)peek, 1, 1, s, (const unsigned*)(va + offset), bad);
  rec("launch", r);
  rec("evRecord", cuEventRecord(ev, s));
  sleep_ms(100);
  rec("query(s2)first", cuStreamQuery(s2));
  after_fault(s, s2, ev, 0);
  end();
}
void v07() { bad_access("V07", "kernel writes the reserved but unmapped part (va+2G)", true, true, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, true, 2 * G); }
void v07b() { bad_access("V07b", "kernel reads the reserved but unmapped part (va+2G)", true, true, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, false, 2 * G); }
void v08() { bad_access("V08", "kernel writes a mapped piece before any cuMemSetAccess", true, false, CU_MEM_ACCESS_FLAGS_PROT_READWRITE, true, 0); }
void v09() { bad_access("V09", "kernel reads, then writes a piece set PROT_READ", true, true, CU_MEM_ACCESS_FLAGS_PROT_READ, true, 0); }

// --- VMM calls during an open capture ---------------------------------------------------------
enum Op { RESERVE, ADDRFREE, CREATE, RELEASE, MAP, UNMAP, SETACCESS, GETACCESS, GRANULARITY,
          RETAIN, GETINFO, MEMALLOC, MEMFREE, NOPS };
const char* op_name[] = {"cuMemAddressReserve", "cuMemAddressFree", "cuMemCreate", "cuMemRelease",
                         "cuMemMap", "cuMemUnmap", "cuMemSetAccess", "cuMemGetAccess",
                         "cuMemGetAllocationGranularity", "cuMemRetainAllocationHandle",
                         "cuMemGetInfo", "cuMemAlloc (reference)", "cuMemFree (reference)"};
struct Res {
  CUdeviceptr va = 0, d = 0;
  CUmemGenericAllocationHandle h = 0;
  bool mapped = false;
};
Res prepare(Op op) {
  Res r;
  bool need_va = op == ADDRFREE || op == MAP || op == UNMAP || op == SETACCESS || op == GETACCESS ||
                 op == RETAIN;
  bool need_h = op == RELEASE || op == MAP || op == UNMAP || op == SETACCESS || op == GETACCESS ||
                op == RETAIN;
  if (need_va) cuMemAddressReserve(&r.va, G, 0, 0, 0);
  if (need_h) create(&r.h, G);
  if (op == UNMAP || op == SETACCESS || op == GETACCESS || op == RETAIN) {
    cuMemMap(r.va, G, 0, r.h, 0);
    r.mapped = true;
  }
  if (op == UNMAP || op == GETACCESS || op == RETAIN) set_rw(r.va, G);
  if (op == MEMFREE) cuMemAlloc(&r.d, 4096);
  return r;
}
CUresult do_op(Op op, Res& r) {
  CUresult x = CUDA_SUCCESS;
  switch (op) {
    case RESERVE: x = cuMemAddressReserve(&r.va, G, 0, 0, 0); break;
    case ADDRFREE: x = cuMemAddressFree(r.va, G); if (!x) r.va = 0; break;
    case CREATE: x = create(&r.h, G); break;
    case RELEASE: x = cuMemRelease(r.h); if (!x) r.h = 0; break;
    case MAP: x = cuMemMap(r.va, G, 0, r.h, 0); if (!x) r.mapped = true; break;
    case UNMAP: x = cuMemUnmap(r.va, G); if (!x) r.mapped = false; break;
    case SETACCESS: x = set_rw(r.va, G); break;
    case GETACCESS: {
      unsigned long long fl = 0;
      CUmemLocation loc = access().location;
      x = cuMemGetAccess(&fl, &loc, r.va);
      break;
    }
    case GRANULARITY: {
      size_t g = 0;
      CUmemAllocationProp p = prop();
      x = cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
      break;
    }
    case RETAIN: {
      CUmemGenericAllocationHandle h = 0;
      x = cuMemRetainAllocationHandle(&h, (void*)r.va);
      if (!x) cuMemRelease(h);
      break;
    }
    case GETINFO: { size_t f, t; x = cuMemGetInfo(&f, &t); break; }
    case MEMALLOC: x = cuMemAlloc(&r.d, 4096); break;
    case MEMFREE: x = cuMemFree(r.d); if (!x) r.d = 0; break;
    default: break;
  }
  return x;
}
void cleanup(Res& r) {
  if (r.mapped) cuMemUnmap(r.va, G);
  if (r.h) cuMemRelease(r.h);
  if (r.va) cuMemAddressFree(r.va, G);
  if (r.d) cuMemFree(r.d);
}
const char* status_name(CUstreamCaptureStatus st) {
  return st == CU_STREAM_CAPTURE_STATUS_NONE ? "NONE" : st == CU_STREAM_CAPTURE_STATUS_ACTIVE ? "ACTIVE" : "INVALIDATED";
}

// mode: 0 GLOBAL, 1 THREAD_LOCAL, 2 RELAXED, 3 GLOBAL capture with the call from another thread.
void capture_matrix(int mode) {
  const char* tag[] = {"G", "T", "R", "X"};
  const char* desc[] = {"during a GLOBAL capture, same thread", "during a THREAD_LOCAL capture, same thread",
                        "during a RELAXED capture, same thread", "from another thread (own mode GLOBAL) during a GLOBAL capture"};
  CUstreamCaptureMode cm = mode == 1 ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                           : mode == 2 ? CU_STREAM_CAPTURE_MODE_RELAXED
                                       : CU_STREAM_CAPTURE_MODE_GLOBAL;
  CUdeviceptr scratch = 0;
  cuMemAlloc(&scratch, 4096);
  for (int o = 0; o < NOPS; ++o) {
    Op op = Op(o);
    char id[32], what[160];
    std::snprintf(id, sizeof id, "V10.%s.%02d", tag[mode], o);
    std::snprintf(what, sizeof what, "%s %s", op_name[o], desc[mode]);
    Res r = prepare(op);
    begin(id, what);
    rec("beginCapture", cuStreamBeginCapture(s, cm));
    rec("launch(captured)", launch((const void*)touch, 1, 1, s, (unsigned*)scratch, 1u));
    CUresult x;
    if (mode == 3) {
      std::thread t([&] {
        cuCtxSetCurrent(env.ctx);
        x = do_op(op, r);
      });
      t.join();
    } else {
      x = do_op(op, r);
    }
    rec("op", x);
    CUstreamCaptureStatus st;
    cuStreamIsCapturing(s, &st);
    obs("capture %s", status_name(st));
    rec("launch(captured after)", launch((const void*)touch, 1, 1, s, (unsigned*)scratch, 2u));
    CUgraph g = nullptr;
    rec("endCapture", cuStreamEndCapture(s, &g));
    size_t n = 0;
    if (g) cuGraphGetNodes(g, nullptr, &n);
    obs("graph %s, %zu nodes", g ? "returned" : "NULL", n);
    if (g) cuGraphDestroy(g);
    end();
    cleanup(r);
  }
  cuMemFree(scratch);
}
void v10g() { capture_matrix(0); }
void v10t() { capture_matrix(1); }
void v10r() { capture_matrix(2); }
void v10x() { capture_matrix(3); }

// A capture that only records kernels over VMM memory, while another thread grows the pool
// (map + set access from another thread in RELAXED own mode): what graphcap must not rely on.
void v11() {
  begin("V11", "cuMemMap/cuMemSetAccess from a thread whose own mode is RELAXED, during a GLOBAL capture");
  CUdeviceptr va = 0, scratch = 0;
  CUmemGenericAllocationHandle h = 0;
  cuMemAlloc(&scratch, 4096);
  cuMemAddressReserve(&va, G, 0, 0, 0);
  create(&h, G);
  rec("beginCapture", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  launch((const void*)touch, 1, 1, s, (unsigned*)scratch, 1u);
  CUresult a = CUDA_SUCCESS, b = CUDA_SUCCESS;
  std::thread t([&] {
    cuCtxSetCurrent(env.ctx);
    CUstreamCaptureMode mm = CU_STREAM_CAPTURE_MODE_RELAXED;
    cuThreadExchangeStreamCaptureMode(&mm);
    a = cuMemMap(va, G, 0, h, 0);
    b = set_rw(va, G);
  });
  t.join();
  rec("map", a);
  rec("setAccess", b);
  CUstreamCaptureStatus st;
  cuStreamIsCapturing(s, &st);
  obs("capture %s", status_name(st));
  end_capture_dropping(s);
  cuMemUnmap(va, G);
  cuMemRelease(h);
  cuMemAddressFree(va, G);
  end();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Case> cases = {{"V00", v00},   {"V01", v01},   {"V02", v02},   {"V03", v03},
                             {"V04", v04},   {"V05", v05},   {"V06", v06},   {"V06b", v06b},
                             {"V07", v07},   {"V07b", v07b}, {"V08", v08},   {"V09", v09},
                             {"V10G", v10g}, {"V10T", v10t}, {"V10R", v10r}, {"V10X", v10x},
                             {"V11", v11}};
  for (Case& c : cases) c.timeout_s = 30;
  return run(argc, argv, cases, setup);
}
