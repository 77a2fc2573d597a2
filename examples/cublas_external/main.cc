// cuBLAS inside a graphcap recording. cuBLAS enqueues its kernels on graphcap's stream
// (Stream::native_handle()), so CUDA records them; Device::record_external tells graphcap which
// buffers that work reads and writes, so they are checked, pinned by the graph and claimed if the
// recording is refused, exactly like a graphcap launch's. The pattern:
//
//   device.record_external(s, {Arg::in(a), Arg::in(b), Arg::out(c), Arg::inout(workspace)});
//   cublasSgemm(handle, ...);             // on s.native_handle(), right after the declaration
//   if it failed: device.record_external(s, {Arg::out(c)}, Error(...));   // c carries it
//
// cuBLAS may allocate a workspace on first use; inside a recording that allocation would become
// a memory node, so the example gives it one (cublasSetWorkspace) from graphcap's pool.
#include <cuda.h>  // before graphcap's headers: they then use cuda.h's types

#include <cublas_v2.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include <graphcap/graphcap.h>

namespace {

using graphcap::Arg;
using graphcap::Buffer;
using graphcap::Device;
using graphcap::Error;
using graphcap::Errc;
using graphcap::Result;

constexpr int kN = 256;                          // C (n x n) = A (n x n) * B (n x n)
constexpr std::size_t kWorkspaceBytes = 4 << 20;  // cuBLAS's own scratch

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "cublas_external: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T check(Result<T> result, const char* what) {
  if (!result) fail(std::string(what) + ": " + result.error().message());
  return std::move(*result);
}
void check(Result<void> result, const char* what) {
  if (!result) fail(std::string(what) + ": " + result.error().message());
}

std::span<const std::byte> bytes_of(const std::vector<float>& v) {
  return std::as_bytes(std::span(v));
}

std::vector<float> to_floats(const std::vector<std::byte>& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// Column-major C = A * B on the host.
std::vector<float> reference(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> c(kN * kN, 0.0f);
  for (int j = 0; j < kN; ++j)
    for (int k = 0; k < kN; ++k)
      for (int i = 0; i < kN; ++i) c[i + j * kN] += a[i + k * kN] * b[k + j * kN];
  return c;
}

double max_error(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(double(got[i]) - double(want[i])));
  }
  return worst;
}

}  // namespace

int main() {
  std::unique_ptr<graphcap::DriverApi> cuda = check(graphcap::load_cuda_driver(), "loading libcuda");
  std::unique_ptr<Device> device = check(Device::open(*cuda), "opening the device");
  graphcap::Stream& s = device->stream();

  std::vector<float> a(kN * kN), b(kN * kN);
  for (int i = 0; i < kN * kN; ++i) {
    a[i] = float((i * 7) % 13) / 13.0f;
    b[i] = float((i * 5) % 11) / 11.0f;
  }
  Buffer da = check(device->upload(bytes_of(a), s), "upload A");
  Buffer db = check(device->upload(bytes_of(b), s), "upload B");
  Buffer dc = check(device->alloc(kN * kN * sizeof(float), s), "alloc C");
  Buffer workspace = check(device->alloc(kWorkspaceBytes, s), "alloc the cuBLAS workspace");

  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) fail("cublasCreate failed");
  cublasSetStream(handle, reinterpret_cast<cudaStream_t>(s.native_handle()));
  cublasSetWorkspace(handle, reinterpret_cast<void*>(workspace.native_handle()), kWorkspaceBytes);

  // One step: C = A * B through cuBLAS, its buffers declared first.
  auto step = [&]() -> Result<void> {
    if (Result<void> declared = device->record_external(
            s, {Arg::in(da), Arg::in(db), Arg::out(dc), Arg::inout(workspace)});
        !declared) {
      return declared;  // an input carries a failure: the work is not issued
    }
    const float one = 1.0f, zero = 0.0f;
    const cublasStatus_t status = cublasSgemm(
        handle, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one,
        reinterpret_cast<const float*>(da.native_handle()), kN,
        reinterpret_cast<const float*>(db.native_handle()), kN, &zero,
        reinterpret_cast<float*>(dc.native_handle()), kN);
    if (status != CUBLAS_STATUS_SUCCESS) {
      return device->record_external(
          s, {Arg::out(dc)},
          Error(Errc::driver, std::string("cublasSgemm: ") + cublasGetStatusName(status)));
    }
    return {};
  };

  graphcap::Graph graph = check(device->record(s, step), "record");  // warm-up, then recorded

  const std::vector<float> want = reference(a, b);
  const double warm_error = max_error(to_floats(check(device->read(dc, s), "read C")), want);

  // Replay against new inputs: the graph reads A and B where they live.
  for (float& x : a) x = 1.0f - x;
  check(device->write(da, bytes_of(a), s), "write A");
  check(device->write(dc, bytes_of(std::vector<float>(kN * kN, -1.0f)), s), "clear C");
  check(graph.replay(), "replay");
  const std::vector<float> want_after = reference(a, b);
  const double replay_error = max_error(to_floats(check(device->read(dc, s), "read C")), want_after);

  const graphcap::GraphReport& report = graph.report();
  std::printf("cublas_external: %dx%d SGEMM recorded through cuBLAS on graphcap's stream\n", kN, kN);
  std::printf("  graph nodes          %zu (%zu kernel), counted from the graph: %s\n",
              report.node_count, report.nodes(graphcap::CU_GRAPH_NODE_TYPE_KERNEL),
              report.external_work ? "yes" : "no");
  std::printf("  pinned               %zu slices, %zu bytes\n", report.pinned_slices,
              report.pinned_bytes);
  std::printf("  max |error|          warm-up %.2e, replay with new A %.2e\n", warm_error,
              replay_error);
  graph = graphcap::Graph();
  cublasDestroy(handle);
  const bool ok = warm_error < 1e-3 && replay_error < 1e-3 && report.external_work &&
                  report.pinned_slices == 4;
  std::printf("%s\n", ok ? "results match the host reference" : "MISMATCH");
  return ok ? 0 : 1;
}
