#include "harness.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace graphcap::fidelity {

Worker::Worker() : thread_([this] {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || task_ != nullptr; });
    if (stop_) return;
    (*task_)();
    task_ = nullptr;
    cv_.notify_all();
  }
}) {}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Worker::run(const std::function<void()>& task) {
  std::unique_lock<std::mutex> lock(mutex_);
  task_ = &task;
  cv_.notify_all();
  cv_.wait(lock, [this] { return task_ == nullptr; });
}

std::span<Worker> workers() {
  static Worker* pool = new Worker[kThreads];  // never destroyed: programs may run until exit
  return {pool, kThreads};
}

namespace {

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    throw std::runtime_error(std::string("graphcap-fidelity harness: ") + what + " returned " +
                             std::to_string(result));
  }
}

// Words as runs: "7x64" (64 sevens), "0+2x8" (0, 2, ..., 14), "5" (one word).
std::string encode_words(const std::vector<std::uint32_t>& words) {
  std::string out;
  std::size_t i = 0;
  while (i < words.size()) {
    std::size_t j = i + 1;
    std::uint32_t step = 0;
    if (j < words.size()) {
      step = words[j] - words[i];
      while (j + 1 < words.size() && words[j + 1] - words[j] == step) ++j;
      if (step != 0 && j - i < 2) j = i;  // two words are not a run
      ++j;
      if (j > words.size()) j = words.size();
    }
    if (!out.empty()) out += ",";
    out += std::to_string(words[i]);
    if (j - i > 1) {
      if (step != 0) out += "+" + std::to_string(step);
      out += "x" + std::to_string(j - i);
    }
    i = j;
  }
  return out;
}

const char* status_letter(CUstreamCaptureStatus status) {
  switch (status) {
    case CU_STREAM_CAPTURE_STATUS_NONE: return "N";
    case CU_STREAM_CAPTURE_STATUS_ACTIVE: return "A";
    case CU_STREAM_CAPTURE_STATUS_INVALIDATED: return "I";
  }
  return "?";
}

}  // namespace

