// CapturedGraph: the CUgraph a closed driver capture hands back, destroyed exactly once whichever
// way closing a recording goes (instantiated, refused, or failed).
#pragma once

#include <chrono>
#include <utility>

#include <graphcap/driver/driver_api.h>

namespace graphcap::capture {

class CapturedGraph {
 public:
  CapturedGraph() = default;
  CapturedGraph(DriverApi& driver, CUgraph graph) noexcept : driver_(&driver), graph_(graph) {}
  CapturedGraph(CapturedGraph&& other) noexcept
      : end_time(other.end_time), driver_(other.driver_),
        graph_(std::exchange(other.graph_, nullptr)) {}
  CapturedGraph& operator=(CapturedGraph&& other) noexcept {
    if (this != &other) {
      reset();
      driver_ = other.driver_;
      graph_ = std::exchange(other.graph_, nullptr);
      end_time = other.end_time;
    }
    return *this;
  }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph() { reset(); }

  CUgraph get() const noexcept { return graph_; }
  explicit operator bool() const noexcept { return graph_ != nullptr; }

  std::chrono::nanoseconds end_time{};  // how long cuStreamEndCapture took

 private:
  void reset() noexcept;

  DriverApi* driver_ = nullptr;
  CUgraph graph_ = nullptr;
};

}  // namespace graphcap::capture
