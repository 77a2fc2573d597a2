// serving_loop: an inference server's step loop in miniature. Requests arrive with batch sizes
// from 1 to 96; each is served by the graph of its batch bucket (1, 2, 4, ..., 64), recorded on
// the bucket's first request (lazy capture) and replayed on later ones, through a GraphCache
// whose graphs share one pool. A request above the largest bucket runs eagerly. Every bucket's
// final state, and the eager path's, is checked against the same requests computed on the host.
//
//   serving_loop [--driver=fake|cuda] [--requests=N] [--width=N] [--layers=N] [--max-graphs=N]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <graphcap/graph_cache.h>
#include <graphcap/graphcap.h>

#include "decode_kernels.h"
#include "example_support.h"

namespace {

using graphcap::Arg;
using graphcap::Buffer;
using graphcap::Device;
using graphcap::Kernel;
using graphcap::LaunchDims;
using graphcap::Result;
using Clock = std::chrono::steady_clock;

struct Options {
  bool cuda = false;
  std::uint32_t requests = 400;
  std::uint32_t width = 64;  // elements of state per sequence
  std::uint32_t layers = 4;
  std::size_t max_graphs = 0;
};
constexpr std::uint32_t kLargestBucket = 64;
constexpr std::uint32_t kLargestBatch = 96;

using example::check;
using example::fail;

bool parse(std::string_view arg, std::string_view name, std::uint32_t& out) {
  if (!arg.starts_with(name)) return false;
  out = static_cast<std::uint32_t>(std::strtoul(std::string(arg.substr(name.size())).c_str(),
                                                nullptr, 10));
  if (out == 0) fail("bad value in '" + std::string(arg) + "'");
  return true;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    std::uint32_t max_graphs = 0;
    if (arg == "--driver=fake") {
      o.cuda = false;
    } else if (arg == "--driver=cuda") {
      o.cuda = true;
    } else if (parse(arg, "--requests=", o.requests) || parse(arg, "--width=", o.width) ||
               parse(arg, "--layers=", o.layers)) {
    } else if (parse(arg, "--max-graphs=", max_graphs)) {
      o.max_graphs = max_graphs;
    } else {
      fail("usage: serving_loop [--driver=fake|cuda] [--requests=N] [--width=N] [--layers=N] "
           "[--max-graphs=N]");
    }
  }
  return o;
}

// Request r's batch size: deterministic, spread over 1..kLargestBatch, small ones most common.
std::uint32_t batch_of(std::uint32_t r) {
  std::uint32_t x = 0x9E3779B9u * (r + 1);
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  const std::uint32_t roll = x % 100;
  if (roll < 50) return 1 + x % 8;
  if (roll < 90) return 1 + x % 64;
  return 1 + x % kLargestBatch;
}
std::uint32_t bucket_of(std::uint32_t batch) {
  std::uint32_t bucket = 1;
  while (bucket < batch) bucket *= 2;
  return bucket;
}
std::vector<std::uint32_t> token_of(std::uint32_t r, std::uint32_t batch, std::uint32_t width,
                                    std::uint32_t capacity) {
  std::vector<std::uint32_t> token(std::size_t{capacity} * width, 0);  // padding rows: 0
  std::uint32_t x = 0xC0FFEEu ^ (r * 0x01000193u);
  for (std::size_t i = 0; i < std::size_t{batch} * width; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    token[i] = x;
  }
  return token;
}
std::uint32_t salt_of(std::uint32_t layer) { return 0xA5A5A5A5u + layer * 0x9E3779B9u; }
std::span<const std::byte> bytes_of(const std::vector<std::uint32_t>& v) {
  return std::as_bytes(std::span<const std::uint32_t>(v));
}

// One step over n elements, on the host: what the kernels compute.
void host_step(std::vector<std::uint32_t>& state, const std::vector<std::uint32_t>& token,
               std::uint32_t layers) {
  const std::size_t n = state.size();
  std::vector<std::uint32_t> h(n), s(n), other(n);
  for (std::size_t i = 0; i < n; ++i) h[i] = decode::embed_one(token[i], state[i]);
  for (std::uint32_t layer = 0; layer < layers; ++layer) {
    for (std::size_t i = 0; i < n; ++i) s[i] = decode::mix_one(h[i], h[(i + 1) % n], salt_of(layer));
    for (std::size_t i = 0; i < n; ++i) other[i] = decode::axpy_one(3, s[i], h[i]);
    std::swap(h, other);
  }
  state = h;
}

