// What every random model's sequence holds, whatever it models: its world (world.h), the host
// model of every buffer it made (BufferModel: a HostBuffer with the model's own bookkeeping) and
// of every graph (GraphModel: the model's, with its handle and whether it lives), the draws among them,
// and the end of a run: everything the model holds dropped, the world closed with nothing left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include <graphcap/graphcap.h>

#include "model/runner.h"
#include "model/world.h"
#include "test_driver.h"

namespace graphcap::testing::model {

template <class BufferModel, class GraphModel>
struct Sequence {
  Sequence(std::uint64_t seed, std::unique_ptr<TestDriver> driver, Outcomes& outcomes)
      : world(seed, std::move(driver), outcomes) {}

  World world;
  std::vector<BufferModel> buffers;
  std::vector<GraphModel> graphs;

  Device& device() { return world.device(); }
  Stream& stream(int s) { return world.stream(s); }
  BufferModel& buf(int b) { return buffers[static_cast<std::size_t>(b)]; }
  const BufferModel& buf(int b) const { return buffers[static_cast<std::size_t>(b)]; }
  std::ostringstream& log() { return world.log(); }
  bool ok() const { return !world.diverged(); }

  // A live buffer `keep` accepts, drawn at random; -1 when there is none.
  template <class Keep>
  int live_buffer(Keep&& keep) {
    std::vector<int> candidates;
    for (std::size_t b = 0; b < buffers.size(); ++b) {
      if (buffers[b].live && keep(static_cast<int>(b))) candidates.push_back(static_cast<int>(b));
    }
    return candidates.empty() ? -1 : candidates[world.pick(candidates.size())];
  }
  std::size_t live_count() const {
    std::size_t n = 0;
    for (const BufferModel& b : buffers) n += b.live ? 1 : 0;
    return n;
  }

  // The buffer's handle dropped: the model keeps it, no longer live (a graph may still use its
  // memory).
  void drop(int b) {
    log() << "drop(buffer " << b << ")\n";
    buf(b).live = false;
    buf(b).handle = Buffer{};
  }
  // Graph::destroy, which always succeeds.
  void destroy(int g) {
    log() << "destroy(graph " << g << ")\n";
    GraphModel& graph = graphs[static_cast<std::size_t>(g)];
    world.expect(graph.handle.destroy(), std::nullopt, "destroy");
    graph.live = false;
  }

  // Every handle of the model's buffers and graphs dropped.
  void drop_handles() {
    for (GraphModel& graph : graphs) graph.handle = Graph{};
    for (BufferModel& buffer : buffers) buffer.handle = Buffer{};
  }
  // The end of a run: the model's handles dropped, the world closed (nothing left but what
  // failed releases `leaked`), and the divergence and log.
  SequenceEnd close(const fake::LiveHandles& leaked = {}) {
    drop_handles();
    world.close(leaked);
    return end();
  }
  SequenceEnd end() const { return {world.divergence(), world.log_text()}; }
};

}  // namespace graphcap::testing::model
