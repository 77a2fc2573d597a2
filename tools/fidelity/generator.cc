// How each entry point appears in generated programs: one generate_entry per entry point (the
// table below is made from entry_points.def, so a new entry point does not link until it has one),
// with a weight: how often it is tried. Most draw their arguments from the live handles; some
// build the constructs CUDA's capture rules are about (a capture joined back from a forked stream,
// a conditional node with its bodies, a capture into an existing graph). Refusals CUDA defines
// are generated on purpose (a second end, an unsafe call in a capture, a wrong mode, a
// misaligned 32-bit fill, a relaunch of a graph that allocates); what is not defined never is
// (the harness skips it if a different answer makes it so).
#include "generator.h"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <graphcap/driver/entry_traits.h>

#include "harness.h"

namespace graphcap::fidelity {
namespace {

class Gen {
 public:
  Gen(Harness& harness, std::uint64_t seed, Trace& trace) : h(harness), rng(seed), trace_(trace) {}

  Harness& h;
  std::mt19937_64 rng;

  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); }
  unsigned range(unsigned lo, unsigned hi) {
    return std::uniform_int_distribution<unsigned>(lo, hi)(rng);
  }
  template <class T>
  const T& pick(const std::vector<T>& from) {
    return from[below(from.size())];
  }
  // Mostly t0; the rest spread over t1-t3, so that captures, their ends and unsafe calls meet
  // on up to four threads.
  int thread(double main = 0.7) {
    return chance(main) ? 0 : 1 + static_cast<int>(below(kThreads - 1));
  }
  std::string fresh(const char* prefix) { return prefix + std::to_string(++counters_[prefix]); }

  // Runs a call on the model and keeps it, unless the harness skipped it (a call that would
  // not be defined, or that needs a handle that does not exist): a skip changes nothing, so the
  // program is the same without it.
  const Observation& emit(int thread, const std::string& entry, std::vector<std::string> args) {
    Call call{thread, entry, std::move(args)};
    last_ = h.run(call);
    if (last_.skipped) return last_;
    trace_.observations.push_back(last_);
    trace_.calls.push_back(std::move(call));
    return trace_.observations.back();
  }

  std::vector<std::string> streams() { return h.live(Kind::stream); }
  std::vector<std::string> streams_where(bool capturing) {
    std::vector<std::string> out;
    for (const std::string& s : streams()) {
      if (h.capturing(s) == capturing && !h.body_capture(s)) out.push_back(s);
    }
    return out;
  }
  std::optional<std::string> stream() {
    std::vector<std::string> all;
    for (const std::string& s : streams()) {
      if (!h.body_capture(s)) all.push_back(s);
    }
    if (all.empty()) return std::nullopt;
    // Prefer a capturing stream half the time: that is where the rules are.
    std::vector<std::string> capturing = streams_where(true);
    if (!capturing.empty() && chance(0.5)) return pick(capturing);
    return pick(all);
  }
  // Device buffers the program owns (not a graph's own allocations unless `graph_allocs`).
  std::vector<std::string> buffers(bool graph_allocs = false) {
    std::vector<std::string> out;
    for (const std::string& b : h.live(Kind::buffer)) {
      if (graph_allocs || !h.find(b)->graph_alloc) out.push_back(b);
    }
    return out;
  }
  std::size_t bytes(const std::string& symbol) { return h.find(symbol)->bytes; }
  std::vector<std::string> functions(const std::string& kernel = "") {
    std::vector<std::string> out;
    for (const std::string& f : h.live(Kind::function)) {
      const std::string& k = h.find(f)->kernel;
      if (k == "set_condition" || k == "countdown") continue;
      if (kernel.empty() || k == kernel) out.push_back(f);
    }
    return out;
  }
  std::vector<std::string> graphs(bool bodies = false) {
    std::vector<std::string> out;
    for (const std::string& g : h.live(Kind::graph)) {
      const Symbol* s = h.find(g);
      if (!bodies && !s->owner.empty()) continue;
      out.push_back(g);
    }
    return out;
  }
  // Indices of a graph's nodes (of `type`, or all), asked of the model.
  std::vector<std::size_t> node_indices(const std::string& graph, int type = -1) {
    std::vector<CUgraphNode> nodes;
    std::vector<std::size_t> out;
    try {
      h.graph_nodes(graph, &nodes);
    } catch (const Skip&) {
      return out;
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      CUgraphNodeType t{};
      if (type < 0 || (h.driver().cuGraphNodeGetType(nodes[i], &t) == CUDA_SUCCESS &&
                       static_cast<int>(t) == type)) {
        out.push_back(i);
      }
    }
    return out;
  }
  std::string mode() {
    const double r = std::uniform_real_distribution<double>(0, 1)(rng);
    return r < 0.4 ? "GLOBAL" : r < 0.7 ? "THREAD_LOCAL" : r < 0.97 ? "RELAXED" : "3";
  }
  // A place inside buffer `b` for `length` bytes, 4-byte aligned: "b3" or "b3+64".
  std::string place(const std::string& b, std::size_t length) {
    const std::size_t size = bytes(b);
    if (length >= size) return b;
    const std::size_t offset = (below((size - length) / 4 + 1)) * 4;
    return offset == 0 ? b : b + "+" + std::to_string(offset);
  }
  // The kernel arguments of a launch of `function` (n elements that fit).
  std::vector<std::string> kernel_args(const std::string& function) {
    const std::string& kernel = h.find(function)->kernel;
    std::vector<std::string> all = buffers();
    if (kernel == "empty") return {};
    if (all.empty()) return {};
    auto n_for = [&](std::initializer_list<std::string> used) {
      std::size_t smallest = SIZE_MAX;
      for (const std::string& b : used) smallest = std::min(smallest, bytes(b) / 4);
      return static_cast<unsigned>(chance(0.7) ? smallest : range(1, static_cast<unsigned>(smallest)));
    };
    if (kernel == "add_one" || kernel == "copy") {
      const std::string src = pick(all), dst = pick(all);
      return {src, dst, std::to_string(n_for({src, dst}))};
    }
    if (kernel == "pdl_add_one") {  // waits for its predecessor but now and then
      const std::string src = pick(all), dst = pick(all);
      return {src, dst, std::to_string(n_for({src, dst})), chance(0.8) ? "1" : "0"};
    }
    if (kernel == "fill") {
      const std::string dst = pick(all);
      return {dst, std::to_string(range(0, 1000)), std::to_string(n_for({dst}))};
    }
    if (kernel == "axpy") {
      const std::string x = pick(all), y = pick(all), out = pick(all);
      return {x, y, out, std::to_string(range(0, 9)), std::to_string(n_for({x, y, out}))};
    }
    if (kernel == "mixed") {
      const std::string out = pick(all);
      return {std::to_string(range(0, 100)), std::to_string(range(0, 1000)),
              std::to_string(range(0, 300)), out, std::to_string(n_for({out}))};
    }
    if (kernel == "affine") {
      const std::string out = pick(all);
      return {std::to_string(range(0, 9)), std::to_string(range(0, 1000)),
              std::to_string(n_for({out})), out};
    }
    return {};
  }
  // A launch shape: valid nearly always, sometimes past a limit (a refusal CUDA defines).
  std::vector<std::string> shape() {
    if (chance(0.04)) {
      switch (below(3)) {
        case 0: return {"0", "64", "0"};
        case 1: return {"2", "1025", "0"};
        default: return {"1", "64", "49153"};
      }
    }
    const unsigned blocks[] = {32, 64, 128, 256};
    return {std::to_string(range(1, 4)), std::to_string(blocks[below(4)]), "0"};
  }

