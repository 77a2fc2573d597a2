// quickstart: graphcap in one file. Two kernels written once (kernels.cu), a step recorded into a
// graph and replayed with a per-replay parameter, a GraphCache over two sizes, a refused
// recording explained. Exit status 0 when every result is right. The fake driver by default;
// --driver=cuda on a GPU (a GRAPHCAP_GPU build, which embeds the kernels' fatbin).
#include <cstdio>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <graphcap/fake/fake_driver.h>
#include <graphcap/graphcap.h>
#if QUICKSTART_CUDA_KERNELS
#include <graphcap/embedded/quickstart_kernels.h>
#endif

using namespace graphcap;

int main(int argc, char** argv) {
  const bool on_gpu = argc > 1 && std::string_view(argv[1]) == "--driver=cuda";
  fake::FakeDriver fake;                  // a simulated H200, strict about every memory access
  fake::register_compiled_kernels(fake);  // every GRAPHCAP_KERNEL linked in: scale and add
  std::vector<std::byte> image = fake::compiled_kernels_image();
  std::unique_ptr<DriverApi> cuda;
  if (on_gpu) {
#if QUICKSTART_CUDA_KERNELS
    cuda = load_cuda_driver().value();  // libcuda, loaded at run time
    image.assign(embedded::quickstart_kernels().begin(), embedded::quickstart_kernels().end());
#else
    std::fprintf(stderr, "quickstart: built without GRAPHCAP_GPU: no CUDA kernels\n");
    return 1;
#endif
  }
  DriverApi& driver = cuda ? *cuda : static_cast<DriverApi&>(fake);
  bool ok = true;
  auto expect = [&](bool good, const char* what) {
    std::printf("%s: %s\n", good ? "ok" : "WRONG", what);
    ok = ok && good;
  };

  // [README]
  std::unique_ptr<Device> device = Device::open(driver).value();
  Stream& s = device->stream();
  Module module = device->load_module(image).value();
  Kernel scale = module.kernel("scale").value();
  Kernel add = module.kernel("add").value();

  const unsigned n = 1024;
  const LaunchDims dims{{(n + 255) / 256, 1, 1}, {256, 1, 1}};
  std::vector<float> host(n, 1.5f);
  Buffer x = device->upload(std::as_bytes(std::span(host)), s).value();
  Buffer y = device->alloc(n * sizeof(float), s).value();
  Param<float> a = device->param(2.0f);  // a kernel argument each replay may change

  // The step: y = a * x + x. record() runs it once eagerly, then records it.
  auto step = [&]() -> Result<void> {
    if (Result<void> r = device->launch(s, scale, dims, {Arg::in(x), Arg::out(y), Arg::param(a),
                                                          Arg::value(n)});
        !r) {
      return r;
    }
    return device->launch(s, add, dims, {Arg::in(x), Arg::inout(y), Arg::value(n)});
  };
  Graph graph = device->record(s, step).value();
  for (int i = 0; i < 100; ++i) graph.replay().value();  // one cuGraphLaunch each
  graph.set(a, 3.0f).value();                            // from the next replay on
  graph.replay().value();
  std::vector<std::byte> bytes = device->read(y, s).value();  // waits; surfaces queued errors
  expect(reinterpret_cast<const float*>(bytes.data())[n - 1] == 6.0f, "y = 3 * 1.5 + 1.5");

  // One graph per size, recorded on first use, replayed after.
  GraphCache<unsigned> cache(*device, s);
  for (unsigned size : {256u, 1024u, 256u, 1024u}) {
    cache.run(size, [&] {
      return device->launch(s, add, dims, {Arg::in(x), Arg::inout(y), Arg::value(size)});
    }).value();
  }
  expect(cache.stats().captures == 2 && cache.stats().hits == 2, "2 recordings, 2 replays");

  // A recording that could not replay correctly is refused, saying why.
  Result<Graph> refused = device->record(s, [&]() -> Result<void> {
    if (Result<void> r = step(); !r) return r;
    return device->sync(s);  // a wait inside a recording would invalidate it
  });
  std::printf("refused: %s\n", to_string(refused.error()).c_str());
  expect(refused.error().code() == Errc::graph_state, "the sync was refused");
  // [README]

  expect(fake.violations().empty(), "no memory-safety violation on the fake");
  return ok ? 0 : 1;
}
