#include "many_graphs/model.h"

#include <algorithm>

#include "test_driver.h"

namespace graphcap::testing::many_graphs {
namespace {

constexpr int kFaultSequencePercent = 30;  // sequences that inject faults

}  // namespace

model::Outcomes& outcomes() {
  static model::Outcomes counts;
  return counts;
}

const char* kind_name(Op::Kind kind) {
  switch (kind) {
    case Op::add_one: return "launch add_one";
    case Op::copy_kernel: return "launch copy";
    case Op::fill_kernel: return "launch fill";
    case Op::fill_param: return "launch fill(param)";
    case Op::device_copy: return "Device::copy";
    case Op::device_fill: return "Device::fill";
  }
  return "?";
}

bool reads_src(Op::Kind kind) {
  return kind == Op::add_one || kind == Op::copy_kernel || kind == Op::device_copy;
}

// One sequence in four lays its pools out on plain allocations, the rest on virtual memory (the
// default): by the seed, so the random draws stay those of earlier revisions.
Model::Model(std::uint64_t seed)
    : Sequence(seed, make_test_driver(), outcomes()),
      faults(world, world.chance(kFaultSequencePercent)),
      virtual_pools(seed % 4 != 0) {}

int Model::buffer_for(int s) {
  if (world.chance(60)) {
    const int own = live_buffer([&](int b) { return !buf(b).cache_private && buf(b).owner == s; });
    if (own >= 0) return own;
  }
  return live_buffer([&](int b) { return !buf(b).cache_private; });
}

void Model::fail(int b, Errc code) {
  ModelBuffer& buffer = buf(b);
  if (!alive(b) || buffer.for_good) return;
  buffer.failure = code;
}

bool Model::alive(int b) const {
  if (buffers[static_cast<std::size_t>(b)].live) return true;
  auto holds = [&](const ModelGraph& graph) { return !graph.released && graph.held.count(b) != 0; };
  if (std::any_of(graphs.begin(), graphs.end(), holds)) return true;
  return std::any_of(cache.keys.begin(), cache.keys.end(),
                     [&](const CacheKey& key) { return key.has_graph && holds(key.graph); });
}

void Model::release_deferred() {
  deferred = false;
  for (ModelGraph& graph : graphs) {
    if (!graph.live) graph.released = true;
  }
}

void Model::clear_failure(int b) {
  if (!buf(b).for_good) buf(b).failure.reset();
}

bool Model::may_use(int s, int b, bool writes) const {
  return streams.may_use(s, buf(b), buf(b).owner, writes);
}

std::optional<Errc> Model::refused_use(int s, int b, bool writes) const {
  if (buf(b).for_good) return Errc::graph_state;
  if (!may_use(s, b, writes)) return Errc::invalid_argument;
  return std::nullopt;
}

const GraphPool* Model::pool_of(int pool) const {
  if (pool == kCachePool) return cache.cache ? cache.cache->pool() : nullptr;
  return &pools[static_cast<std::size_t>(pool)];
}

std::size_t Model::pool_bytes_held(int pool) const {
  const GraphPool* held = pool_of(pool);
  return held != nullptr ? held->bytes_held() : 0;
}

}  // namespace graphcap::testing::many_graphs