  std::map<std::string, std::size_t> counters_;
  std::map<int, std::string> origins;  // capture number -> the stream it began on

 private:
  Trace& trace_;
  Observation last_;
};

// The capture number of a stream's observed status "A3/1", 0 if not active.
int capture_number(const Harness& h, const std::string& stream) {
  const Symbol* s = h.find(stream);
  if (s == nullptr || s->status.empty() || s->status[0] != 'A') return 0;
  return std::stoi(s->status.substr(1, s->status.find('/') - 1));
}

template <class Entry>
bool generate_entry(Gen& g);

#define GENERATE(name) \
  template <>          \
  bool generate_entry<entry::name>(Gen & g)

GENERATE(cuInit) {
  g.emit(g.thread(), "cuInit", {g.chance(0.8) ? "0" : "1"});
  return true;
}
GENERATE(cuDriverGetVersion) {
  g.emit(g.thread(), "cuDriverGetVersion", {});
  return true;
}
GENERATE(cuDeviceGetCount) {
  g.emit(g.thread(), "cuDeviceGetCount", {});
  return true;
}
GENERATE(cuDeviceGet) {
  g.emit(g.thread(), "cuDeviceGet", {g.chance(0.8) ? "0" : "1"});
  return true;
}
GENERATE(cuDeviceGetName) {
  g.emit(g.thread(), "cuDeviceGetName", {"64", g.chance(0.85) ? "0" : "3"});
  return true;
}
GENERATE(cuDeviceGetAttribute) {
  const int attributes[] = {1, 2, 3, 4, 5, 6, 7, 8, 16, 75, 76, 97};
  g.emit(g.thread(), "cuDeviceGetAttribute",
         {std::to_string(attributes[g.below(12)]), g.chance(0.9) ? "0" : "5"});
  return true;
}
GENERATE(cuDevicePrimaryCtxRetain) {
  g.emit(g.thread(), "cuDevicePrimaryCtxRetain", {g.chance(0.85) ? "0" : "4"});
  return true;
}
GENERATE(cuDevicePrimaryCtxRelease) {
  if (g.h.retained() == 0 && g.chance(0.7)) return false;
  g.emit(g.thread(), "cuDevicePrimaryCtxRelease", {g.h.retained() > 0 ? "0" : "4"});
  return true;
}
GENERATE(cuCtxSetCurrent) {
  const int thread = g.thread();
  if (g.chance(0.6)) {
    g.emit(thread, "cuCtxSetCurrent", {"primary"});
    return true;
  }
  // A thread without a context, for a few calls: they answer CUDA_ERROR_INVALID_CONTEXT.
  g.emit(thread, "cuCtxSetCurrent", {"null"});
  if (auto s = g.stream()) g.emit(thread, "cuStreamQuery", {*s});
  g.emit(thread, "cuCtxGetCurrent", {});
  g.emit(thread, "cuCtxSetCurrent", {"primary"});
  return true;
}
GENERATE(cuCtxGetCurrent) {
  g.emit(g.thread(), "cuCtxGetCurrent", {});
  return true;
}
GENERATE(cuCtxSynchronize) {
  g.emit(g.thread(), "cuCtxSynchronize", {});
  return true;
}
GENERATE(cuStreamCreate) {
  if (g.streams().size() >= 5) return false;
  const double r = std::uniform_real_distribution<double>(0, 1)(g.rng);
  g.emit(g.thread(), "cuStreamCreate", {g.fresh("s"), r < 0.5 ? "1" : r < 0.97 ? "0" : "2"});
  return true;
}
GENERATE(cuStreamDestroy) {
  auto s = g.stream();
  if (!s || g.streams().size() <= 2) return false;
  g.emit(g.thread(), "cuStreamDestroy", {*s});
  return true;
}
GENERATE(cuStreamSynchronize) {
  auto s = g.stream();
  if (!s) return false;
  g.emit(g.thread(), "cuStreamSynchronize", {*s});
  return true;
}
GENERATE(cuStreamQuery) {
  auto s = g.stream();
  if (!s) return false;
  g.emit(g.thread(), "cuStreamQuery", {*s});
  return true;
}
GENERATE(cuStreamWaitEvent) {
  auto s = g.stream();
  std::vector<std::string> events = g.h.live(Kind::event);
  if (!s || events.empty()) return false;
  const double r = std::uniform_real_distribution<double>(0, 1)(g.rng);
  g.emit(0, "cuStreamWaitEvent", {*s, g.pick(events), r < 0.85 ? "0" : r < 0.97 ? "1" : "2"});
  return true;
}
GENERATE(cuStreamBeginCapture) {
  auto s = g.stream();
  if (!s) return false;
  const int thread = g.thread(0.85);
  const Observation& o = g.emit(thread, "cuStreamBeginCapture", {*s, g.mode()});
  if (!o.skipped && o.code == CUDA_SUCCESS) g.origins[capture_number(g.h, *s)] = *s;
  return true;
}
GENERATE(cuStreamEndCapture) {
  std::vector<std::string> capturing = g.streams_where(true);
  std::string s;
  if (!capturing.empty() && g.chance(0.9)) {
    s = g.pick(capturing);
    // Usually end on the origin, after joining every other stream of the capture back into it.
    const int number = capture_number(g.h, s);
    if (number != 0 && g.origins.count(number) != 0 && g.chance(0.8)) {
      const std::string origin = g.origins[number];
      std::vector<std::string> events = g.h.live(Kind::event);
      if (g.chance(0.85) && !events.empty()) {
        for (const std::string& member : g.streams()) {
          if (member != origin && capture_number(g.h, member) == number) {
            const std::string e = g.pick(events);
            g.emit(0, "cuEventRecord", {e, member});
            g.emit(0, "cuStreamWaitEvent", {origin, e, "0"});
          }
        }
      }
      s = origin;
    }
  } else {
    auto any = g.stream();
    if (!any || (capturing.empty() && g.chance(0.7))) return false;
    s = *any;  // a stream that is not capturing: 401
  }
  const int thread = g.thread(0.9);
  g.emit(thread, "cuStreamEndCapture", {s, g.fresh("g")});
  return true;
}
GENERATE(cuStreamIsCapturing) {
  auto s = g.stream();
  if (!s) return false;
  g.emit(g.thread(), "cuStreamIsCapturing", {*s});
  return true;
}
GENERATE(cuStreamGetCaptureInfo) {
  auto s = g.stream();
  if (!s) return false;
  std::vector<std::string> args = {*s};
  if (g.h.capturing(*s) && g.chance(0.5)) args.push_back(g.fresh("g"));
  g.emit(g.thread(), "cuStreamGetCaptureInfo", args);
  // The graph a capture is building: inspect it, or try what CUDA refuses on it.
  if (args.size() == 2 && g.h.find(args[1]) != nullptr && g.h.find(args[1])->live) {
    switch (g.below(3)) {
      case 0: g.emit(0, "cuGraphGetNodes", {args[1], "count"}); break;
      case 1: g.emit(0, "cuGraphDestroy", {args[1]}); break;
      default: g.emit(g.thread(), "cuGraphInstantiateWithFlags", {g.fresh("x"), args[1], "0"});
    }
  }
  return true;
}
GENERATE(cuThreadExchangeStreamCaptureMode) {
  // Never a value that is no mode: the H200 takes it (0), and what it then allows is unknown.
  std::string mode = g.mode();
  if (mode == "3") mode = "RELAXED";
  g.emit(g.thread(), "cuThreadExchangeStreamCaptureMode", {mode});
  return true;
}
GENERATE(cuEventCreate) {
  if (g.h.live(Kind::event).size() >= 5) return false;
  const char* flags[] = {"0", "2", "1", "3", "4", "6", "8"};
  g.emit(g.thread(), "cuEventCreate", {g.fresh("e"), flags[g.below(g.chance(0.9) ? 3 : 7)]});
  return true;
}
GENERATE(cuEventDestroy) {
  std::vector<std::string> events = g.h.live(Kind::event);
  if (events.size() <= 1) return false;
  g.emit(g.thread(), "cuEventDestroy", {g.pick(events)});
  return true;
}
GENERATE(cuEventRecord) {
  auto s = g.stream();
  std::vector<std::string> events = g.h.live(Kind::event);
  if (!s || events.empty()) return false;
  const std::string e = g.pick(events);
  g.emit(0, "cuEventRecord", {e, *s});
  // Often a fork: another stream waits on it (and so joins a capture the record was in).
  if (g.chance(0.5)) {
    std::vector<std::string> others;
    for (const std::string& t : g.streams()) {
      if (t != *s && !g.h.body_capture(t)) others.push_back(t);
    }
    if (!others.empty()) g.emit(0, "cuStreamWaitEvent", {g.pick(others), e, "0"});
  }
  return true;
}
GENERATE(cuEventQuery) {
  std::vector<std::string> events = g.h.live(Kind::event);
  if (events.empty()) return false;
  g.emit(g.thread(), "cuEventQuery", {g.pick(events)});
  return true;
}
GENERATE(cuEventSynchronize) {
  std::vector<std::string> events = g.h.live(Kind::event);
  if (events.empty()) return false;
  g.emit(g.thread(), "cuEventSynchronize", {g.pick(events)});
  return true;
}
GENERATE(cuEventElapsedTime) {
  std::vector<std::string> events = g.h.live(Kind::event);
  if (events.empty()) return false;
  g.emit(g.thread(), "cuEventElapsedTime", {g.pick(events), g.pick(events)});
  return true;
}
GENERATE(cuMemGetInfo) {
  g.emit(g.thread(), "cuMemGetInfo", {});
  return true;
}
GENERATE(cuMemAlloc) {
  if (g.buffers().size() >= 6) return false;
  const unsigned sizes[] = {256, 512, 1024, 4096};
  g.emit(g.thread(), "cuMemAlloc", {g.fresh("b"), g.chance(0.97) ? std::to_string(sizes[g.below(4)]) : "0"});
  return true;
}
GENERATE(cuMemFree) {
  std::vector<std::string> all = g.buffers(true);
  if (all.size() <= 2 && g.chance(0.8)) return false;
  if (all.empty() || g.chance(0.1)) {
    g.emit(g.thread(), "cuMemFree", {"0"});
    return true;
  }
  const std::string b = g.pick(all);
  g.emit(g.thread(), "cuMemFree", {g.chance(0.1) ? b + "+16" : b});
  return true;
}
// Virtual memory: ranges of 1-2 granules, physical allocations of one granule (now and then a
// size that is not a whole granule: refused with 1), mapped whole at a range's base.
constexpr unsigned kGranule = 2u << 20;
GENERATE(cuMemGetAllocationGranularity) {
  g.emit(g.thread(), "cuMemGetAllocationGranularity", {g.chance(0.9) ? std::to_string(g.below(2)) : "5"});
  return true;
}
GENERATE(cuMemAddressReserve) {
  if (g.h.live(Kind::vrange).size() >= 3) return false;
  const unsigned bytes = g.chance(0.93) ? kGranule * g.range(1, 2) : kGranule / 2;
  g.emit(g.thread(), "cuMemAddressReserve", {g.fresh("v"), std::to_string(bytes)});
  return true;
}
GENERATE(cuMemAddressFree) {
  std::vector<std::string> ranges = g.h.live(Kind::vrange);
  if (ranges.empty()) return false;
  g.emit(g.thread(), "cuMemAddressFree", {g.pick(ranges)});
  return true;
}
GENERATE(cuMemCreate) {
  if (g.h.live(Kind::vmem).size() >= 3) return false;
  g.emit(g.thread(), "cuMemCreate",
         {g.fresh("m"), std::to_string(g.chance(0.93) ? kGranule : kGranule / 2)});
  return true;
}
GENERATE(cuMemRelease) {
  std::vector<std::string> memory = g.h.live(Kind::vmem);
  if (memory.empty()) return false;
  g.emit(g.thread(), "cuMemRelease", {g.pick(memory)});
  return true;
}
// A reservation and a physical allocation are each in about one program in five: a map makes
// what it lacks first (10,000 programs of 2026-12-04 mapped 16 times in 10,000 programs otherwise).
GENERATE(cuMemMap) {
  if (g.h.live(Kind::vrange).empty()) {
    g.emit(g.thread(), "cuMemAddressReserve", {g.fresh("v"), std::to_string(kGranule)});
  }
  if (g.h.live(Kind::vmem).empty()) {
    g.emit(g.thread(), "cuMemCreate", {g.fresh("m"), std::to_string(kGranule)});
  }
  std::vector<std::string> ranges = g.h.live(Kind::vrange);
  std::vector<std::string> memory = g.h.live(Kind::vmem);
  if (ranges.empty() || memory.empty()) return true;
  g.emit(g.thread(), "cuMemMap", {g.pick(ranges), g.pick(memory)});
  return true;
}
GENERATE(cuMemUnmap) {
  std::vector<std::string> ranges = g.h.live(Kind::vrange);
  if (ranges.empty()) return false;
  g.emit(g.thread(), "cuMemUnmap", {g.pick(ranges)});
  return true;
}
GENERATE(cuMemSetAccess) {
  std::vector<std::string> ranges = g.h.live(Kind::vrange);
  if (ranges.empty()) return false;
  g.emit(g.thread(), "cuMemSetAccess", {g.pick(ranges)});
  return true;
}
GENERATE(cuMemAllocAsync) {
  auto s = g.stream();
  if (!s || g.buffers(true).size() >= 8) return false;
  const unsigned sizes[] = {256, 1024};
  const std::string b = g.fresh("b");
  const Observation& o =
      g.emit(0, "cuMemAllocAsync", {b, std::to_string(sizes[g.below(2)]), *s});
  // Captured: the graph's allocation, written before it is read; often freed again by the graph.
  const Symbol* made = g.h.find(b);
  if (!o.skipped && o.code == CUDA_SUCCESS && made != nullptr && made->graph_alloc) {
    g.emit(0, "cuMemsetD8Async", {b, std::to_string(g.range(0, 255)),
                                  std::to_string(made->bytes), *s});
    if (g.chance(0.5)) g.emit(0, "cuMemFreeAsync", {b, *s});
  }
  return true;
}
GENERATE(cuMemFreeAsync) {
  auto s = g.stream();
  std::vector<std::string> all = g.buffers(true);
  if (!s || all.size() <= 2) return false;
  g.emit(0, "cuMemFreeAsync", {g.pick(all), *s});
  return true;
}
GENERATE(cuMemAllocHost) {
  if (g.h.live(Kind::host).size() >= 3) return false;
  g.emit(g.thread(), "cuMemAllocHost", {g.fresh("h"), g.chance(0.95) ? "1024" : "0"});
  return true;
}
GENERATE(cuMemFreeHost) {
  std::vector<std::string> hosts = g.h.live(Kind::host);
  if (hosts.empty()) return false;
  g.emit(g.thread(), "cuMemFreeHost", {g.pick(hosts)});
  return true;
}
// A host buffer (pinned, or one of the two pageable ones) and a length that fits it and `device`.
std::pair<std::string, std::size_t> host_side(Gen& g, const std::string& device) {
  std::vector<std::string> hosts = g.h.live(Kind::host);
  hosts.push_back("p1");
  hosts.push_back("p2");
  const std::string host = g.pick(hosts);
  std::size_t length = std::min(g.bytes(host), g.bytes(device));
  if (g.chance(0.3)) length = (g.below(length / 4) + 1) * 4;
  return {host, length};
}
GENERATE(cuMemcpyHtoDAsync) {
  auto s = g.stream();
  std::vector<std::string> all = g.buffers();
  if (!s || all.empty()) return false;
  const std::string b = g.pick(all);
  auto [host, length] = host_side(g, b);
  g.emit(0, "cuMemcpyHtoDAsync", {g.place(b, length), g.place(host, length),
                                  std::to_string(length), *s});
  return true;
}
GENERATE(cuMemcpyDtoHAsync) {
  auto s = g.stream();
  std::vector<std::string> all = g.buffers();
  if (!s || all.empty()) return false;
  const std::string b = g.pick(all);
  auto [host, length] = host_side(g, b);
  g.emit(0, "cuMemcpyDtoHAsync", {g.place(host, length), g.place(b, length),
                                  std::to_string(length), *s});
  return true;
}
GENERATE(cuMemcpyDtoDAsync) {
  auto s = g.stream();
  std::vector<std::string> all = g.buffers();
  if (!s || all.size() < 2) return false;
  const std::string dst = g.pick(all);
  std::string src = g.pick(all);
  if (src == dst) return false;
  std::size_t length = std::min(g.bytes(dst), g.bytes(src));
  if (g.chance(0.4)) length = (g.below(length / 4) + 1) * 4;
  g.emit(0, "cuMemcpyDtoDAsync",
         {g.place(dst, length), g.place(src, length), std::to_string(length), *s});
  return true;
}
GENERATE(cuMemsetD8Async) {
  auto s = g.stream();
  std::vector<std::string> all = g.buffers(true);
  if (!s || all.empty()) return false;
  const std::string b = g.pick(all);
  std::size_t count = g.chance(0.6) ? g.bytes(b) : (g.below(g.bytes(b) / 4) + 1) * 4;
  g.emit(0, "cuMemsetD8Async",
         {g.place(b, count), std::to_string(g.range(0, 255)), std::to_string(count), *s});
  return true;
}
GENERATE(cuMemsetD32Async) {
  auto s = g.stream();
  std::vector<std::string> all = g.buffers();
  if (!s || all.empty()) return false;
  const std::string b = g.pick(all);
  std::size_t count = g.chance(0.6) ? g.bytes(b) / 4 : g.below(g.bytes(b) / 4) + 1;
  std::string where = g.place(b, count * 4);
  if (g.chance(0.05)) {  // misaligned: 1 (the capture stays active, measured)
    where = b + "+1";
    count = std::min<std::size_t>(count, g.bytes(b) / 4 - 1);
  }
  g.emit(0, "cuMemsetD32Async",
         {where, std::to_string(g.range(0, 100000)), std::to_string(count), *s});
  return true;
}
GENERATE(cuModuleLoadData) {
  if (g.h.live(Kind::module).size() >= 2) return false;
  const std::string m = g.fresh("m");
  g.emit(g.thread(), "cuModuleLoadData", {m, g.chance(0.9) ? "test" : "bad"});
  return true;
}
GENERATE(cuModuleUnload) {
  std::vector<std::string> modules = g.h.live(Kind::module);
  if (modules.size() < 2 && g.chance(0.8)) return false;
  if (modules.empty()) return false;
  g.emit(g.thread(), "cuModuleUnload", {g.pick(modules)});
  return true;
}
GENERATE(cuModuleGetFunction) {
  std::vector<std::string> modules = g.h.live(Kind::module);
  if (modules.empty()) return false;
  const char* names[] = {"empty", "add_one", "fill", "axpy", "copy", "mixed", "affine",
                         "set_condition", "no_such_kernel"};
  g.emit(g.thread(), "cuModuleGetFunction", {g.fresh("f"), g.pick(modules), names[g.below(9)]});
  return true;
}
GENERATE(cuFuncGetAttribute) {
  std::vector<std::string> fs = g.h.live(Kind::function);
  if (fs.empty()) return false;
  const int attributes[] = {1, 2, 3, 8, 9};  // the ones the fake models, and a carveout
  g.emit(g.thread(), "cuFuncGetAttribute", {std::to_string(attributes[g.below(4)]), g.pick(fs)});
  return true;
}
GENERATE(cuFuncSetAttribute) {
  std::vector<std::string> fs = g.h.live(Kind::function);
  if (fs.empty()) return false;
  if (g.chance(0.5)) {
    const char* values[] = {"0", "49152", "65536", "232448", "232449", "-1"};
    g.emit(g.thread(), "cuFuncSetAttribute", {g.pick(fs), "8", values[g.below(6)]});
  } else {
    const char* values[] = {"-1", "0", "50", "100", "101"};
    g.emit(g.thread(), "cuFuncSetAttribute", {g.pick(fs), "9", values[g.below(5)]});
  }
  return true;
}
GENERATE(cuFuncGetParamInfo) {
  std::vector<std::string> fs = g.h.live(Kind::function);
  if (fs.empty()) return false;
  g.emit(g.thread(), "cuFuncGetParamInfo", {g.pick(fs), std::to_string(g.below(6))});
  return true;
}
GENERATE(cuLaunchKernel) {
  auto s = g.stream();
  std::vector<std::string> fs = g.functions();
  if (!s || fs.empty()) return false;
  const std::string f = g.pick(fs);
  std::vector<std::string> args = {f};
  for (const std::string& dim : g.shape()) args.push_back(dim);
  args.push_back(*s);
  for (const std::string& arg : g.kernel_args(f)) args.push_back(arg);
  g.emit(0, "cuLaunchKernel", args);
  return true;
}
GENERATE(cuLaunchKernelEx) {
  auto s = g.stream();
  if (!s) return false;
  std::vector<std::string> fs = g.functions();
  // Half of them programmatic: only pdl_add_one waiting for its predecessor is defined so
  // (calls.cc, programmatic_safe); its function is asked for when the program has none.
  const bool programmatic = g.chance(0.5);
  if (programmatic) {
    fs = g.functions("pdl_add_one");
    if (fs.empty()) {
      std::vector<std::string> modules = g.h.live(Kind::module);
      if (modules.empty()) return false;
      g.emit(g.thread(), "cuModuleGetFunction", {g.fresh("f"), g.pick(modules), "pdl_add_one"});
      fs = g.functions("pdl_add_one");
    }
  }
  if (fs.empty()) return false;
  const std::string f = g.pick(fs);
  std::vector<std::string> args = {f};
  for (const std::string& dim : g.shape()) args.push_back(dim);
  args.push_back(*s);
  args.push_back(programmatic ? "1" : "0");
  const char* priorities[] = {"-", "-", "0", "-1", "-5", "-9", "3"};
  args.push_back(priorities[g.below(7)]);
  std::vector<std::string> kernel = g.kernel_args(f);
  if (programmatic && kernel.size() == 4) kernel[3] = "1";
  for (const std::string& arg : kernel) args.push_back(arg);
  const Observation& o = g.emit(0, "cuLaunchKernelEx", args);
  // A captured programmatic launch is a programmatic edge: often read back at once.
  if (programmatic && !o.skipped && o.code == CUDA_SUCCESS && g.h.capturing(*s) && g.chance(0.5)) {
    const std::string graph = g.fresh("g");
    g.emit(0, "cuStreamGetCaptureInfo", {*s, graph});
    const char* how[] = {"data", "all", "count"};
    g.emit(g.thread(), "cuGraphGetEdges", {graph, how[g.below(3)]});
  }
  return true;
}
GENERATE(cuCtxGetStreamPriorityRange) {
  const char* which[] = {"both", "both", "least", "greatest", "none"};
  g.emit(g.thread(), "cuCtxGetStreamPriorityRange", {which[g.below(5)]});
  return true;
}
GENERATE(cuGraphGetNodes) {
  std::vector<std::string> all = g.graphs(true);
  if (all.empty()) return false;
  const char* how[] = {"count", "all", "2"};
  g.emit(g.thread(), "cuGraphGetNodes", {g.pick(all), how[g.below(3)]});
  return true;
}
GENERATE(cuGraphNodeGetType) {
  std::vector<std::string> all = g.graphs(true);
  if (all.empty()) return false;
  const std::string graph = g.pick(all);
  std::vector<std::size_t> nodes = g.node_indices(graph);
  if (nodes.empty()) return false;
  g.emit(g.thread(), "cuGraphNodeGetType", {graph + "#" + std::to_string(g.pick(nodes))});
  return true;
}
GENERATE(cuGraphInstantiateWithFlags) {
  std::vector<std::string> all = g.graphs();
  if (all.empty()) return false;
  const char* flags[] = {"0", "0", "0", "1", "8", "9", "2", "5", "4"};
  g.emit(g.thread(), "cuGraphInstantiateWithFlags",
         {g.fresh("x"), g.pick(all), flags[g.below(9)]});
  return true;
}
GENERATE(cuGraphInstantiateWithParams) {
  std::vector<std::string> all = g.graphs();
  if (all.empty()) return false;
  const char* flags[] = {"0", "0", "0", "2", "2", "1", "8", "9", "5", "4", "16"};
  const std::string flag = flags[g.below(11)];
  std::string upload = "-";
  if (flag == "2" || g.chance(0.2)) {
    auto s = g.stream();
    if (!s) return false;
    upload = *s;
  }
  g.emit(g.thread(), "cuGraphInstantiateWithParams", {g.fresh("x"), g.pick(all), flag, upload});
  return true;
}
GENERATE(cuGraphGetEdges) {
  std::vector<std::string> all = g.graphs(true);
  if (all.empty()) return false;
  const char* how[] = {"count", "all", "data", "data", "2"};
  g.emit(g.thread(), "cuGraphGetEdges", {g.pick(all), how[g.below(5)]});
  return true;
}
GENERATE(cuGraphKernelNodeGetAttribute) {
  std::vector<std::string> all = g.graphs(true);
  if (all.empty()) return false;
  const std::string graph = g.pick(all);
  std::vector<std::size_t> kernels = g.node_indices(graph, CU_GRAPH_NODE_TYPE_KERNEL);
  std::vector<std::size_t> any = g.node_indices(graph);
  if (any.empty()) return false;
  const std::size_t node = !kernels.empty() && g.chance(0.9) ? g.pick(kernels) : g.pick(any);
  g.emit(g.thread(), "cuGraphKernelNodeGetAttribute",
         {graph + "#" + std::to_string(node), std::to_string(CU_LAUNCH_ATTRIBUTE_PRIORITY)});
  return true;
}
GENERATE(cuGraphUpload) {
  auto s = g.stream();
  std::vector<std::string> execs = g.h.live(Kind::exec);
  if (!s || execs.empty()) return false;
  g.emit(0, "cuGraphUpload", {g.pick(execs), *s});
  return true;
}
GENERATE(cuGraphLaunch) {
  auto s = g.stream();
  std::vector<std::string> execs = g.h.live(Kind::exec);
  if (!s || execs.empty()) return false;
  const std::string x = g.pick(execs);
  g.emit(0, "cuGraphLaunch", {x, *s});
  if (g.chance(0.3)) g.emit(0, "cuGraphLaunch", {x, *s});  // a relaunch
  return true;
}
GENERATE(cuGraphExecUpdate) {
  std::vector<std::string> execs = g.h.live(Kind::exec);
  std::vector<std::string> all = g.graphs();
  if (execs.empty() || all.empty()) return false;
  // Often from a graph with memory nodes (its own allocations among its uses).
  std::vector<std::string> with_memory;
  for (const std::string& graph : all) {
    for (const std::string& use : g.h.find(graph)->uses) {
      const Symbol* b = g.h.find(use);
      if (b != nullptr && b->kind == Kind::buffer && b->graph_alloc) {
        with_memory.push_back(graph);
        break;
      }
    }
  }
  const std::string graph =
      !with_memory.empty() && g.chance(0.5) ? g.pick(with_memory) : g.pick(all);
  g.emit(g.thread(), "cuGraphExecUpdate", {g.pick(execs), graph});
  return true;
}
GENERATE(cuGraphDestroy) {
  std::vector<std::string> all = g.graphs();
  if (all.empty()) return false;
  g.emit(g.thread(), "cuGraphDestroy", {g.pick(all)});
  return true;
}
GENERATE(cuGraphExecDestroy) {
  std::vector<std::string> execs = g.h.live(Kind::exec);
  if (execs.empty()) return false;
  g.emit(g.thread(), "cuGraphExecDestroy", {g.pick(execs)});
  return true;
}
GENERATE(cuGraphDebugDotPrint) {
  std::vector<std::string> all = g.graphs();
  if (all.empty()) return false;
  g.emit(g.thread(), "cuGraphDebugDotPrint", {g.pick(all), g.chance(0.8) ? "ok" : "bad", "0"});
  return true;
}
GENERATE(cuGetErrorName) {
  const int codes[] = {0, 1, 2, 3, 200, 201, 400, 401, 500, 600, 900, 901, 907, 910, 9999};
  g.emit(g.thread(), "cuGetErrorName", {std::to_string(codes[g.below(15)])});
  return true;
}
GENERATE(cuGetErrorString) {
  const int codes[] = {0, 1, 2, 400, 401, 900, 901, 904, 908, 9999};
  g.emit(g.thread(), "cuGetErrorString", {std::to_string(codes[g.below(10)])});
  return true;
}
GENERATE(cuGraphExecKernelNodeSetParams) {
  std::vector<std::string> execs = g.h.live(Kind::exec);
  if (execs.empty()) return false;
  const std::string x = g.pick(execs);
  const Symbol* exec = g.h.find(x);
  std::vector<std::string> fs = g.functions();
  if (fs.empty() || exec->source.empty()) return false;
  const std::string f = g.pick(fs);
  std::vector<std::size_t> kernels = g.node_indices(exec->source, CU_GRAPH_NODE_TYPE_KERNEL);
  // Mostly a kernel node of the executable's graph; sometimes another node (1, measured).
  std::vector<std::size_t> any = g.node_indices(exec->source);
  if (any.empty()) return false;
  const std::size_t node = !kernels.empty() && g.chance(0.9) ? g.pick(kernels) : g.pick(any);
  std::vector<std::string> args = {x, exec->source + "#" + std::to_string(node), f,
                                   std::to_string(g.range(1, 4)), "64"};
  for (const std::string& arg : g.kernel_args(f)) args.push_back(arg);
  g.emit(g.thread(), "cuGraphExecKernelNodeSetParams", args);
  return true;
}
// A conditional node in a running capture, the way graphcap records a loop: the capture's graph
// and dependencies, a handle, the node on them, the capture moved past it, each body captured on
// another stream (RELAXED) into the node's body graph; a WHILE body sets its condition to 0.
GENERATE(cuGraphConditionalHandleCreate) {
  std::vector<std::string> capturing = g.streams_where(true);
  std::vector<std::string> idle = g.streams_where(false);
  std::vector<std::string> active;
  for (const std::string& s : capturing) {
    if (capture_number(g.h, s) != 0) active.push_back(s);
  }
  if (active.empty() || idle.empty()) return false;
  std::vector<std::string> conds;
  for (const std::string& f : g.h.live(Kind::function)) {
    if (g.h.find(f)->kernel == "set_condition") conds.push_back(f);
  }
  if (conds.empty()) return false;
  const std::string s = g.pick(active);
  const std::string body_stream = g.pick(idle);
  const std::string graph = g.fresh("g");
  g.emit(0, "cuStreamGetCaptureInfo", {s, graph});
  const std::string c = g.fresh("c");
  const unsigned value = g.range(0, 2);
  g.emit(0, "cuGraphConditionalHandleCreate",
         {c, graph, g.chance(0.97) ? "primary" : "null", std::to_string(value),
          g.chance(0.8) ? "1" : "0"});
  const char* types[] = {"WHILE", "IF", "SWITCH"};
  const std::string type = types[g.below(3)];
  const unsigned size = type == "WHILE" ? 1 : type == "IF" ? g.range(1, 2) : g.range(1, 3);
  const std::string node = g.fresh("q");
  const Observation& added = g.emit(0, "cuGraphAddNode", {node, graph, "@" + s, type, c,
                                                          std::to_string(size)});
  if (added.skipped || added.code != CUDA_SUCCESS) return true;
  // The node is the graph's last: its index is the number of types observed, less one.
  const std::size_t open = added.detail.find('[');
  const std::size_t count =
      open == std::string::npos
          ? 1
          : static_cast<std::size_t>(std::count(added.detail.begin() + open, added.detail.end(), '.')) + 1;
  g.emit(0, "cuStreamUpdateCaptureDependencies",
         {s, "[" + graph + "#" + std::to_string(count - 1) + "]", "1"});
  for (unsigned i = 0; i < size; ++i) {
    const std::string body = node + "." + std::to_string(i);
    g.emit(0, "cuStreamBeginCaptureToGraph", {body_stream, body, "[]", "RELAXED"});
    if (type == "WHILE" || g.chance(0.3)) {
      g.emit(0, "cuLaunchKernel", {g.pick(conds), "1", "32", "0", body_stream, c, "0"});
    }
    std::vector<std::string> fills = g.functions("fill");
    if (!fills.empty() && g.chance(0.7)) {
      const std::string f = g.pick(fills);
      std::vector<std::string> args = {f, "1", "64", "0", body_stream};
      for (const std::string& arg : g.kernel_args(f)) args.push_back(arg);
      g.emit(0, "cuLaunchKernel", args);
    }
    g.emit(0, "cuStreamEndCapture", {body_stream, g.fresh("g")});
  }
  return true;
}
GENERATE(cuGraphAddNode) {
  // Refusals: a WHILE node of size 2 (1), on an owned graph with another graph's handle.
  std::vector<std::string> all = g.graphs();
  std::vector<std::string> conds = g.h.live(Kind::cond);
  if (all.empty() || conds.empty()) return false;
  g.emit(0, "cuGraphAddNode", {g.fresh("q"), g.pick(all), "[]", "WHILE", g.pick(conds), "2"});
  return true;
}
GENERATE(cuStreamUpdateCaptureDependencies) {
  auto s = g.stream();
  if (!s) return false;
  g.emit(0, "cuStreamUpdateCaptureDependencies", {*s, "[]", g.chance(0.8) ? "0" : "7"});
  return true;
}
// A capture into an existing graph: after nodes of it (or none), then work, then usually the end;
// while it runs, what CUDA answers for the graph itself (destroy, instantiate, update).
GENERATE(cuStreamBeginCaptureToGraph) {
  std::vector<std::string> idle = g.streams_where(false);
  // Not into a graph another capture is building: not defined (the harness skips it; the H200's
  // driver crashed there).
  std::vector<std::string> all;
  for (const std::string& graph : g.graphs()) {
    const Symbol* symbol = g.h.find(graph);
    bool building = symbol->borrowed;
    for (const auto& [id, target] : g.h.capture_target) building = building || target == graph;
    for (const auto& [pending, target] : g.h.pending_target) building = building || target == graph;
    if (!building) all.push_back(graph);
  }
  if (idle.empty() || all.empty()) return false;
  const std::string s = g.pick(idle);
  const std::string graph = g.pick(all);
  const std::string deps = g.chance(0.5) ? "[]" : "[" + graph + "#0]";
  const Observation& o = g.emit(0, "cuStreamBeginCaptureToGraph", {s, graph, deps, g.mode()});
  if (!o.skipped && o.code == CUDA_SUCCESS) {
    g.origins[capture_number(g.h, s)] = s;
    if (g.chance(0.3)) {
      switch (g.below(3)) {
        case 0: g.emit(0, "cuGraphDestroy", {graph}); break;
        case 1: g.emit(g.thread(), "cuGraphInstantiateWithFlags", {g.fresh("x"), graph, "0"}); break;
        default: {
          std::vector<std::string> execs = g.h.live(Kind::exec);
          if (!execs.empty()) g.emit(0, "cuGraphExecUpdate", {g.pick(execs), graph});
        }
      }
    }
  }
  return true;
}
GENERATE(cuDeviceCanAccessPeer) {
  const char* peers[] = {"0", "1"};
  g.emit(g.thread(), "cuDeviceCanAccessPeer", {g.chance(0.9) ? "0" : "2", peers[g.below(2)]});
  return true;
}
GENERATE(cuCtxEnablePeerAccess) {
  g.emit(g.thread(), "cuCtxEnablePeerAccess", {g.chance(0.7) ? "primary" : "null",
                                               g.chance(0.8) ? "0" : "1"});
  return true;
}

