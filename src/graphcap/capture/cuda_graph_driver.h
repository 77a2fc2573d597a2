// CudaGraphDriver: GraphDriver over DriverApi (the real driver or the fake).
#pragma once

#include <graphcap/capture/graph_driver.h>
#include <graphcap/driver/driver_api.h>

namespace graphcap::capture {

class CudaGraphDriver final : public GraphDriver {
 public:
  // `measure_driver_memory`: cuMemGetInfo around the instantiate of a large executable
  // (DeviceOptions::measure_driver_memory).
  explicit CudaGraphDriver(DriverApi& driver, bool measure_driver_memory = true) noexcept
      : driver_(&driver), measure_driver_memory_(measure_driver_memory) {}

  Result<void> begin(CUstream stream, CUstreamCaptureMode mode) override;
  Result<CapturedGraph> end(CUstream stream) override;
  Result<Instantiated> instantiate(const CapturedGraph& graph, const GraphReport& recorded) override;
  Result<GraphReport> inspect(const CapturedGraph& graph, const GraphReport& recorded) override;
  Result<Executable> instantiate_inspected(const CapturedGraph& graph, GraphReport& report,
                                           InstantiateFailure* failure,
                                           bool measure_memory) override;
  bool update(const Executable& into, const CapturedGraph& graph, GraphReport& report) override;
  Result<CUgraphNode> last_node(CUstream stream) override;
  Result<std::vector<CUgraphNode>> nodes(const CapturedGraph& graph) override;
  Result<std::vector<CUgraphNode>> body_nodes(CUgraph body) override;
  bool upload(const Executable& executable, CUstream stream, GraphReport& report) override;
  void dump_dot(const CapturedGraph& graph, const std::string& path) override;
  Result<CUgraphConditionalHandle> create_condition(CUstream stream, unsigned first) override;
  Result<ConditionalNode> add_conditional(CUstream stream, CUgraphConditionalHandle handle,
                                          CUgraphConditionalNodeType type, unsigned size) override;
  Result<void> begin_body(CUstream body_stream, CUgraph body, CUstreamCaptureMode mode) override;
  Result<bool> body_active(CUstream body_stream) override;
  Result<void> end_body(CUstream body_stream) override;
  std::string invalidation_account(CUstream stream) override;

 private:
  // Node counts by type into `report`; an error when the graph can't be read (the memory-node
  // check can't be skipped: a graph that can't be checked can't be promised to replay).
  Result<void> count_nodes(CUgraph graph, const GraphReport& recorded, GraphReport& report);
  // The capture `stream` is in: its graph and its current dependencies (copied).
  Result<std::pair<CUgraph, std::vector<CUgraphNode>>> capture_point(CUstream stream);

  DriverApi* driver_;
  bool measure_driver_memory_;
};

}  // namespace graphcap::capture