// The device side of one batch shape: its state and token buffers, and its step's launches.
class Lane {
 public:
  Lane(Device& device, const graphcap::Module& module, std::uint32_t elements, std::uint32_t layers)
      : device_(device), n_(elements), layers_(layers) {
    embed_ = check(module.kernel("embed"), "kernel embed");
    mix_ = check(module.kernel("mix"), "kernel mix");
    axpy_ = check(module.kernel("axpy"), "kernel axpy");
    copy_ = check(module.kernel("copy"), "kernel copy");
    dims_ = LaunchDims{graphcap::Dim3{std::min<unsigned>((n_ + 255) / 256, 1024), 1, 1},
                       graphcap::Dim3{256, 1, 1}, 0};
    state_ = check(device.upload(bytes_of(std::vector<std::uint32_t>(n_, 1)), device.stream()),
                   "lane state");
    token_ = check(device.alloc(bytes(), device.stream()), "lane token");
  }
  std::size_t bytes() const { return std::size_t{n_} * sizeof(std::uint32_t); }
  void write_token(const std::vector<std::uint32_t>& token) {
    check(device_.write(token_, bytes_of(token), device_.stream()), "writing a token");
  }
  // The step: its intermediates come from the stream's pool (in a recording: the graph pool's).
  Result<void> step() {
    graphcap::Stream& s = device_.stream();
    Result<Buffer> h = device_.alloc(bytes(), s);
    Result<Buffer> other = device_.alloc(bytes(), s);
    Result<Buffer> scratch = device_.alloc(bytes(), s);
    if (!h || !other || !scratch) return !h ? h.error() : !other ? other.error() : scratch.error();
    const std::uint32_t n = n_;
    if (auto r = device_.launch(s, embed_, dims_, {Arg::in(token_), Arg::in(state_), Arg::out(*h), Arg::value(n)}); !r) return r;
    for (std::uint32_t layer = 0; layer < layers_; ++layer) {
      if (auto r = device_.launch(s, mix_, dims_, {Arg::in(*h), Arg::out(*scratch), Arg::value(salt_of(layer)), Arg::value(n)}); !r) return r;
      if (auto r = device_.launch(s, axpy_, dims_, {Arg::in(*scratch), Arg::in(*h), Arg::out(*other), Arg::value(3u), Arg::value(n)}); !r) return r;
      std::swap(*h, *other);
    }
    return device_.launch(s, copy_, dims_, {Arg::in(*h), Arg::out(state_), Arg::value(n)});
  }
  std::vector<std::uint32_t> read_state() {
    std::vector<std::byte> bytes = check(device_.read(state_, device_.stream()), "reading a state");
    std::vector<std::uint32_t> words(n_);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    return words;
  }

 private:
  Device& device_;
  std::uint32_t n_;
  std::uint32_t layers_;
  Kernel embed_, mix_, axpy_, copy_;
  LaunchDims dims_;
  Buffer state_, token_;
};

int serve(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  example::DecodeDriver decode_driver(o.cuda, "serving_loop");
  graphcap::DriverApi* driver = &decode_driver.api();
  std::unique_ptr<Device> device = check(Device::open(*driver), "opening the device");
  const graphcap::Module module =
      check(device->load_module(decode_driver.image()), "loading the kernels");

  graphcap::GraphCacheOptions cache_options;
  cache_options.max_graphs = o.max_graphs;
  graphcap::GraphCache<std::uint32_t> cache(*device, device->stream(), cache_options);
  std::map<std::uint32_t, std::unique_ptr<Lane>> lanes;  // by bucket; 0: the eager lane
  std::map<std::uint32_t, std::vector<std::uint32_t>> host;  // the same, on the host
  std::uint32_t eager_requests = 0;

  const Clock::time_point start = Clock::now();
  double first_response_us = 0;
  for (std::uint32_t r = 0; r < o.requests; ++r) {
    const std::uint32_t batch = batch_of(r);
    const bool eager = batch > kLargestBucket;
    const std::uint32_t key = eager ? 0 : bucket_of(batch);
    const std::uint32_t rows = eager ? kLargestBatch : key;
    auto& lane = lanes[key];
    if (!lane) {
      lane = std::make_unique<Lane>(*device, module, rows * o.width, o.layers);
      host[key] = std::vector<std::uint32_t>(std::size_t{rows} * o.width, 1);
    }
    const std::vector<std::uint32_t> token = token_of(r, batch, o.width, rows);
    lane->write_token(token);
    if (eager) {
      check(lane->step(), "an eager step");
      ++eager_requests;
    } else {
      check(cache.run(key, [&] { return lane->step(); }), "a cached step");
    }
    host_step(host[key], token, o.layers);
    if (r == 0) {
      check(device->sync(device->stream()), "sync");
      first_response_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    }
  }
  check(device->sync(device->stream()), "sync");
  const double total_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();

  std::size_t mismatches = 0;
  for (auto& [key, lane] : lanes) {
    if (lane->read_state() != host[key]) {
      ++mismatches;
      std::printf("MISMATCH in the %s lane\n", key == 0 ? "eager" : std::to_string(key).c_str());
    }
  }
  const graphcap::GraphCacheStats stats = cache.stats();
  std::printf("serving_loop on the %s driver: %u requests (batch 1..%u), %u elements per "
              "sequence, %u layers\n", driver->name(), o.requests, kLargestBatch, o.width, o.layers);
  std::printf("  buckets recorded   %zu (lazily, on first use)   eager requests (batch > %u) %u\n",
              stats.captures, kLargestBucket, eager_requests);
  std::printf("  cache              hits %zu  captures %zu  updates %zu  fallbacks %zu  "
              "evictions %zu\n", stats.hits, stats.captures, stats.updates, stats.fallbacks,
              stats.evictions);
  std::printf("  graph memory       pinned %zu bytes; the shared pool holds %zu bytes\n",
              stats.bytes, cache.pool() != nullptr ? cache.pool()->bytes_held() : 0);
  std::printf("  time               first response %.1f us, all %.1f us (%.2f us per request)\n",
              first_response_us, total_us, total_us / o.requests);
  if (mismatches != 0) return 1;
  std::printf("every lane's state equals the host reference\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return example::run_main("serving_loop", [&] { return serve(argc, argv); });
}
