// CudaGraphDriver: GraphDriver over DriverApi (the real driver or the fake).
#pragma once

#include <graphcap/capture/graph_driver.h>
#include <graphcap/driver/driver_api.h>

namespace graphcap::capture {

class CudaGraphDriver final : public GraphDriver {
 public:
  explicit CudaGraphDriver(DriverApi& driver) noexcept : driver_(&driver) {}

  Result<void> begin(CUstream stream, CUstreamCaptureMode mode) override;
  Result<CapturedGraph> end(CUstream stream) override;
  Result<Instantiated> instantiate(const CapturedGraph& graph, const GraphReport& recorded) override;
  Result<GraphReport> inspect(const CapturedGraph& graph, const GraphReport& recorded) override;
  Result<Executable> instantiate_inspected(const CapturedGraph& graph,
                                           GraphReport& report) override;
  bool update(const Executable& into, const CapturedGraph& graph, GraphReport& report) override;
  Result<CUgraphNode> last_node(CUstream stream) override;
  Result<std::vector<CUgraphNode>> nodes(const CapturedGraph& graph) override;
  bool upload(const Executable& executable, CUstream stream, GraphReport& report) override;
  void dump_dot(const CapturedGraph& graph, const std::string& path) override;
  Result<LoopNode> begin_loop(CUstream stream, CUstream body_stream, unsigned first,
                              CUstreamCaptureMode mode) override;
  bool loop_active(CUstream body_stream) override;
  Result<void> end_loop(CUstream body_stream) override;
  Result<GraphReport> inspect_loop_body(CUgraph body, const GraphReport& recorded) override;
  std::string invalidation_account(CUstream stream) override;

 private:
  // Node counts by type into `report`; an error when the graph can't be read (the memory-node
  // check can't be skipped: a graph that can't be checked can't be promised to replay).
  Result<void> count_nodes(CUgraph graph, const GraphReport& recorded, GraphReport& report);

  DriverApi* driver_;
};

}  // namespace graphcap::capture
