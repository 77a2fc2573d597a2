#include "many_graphs/fault_arming.h"

#include <optional>

#include "injected_codes.h"

namespace graphcap::testing::many_graphs {
namespace {

constexpr int kFaultCallPercent = 4;  // of an injecting sequence's calls, those armed with one

}  // namespace

void FaultArming::arm(std::span<const char* const> entries) {
  if (depth_++ != 0 || !enabled_ || entries.empty() || !world_->chance(kFaultCallPercent)) return;
  const char* entry = entries[world_->pick(entries.size())];
  const std::optional<CUresult> code = injected_code(entry);
  if (!code) {
    world_->diverge(std::string("no injected code for ") + entry + " (tests/support/injected_codes.h)");
    return;
  }
  world_->faults().clear_faults();
  world_->faults().fail_call(entry, *code, 1);
  armed_ = entry;
  armed_before_ = world_->faults().call_count(entry);
  world_->log() << "  [armed: " << entry << "]\n";
}

void FaultArming::note_fault() {
  if (armed_.empty() || fired_ || world_->faults().call_count(armed_) <= armed_before_) return;
  fired_ = true;
  degraded_ = true;
  ++fired_count_;
  world_->count("fault injected: " + armed_);
  if (armed_ == "cuEventDestroy") ++leaked_.events;
  if (armed_ == "cuGraphDestroy") ++leaked_.graphs;
  if (armed_ == "cuGraphExecDestroy") ++leaked_.execs;
  if (armed_ == "cuMemFree") ++leaked_.device_allocations;
  if (armed_ == "cuMemFreeHost") ++leaked_.host_allocations;
  world_->log() << "  [fault fired: " << armed_ << "]\n";
}

void FaultArming::settle() {
  if (--depth_ != 0) return;
  note_fault();
  if (!armed_.empty()) world_->faults().clear_faults();
  armed_.clear();
  fired_ = false;
}

}  // namespace graphcap::testing::many_graphs