struct EntryGenerator {
  std::string_view name;
  bool (*generate)(Gen&);
  double weight;
};

// How often each entry point is tried (relative).
double weight_of(std::string_view name) {
  static const std::map<std::string_view, double> weights = {
      {"cuLaunchKernel", 14},         {"cuMemsetD8Async", 4},
      {"cuMemsetD32Async", 4},        {"cuMemcpyHtoDAsync", 3},
      {"cuMemcpyDtoHAsync", 3},       {"cuMemcpyDtoDAsync", 4},
      {"cuStreamBeginCapture", 7},    {"cuStreamEndCapture", 7},
      {"cuStreamBeginCaptureToGraph", 2},
      {"cuStreamGetCaptureInfo", 2},  {"cuEventRecord", 5},
      {"cuStreamWaitEvent", 4},       {"cuEventQuery", 2},
      {"cuEventSynchronize", 2},      {"cuStreamSynchronize", 4},
      {"cuStreamQuery", 2},           {"cuCtxSynchronize", 2},
      {"cuGraphInstantiateWithFlags", 6}, {"cuGraphInstantiateWithParams", 2},
      {"cuLaunchKernelEx", 3},
      {"cuGraphLaunch", 7},           {"cuGraphUpload", 2},
      {"cuGraphExecUpdate", 2.5},     {"cuGraphExecKernelNodeSetParams", 2.5},
      {"cuGraphDestroy", 2},          {"cuGraphExecDestroy", 2},
      {"cuMemAlloc", 2},              {"cuMemFree", 1.5},
      {"cuMemAllocAsync", 2},         {"cuMemFreeAsync", 1.5},
      {"cuMemAllocHost", 1},          {"cuMemFreeHost", 0.8},
      {"cuThreadExchangeStreamCaptureMode", 2},
      {"cuGraphConditionalHandleCreate", 2},
      {"cuStreamCreate", 1},          {"cuEventCreate", 1},
      {"cuModuleGetFunction", 1},     {"cuStreamDestroy", 0.8},
      {"cuModuleUnload", 0.8},        {"cuGraphGetNodes", 1},
      {"cuGraphNodeGetType", 1},      {"cuMemFreeHost", 1},
      // the fewest calls per 10,000 programs otherwise (178 and 254-276 in seed 77)
      {"cuGraphKernelNodeGetAttribute", 1}, {"cuGraphGetEdges", 0.8},
      {"cuMemSetAccess", 0.6},        {"cuMemAddressFree", 0.6},
      {"cuMemRelease", 0.6},          {"cuMemUnmap", 0.8},
      {"cuMemMap", 0.8},              {"cuGraphDebugDotPrint", 0.6},
  };
  auto it = weights.find(name);
  return it == weights.end() ? 0.4 : it->second;
}

