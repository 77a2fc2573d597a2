// The many-graph model's injected faults: in a sequence that injects, now and then one driver call
// of a step fails (fail_call of an entry point that step makes, with a code the entry point can
// return: tests/support/injected_codes.h, the sweep's table). Once one fired the sequence is
// degraded: from then on it only requires what safety needs. What the failed release calls leaked
// is counted for the close.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include <graphcap/fake/faults.h>

#include "model/world.h"

namespace graphcap::testing::many_graphs {

class FaultArming {
 public:
  FaultArming(model::World& world, bool enabled) : world_(&world), enabled_(enabled) {}

  // Before a call: now and then (in a sequence that injects) arm a fault on one of the entry
  // points the call makes. Nested calls (a GraphCache run's steps) arm nothing of their own. Each
  // arm() has its settle() after the call.
  void arm(std::initializer_list<const char*> entries) {
    arm(std::span<const char* const>(entries.begin(), entries.size()));
  }
  void arm(std::span<const char* const> entries);
  void settle();
  // Whether the armed fault fired: from then on the sequence is degraded.
  void note_fault();

  bool enabled() const { return enabled_; }
  bool degraded() const { return degraded_; }
  bool inside_call() const { return depth_ != 0; }
  const fake::LiveHandles& leaked() const { return leaked_; }
  std::uint64_t fired() const { return fired_count_; }

 private:
  model::World* world_;
  bool enabled_;
  bool degraded_ = false;
  int depth_ = 0;
  std::string armed_;
  std::size_t armed_before_ = 0;
  bool fired_ = false;
  fake::LiveHandles leaked_;
  std::uint64_t fired_count_ = 0;
};

}  // namespace graphcap::testing::many_graphs
