// HandleAccess: the public layer's own way to the state behind its handles (Buffer, Stream,
// Kernel, Module, Graph) and to what an Arg carries for the launch. Public headers keep that state
// private; only the public layer's .cc files include this. Not part of the API.
#pragma once

#include <memory>
#include <utility>

#include <graphcap/arg.h>
#include <graphcap/buffer.h>
#include <graphcap/condition.h>
#include <graphcap/event.h>
#include <graphcap/graph.h>
#include <graphcap/graph_pool.h>
#include <graphcap/loop.h>
#include <graphcap/module.h>
#include <graphcap/pending_graph.h>
#include <graphcap/stream.h>

namespace graphcap {

struct HandleAccess {
  static const std::shared_ptr<memory::BufferState>& state(const Buffer& buffer) noexcept {
    return buffer.state_;
  }
  static Buffer buffer(std::shared_ptr<memory::BufferState> state) noexcept {
    return Buffer(std::move(state));
  }
  static detail::StreamCore& core(const Stream& stream) noexcept { return *stream.core_; }
  static const std::shared_ptr<detail::StreamCore>& core_ptr(const Stream& stream) noexcept {
    return stream.core_;
  }
  static std::unique_ptr<Stream> stream(std::shared_ptr<detail::StreamCore> core) {
    return std::unique_ptr<Stream>(new Stream(std::move(core)));
  }
  static const std::shared_ptr<detail::KernelState>& state(const Kernel& kernel) noexcept {
    return kernel.state_;
  }
  static Kernel kernel(std::shared_ptr<detail::KernelState> state) noexcept {
    return Kernel(std::move(state));
  }
  static const std::shared_ptr<detail::ModuleState>& state(const Module& module) noexcept {
    return module.state_;
  }
  static Module module(std::shared_ptr<detail::ModuleState> state) noexcept {
    return Module(std::move(state));
  }
  static Graph graph(std::shared_ptr<detail::GraphState> state) noexcept {
    return Graph(std::move(state));
  }
  static const std::shared_ptr<detail::GraphState>& state(const Graph& graph) noexcept {
    return graph.state_;
  }
  static PendingGraph pending(std::shared_ptr<detail::PendingGraphState> state) noexcept {
    return PendingGraph(std::move(state));
  }
  static const std::shared_ptr<detail::GraphPoolState>& state(const GraphPool& pool) noexcept {
    return pool.state_;
  }
  static GraphPool pool(std::shared_ptr<detail::GraphPoolState> state) noexcept {
    return GraphPool(std::move(state));
  }
  static const std::shared_ptr<detail::EventState>& state(const Event& event) noexcept {
    return event.state_;
  }
  static Event event(std::shared_ptr<detail::EventState> state) noexcept {
    return Event(std::move(state));
  }
  static Loop loop(std::uint64_t id, std::uint64_t recording,
                   CUgraphConditionalHandle handle) noexcept {
    return Loop(id, recording, handle);
  }
  static std::uint64_t id(const Loop& loop) noexcept { return loop.id_; }
  static void close(Loop& loop) noexcept { loop.open_ = false; }
  static Condition condition(std::uint64_t id, std::uint64_t recording,
                             CUgraphConditionalHandle handle, unsigned first) noexcept {
    return Condition(id, recording, handle, first);
  }
  static std::uint64_t id(const Condition& condition) noexcept { return condition.id_; }

  // The param an Arg::param bound (nullptr for an empty Param or another access).
  static const std::shared_ptr<detail::ParamSlot>& param(const Arg& arg) noexcept {
    return arg.param_;
  }
  // Arg::condition: the recording whose loop or condition it names, and its identity there (0
  // for an empty one).
  static std::uint64_t condition_recording(const Arg& arg) noexcept { return arg.recording_; }
  static std::uint64_t condition_id(const Arg& arg) noexcept { return arg.condition_; }
  // The bytes a value, param or condition argument passes (Arg::size() of them).
  static const std::byte* bytes(const Arg& arg) noexcept { return arg.bytes_; }
};

}  // namespace graphcap