const std::vector<EntryGenerator>& generators() {
  static const std::vector<EntryGenerator> table = {
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  {entry::name::kName, &generate_entry<entry::name>, weight_of(entry::name::kName)},
#include <graphcap/driver/entry_points.def>
  };
  return table;
}

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

Trace generate(const GeneratorOptions& options, std::uint64_t index, DriverApi& model,
               std::span<const std::byte> image) {
  Trace trace;
  trace.index = index;
  trace.seed = options.seed;
  trace.driver = model.name();
  Harness harness(model, image);
  Gen g(harness, mix(options.seed * 0x100000001b3ull ^ mix(index)), trace);
  const std::size_t length =
      options.min_calls + g.below(options.max_calls - options.min_calls + 1);
  // Every program starts with a module, a few kernels, streams, buffers and events.
  g.emit(0, "cuModuleLoadData", {g.fresh("m"), "test"});
  for (const char* kernel : {"fill", "add_one", "axpy", "set_condition"}) {
    if (kernel == std::string("axpy") && g.chance(0.5)) continue;
    g.emit(0, "cuModuleGetFunction", {g.fresh("f"), "m1", kernel});
  }
  for (int i = 0; i < 2; ++i) g.emit(0, "cuStreamCreate", {g.fresh("s"), g.chance(0.6) ? "1" : "0"});
  for (int i = 0; i < 3; ++i) {
    const unsigned sizes[] = {256, 512, 1024};
    g.emit(0, "cuMemAlloc", {g.fresh("b"), std::to_string(sizes[g.below(3)])});
  }
  for (int i = 0; i < 2; ++i) g.emit(0, "cuEventCreate", {g.fresh("e"), g.chance(0.5) ? "2" : "0"});

  const std::vector<EntryGenerator>& table = generators();
  std::vector<double> weights;
  for (const EntryGenerator& e : table) weights.push_back(e.weight);
  std::discrete_distribution<std::size_t> choose(weights.begin(), weights.end());
  std::size_t attempts = 0;
  while (trace.calls.size() < length && attempts++ < length * 20) {
    (void)table[choose(g.rng)].generate(g);
  }
  harness.finish();
  return trace;
}

}  // namespace graphcap::fidelity
