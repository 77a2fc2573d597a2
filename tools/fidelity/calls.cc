// Each entry point of entry_points.def as a program call: how its symbolic arguments become the
// driver's, what the harness must check before it is defined, and what its success changes in the
// harness's account. One specialization of run_entry per entry point: the table below is made
// from entry_points.def, so a new entry point does not link until it has one here (and a
// generator in generator.cc).
#include <algorithm>
#include <cstring>
#include <unistd.h>
#include <string>
#include <vector>

#include <graphcap/driver/entry_traits.h>
#include <graphcap/driver/error_names.h>
#include <graphcap/driver/launch_config.h>
#include <graphcap/driver/node_params.h>

#include "harness.h"
#include "kernels/test_kernels.h"

namespace graphcap::fidelity {
namespace {

// The arguments of one call, read in order.
class Args {
 public:
  Args(Harness& h, const Call& call) : h_(h), call_(call) {}
  Harness& h() { return h_; }
  const std::string& next() {
    if (i_ >= call_.args.size()) throw Skip{};
    return call_.args[i_++];
  }
  long long number() { return std::stoll(next()); }
  unsigned u() { return static_cast<unsigned>(std::stoul(next())); }
  std::string name() { return next(); }
  const std::string& peek() const {
    if (i_ >= call_.args.size()) throw Skip{};
    return call_.args[i_];
  }
  // A token naming a symbol, with an optional "+<bytes>" offset.
  std::pair<std::string, std::size_t> place() {
    const std::string& token = next();
    const std::size_t plus = token.find('+');
    if (plus == std::string::npos) return {token, 0};
    return {token.substr(0, plus), std::stoull(token.substr(plus + 1))};
  }
  CUstream stream(std::string* name = nullptr) {
    const std::string token = next();
    if (name != nullptr) *name = token;
    return reinterpret_cast<CUstream>(h_.need(token, Kind::stream).value);
  }
  CUevent event() { return reinterpret_cast<CUevent>(h_.need(next(), Kind::event).value); }
  CUgraph graph(std::string* name = nullptr) {
    const std::string token = next();
    if (name != nullptr) *name = token;
    return reinterpret_cast<CUgraph>(h_.need(token, Kind::graph).value);
  }
  CUgraphExec exec(std::string* name = nullptr) {
    const std::string token = next();
    if (name != nullptr) *name = token;
    return reinterpret_cast<CUgraphExec>(h_.need(token, Kind::exec).value);
  }
  // Device memory `bytes` long at a place (a device buffer); Skip if it does not fit in it.
  CUdeviceptr device(std::size_t bytes, std::string* name) {
    auto [token, offset] = place();
    const Symbol& buffer = h_.need(token, Kind::buffer);
    if (offset + bytes > buffer.bytes) throw Skip{};
    *name = token;
    return static_cast<CUdeviceptr>(buffer.value) + offset;
  }
  // Host memory (pinned hN or pageable pN) `bytes` long.
  void* host(std::size_t bytes, std::string* name) {
    auto [token, offset] = place();
    const Symbol* s = h_.find(token);
    if (s == nullptr || !s->live || (s->kind != Kind::host && s->kind != Kind::pageable)) {
      throw Skip{};
    }
    if (offset + bytes > s->bytes) throw Skip{};
    *name = token;
    return reinterpret_cast<std::byte*>(s->value) + offset;
  }
  CUstreamCaptureMode mode() {
    const std::string& token = next();
    if (token == "GLOBAL") return CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (token == "THREAD_LOCAL") return CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    if (token == "RELAXED") return CU_STREAM_CAPTURE_MODE_RELAXED;
    return static_cast<CUstreamCaptureMode>(std::stoi(token));
  }
  // A node list: "[]", "[g3#0,g3#2]" (nodes of a graph by index), or "@s1" (the capture
  // dependencies of stream s1 now).
  std::vector<CUgraphNode> nodes() {
    const std::string token = next();
    std::vector<CUgraphNode> out;
    if (token.size() > 1 && token[0] == '@') {
      Symbol& s = h_.need(token.substr(1), Kind::stream);
      CUstreamCaptureStatus status{};
      const CUgraphNode* deps = nullptr;
      std::size_t count = 0;
      if (h_.driver().cuStreamGetCaptureInfo(reinterpret_cast<CUstream>(s.value), &status,
                                             nullptr, nullptr, &deps, nullptr, &count) !=
              CUDA_SUCCESS ||
          status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        throw Skip{};
      }
      out.assign(deps, deps + count);
      return out;
    }
    if (token.size() < 2 || token.front() != '[' || token.back() != ']') throw Skip{};
    std::string list = token.substr(1, token.size() - 2);
    std::size_t start = 0;
    while (start < list.size()) {
      std::size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      out.push_back(node(list.substr(start, comma - start)));
      start = comma + 1;
    }
    return out;
  }
  CUgraphNode node(const std::string& token) {
    const std::size_t hash = token.find('#');
    if (hash == std::string::npos) throw Skip{};
    std::vector<CUgraphNode> all;
    h_.graph_nodes(token.substr(0, hash), &all);
    const std::size_t index = std::stoull(token.substr(hash + 1));
    if (index >= all.size()) throw Skip{};
    return all[index];
  }
  CUgraphNode node() { return node(next()); }
  bool done() const { return i_ >= call_.args.size(); }