Harness::Harness(DriverApi& driver, std::span<const std::byte> image)
    : driver_(driver), image_(image) {
  check(driver_.cuInit(0), "cuInit");
  check(driver_.cuDeviceGet(&device_, 0), "cuDeviceGet");
  check(driver_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  check(driver_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
  check(driver_.cuThreadExchangeStreamCaptureMode(&relaxed), "cuThreadExchangeStreamCaptureMode");
  check(driver_.cuStreamCreate(&observer_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  // Two pageable host buffers every program may copy from and into.
  for (const char* name : {"p1", "p2"}) {
    auto* bytes = new std::byte[kPageableBytes];
    Symbol& pageable = bind(name, Kind::pageable, reinterpret_cast<std::uintptr_t>(bytes));
    pageable.bytes = kPageableBytes;
    std::memset(bytes, 0x60 + pageable.order, kPageableBytes);
  }
  for (Worker& worker : workers()) {
    worker.run([&] {
      check(driver_.cuCtxSetCurrent(context_), "cuCtxSetCurrent (worker)");
      CUstreamCaptureMode global = CU_STREAM_CAPTURE_MODE_GLOBAL;
      check(driver_.cuThreadExchangeStreamCaptureMode(&global), "capture mode (worker)");
    });
  }
}

Harness::~Harness() {
  try {
    finish();
  } catch (...) {
  }
}

const Symbol* Harness::find(const std::string& name) const {
  auto it = symbols_.find(name);
  return it == symbols_.end() ? nullptr : &it->second;
}

std::vector<std::string> Harness::live(Kind kind) const {
  std::vector<std::pair<int, std::string>> found;
  for (const auto& [name, symbol] : symbols_) {
    if (symbol.kind == kind && symbol.live) found.emplace_back(symbol.order, name);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> names;
  for (auto& [order, name] : found) names.push_back(name);
  return names;
}

bool Harness::capturing(const std::string& stream) const {
  const Symbol* s = find(stream);
  return s != nullptr && s->live && s->status != "N" && s->status[0] != 'E';
}

bool Harness::any_capture() const {
  for (const auto& [name, symbol] : symbols_) {
    if (symbol.kind == Kind::stream && symbol.live && capturing(name)) return true;
  }
  return false;
}

Symbol& Harness::need(const std::string& name, Kind kind) {
  auto it = symbols_.find(name);
  if (it == symbols_.end() || !it->second.live || it->second.kind != kind) throw Skip{};
  return it->second;
}

Symbol& Harness::bind(const std::string& name, Kind kind, std::uintptr_t value) {
  Symbol& symbol = symbols_[name];
  symbol = Symbol{};
  symbol.kind = kind;
  symbol.value = value;
  symbol.live = true;
  symbol.order = next_order_++;
  return symbol;
}

void Harness::kill(const std::string& name) {
  if (auto it = symbols_.find(name); it != symbols_.end()) it->second.live = false;
}

void Harness::kill_graph(std::uintptr_t handle) {
  std::vector<std::string> bodies;
  for (auto& [name, symbol] : symbols_) {
    if (symbol.kind == Kind::graph && symbol.live && symbol.value == handle) {
      symbol.live = false;
      bodies.insert(bodies.end(), symbol.bodies.begin(), symbol.bodies.end());
      for (auto& [other_name, other] : symbols_) {
        if (other.kind == Kind::cond && other.owner == name) other.live = false;
      }
    }
  }
  for (const std::string& body : bodies) {
    if (const Symbol* s = find(body); s != nullptr && s->live) kill_graph(s->value);
  }
}

void Harness::capture_ended(std::uint64_t capture, CUresult ended) {
  if (ended != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED &&
      ended != CUDA_ERROR_STREAM_CAPTURE_UNJOINED &&
      ended != CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) {
    return;
  }
  auto target = capture_target.find(capture);
  if (target == capture_target.end()) return;
  const Symbol* t = find(target->second);
  if (t != nullptr && t->live && t->owner.empty()) kill_graph(t->value);
}

Clock Harness::stream_clock(const std::string& stream) {
  Symbol& s = symbols_.at(stream);
  for (const auto& [other, seq] : host_) s.clock[other] = std::max(s.clock[other], seq);
  s.clock[stream] = s.seq;
  return s.clock;
}

bool Harness::complete(const Symbol& used) const {
  if (used.last.stream.empty()) return true;
  auto it = host_.find(used.last.stream);
  return it != host_.end() && it->second >= used.last.seq;
}

void Harness::need_complete(const std::string& name) {
  auto it = symbols_.find(name);
  if (it == symbols_.end() || !complete(it->second)) throw Skip{};
}

void Harness::need_unused(const std::string& module) {
  for (const auto& [name, symbol] : symbols_) {
    if ((symbol.kind == Kind::graph || symbol.kind == Kind::exec) && symbol.live &&
        symbol.uses.count(module) != 0) {
      throw Skip{};
    }
  }
  for (const auto& [id, uses] : capture_uses) {
    if (uses.count(module) != 0) throw Skip{};
  }
}

bool Harness::body_capture(const std::string& stream) const {
  const Symbol* s = find(stream);
  if (s == nullptr || !capturing(stream)) return false;
  auto target = capture_target.find(s->capture);
  if (target == capture_target.end()) return false;
  const Symbol* graph = find(target->second);
  return graph != nullptr && !graph->owner.empty();
}

std::uint64_t Harness::capture_of(const std::string& stream) const {
  const Symbol* s = find(stream);
  return s == nullptr || !capturing(stream) ? 0 : s->capture;
}

void Harness::need_allocation_in_scope(std::uint64_t capture,
                                       const std::vector<std::string>& uses) const {
  for (const std::string& use : uses) {
    const Symbol* s = find(use);
    if (s != nullptr && s->kind == Kind::buffer && s->graph_alloc && !s->launched &&
        s->capture != capture) {
      throw Skip{};
    }
  }
}

void Harness::access(const std::string& stream, const std::vector<std::string>& uses) {
  if (capturing(stream)) return;  // recorded, not run
  const Clock clock = stream_clock(stream);
  for (const std::string& use : uses) {
    auto it = symbols_.find(use);
    if (it == symbols_.end() || !it->second.live) throw Skip{};
    const Use& last = it->second.last;
    if (last.stream.empty()) continue;
    auto known = clock.find(last.stream);
    if (known == clock.end() || known->second < last.seq) throw Skip{};
  }
}

void Harness::commit(const std::string& stream, const std::vector<std::string>& uses,
                     const std::optional<std::vector<std::string>>& writes) {
  const std::vector<std::string>& written = writes ? *writes : uses;
  if (capturing(stream)) {
    const std::uint64_t id = capture_of(stream);
    capture_uses[id].insert(uses.begin(), uses.end());
    captured_access(stream, uses, written);
    return;
  }
  eager_access(uses, written);
  Symbol& s = symbols_.at(stream);
  ++s.seq;
  s.clock[stream] = s.seq;
  for (const std::string& use : uses) {
    symbols_.at(use).last = Use{stream, s.seq};
  }
}

void Harness::host_waited(const Clock& clock) {
  for (const auto& [stream, seq] : clock) host_[stream] = std::max(host_[stream], seq);
  synchronized = true;
}

void Harness::graph_nodes(const std::string& graph, std::vector<CUgraphNode>* nodes) {
  const Symbol& g = need(graph, Kind::graph);
  std::size_t count = 0;
  nodes->clear();
  if (driver_.cuGraphGetNodes(reinterpret_cast<CUgraph>(g.value), nullptr, &count) !=
      CUDA_SUCCESS) {
    return;
  }
  nodes->resize(count);
  if (count > 0 &&
      driver_.cuGraphGetNodes(reinterpret_cast<CUgraph>(g.value), nodes->data(), &count) !=
          CUDA_SUCCESS) {
    nodes->clear();
  }
  nodes->resize(std::min(count, nodes->size()));
}

Observation Harness::run(const Call& call) {
  detail.clear();
  synchronized = false;
  observe_graphs.clear();
  thread = call.thread;
  bool skipped = false;
  CUresult code = CUDA_SUCCESS;
  workers()[static_cast<std::size_t>(call.thread) % kThreads].run([&] {
    try {
      code = run_call(*this, call);
    } catch (const Skip&) {
      skipped = true;
    }
  });
  Observation observation;
  if (skipped) {
    unnamed_nodes_.clear();
    observation.skipped = true;
    return observation;
  }
  name_captured_nodes();
  observation.code = code;
  for (const std::string& name : pending_init) {
    // A fresh allocation's bytes are undefined on a GPU: the harness fills it first (on its own
    // stream, in RELAXED mode, so no capture rule is involved), with a byte of the buffer's own.
    Symbol& buffer = symbols_.at(name);
    const unsigned char pattern = static_cast<unsigned char>(0x10 + buffer.order % 64);
    if (driver_.cuMemsetD8Async(static_cast<CUdeviceptr>(buffer.value), pattern, buffer.bytes,
                                observer_) != CUDA_SUCCESS ||
        driver_.cuStreamSynchronize(observer_) != CUDA_SUCCESS) {
      throw std::runtime_error("graphcap-fidelity harness: could not fill a new allocation");
    }
  }
  pending_init.clear();
  for (const std::string& graph : observe_graphs) {
    std::vector<CUgraphNode> nodes;
    if (find(graph) == nullptr || !find(graph)->live) continue;
    graph_nodes(graph, &nodes);
    std::string types;
    for (CUgraphNode node : nodes) {
      CUgraphNodeType type{};
      if (driver_.cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) {
        types += "?";
      } else {
        types += std::to_string(static_cast<int>(type));
      }
      types += ".";
    }
    if (!types.empty()) types.pop_back();
    detail += " ; " + graph + "=[" + types + "]";
  }
  observe_streams();
  if (synchronized) snapshot();
  observation.detail = detail;
  return observation;
}

void Harness::observe_streams() {
  std::set<std::uint64_t> present;
  for (const std::string& name : live(Kind::stream)) {
    Symbol& s = symbols_.at(name);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    std::size_t deps = 0;
    const CUresult r = driver_.cuStreamGetCaptureInfo(reinterpret_cast<CUstream>(s.value),
                                                      &status, &id, nullptr, nullptr, nullptr,
                                                      &deps);
    std::string shown;
    if (r != CUDA_SUCCESS) {
      shown = "E" + std::to_string(r);
    } else if (status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      auto [it, fresh] = capture_numbers_.emplace(id, static_cast<int>(capture_numbers_.size()) + 1);
      (void)fresh;
      shown = "A" + std::to_string(it->second) + "/" + std::to_string(deps);
      s.capture = id;
    } else {
      shown = status_letter(status);
      if (status == CU_STREAM_CAPTURE_STATUS_NONE) {
        s.capture = 0;
        s.lane.clear();
        s.captured_seq = 0;
        s.captured_clock.clear();
      }
    }
    if (s.capture != 0) present.insert(s.capture);
    if (auto target = pending_target.find(name); target != pending_target.end()) {
      if (status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        capture_target[s.capture] = target->second;
        capture_origin[s.capture] = name;
        if (const Symbol* graph = find(target->second)) capture_into(s.capture, *graph);
      }
      pending_target.erase(target);
    }
    if (shown != s.status) {
      detail += " ; " + name + ":" + shown;
      s.status = shown;
    }
  }
  // A capture no stream is in any more: what it recorded is gone with it (a capture that ended
  // into a graph handed its uses over when it ended); so are graphs named from it.
  for (auto it = capture_uses.begin(); it != capture_uses.end();) {
    it = present.count(it->first) != 0 ? std::next(it) : capture_uses.erase(it);
  }
  for (auto it = capture_loops.begin(); it != capture_loops.end();) {
    it = present.count(it->first) != 0 ? std::next(it) : capture_loops.erase(it);
  }
  for (auto it = capture_target.begin(); it != capture_target.end();) {
    it = present.count(it->first) != 0 ? std::next(it) : capture_target.erase(it);
  }
  for (auto it = capture_origin.begin(); it != capture_origin.end();) {
    it = present.count(it->first) != 0 ? std::next(it) : capture_origin.erase(it);
  }
  for (auto* per_capture : {&capture_racy, &capture_writes, &capture_prior, &capture_unset}) {
    for (auto it = per_capture->begin(); it != per_capture->end();) {
      it = present.count(it->first) != 0 ? std::next(it) : per_capture->erase(it);
    }
  }
  for (auto it = capture_sets.begin(); it != capture_sets.end();) {
    it = present.count(it->first) != 0 ? std::next(it) : capture_sets.erase(it);
  }
  for (auto it = capture_accesses.begin(); it != capture_accesses.end();) {
    it = present.count(it->first) != 0 ? std::next(it) : capture_accesses.erase(it);
  }
  // A graph's allocations exist only inside its capture and after a launch of it.
  for (auto& [name, symbol] : symbols_) {
    if (symbol.kind == Kind::buffer && symbol.graph_alloc && symbol.live && !symbol.launched &&
        present.count(symbol.capture) == 0) {
      symbol.live = false;
    }
  }
  for (auto it = capture_borrowed.begin(); it != capture_borrowed.end();) {
    if (present.count(it->first) != 0) {
      ++it;
      continue;
    }
    for (const std::string& name : it->second) {
      Symbol* g = symbols_.count(name) != 0 ? &symbols_.at(name) : nullptr;
      if (g == nullptr || !g->live) continue;
      // Still a graph of the program (ended into, or captured into)? Then only the name goes.
      bool kept = false;
      for (const auto& [other, symbol] : symbols_) {
        kept = kept || (other != name && symbol.kind == Kind::graph && symbol.live &&
                        !symbol.borrowed && symbol.value == g->value);
      }
      if (kept) {
        g->live = false;
      } else {
        kill_graph(g->value);
      }
    }
    it = capture_borrowed.erase(it);
  }
}

void Harness::snapshot() {
  std::vector<std::pair<int, std::string>> buffers;
  for (const auto& [name, symbol] : symbols_) {
    const bool memory = symbol.kind == Kind::buffer || symbol.kind == Kind::host ||
                        symbol.kind == Kind::pageable;
    if (memory && symbol.live && !symbol.graph_alloc && complete(symbol)) {
      buffers.emplace_back(symbol.order, name);
    }
  }
  std::sort(buffers.begin(), buffers.end());
  // Every device buffer copied into one pinned staging area, then one wait.
  std::size_t total = 0;
  for (const auto& [order, name] : buffers) {
    if (symbols_.at(name).kind == Kind::buffer) total += (symbols_.at(name).bytes + 3) / 4 * 4;
  }
  if (total > staging_bytes_) {
    if (staging_ != nullptr) (void)driver_.cuMemFreeHost(staging_);
    staging_ = nullptr;
    staging_bytes_ = 0;
    if (driver_.cuMemAllocHost(&staging_, total) != CUDA_SUCCESS) {
      throw std::runtime_error("graphcap-fidelity harness: no pinned staging memory");
    }
    staging_bytes_ = total;
  }
  std::size_t at = 0;
  bool copied = true;
  for (const auto& [order, name] : buffers) {
    const Symbol& buffer = symbols_.at(name);
    if (buffer.kind != Kind::buffer) continue;
    copied = copied && driver_.cuMemcpyDtoHAsync(static_cast<std::byte*>(staging_) + at,
                                                 static_cast<CUdeviceptr>(buffer.value),
                                                 buffer.bytes, observer_) == CUDA_SUCCESS;
    at += (buffer.bytes + 3) / 4 * 4;
  }
  copied = copied && (total == 0 || driver_.cuStreamSynchronize(observer_) == CUDA_SUCCESS);
  at = 0;
  for (const auto& [order, name] : buffers) {
    Symbol& buffer = symbols_.at(name);
    std::vector<std::uint32_t> words((buffer.bytes + 3) / 4, 0);
    if (buffer.kind == Kind::buffer) {
      std::memcpy(words.data(), static_cast<std::byte*>(staging_) + at, buffer.bytes);
      at += (buffer.bytes + 3) / 4 * 4;
    } else {
      std::memcpy(words.data(), reinterpret_cast<const void*>(buffer.value), buffer.bytes);
    }
    std::string shown = copied || buffer.kind != Kind::buffer ? encode_words(words) : "unreadable";
    if (buffer.racy) {
      // Shown at every synchronisation whatever the bytes, so that what is shown does not
      // depend on them; "~" as the last shown, so the first known bytes after are shown too.
      detail += " ; " + name + "~=" + shown;
      buffer.shown = "~";
    } else if (buffer.unset) {
      // Likewise for bytes a conditional value the program does not define steers (races.cc).
      detail += " ; " + name + "?=" + shown;
      buffer.shown = "~";
    } else if (shown != buffer.shown) {
      detail += " ; " + name + "=" + shown;
      buffer.shown = std::move(shown);
    }
  }
}

void Harness::finish() {
  if (finished_) return;
  finished_ = true;
  // Captures first: bodies of conditional nodes before the graphs holding them, then the rest.
  auto end_captures = [&](bool bodies) {
    for (const std::string& name : live(Kind::stream)) {
      Symbol& s = symbols_.at(name);
      if (!capturing(name)) continue;
      const bool body = capture_target.count(s.capture) != 0 &&
                        find(capture_target.at(s.capture)) != nullptr &&
                        !find(capture_target.at(s.capture))->owner.empty();
      if (body != bodies) continue;
      CUgraph graph = nullptr;
      const CUresult r = driver_.cuStreamEndCapture(reinterpret_cast<CUstream>(s.value), &graph);
      const bool known = std::any_of(symbols_.begin(), symbols_.end(), [&](const auto& entry) {
        return entry.second.kind == Kind::graph && entry.second.live && entry.second.value ==
                                                       reinterpret_cast<std::uintptr_t>(graph);
      });
      if (r == CUDA_SUCCESS && graph != nullptr && !known) (void)driver_.cuGraphDestroy(graph);
      // Not destroyed again below (seed 12, program 5168, 2026-12-04: the H200's driver
      // crashed, SIGSEGV, once in two runs of the program, destroying such a graph a second time).
      capture_ended(s.capture, r);
      s.status = "N";
    }
  };
  end_captures(true);
  end_captures(false);
  (void)driver_.cuCtxSynchronize();
  std::set<std::uintptr_t> done;
  auto each = [&](Kind kind, auto release) {
    for (const std::string& name : live(kind)) {
      Symbol& s = symbols_.at(name);
      if (!s.owner.empty() || s.borrowed || !done.insert(s.value).second) continue;
      release(s);
      s.live = false;
    }
  };
  each(Kind::exec, [&](Symbol& s) {
    (void)driver_.cuGraphExecDestroy(reinterpret_cast<CUgraphExec>(s.value));
  });
  each(Kind::graph, [&](Symbol& s) {
    (void)driver_.cuGraphDestroy(reinterpret_cast<CUgraph>(s.value));
  });
  each(Kind::event, [&](Symbol& s) {
    (void)driver_.cuEventDestroy(reinterpret_cast<CUevent>(s.value));
  });
  each(Kind::stream, [&](Symbol& s) {
    (void)driver_.cuStreamDestroy(reinterpret_cast<CUstream>(s.value));
  });
  each(Kind::buffer, [&](Symbol& s) {
    (void)driver_.cuMemFree(static_cast<CUdeviceptr>(s.value));
  });
  // Graph allocations a launch left (cuGraphDestroy does not free them): free what is allocated.
  for (auto& [name, s] : symbols_) {
    if (s.kind == Kind::buffer && s.graph_alloc && s.live && s.launched &&
        done.insert(s.value).second) {
      (void)driver_.cuMemFree(static_cast<CUdeviceptr>(s.value));
    }
  }
  each(Kind::host, [&](Symbol& s) {
    (void)driver_.cuMemFreeHost(reinterpret_cast<void*>(s.value));
  });
  for (auto& [name, s] : symbols_) {
    if (s.kind == Kind::pageable && s.live) {
      delete[] reinterpret_cast<std::byte*>(s.value);
      s.live = false;
    }
  }
  // Virtual memory: unmap, free the ranges, release the physical allocations (by kind, not by
  // value: a handle and an address may be equal numbers).
  for (auto& [name, s] : symbols_) {
    if (s.kind != Kind::vrange || !s.live) continue;
    if (!s.mapped.empty()) {
      (void)driver_.cuMemUnmap(static_cast<CUdeviceptr>(s.value), s.mapped_bytes);
    }
    (void)driver_.cuMemAddressFree(static_cast<CUdeviceptr>(s.value), s.bytes);
    s.live = false;
  }
  for (auto& [name, s] : symbols_) {
    if (s.kind != Kind::vmem || !s.live) continue;
    (void)driver_.cuMemRelease(static_cast<CUmemGenericAllocationHandle>(s.value));
    s.live = false;
  }
  each(Kind::module, [&](Symbol& s) {
    (void)driver_.cuModuleUnload(reinterpret_cast<CUmodule>(s.value));
  });
  for (; retained_ > 0; --retained_) (void)driver_.cuDevicePrimaryCtxRelease(device_);
  for (Worker& worker : workers()) {
    worker.run([&] {
      (void)driver_.cuCtxSetCurrent(context_);
      CUstreamCaptureMode global = CU_STREAM_CAPTURE_MODE_GLOBAL;
      (void)driver_.cuThreadExchangeStreamCaptureMode(&global);
    });
  }
  (void)driver_.cuStreamDestroy(observer_);
  if (staging_ != nullptr) (void)driver_.cuMemFreeHost(staging_);
  CUstreamCaptureMode global = CU_STREAM_CAPTURE_MODE_GLOBAL;
  (void)driver_.cuThreadExchangeStreamCaptureMode(&global);
  (void)driver_.cuDevicePrimaryCtxRelease(device_);
}

}  // namespace graphcap::fidelity