 private:
  Harness& h_;
  const Call& call_;
  std::size_t i_ = 0;
};

// Only captured work (launches, memsets, copies) and the end may touch a stream whose capture
// records a conditional node's body: anything that could invalidate it is not made (ending an
// invalidated body's capture crashed the H200's driver; docs/cuda-driver-facts.md).
void guard_body(Harness& h, const std::string& stream) {
  if (h.body_capture(stream)) throw Skip{};
}

std::string name_of(CUstreamCaptureStatus status) {
  return status == CU_STREAM_CAPTURE_STATUS_NONE     ? "N"
         : status == CU_STREAM_CAPTURE_STATUS_ACTIVE ? "A"
                                                     : "I";
}

// Every graph symbol naming `handle` (a capture's graph, named from cuStreamGetCaptureInfo, and
// the graph the capture ended into), merged into `into`.
void merge_same(Harness& h, Symbol& into, std::uintptr_t handle) {
  for (const auto& [name, other] : h.symbols()) {
    // Only live names: a driver reuses a destroyed graph's address for a new one (on the
    // H200, program 4484: a new graph at a destroyed body graph's address took its owner, and the
    // harness skipped its destroy there and not on the fake).
    if (&other == &into || !other.live || other.kind != Kind::graph || other.value != handle) {
      continue;
    }
    into.uses.insert(other.uses.begin(), other.uses.end());
    into.writes.insert(other.writes.begin(), other.writes.end());
    into.racy_writes.insert(other.racy_writes.begin(), other.racy_writes.end());
    into.unset_writes.insert(other.unset_writes.begin(), other.unset_writes.end());
    if (into.accesses.empty()) into.accesses = other.accesses;
    for (const auto& loop : other.loops) {
      if (std::find(into.loops.begin(), into.loops.end(), loop) == into.loops.end()) {
        into.loops.push_back(loop);
      }
    }
    for (const std::string& body : other.bodies) {
      if (std::find(into.bodies.begin(), into.bodies.end(), body) == into.bodies.end()) {
        into.bodies.push_back(body);
      }
    }
    if (into.owner.empty()) into.owner = other.owner;
  }
  // And what a capture still building that graph has recorded into it so far (a graph named from
  // cuStreamGetCaptureInfo, or one captured into): an executable made from it now uses that too
  // (programs 1673 and 4718 on the H200: a launch read memory freed after such an instantiate).
  auto building = [&](const std::string& name) {
    const Symbol* graph = h.find(name);
    return graph != nullptr && graph->live && graph->value == handle;
  };
  for (const auto& [id, uses] : h.capture_uses) {
    bool builds = false;
    if (auto borrowed = h.capture_borrowed.find(id); borrowed != h.capture_borrowed.end()) {
      for (const std::string& name : borrowed->second) builds = builds || building(name);
    }
    if (auto target = h.capture_target.find(id); target != h.capture_target.end()) {
      builds = builds || building(target->second);
    }
    if (!builds) continue;
    into.uses.insert(uses.begin(), uses.end());
    const std::set<std::string>& writes = h.capture_writes[id];
    const std::set<std::string>& racy = h.capture_racy[id];
    into.writes.insert(writes.begin(), writes.end());
    into.racy_writes.insert(racy.begin(), racy.end());
    const std::set<std::string>& unset = h.capture_unset[id];
    into.unset_writes.insert(unset.begin(), unset.end());
    into.accesses = h.captured_accesses(id);  // the graph's own nodes' first, when captured into
  }
}

// Skip while a capture records into a body of one of `graph`'s conditional nodes: the body is
// the node's, so instantiating or destroying the graph would use or free a graph a capture is
// building (not defined; on the fake, a capture whose graph was destroyed with its parent made
// the harness's next look at the stream throw).
void need_no_body_capture(Harness& h, const Symbol& graph) {
  auto in_bodies = [&](const std::string& target) {
    return std::find(graph.bodies.begin(), graph.bodies.end(), target) != graph.bodies.end();
  };
  for (const auto& [id, target] : h.capture_target) {
    if (in_bodies(target)) throw Skip{};
  }
  for (const auto& [stream, target] : h.pending_target) {
    if (in_bodies(target)) throw Skip{};
  }
}

// What instantiate, exec update and launch need of a graph or executable: everything its nodes
// name still exists (the H200's driver crashed, SIGSEGV, instantiating a graph whose copy or kernel
// node names freed memory, or whose external wait names a destroyed event: 8 programs of
// 2026-12-04), every WHILE body of it sets its condition to 0, so no launch loops forever, and no
// body of it is still being captured.
void need_instantiable(Harness& h, const Symbol& graph) {
  for (const std::string& use : graph.uses) {
    const Symbol* used = h.find(use);
    // A graph's own allocation (a MEM_ALLOC node) is the graph's, freed or not.
    if (used != nullptr && used->kind == Kind::buffer && used->graph_alloc) continue;
    if (used == nullptr || !used->live) throw Skip{};
  }
  for (const auto& [handle, body] : graph.loops) {
    const Symbol* b = h.find(body);
    if (b == nullptr || !b->terminates) throw Skip{};
  }
  need_no_body_capture(h, graph);
}

// The kernel arguments of a launch (or of a kernel node's new parameters), from `a`: fills the
// pointers' storage and the parameter array, checks every buffer can hold n elements, and lists
// the buffers and the module used. Returns false for a kernel the generator never launches.
struct KernelArgs {
  std::vector<std::string> uses;
  std::vector<std::string> writes;  // the buffers it writes (the others it reads)
  std::vector<void*> params;
  CUdeviceptr pointers[4] = {};
  std::uint32_t values[4] = {};
  unsigned long long wide = 0;
  char c = 0;
  double d = 0;
  short s = 0;
  Affine affine{};
  CUgraphConditionalHandle handle = 0;
  std::string cond;
  std::uint32_t cond_value = 0;
};

void kernel_args(Args& a, const Symbol& function, KernelArgs* k) {
  const std::string& kernel = function.kernel;
  auto buffer = [&](int index, std::size_t elements) {
    std::string name;
    k->pointers[index] = a.device(elements * sizeof(std::uint32_t), &name);
    k->uses.push_back(name);
    k->params.push_back(&k->pointers[index]);
  };
  if (kernel == "empty") {
  } else if (kernel == "add_one" || kernel == "copy" || kernel == "pdl_add_one") {
    const std::string src = a.next(), dst = a.next();
    const std::uint32_t n = a.u();
    auto fit = [&](const std::string& token, int index) {
      const std::size_t plus = token.find('+');
      const std::string symbol = token.substr(0, plus);
      const std::size_t offset = plus == std::string::npos ? 0 : std::stoull(token.substr(plus + 1));
      const Symbol& b = a.h().need(symbol, Kind::buffer);
      if (offset + std::size_t{n} * 4 > b.bytes) throw Skip{};
      k->pointers[index] = static_cast<CUdeviceptr>(b.value) + offset;
      k->uses.push_back(symbol);
      k->params.push_back(&k->pointers[index]);
    };
    fit(src, 0);
    fit(dst, 1);
    k->values[0] = n;
    k->params.push_back(&k->values[0]);
    if (kernel == "pdl_add_one") {  // (src, dst, n, wait)
      k->values[1] = a.u();
      k->params.push_back(&k->values[1]);
    }
  } else if (kernel == "fill") {
    const std::string dst = a.next();
    const std::uint32_t v = a.u(), n = a.u();
    const std::size_t plus = dst.find('+');
    const Symbol& b = a.h().need(dst.substr(0, plus), Kind::buffer);
    const std::size_t offset = plus == std::string::npos ? 0 : std::stoull(dst.substr(plus + 1));
    if (offset + std::size_t{n} * 4 > b.bytes) throw Skip{};
    k->pointers[0] = static_cast<CUdeviceptr>(b.value) + offset;
    k->uses.push_back(dst.substr(0, plus));
    k->values[0] = v;
    k->values[1] = n;
    k->params = {&k->pointers[0], &k->values[0], &k->values[1]};
  } else if (kernel == "axpy") {
    const std::string x = a.next(), y = a.next(), out = a.next();
    const std::uint32_t alpha = a.u(), n = a.u();
    int index = 0;
    for (const std::string& token : {x, y, out}) {
      const std::size_t plus = token.find('+');
      const Symbol& b = a.h().need(token.substr(0, plus), Kind::buffer);
      const std::size_t offset =
          plus == std::string::npos ? 0 : std::stoull(token.substr(plus + 1));
      if (offset + std::size_t{n} * 4 > b.bytes) throw Skip{};
      k->pointers[index] = static_cast<CUdeviceptr>(b.value) + offset;
      k->uses.push_back(token.substr(0, plus));
      k->params.push_back(&k->pointers[index]);
      ++index;
    }
    k->values[0] = alpha;
    k->values[1] = n;
    k->params.push_back(&k->values[0]);
    k->params.push_back(&k->values[1]);
  } else if (kernel == "mixed") {
    k->c = static_cast<char>(a.number());
    k->d = static_cast<double>(a.number());
    k->s = static_cast<short>(a.number());
    k->params = {&k->c, &k->d, &k->s};
    const std::string out = a.next();
    k->wide = a.u();
    const std::size_t plus = out.find('+');
    const Symbol& b = a.h().need(out.substr(0, plus), Kind::buffer);
    const std::size_t offset = plus == std::string::npos ? 0 : std::stoull(out.substr(plus + 1));
    if (offset + k->wide * 4 > b.bytes) throw Skip{};
    k->pointers[0] = static_cast<CUdeviceptr>(b.value) + offset;
    k->uses.push_back(out.substr(0, plus));
    k->params.push_back(&k->pointers[0]);
    k->params.push_back(&k->wide);
  } else if (kernel == "affine") {
    k->affine.scale = a.u();
    k->affine.offset = a.u();
    k->affine.n = a.u();
    k->params.push_back(&k->affine);
    buffer(0, k->affine.n);
  } else if (kernel == "set_condition") {
    k->cond = a.next();
    const Symbol& cond = a.h().need(k->cond, Kind::cond);
    k->handle = static_cast<CUgraphConditionalHandle>(cond.value);
    k->cond_value = a.u();
    k->values[0] = k->cond_value;
    k->params = {&k->handle, &k->values[0]};
  } else {
    throw Skip{};  // countdown: a WHILE body that could loop forever is never made
  }
  // Each test kernel writes its last buffer argument (add_one, copy, pdl_add_one: dst; axpy: out).
  std::vector<std::string> buffers(k->uses.begin(), k->uses.end());
  if (!buffers.empty()) k->writes.push_back(buffers.back());
  k->uses.push_back(function.module);
}

// A set_condition launch is defined only while a capture records into the graph that owns the
// handle, or into a body of one of that graph's conditional nodes; into a WHILE body it may only
// set 0 (then that body ends its loop).
void check_condition_launch(Harness& h, const std::string& stream, const KernelArgs& k,
                            bool* ends_loop, std::string* body) {
  *ends_loop = false;
  if (k.cond.empty()) return;
  if (!h.capturing(stream)) throw Skip{};
  const Symbol& cond = h.need(k.cond, Kind::cond);
  auto target = h.capture_target.find(h.capture_of(stream));
  if (target != h.capture_target.end()) {
    const Symbol* graph = h.find(target->second);
    if (graph == nullptr) throw Skip{};
    auto handle = h.body_handle.find(target->second);
    if (handle != h.body_handle.end()) {  // a WHILE body
      if (handle->second != k.cond || k.cond_value != 0) throw Skip{};
      *ends_loop = true;
      *body = target->second;
      return;
    }
    if (!graph->owner.empty()) {  // an IF or SWITCH body: its own graph's handle
      const Symbol* owner = h.find(graph->owner);
      if (owner == nullptr || cond.owner.empty()) throw Skip{};
      const Symbol* cond_graph = h.find(cond.owner);
      if (cond_graph == nullptr || !cond_graph->live || !owner->live ||
          cond_graph->value != owner->value) {
        throw Skip{};
      }
      return;
    }
    const Symbol* cond_graph = h.find(cond.owner);
    if (cond_graph == nullptr || !cond_graph->live || !graph->live ||
        cond_graph->value != graph->value) {
      throw Skip{};
    }
    return;
  }
  // A plain capture: its graph must be the handle's.
  const Symbol* cond_graph = h.find(cond.owner);
  if (cond_graph == nullptr) throw Skip{};
  CUgraph capturing = nullptr;
  CUstreamCaptureStatus status{};
  const Symbol& s = h.need(stream, Kind::stream);
  if (h.driver().cuStreamGetCaptureInfo(reinterpret_cast<CUstream>(s.value), &status, nullptr,
                                        &capturing, nullptr, nullptr, nullptr) != CUDA_SUCCESS ||
      reinterpret_cast<std::uintptr_t>(capturing) != cond_graph->value) {
    throw Skip{};
  }
}

// Whether a kernel may be launched programmatically (PROGRAMMATIC_STREAM_SERIALIZATION) in a
// defined program: it may begin before its kernel predecessor ends, so it must touch nothing
// before cudaGridDependencySynchronize, which after it means the predecessor is complete: only
// pdl_add_one with wait != 0 (docs/cuda-driver-facts.md, "Programmatic dependent launch and
// priorities": one that does not wait reads stale data).
bool programmatic_safe(const Symbol& function, const KernelArgs& k) {
  return function.kernel == "pdl_add_one" && k.values[1] != 0;
}

// Whether `node` of `graph` has a programmatic edge in (a captured programmatic launch).
bool programmatic_node(Harness& h, CUgraph graph, CUgraphNode node) {
  std::size_t count = 0;
  if (h.driver().cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &count) != CUDA_SUCCESS) {
    throw Skip{};
  }
  if (count == 0) return false;
  std::vector<CUgraphNode> from(count), to(count);
  std::vector<CUgraphEdgeData> data(count);
  if (h.driver().cuGraphGetEdges(graph, from.data(), to.data(), data.data(), &count) !=
      CUDA_SUCCESS) {
    throw Skip{};
  }
  for (std::size_t i = 0; i < count && i < to.size(); ++i) {
    if (to[i] == node && data[i].type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT) return true;
  }
  return false;
}

CUdeviceptr as_device(std::uintptr_t value) { return static_cast<CUdeviceptr>(value); }

template <class Entry>
CUresult run_entry(Args& a);

#define RUN(name) \
  template <>     \
  CUresult run_entry<entry::name>(Args & a)

RUN(cuInit) { return a.h().driver().cuInit(a.u()); }

RUN(cuDriverGetVersion) {
  int version = 0;
  const CUresult r = a.h().driver().cuDriverGetVersion(&version);
  if (r == CUDA_SUCCESS) a.h().detail += " v=" + std::to_string(version);
  return r;
}

RUN(cuDeviceGetCount) {
  int count = 0;
  const CUresult r = a.h().driver().cuDeviceGetCount(&count);
  if (r == CUDA_SUCCESS) a.h().detail += " n=" + std::to_string(count);
  return r;
}

RUN(cuDeviceGet) {
  CUdevice device = -1;
  const CUresult r = a.h().driver().cuDeviceGet(&device, static_cast<int>(a.number()));
  if (r == CUDA_SUCCESS) a.h().detail += " d=" + std::to_string(device);
  return r;
}

RUN(cuDeviceGetName) {
  const int len = static_cast<int>(a.number());
  const CUdevice device = static_cast<CUdevice>(a.number());
  char name[256] = {};
  if (len < 1 || len > 256) throw Skip{};
  return a.h().driver().cuDeviceGetName(name, len, device);  // the name itself differs
}

RUN(cuDeviceGetAttribute) {
  const auto attribute = static_cast<CUdevice_attribute>(a.number());
  const CUdevice device = static_cast<CUdevice>(a.number());
  int value = 0;
  const CUresult r = a.h().driver().cuDeviceGetAttribute(&value, attribute, device);
  if (r == CUDA_SUCCESS) a.h().detail += " v=" + std::to_string(value);
  return r;
}

RUN(cuDevicePrimaryCtxRetain) {
  const CUdevice device = static_cast<CUdevice>(a.number());
  CUcontext context = nullptr;
  const CUresult r = a.h().driver().cuDevicePrimaryCtxRetain(&context, device);
  if (r == CUDA_SUCCESS) {
    ++a.h().retained_;
    a.h().detail += context == a.h().context() ? " same" : " other";
  }
  return r;
}

RUN(cuDevicePrimaryCtxRelease) {
  const CUdevice device = static_cast<CUdevice>(a.number());
  // Never the harness's own reference: releasing it would destroy the context under the program.
  if (device == 0 && a.h().retained_ == 0) throw Skip{};
  const CUresult r = a.h().driver().cuDevicePrimaryCtxRelease(device);
  if (r == CUDA_SUCCESS && device == 0) --a.h().retained_;
  return r;
}

RUN(cuCtxSetCurrent) {
  const std::string which = a.next();
  return a.h().driver().cuCtxSetCurrent(which == "primary" ? a.h().context() : nullptr);
}

RUN(cuCtxGetCurrent) {
  CUcontext context = nullptr;
  const CUresult r = a.h().driver().cuCtxGetCurrent(&context);
  if (r == CUDA_SUCCESS) {
    a.h().detail += context == nullptr             ? " null"
                    : context == a.h().context() ? " primary"
                                                 : " other";
  }
  return r;
}

RUN(cuCtxSynchronize) {
  for (const std::string& s : a.h().live(Kind::stream)) guard_body(a.h(), s);
  const CUresult r = a.h().driver().cuCtxSynchronize();
  if (r == CUDA_SUCCESS) {
    for (const std::string& s : a.h().live(Kind::stream)) a.h().host_waited(a.h().stream_clock(s));
    a.h().synchronized = true;
  }
  return r;
}

RUN(cuStreamCreate) {
  const std::string name = a.name();
  const unsigned flags = a.u();
  CUstream stream = nullptr;
  const CUresult r = a.h().driver().cuStreamCreate(&stream, flags);
  if (r == CUDA_SUCCESS) a.h().bind(name, Kind::stream, reinterpret_cast<std::uintptr_t>(stream));
  return r;
}

RUN(cuStreamDestroy) {
  std::string name;
  const CUstream stream = a.stream(&name);
  guard_body(a.h(), name);
  const std::uint64_t id = a.h().capture_of(name);
  const CUresult r = a.h().driver().cuStreamDestroy(stream);
  if (r == CUDA_SUCCESS) {
    a.h().kill(name);
    // Destroying the stream a capture into an existing graph began on ends that capture as a
    // failed end does (the H200, 2026-12-04).
    if (auto origin = a.h().capture_origin.find(id);
        id != 0 && origin != a.h().capture_origin.end() && origin->second == name) {
      a.h().capture_ended(id, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
  }
  return r;
}

RUN(cuStreamSynchronize) {
  std::string name;
  const CUstream stream = a.stream(&name);
  guard_body(a.h(), name);
  const CUresult r = a.h().driver().cuStreamSynchronize(stream);
  if (r == CUDA_SUCCESS) a.h().host_waited(a.h().stream_clock(name));
  return r;
}

RUN(cuStreamQuery) {
  std::string name;
  const CUstream stream = a.stream(&name);
  guard_body(a.h(), name);
  return a.h().driver().cuStreamQuery(stream);
}

RUN(cuStreamWaitEvent) {
  std::string name;
  const CUstream stream = a.stream(&name);
  const std::string event_name = a.next();
  const Symbol& event = a.h().need(event_name, Kind::event);
  const unsigned flags = a.u();
  guard_body(a.h(), name);
  const bool captured = a.h().capturing(name);
  if (!captured) a.h().stream_clock(name);
  const CUresult r =
      a.h().driver().cuStreamWaitEvent(stream, reinterpret_cast<CUevent>(event.value), flags);
  if (r == CUDA_SUCCESS && captured && (flags & CU_EVENT_WAIT_EXTERNAL) != 0) {
    a.h().commit(name, {event_name});  // an external wait node names the event
  }
  if (r == CUDA_SUCCESS && event.captured_record) {  // a fork or a join inside a capture
    Symbol& s = a.h().need(name, Kind::stream);
    for (const auto& [lane, seq] : *event.captured_record) {
      s.captured_clock[lane] = std::max(s.captured_clock[lane], seq);
    }
  }
  if (r == CUDA_SUCCESS && !captured && event.recorded) {
    Symbol& s = a.h().need(name, Kind::stream);
    for (const auto& [other, seq] : *event.recorded) s.clock[other] = std::max(s.clock[other], seq);
  }
  return r;
}

RUN(cuStreamBeginCapture) {
  std::string name;
  const CUstream stream = a.stream(&name);
  return a.h().driver().cuStreamBeginCapture(stream, a.mode());
}

RUN(cuStreamEndCapture) {
  std::string name;
  const CUstream stream = a.stream(&name);
  const std::string graph_name = a.name();
  const std::uint64_t id = a.h().capture_of(name);
  CUgraph graph = nullptr;
  const CUresult r = a.h().driver().cuStreamEndCapture(stream, &graph);
  // Ending a capture into an existing graph in failure takes that graph with it: not used again.
  a.h().capture_ended(id, r);
  if (r == CUDA_SUCCESS && graph != nullptr) {
    Symbol& g = a.h().bind(graph_name, Kind::graph, reinterpret_cast<std::uintptr_t>(graph));
    if (auto uses = a.h().capture_uses.find(id); uses != a.h().capture_uses.end()) {
      g.uses = uses->second;
    }
    g.writes = a.h().capture_writes[id];
    g.racy_writes = a.h().capture_racy[id];
    g.unset_writes = a.h().capture_unset[id];
    a.h().keep_accesses(id, g.value);
    merge_same(a.h(), g, g.value);
    if (auto target = a.h().capture_target.find(id); target != a.h().capture_target.end()) {
      if (Symbol* t = const_cast<Symbol*>(a.h().find(target->second)); t != nullptr) {
        t->uses.insert(g.uses.begin(), g.uses.end());
        t->writes.insert(g.writes.begin(), g.writes.end());
        t->racy_writes.insert(g.racy_writes.begin(), g.racy_writes.end());
        t->unset_writes.insert(g.unset_writes.begin(), g.unset_writes.end());
        g.terminates = t->terminates;
        g.unset_body = t->unset_body;
        if (!t->owner.empty()) {
          g.owner = t->owner;
          // What a body uses, the graph holding its node uses (whatever names that graph now).
          if (const Symbol* owner = a.h().find(t->owner)) {
            for (const std::string& other : a.h().live(Kind::graph)) {
              Symbol& holder = a.h().need(other, Kind::graph);
              if (holder.value != owner->value) continue;
              holder.uses.insert(g.uses.begin(), g.uses.end());
              holder.writes.insert(g.writes.begin(), g.writes.end());
              holder.racy_writes.insert(g.racy_writes.begin(), g.racy_writes.end());
              holder.unset_writes.insert(g.unset_writes.begin(), g.unset_writes.end());
            }
            // ... and a capture still recording into that graph reads them as unknown (races.cc).
            auto builds = [&](const std::string& built) {
              const Symbol* building = a.h().find(built);
              return building != nullptr && building->live && building->value == owner->value;
            };
            std::set<std::uint64_t> into;
            for (const auto& [other, names] : a.h().capture_borrowed) {
              for (const std::string& borrowed : names) {
                if (builds(borrowed)) into.insert(other);
              }
            }
            for (const auto& [other, captured_into] : a.h().capture_target) {
              if (builds(captured_into)) into.insert(other);
            }
            for (std::uint64_t other : into) {
              if (other == id) continue;
              a.h().capture_unset[other].insert(g.unset_writes.begin(), g.unset_writes.end());
            }
          }
          if (auto handle = a.h().body_handle.find(target->second);
              handle != a.h().body_handle.end()) {
            a.h().body_handle[graph_name] = handle->second;
          }
        }
      }
    }
    a.h().observe_graphs.push_back(graph_name);
  }
  return r;
}

RUN(cuStreamIsCapturing) {
  const CUstream stream = a.stream();
  CUstreamCaptureStatus status{};
  const CUresult r = a.h().driver().cuStreamIsCapturing(stream, &status);
  if (r == CUDA_SUCCESS) a.h().detail += " st=" + name_of(status);
  return r;
}

RUN(cuStreamGetCaptureInfo) {
  std::string name;
  const CUstream stream = a.stream(&name);
  const std::string graph_name = a.done() ? std::string() : a.name();
  CUstreamCaptureStatus status{};
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  const CUgraphNode* deps = nullptr;
  std::size_t count = 0;
  const CUresult r =
      a.h().driver().cuStreamGetCaptureInfo(stream, &status, &id, &graph, &deps, nullptr, &count);
  if (r == CUDA_SUCCESS) {
    a.h().detail += " st=" + name_of(status);
    if (status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      a.h().detail += " deps=" + std::to_string(count);
      if (!graph_name.empty() && graph != nullptr) {
        Symbol& g = a.h().bind(graph_name, Kind::graph, reinterpret_cast<std::uintptr_t>(graph));
        g.borrowed = true;
        a.h().capture_borrowed[a.h().capture_of(name)].insert(graph_name);
        if (auto target = a.h().capture_target.find(a.h().capture_of(name));
            target != a.h().capture_target.end()) {
          if (const Symbol* t = a.h().find(target->second)) {
            g.owner = t->owner;
            g.unset_body = t->unset_body;
          }
        }
      }
    }
  }
  return r;
}

RUN(cuThreadExchangeStreamCaptureMode) {
  CUstreamCaptureMode mode = a.mode();
  const CUresult r = a.h().driver().cuThreadExchangeStreamCaptureMode(&mode);
  if (r == CUDA_SUCCESS) a.h().detail += " was=" + std::to_string(static_cast<int>(mode));
  return r;
}

RUN(cuEventCreate) {
  const std::string name = a.name();
  const unsigned flags = a.u();
  CUevent event = nullptr;
  const CUresult r = a.h().driver().cuEventCreate(&event, flags);
  if (r == CUDA_SUCCESS) a.h().bind(name, Kind::event, reinterpret_cast<std::uintptr_t>(event));
  return r;
}

RUN(cuEventDestroy) {
  const std::string name = a.name();
  const Symbol& event = a.h().need(name, Kind::event);
  const CUresult r = a.h().driver().cuEventDestroy(reinterpret_cast<CUevent>(event.value));
  if (r == CUDA_SUCCESS) a.h().kill(name);
  return r;
}

RUN(cuEventRecord) {
  const std::string event_name = a.name();
  Symbol& event = a.h().need(event_name, Kind::event);
  std::string name;
  const CUstream stream = a.stream(&name);
  guard_body(a.h(), name);
  const bool captured = a.h().capturing(name);
  a.h().access(name, {});
  const CUresult r = a.h().driver().cuEventRecord(reinterpret_cast<CUevent>(event.value), stream);
  if (r == CUDA_SUCCESS) {
    a.h().commit(name, {});
    if (captured) {
      event.recorded.reset();
      event.captured_record = a.h().need(name, Kind::stream).captured_clock;
    } else {
      event.recorded = a.h().stream_clock(name);
      event.captured_record.reset();
    }
  }
  return r;
}

RUN(cuEventQuery) { return a.h().driver().cuEventQuery(a.event()); }

RUN(cuEventSynchronize) {
  const std::string name = a.name();
  const Symbol& event = a.h().need(name, Kind::event);
  const CUresult r = a.h().driver().cuEventSynchronize(reinterpret_cast<CUevent>(event.value));
  if (r == CUDA_SUCCESS) {
    if (event.recorded) a.h().host_waited(*event.recorded);
    a.h().synchronized = true;
  }
  return r;
}

RUN(cuEventElapsedTime) {
  const CUevent start = a.event();
  const CUevent end = a.event();
  float ms = 0;
  return a.h().driver().cuEventElapsedTime(&ms, start, end);  // the time itself differs
}

RUN(cuMemGetInfo) {
  std::size_t free = 0, total = 0;
  return a.h().driver().cuMemGetInfo(&free, &total);
}

RUN(cuMemAlloc) {
  const std::string name = a.name();
  const std::size_t bytes = a.u();
  CUdeviceptr pointer = 0;
  const CUresult r = a.h().driver().cuMemAlloc(&pointer, bytes);
  if (r == CUDA_SUCCESS) {
    a.h().bind(name, Kind::buffer, pointer).bytes = bytes;
    a.h().pending_init.push_back(name);
  }
  return r;
}

RUN(cuMemFree) {
  const std::string token = a.next();
  if (token == "0") return a.h().driver().cuMemFree(0);
  const std::size_t plus = token.find('+');
  const std::string name = token.substr(0, plus);
  const Symbol& buffer = a.h().need(name, Kind::buffer);
  a.h().need_complete(name);
  const std::size_t offset = plus == std::string::npos ? 0 : std::stoull(token.substr(plus + 1));
  if (offset >= buffer.bytes) throw Skip{};
  const CUresult r = a.h().driver().cuMemFree(as_device(buffer.value) + offset);
  if (r == CUDA_SUCCESS && offset == 0) a.h().kill(name);
  return r;
}

// ---- Virtual memory (docs/cuda-driver-facts.md, "Virtual memory management") -----------------
// Device 0's pinned memory, as graphcap's pools ask for it; sizes in generated programs are whole
// 2 MiB granules or a deliberate misfit. No kernel or copy touches VMM memory here.
CUmemAllocationProp vmm_prop() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

RUN(cuMemGetAllocationGranularity) {
  const unsigned option = a.u();
  const CUmemAllocationProp prop = vmm_prop();
  std::size_t granularity = 0;
  return a.h().driver().cuMemGetAllocationGranularity(
      &granularity, &prop, static_cast<CUmemAllocationGranularity_flags>(option));
}

RUN(cuMemAddressReserve) {
  const std::string name = a.name();
  const std::size_t bytes = a.u();
  CUdeviceptr pointer = 0;
  const CUresult r = a.h().driver().cuMemAddressReserve(&pointer, bytes, 0, 0, 0);
  if (r == CUDA_SUCCESS) a.h().bind(name, Kind::vrange, pointer).bytes = bytes;
  return r;
}

RUN(cuMemAddressFree) {
  const std::string name = a.name();
  Symbol& range = a.h().need(name, Kind::vrange);
  const CUresult r =
      a.h().driver().cuMemAddressFree(static_cast<CUdeviceptr>(range.value), range.bytes);
  if (r == CUDA_SUCCESS) a.h().kill(name);
  return r;
}

RUN(cuMemCreate) {
  const std::string name = a.name();
  const std::size_t bytes = a.u();
  const CUmemAllocationProp prop = vmm_prop();
  CUmemGenericAllocationHandle handle = 0;
  const CUresult r = a.h().driver().cuMemCreate(&handle, bytes, &prop, 0);
  if (r == CUDA_SUCCESS) a.h().bind(name, Kind::vmem, static_cast<std::uintptr_t>(handle)).bytes = bytes;
  return r;
}

RUN(cuMemRelease) {
  const std::string name = a.name();
  Symbol& memory = a.h().need(name, Kind::vmem);
  // A mapped allocation stays alive through its mapping (measured on the H200): the harness keeps
  // the symbol's size for the unmap, and forgets the handle.
  const CUresult r =
      a.h().driver().cuMemRelease(static_cast<CUmemGenericAllocationHandle>(memory.value));
  if (r == CUDA_SUCCESS) memory.live = false;
  return r;
}

RUN(cuMemMap) {
  Symbol& range = a.h().need(a.name(), Kind::vrange);
  const std::string memory_name = a.name();
  const Symbol& memory = a.h().need(memory_name, Kind::vmem);
  const CUresult r = a.h().driver().cuMemMap(static_cast<CUdeviceptr>(range.value), memory.bytes,
                                             0, memory.value, 0);
  if (r == CUDA_SUCCESS) {
    range.mapped = memory_name;
    range.mapped_bytes = memory.bytes;
  }
  return r;
}

RUN(cuMemUnmap) {
  Symbol& range = a.h().need(a.name(), Kind::vrange);
  const std::size_t bytes = range.mapped.empty() ? std::size_t{2} << 20 : range.mapped_bytes;
  const CUresult r = a.h().driver().cuMemUnmap(static_cast<CUdeviceptr>(range.value), bytes);
  if (r == CUDA_SUCCESS) range.mapped.clear();
  return r;
}

RUN(cuMemSetAccess) {
  Symbol& range = a.h().need(a.name(), Kind::vrange);
  const std::size_t bytes = range.mapped.empty() ? std::size_t{2} << 20 : range.mapped_bytes;
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = 0;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return a.h().driver().cuMemSetAccess(static_cast<CUdeviceptr>(range.value), bytes, &desc, 1);
}

RUN(cuMemAllocAsync) {
  const std::string name = a.name();
  const std::size_t bytes = a.u();
  std::string stream_name;
  const CUstream stream = a.stream(&stream_name);
  guard_body(a.h(), stream_name);
  const bool captured = a.h().capturing(stream_name);
  a.h().access(stream_name, {});
  CUdeviceptr pointer = 0;
  const CUresult r = a.h().driver().cuMemAllocAsync(&pointer, bytes, stream);
  if (r == CUDA_SUCCESS) {
    const std::uint64_t capture = a.h().capture_of(stream_name);
    Symbol& buffer = a.h().bind(name, Kind::buffer, pointer);
    buffer.bytes = bytes;
    buffer.graph_alloc = captured;
    buffer.capture = capture;
    a.h().commit(stream_name, {name});
    if (!captured) {
      // Undefined bytes until written: filled in stream order, as the harness fills cuMemAlloc's.
      const unsigned char pattern = static_cast<unsigned char>(0x10 + buffer.order % 64);
      if (a.h().driver().cuMemsetD8Async(pointer, pattern, bytes, stream) == CUDA_SUCCESS) {
        a.h().commit(stream_name, {name});
      }
    }
  }
  return r;
}

RUN(cuMemFreeAsync) {
  const std::string name = a.name();
  const Symbol& buffer = a.h().need(name, Kind::buffer);
  std::string stream_name;
  const CUstream stream = a.stream(&stream_name);
  guard_body(a.h(), stream_name);
  const bool captured = a.h().capturing(stream_name);
  if (captured && !buffer.graph_alloc) throw Skip{};  // a graph freeing memory it does not own
  a.h().access(stream_name, {name});
  const CUresult r = a.h().driver().cuMemFreeAsync(as_device(buffer.value), stream);
  if (r == CUDA_SUCCESS) {
    a.h().commit(stream_name, {name});
    a.h().kill(name);
  }
  return r;
}

RUN(cuMemAllocHost) {
  const std::string name = a.name();
  const std::size_t bytes = a.u();
  void* pointer = nullptr;
  const CUresult r = a.h().driver().cuMemAllocHost(&pointer, bytes);
  if (r == CUDA_SUCCESS && pointer != nullptr) {
    Symbol& host = a.h().bind(name, Kind::host, reinterpret_cast<std::uintptr_t>(pointer));
    host.bytes = bytes;
    std::memset(pointer, 0x40 + host.order % 64, bytes);
  }
  return r;
}

RUN(cuMemFreeHost) {
  const std::string name = a.name();
  const Symbol& host = a.h().need(name, Kind::host);
  a.h().need_complete(name);
  const CUresult r = a.h().driver().cuMemFreeHost(reinterpret_cast<void*>(host.value));
  if (r == CUDA_SUCCESS) a.h().kill(name);
  return r;
}

// The stream-ordered copies and fills share one shape: check, call, commit.
template <class Call>
CUresult ordered(Args& a, const std::string& stream, const std::vector<std::string>& uses,
                 const std::vector<std::string>& writes, Call&& call) {
  if (a.h().capturing(stream)) a.h().need_allocation_in_scope(a.h().capture_of(stream), uses);
  a.h().access(stream, uses);
  const CUresult r = call();
  if (r == CUDA_SUCCESS) a.h().commit(stream, uses, writes);
  return r;
}

RUN(cuMemcpyHtoDAsync) {
  const std::vector<std::string> tokens = {a.next(), a.next()};
  const std::size_t bytes = a.u();
  std::string stream_name;
  const CUstream stream = a.stream(&stream_name);
  const Call sub{0, "", tokens};
  Args places(a.h(), sub);
  std::string dst_name, src_name;
  const CUdeviceptr dst = places.device(bytes, &dst_name);
  const void* src = places.host(bytes, &src_name);
  return ordered(a, stream_name, {dst_name, src_name}, {dst_name},
                 [&] { return a.h().driver().cuMemcpyHtoDAsync(dst, src, bytes, stream); });
}

RUN(cuMemcpyDtoHAsync) {
  const std::vector<std::string> tokens = {a.next(), a.next()};
  const std::size_t bytes = a.u();
  std::string stream_name;
  const CUstream stream = a.stream(&stream_name);
  const Call sub{0, "", tokens};
  Args places(a.h(), sub);
  std::string dst_name, src_name;
  void* dst = places.host(bytes, &dst_name);
  const CUdeviceptr src = places.device(bytes, &src_name);
  return ordered(a, stream_name, {dst_name, src_name}, {dst_name},
                 [&] { return a.h().driver().cuMemcpyDtoHAsync(dst, src, bytes, stream); });
}

RUN(cuMemcpyDtoDAsync) {
  const std::vector<std::string> tokens = {a.next(), a.next()};
  const std::size_t bytes = a.u();
  std::string stream_name;
  const CUstream stream = a.stream(&stream_name);
  const Call sub{0, "", tokens};
  Args places(a.h(), sub);
  std::string dst_name, src_name;
  const CUdeviceptr dst = places.device(bytes, &dst_name);
  const CUdeviceptr src = places.device(bytes, &src_name);
  if (dst_name == src_name) throw Skip{};  // overlapping copies are undefined
  return ordered(a, stream_name, {dst_name, src_name}, {dst_name},
                 [&] { return a.h().driver().cuMemcpyDtoDAsync(dst, src, bytes, stream); });
}

RUN(cuMemsetD8Async) {
  const std::string place = a.next();
  const unsigned value = a.u();
  const std::size_t count = a.u();
  std::string stream_name;
  const CUstream stream = a.stream(&stream_name);
  const Call sub{0, "", {place}};
  Args places(a.h(), sub);
  std::string dst_name;
  const CUdeviceptr dst = places.device(count, &dst_name);
  const bool whole = !a.h().capturing(stream_name) && place == dst_name &&
                     count == a.h().find(dst_name)->bytes;
  const CUresult r = ordered(a, stream_name, {dst_name}, {dst_name}, [&] {
    return a.h().driver().cuMemsetD8Async(dst, static_cast<unsigned char>(value), count, stream);
  });
  if (r == CUDA_SUCCESS && whole) a.h().overwritten(dst_name);
  return r;
}

RUN(cuMemsetD32Async) {
  const std::string place = a.next();
  const unsigned value = a.u();
  const std::size_t count = a.u();
  std::string stream_name;
  const CUstream stream = a.stream(&stream_name);
  const Call sub{0, "", {place}};
  Args places(a.h(), sub);
  std::string dst_name;
  const CUdeviceptr dst = places.device(count * 4, &dst_name);
  const bool whole = !a.h().capturing(stream_name) && place == dst_name &&
                     count * 4 == a.h().find(dst_name)->bytes;
  const CUresult r = ordered(a, stream_name, {dst_name}, {dst_name}, [&] {
    return a.h().driver().cuMemsetD32Async(dst, value, count, stream);
  });
  if (r == CUDA_SUCCESS && whole) a.h().overwritten(dst_name);
  return r;
}

RUN(cuModuleLoadData) {
  const std::string name = a.name();
  const std::string which = a.next();
  static const char kBad[] = "// not a module: graphcap-fidelity's refused image\n";
  const void* image = which == "test" ? static_cast<const void*>(a.h().image().data()) : kBad;
  CUmodule module = nullptr;
  const CUresult r = a.h().driver().cuModuleLoadData(&module, image);
  if (r == CUDA_SUCCESS) a.h().bind(name, Kind::module, reinterpret_cast<std::uintptr_t>(module));
  return r;
}

RUN(cuModuleUnload) {
  const std::string name = a.name();
  const Symbol& module = a.h().need(name, Kind::module);
  a.h().need_unused(name);
  a.h().need_complete(name);
  const CUresult r = a.h().driver().cuModuleUnload(reinterpret_cast<CUmodule>(module.value));
  if (r == CUDA_SUCCESS) {
    a.h().kill(name);
    for (const std::string& f : a.h().live(Kind::function)) {
      if (a.h().find(f)->module == name) a.h().kill(f);
    }
  }
  return r;
}

RUN(cuModuleGetFunction) {
  const std::string name = a.name();
  const std::string module_name = a.name();
  const Symbol& module = a.h().need(module_name, Kind::module);
  const std::string kernel = a.next();
  CUfunction function = nullptr;
  const CUresult r = a.h().driver().cuModuleGetFunction(
      &function, reinterpret_cast<CUmodule>(module.value), kernel.c_str());
  if (r == CUDA_SUCCESS) {
    Symbol& f = a.h().bind(name, Kind::function, reinterpret_cast<std::uintptr_t>(function));
    f.module = module_name;
    f.kernel = kernel;
  }
  return r;
}

RUN(cuFuncGetAttribute) {
  const auto attribute = static_cast<CUfunction_attribute>(a.number());
  const Symbol& f = a.h().need(a.next(), Kind::function);
  int value = 0;
  const CUresult r =
      a.h().driver().cuFuncGetAttribute(&value, attribute, reinterpret_cast<CUfunction>(f.value));
  if (r == CUDA_SUCCESS) a.h().detail += " v=" + std::to_string(value);
  return r;
}

RUN(cuFuncSetAttribute) {
  const Symbol& f = a.h().need(a.next(), Kind::function);
  const auto attribute = static_cast<CUfunction_attribute>(a.number());
  const int value = static_cast<int>(a.number());
  return a.h().driver().cuFuncSetAttribute(reinterpret_cast<CUfunction>(f.value), attribute,
                                           value);
}

RUN(cuFuncGetParamInfo) {
  const Symbol& f = a.h().need(a.next(), Kind::function);
  const std::size_t index = a.u();
  std::size_t offset = 0, size = 0;
  const CUresult r = a.h().driver().cuFuncGetParamInfo(reinterpret_cast<CUfunction>(f.value),
                                                       index, &offset, &size);
  if (r == CUDA_SUCCESS) {
    a.h().detail += " at=" + std::to_string(offset) + "/" + std::to_string(size);
  }
  return r;
}

RUN(cuLaunchKernel) {
  const std::string function_name = a.next();
  const Symbol& function = a.h().need(function_name, Kind::function);
  const unsigned grid = a.u(), block = a.u(), shared = a.u();
  std::string stream_name;
  const CUstream stream = a.stream(&stream_name);
  KernelArgs k;
  kernel_args(a, function, &k);
  bool ends_loop = false;
  std::string body;
  check_condition_launch(a.h(), stream_name, k, &ends_loop, &body);
  if (a.h().body_capture(stream_name)) {
    // Nothing that could fail (and so invalidate a body's capture): a shape within the limits.
    if (grid == 0 || grid > 64 || block == 0 || block > 1024 || shared != 0) throw Skip{};
  }
  const CUresult r = ordered(a, stream_name, k.uses, k.writes, [&] {
    return a.h().driver().cuLaunchKernel(reinterpret_cast<CUfunction>(function.value), grid, 1, 1,
                                         block, 1, 1, shared, stream, k.params.data(), nullptr);
  });
  if (r == CUDA_SUCCESS && ends_loop) {
    if (Symbol* b = const_cast<Symbol*>(a.h().find(body))) b->terminates = true;
  }
  if (r == CUDA_SUCCESS && !k.cond.empty()) a.h().condition_set(stream_name, k.cond);
  return r;
}

// function grid block shared stream programmatic(0|1) priority(-|int) kernel-args...
RUN(cuLaunchKernelEx) {
  const std::string function_name = a.next();
  const Symbol& function = a.h().need(function_name, Kind::function);
  const unsigned grid = a.u(), block = a.u(), shared = a.u();
  std::string stream_name;
  const CUstream stream = a.stream(&stream_name);
  const bool programmatic = a.u() != 0;
  const std::string priority = a.next();
  KernelArgs k;
  kernel_args(a, function, &k);
  if (programmatic && !programmatic_safe(function, k)) throw Skip{};
  bool ends_loop = false;
  std::string body;
  check_condition_launch(a.h(), stream_name, k, &ends_loop, &body);
  if (a.h().body_capture(stream_name)) {
    // Nothing that could fail (and so invalidate a body's capture): a shape within the limits,
    // no attributes (not measured inside a conditional body).
    if (grid == 0 || grid > 64 || block == 0 || block > 1024 || shared != 0) throw Skip{};
    if (programmatic || priority != "-") throw Skip{};
  }
  LaunchAttributeList attributes;
  if (programmatic) attributes.programmatic();
  if (priority != "-") attributes.priority(std::stoi(priority));
  CUlaunchConfig config = launch_config(LaunchDims{.grid = {grid}, .block = {block}, .shared_bytes = shared}, stream,
                                        attributes.count > 0 ? &attributes : nullptr);
  const CUresult r = ordered(a, stream_name, k.uses, k.writes, [&] {
    return a.h().driver().cuLaunchKernelEx(&config, reinterpret_cast<CUfunction>(function.value),
                                           k.params.data(), nullptr);
  });
  if (r == CUDA_SUCCESS && ends_loop) {
    if (Symbol* b = const_cast<Symbol*>(a.h().find(body))) b->terminates = true;
  }
  if (r == CUDA_SUCCESS && !k.cond.empty()) a.h().condition_set(stream_name, k.cond);
  return r;
}

// both | least | greatest | none: which of the two pointers is given.
RUN(cuCtxGetStreamPriorityRange) {
  const std::string which = a.next();
  int least = 99, greatest = 99;
  const CUresult r = a.h().driver().cuCtxGetStreamPriorityRange(
      which == "both" || which == "least" ? &least : nullptr,
      which == "both" || which == "greatest" ? &greatest : nullptr);
  if (r == CUDA_SUCCESS) {
    a.h().detail += " least=" + std::to_string(least) + " greatest=" + std::to_string(greatest);
  }
  return r;
}

RUN(cuGraphGetNodes) {
  const CUgraph graph = a.graph();
  const std::string how = a.next();
  std::size_t count = 0;
  CUresult r = CUDA_SUCCESS;
  if (how == "count") {
    r = a.h().driver().cuGraphGetNodes(graph, nullptr, &count);
  } else {
    std::vector<CUgraphNode> nodes(how == "2" ? 2 : 64, nullptr);
    count = nodes.size();
    r = a.h().driver().cuGraphGetNodes(graph, nodes.data(), &count);
    if (r == CUDA_SUCCESS) {
      std::size_t filled = 0;
      for (CUgraphNode node : nodes) filled += node != nullptr ? 1 : 0;
      a.h().detail += " filled=" + std::to_string(filled);
    }
  }
  if (r == CUDA_SUCCESS) a.h().detail += " n=" + std::to_string(count);
  return r;
}

RUN(cuGraphNodeGetType) {
  const CUgraphNode node = a.node();
  CUgraphNodeType type{};
  const CUresult r = a.h().driver().cuGraphNodeGetType(node, &type);
  if (r == CUDA_SUCCESS) a.h().detail += " type=" + std::to_string(static_cast<int>(type));
  return r;
}

RUN(cuGraphInstantiateWithFlags) {
  const std::string name = a.name();
  std::string graph_name;
  const CUgraph graph = a.graph(&graph_name);
  const unsigned long long flags = a.u();
  Symbol g = a.h().need(graph_name, Kind::graph);
  merge_same(a.h(), g, g.value);
  if (!g.owner.empty()) throw Skip{};  // a body graph is instantiated with its node's graph
  need_instantiable(a.h(), g);
  CUgraphExec exec = nullptr;
  const CUresult r = a.h().driver().cuGraphInstantiateWithFlags(&exec, graph, flags);
  if (r == CUDA_SUCCESS && exec != nullptr) {
    Symbol& x = a.h().bind(name, Kind::exec, reinterpret_cast<std::uintptr_t>(exec));
    x.uses = g.uses;
    x.writes = g.writes;
    x.racy_writes = g.racy_writes;
    x.unset_writes = g.unset_writes;
    x.accesses = g.accesses;
    x.loops = g.loops;
    x.source = graph_name;
  }
  return r;
}

// name graph flags upload-stream (a stream, or - for NULL: only without UPLOAD, where it is
// ignored).
RUN(cuGraphInstantiateWithParams) {
  const std::string name = a.name();
  std::string graph_name;
  const CUgraph graph = a.graph(&graph_name);
  const unsigned long long flags = a.u();
  const std::string upload_token = a.next();
  CUstream upload = nullptr;
  if (upload_token != "-") {
    upload = reinterpret_cast<CUstream>(a.h().need(upload_token, Kind::stream).value);
    guard_body(a.h(), upload_token);
  } else if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0) {
    throw Skip{};  // the legacy stream would synchronise with every other
  }
  Symbol g = a.h().need(graph_name, Kind::graph);
  merge_same(a.h(), g, g.value);
  if (!g.owner.empty()) throw Skip{};  // a body graph is instantiated with its node's graph
  need_instantiable(a.h(), g);
  CUDA_GRAPH_INSTANTIATE_PARAMS params{};
  params.flags = flags;
  params.hUploadStream = upload;
  params.result_out = static_cast<CUgraphInstantiateResult>(99);  // the driver writes it
  CUgraphExec exec = nullptr;
  const CUresult r = a.h().driver().cuGraphInstantiateWithParams(&exec, graph, &params);
  a.h().detail += " r=" + std::to_string(static_cast<int>(params.result_out));
  if (params.hErrNode_out != nullptr) {
    std::vector<CUgraphNode> nodes;
    a.h().graph_nodes(graph_name, &nodes);
    auto at = std::find(nodes.begin(), nodes.end(), params.hErrNode_out);
    a.h().detail += " at=" + (at == nodes.end() ? std::string("body")
                                                : std::to_string(at - nodes.begin()));
  }
  if (r == CUDA_SUCCESS && exec != nullptr) {
    Symbol& x = a.h().bind(name, Kind::exec, reinterpret_cast<std::uintptr_t>(exec));
    x.uses = g.uses;
    x.writes = g.writes;
    x.racy_writes = g.racy_writes;
    x.unset_writes = g.unset_writes;
    x.accesses = g.accesses;
    x.loops = g.loops;
    x.source = graph_name;
  }
  return r;
}

// graph count | all (no edge data) | data | 2 (two entries, with data)
RUN(cuGraphGetEdges) {
  const CUgraph graph = a.graph();
  const std::string how = a.next();
  std::size_t count = 0;
  CUresult r = CUDA_SUCCESS;
  if (how == "count") {
    r = a.h().driver().cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &count);
  } else {
    const bool data = how != "all";
    std::vector<CUgraphNode> from(how == "2" ? 2 : 64, nullptr), to(from.size(), nullptr);
    std::vector<CUgraphEdgeData> edge_data(from.size());
    count = from.size();
    r = a.h().driver().cuGraphGetEdges(graph, from.data(), to.data(),
                                       data ? edge_data.data() : nullptr, &count);
    if (r == CUDA_SUCCESS && data) {
      std::size_t programmatic = 0;
      for (std::size_t i = 0; i < count && i < edge_data.size(); ++i) {
        programmatic += edge_data[i].type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC ? 1 : 0;
      }
      a.h().detail += " programmatic=" + std::to_string(programmatic);
    }
  }
  if (r == CUDA_SUCCESS) a.h().detail += " n=" + std::to_string(count);
  return r;
}

// node attribute-id
RUN(cuGraphKernelNodeGetAttribute) {
  const CUgraphNode node = a.node();
  const auto attribute = static_cast<CUlaunchAttributeID>(a.number());
  CUlaunchAttributeValue value;
  std::memset(&value, 0, sizeof value);
  const CUresult r = a.h().driver().cuGraphKernelNodeGetAttribute(node, attribute, &value);
  if (r == CUDA_SUCCESS && attribute == CU_LAUNCH_ATTRIBUTE_PRIORITY) {
    a.h().detail += " priority=" + std::to_string(value.priority);
  }
  return r;
}

RUN(cuGraphUpload) {
  const CUgraphExec exec = a.exec();
  std::string stream_name;
  const CUstream stream = a.stream(&stream_name);
  guard_body(a.h(), stream_name);
  return a.h().driver().cuGraphUpload(exec, stream);
}

RUN(cuGraphLaunch) {
  std::string exec_name;
  const CUgraphExec exec = a.exec(&exec_name);
  std::string stream_name;
  const CUstream stream = a.stream(&stream_name);
  guard_body(a.h(), stream_name);
  const Symbol x = a.h().need(exec_name, Kind::exec);
  need_instantiable(a.h(), x);
  std::vector<std::string> uses(x.uses.begin(), x.uses.end());
  // Graph allocations are the graph's own: live again after any launch that allocates them.
  std::vector<std::string> checked;
  for (const std::string& use : uses) {
    const Symbol* s = a.h().find(use);
    if (s != nullptr && s->graph_alloc) continue;
    checked.push_back(use);
  }
  a.h().access(stream_name, checked);
  const bool captured = a.h().capturing(stream_name);
  const CUresult r = a.h().driver().cuGraphLaunch(exec, stream);
  if (r == CUDA_SUCCESS) {
    if (!captured) {
      for (const std::string& use : uses) {
        Symbol* s = const_cast<Symbol*>(a.h().find(use));
        if (s != nullptr && s->graph_alloc) s->live = s->launched = true;
      }
    }
    const std::vector<std::string> writes(x.writes.begin(), x.writes.end());
    if (captured) {
      std::set<std::string>& racy = a.h().capture_racy[a.h().capture_of(stream_name)];
      racy.insert(x.racy_writes.begin(), x.racy_writes.end());
      std::set<std::string>& unset = a.h().capture_unset[a.h().capture_of(stream_name)];
      unset.insert(x.unset_writes.begin(), x.unset_writes.end());
      a.h().commit(stream_name, checked, writes);
    } else {
      a.h().commit(stream_name, uses, writes);
      a.h().launched(x);
    }
  }
  return r;
}

RUN(cuGraphExecUpdate) {
  std::string exec_name, graph_name;
  const CUgraphExec exec = a.exec(&exec_name);
  const CUgraph graph = a.graph(&graph_name);
  Symbol g = a.h().need(graph_name, Kind::graph);
  merge_same(a.h(), g, g.value);
  if (!g.owner.empty()) throw Skip{};
  need_instantiable(a.h(), g);
  CUgraphExecUpdateResultInfo info{};
  const CUresult r = a.h().driver().cuGraphExecUpdate(exec, graph, &info);
  a.h().detail += " r=" + std::to_string(static_cast<int>(info.result));
  if (info.errorNode != nullptr) {
    std::vector<CUgraphNode> nodes;
    a.h().graph_nodes(graph_name, &nodes);
    auto at = std::find(nodes.begin(), nodes.end(), info.errorNode);
    a.h().detail += " at=" + (at == nodes.end() ? std::string("?")
                                                : std::to_string(at - nodes.begin()));
  }
  if (r == CUDA_SUCCESS) {
    Symbol& x = a.h().need(exec_name, Kind::exec);
    x.uses.insert(g.uses.begin(), g.uses.end());
    x.writes.insert(g.writes.begin(), g.writes.end());
    x.racy_writes.insert(g.racy_writes.begin(), g.racy_writes.end());
    x.unset_writes.insert(g.unset_writes.begin(), g.unset_writes.end());
    x.loops = g.loops;
    a.h().exec_updated(x, graph_name, g);
  }
  return r;
}

RUN(cuGraphDestroy) {
  const std::string name = a.name();
  Symbol& g = a.h().need(name, Kind::graph);
  if (!g.owner.empty()) throw Skip{};  // a conditional node's body belongs to the node
  Symbol merged = g;
  merge_same(a.h(), merged, g.value);
  need_no_body_capture(a.h(), merged);
  const std::uintptr_t handle = g.value;
  const CUresult r = a.h().driver().cuGraphDestroy(reinterpret_cast<CUgraph>(handle));
  if (r == CUDA_SUCCESS) a.h().kill_graph(handle);
  return r;
}

RUN(cuGraphExecDestroy) {
  std::string name;
  const CUgraphExec exec = a.exec(&name);
  const CUresult r = a.h().driver().cuGraphExecDestroy(exec);
  if (r == CUDA_SUCCESS) a.h().kill(name);
  return r;
}

RUN(cuGraphDebugDotPrint) {
  const CUgraph graph = a.graph();
  const std::string where = a.next();
  const unsigned flags = a.u();
  const std::string path = where == "ok" ? "/tmp/graphcap-fidelity-" + std::to_string(getpid()) + ".dot"
                                         : "/nonexistent-graphcap-fidelity/graph.dot";
  return a.h().driver().cuGraphDebugDotPrint(graph, path.c_str(), flags);
}

RUN(cuGetErrorName) {
  const auto code = static_cast<CUresult>(a.number());
  const char* text = nullptr;
  const CUresult r = a.h().driver().cuGetErrorName(code, &text);
  a.h().detail += std::string(" s=") + (text == nullptr ? "NULL" : text);
  return r;
}

RUN(cuGetErrorString) {
  const auto code = static_cast<CUresult>(a.number());
  const char* text = nullptr;
  const CUresult r = a.h().driver().cuGetErrorString(code, &text);
  std::string shown = text == nullptr ? "NULL" : text;
  std::replace(shown.begin(), shown.end(), ' ', '_');
  a.h().detail += " s=" + shown;
  return r;
}

RUN(cuGraphExecKernelNodeSetParams) {
  std::string exec_name;
  const CUgraphExec exec = a.exec(&exec_name);
  const std::string node_token = a.next();
  const Symbol& x = a.h().need(exec_name, Kind::exec);
  if (!x.loops.empty()) throw Skip{};  // never re-aim a loop's kernels
  if (node_token.substr(0, node_token.find('#')) != x.source) throw Skip{};
  const CUgraphNode node = a.node(node_token);
  const std::string function_name = a.next();
  const Symbol& function = a.h().need(function_name, Kind::function);
  if (function.kernel == "set_condition") throw Skip{};
  CUDA_KERNEL_NODE_PARAMS params{};
  params.func = reinterpret_cast<CUfunction>(function.value);
  params.gridDimX = a.u();
  params.gridDimY = params.gridDimZ = 1;
  params.blockDimX = a.u();
  params.blockDimY = params.blockDimZ = 1;
  KernelArgs k;
  kernel_args(a, function, &k);
  a.h().need_allocation_in_scope(0, k.uses);
  // A programmatic node keeps its edge: only a kernel that waits for its predecessor is defined
  // there.
  if (const Symbol* source = a.h().find(x.source);
      source == nullptr ||
      (programmatic_node(a.h(), reinterpret_cast<CUgraph>(source->value), node) &&
       !programmatic_safe(function, k))) {
    throw Skip{};
  }
  params.kernelParams = k.params.data();
  const CUresult r = a.h().driver().cuGraphExecKernelNodeSetParams(exec, node, &params);
  if (r == CUDA_SUCCESS) {
    Symbol& changed = a.h().need(exec_name, Kind::exec);
    changed.uses.insert(k.uses.begin(), k.uses.end());
    changed.writes.insert(k.writes.begin(), k.writes.end());
    a.h().kernel_node_changed(changed, reinterpret_cast<std::uintptr_t>(node), k.uses, k.writes);
  }
  return r;
}

RUN(cuGraphConditionalHandleCreate) {
  const std::string name = a.name();
  std::string graph_name;
  const CUgraph graph = a.graph(&graph_name);
  const std::string context = a.next();
  const unsigned value = a.u(), flags = a.u();
  CUgraphConditionalHandle handle = 0;
  const CUresult r = a.h().driver().cuGraphConditionalHandleCreate(
      &handle, graph, context == "primary" ? a.h().context() : nullptr, value, flags);
  if (r == CUDA_SUCCESS) {
    Symbol& cond = a.h().bind(name, Kind::cond, handle);
    cond.owner = graph_name;
    cond.assign_default = (flags & kGraphCondAssignDefault) != 0;
  }
  return r;
}

RUN(cuGraphAddNode) {
  const std::string prefix = a.name();
  std::string graph_name;
  const CUgraph graph = a.graph(&graph_name);
  std::string after;  // the stream whose capture dependencies the node follows, if given so
  if (const std::string& deps = a.peek(); deps.size() > 1 && deps[0] == '@') after = deps.substr(1);
  const std::vector<CUgraphNode> deps = a.nodes();
  const std::string type = a.next();
  const std::string cond_name = a.next();
  // Whether the handle's value is defined when the node runs (races.cc), known before the node.
  const bool defined = a.h().condition_defined(graph_name, cond_name, after);
  const Symbol& cond = a.h().need(cond_name, Kind::cond);
  const unsigned size = a.u();
  const CUgraphConditionalNodeType kind = type == "WHILE" ? CU_GRAPH_COND_TYPE_WHILE
                                          : type == "IF"  ? CU_GRAPH_COND_TYPE_IF
                                                          : CU_GRAPH_COND_TYPE_SWITCH;
  CUgraphNodeParams params =
      conditional_node_params(static_cast<CUgraphConditionalHandle>(cond.value), kind, size, a.h().context());
  CUgraphNode node = nullptr;
  const CUresult r = a.h().driver().cuGraphAddNode(&node, graph, deps.data(), nullptr,
                                                   deps.size(), &params);
  if (r == CUDA_SUCCESS) {
    Symbol& g = a.h().need(graph_name, Kind::graph);
    for (unsigned i = 0; i < size && params.conditional.phGraph_out != nullptr; ++i) {
      const std::string body = prefix + "." + std::to_string(i);
      Symbol& b = a.h().bind(
          body, Kind::graph, reinterpret_cast<std::uintptr_t>(params.conditional.phGraph_out[i]));
      b.owner = graph_name;
      b.unset_body = !defined;
      g.bodies.push_back(body);
      if (type == "WHILE") {
        g.loops.emplace_back(cond_name, body);
        a.h().body_handle[body] = cond_name;
      }
    }
    a.h().observe_graphs.push_back(graph_name);
  }
  return r;
}

RUN(cuStreamUpdateCaptureDependencies) {
  std::string name;
  const CUstream stream = a.stream(&name);
  std::vector<CUgraphNode> deps = a.nodes();
  const unsigned flags = a.u();
  guard_body(a.h(), name);
  const CUresult r = a.h().driver().cuStreamUpdateCaptureDependencies(stream, deps.data(), nullptr,
                                                                      deps.size(), flags);
  // Set to none: what the stream captures next is ordered after nothing captured before.
  if (r == CUDA_SUCCESS && flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES && deps.empty()) {
    a.h().new_lane(name);
  }
  return r;
}

RUN(cuStreamBeginCaptureToGraph) {
  std::string name, graph_name;
  const CUstream stream = a.stream(&name);
  const CUgraph graph = a.graph(&graph_name);
  const std::vector<CUgraphNode> deps = a.nodes();
  const CUstreamCaptureMode mode = a.mode();
  const Symbol& g = a.h().need(graph_name, Kind::graph);
  // A body is captured only in RELAXED mode, so that no unsafe call elsewhere invalidates it.
  if (!g.owner.empty() && mode != CU_STREAM_CAPTURE_MODE_RELAXED) throw Skip{};
  // Not defined: a capture into a graph another capture is building (the graph
  // cuStreamGetCaptureInfo named, or one being captured into). The H200's driver crashed the
  // process (SIGSEGV) in 115 of 10,000 programs (2026-12-04) at such a call;
  // docs/cuda-driver-facts.md, "Found by generated programs".
  if (g.borrowed) throw Skip{};
  for (const auto& [id, target] : a.h().capture_target) {
    if (const Symbol* t = a.h().find(target); t != nullptr && t->live && t->value == g.value) {
      throw Skip{};
    }
  }
  for (const auto& [pending, target] : a.h().pending_target) {
    if (const Symbol* t = a.h().find(target); t != nullptr && t->live && t->value == g.value) {
      throw Skip{};
    }
  }
  const CUresult r = a.h().driver().cuStreamBeginCaptureToGraph(stream, graph, deps.data(),
                                                                nullptr, deps.size(), mode);
  if (r == CUDA_SUCCESS) a.h().pending_target[name] = graph_name;
  return r;
}

RUN(cuDeviceCanAccessPeer) {
  const CUdevice device = static_cast<CUdevice>(a.number());
  const CUdevice peer = static_cast<CUdevice>(a.number());
  int can = -1;
  const CUresult r = a.h().driver().cuDeviceCanAccessPeer(&can, device, peer);
  if (r == CUDA_SUCCESS) a.h().detail += " v=" + std::to_string(can);
  return r;
}

RUN(cuCtxEnablePeerAccess) {
  const std::string which = a.next();
  const unsigned flags = a.u();
  return a.h().driver().cuCtxEnablePeerAccess(which == "primary" ? a.h().context() : nullptr,
                                              flags);
}

using Runner = CUresult (*)(Args&);
struct EntryRunner {
  std::string_view name;
  Runner run;
};

constexpr EntryRunner kRunners[] = {
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  {entry::name::kName, &run_entry<entry::name>},
#include <graphcap/driver/entry_points.def>
};

}  // namespace

CUresult run_call(Harness& harness, const Call& call) {
  for (const EntryRunner& runner : kRunners) {
    if (runner.name == call.entry) {
      Args args(harness, call);
      return runner.run(args);
    }
  }
  throw Skip{};
}

}  // namespace graphcap::fidelity
