// ExecutableArena: the device memory the driver holds for its executables, per device, as the
// H200 held it (docs/cuda-driver-facts.md, "Device memory the driver holds per executable"): each
// executable takes executable_driver_bytes() of it at instantiate, out of 2 MiB chunks the
// executables share; the chunks are never given back while the device's context lives (destroyed
// executables' room is reused by later ones). Not locked: FakeState's mutex guards it.
#pragma once

#include <cstddef>
#include <vector>

#include <graphcap/driver/executable_memory.h>

namespace graphcap::fake::internal {

class ExecutableArena {
 public:
  explicit ExecutableArena(int devices)
      : in_use_(static_cast<std::size_t>(devices > 0 ? devices : 1), 0), held_(in_use_.size(), 0) {}

  // Device memory the chunks for `bytes` more would take beyond those held now.
  std::size_t growth(int device, std::size_t bytes) const {
    const std::size_t need = in_use_.at(index(device)) + bytes;
    const std::size_t held = held_.at(index(device));
    if (need <= held) return 0;
    return (need - held + kDriverMemoryChunk - 1) / kDriverMemoryChunk * kDriverMemoryChunk;
  }
  void take(int device, std::size_t bytes) {
    held_.at(index(device)) += growth(device, bytes);
    in_use_.at(index(device)) += bytes;
  }
  void give_back(int device, std::size_t bytes) { in_use_.at(index(device)) -= bytes; }
  // The device's context is gone: so is everything the driver held for it.
  void clear(int device) {
    in_use_.at(index(device)) = 0;
    held_.at(index(device)) = 0;
  }
  std::size_t held(int device) const { return held_.at(index(device)); }

 private:
  static std::size_t index(int device) { return static_cast<std::size_t>(device); }

  std::vector<std::size_t> in_use_;  // live executables' bytes
  std::vector<std::size_t> held_;    // chunks taken, in bytes
};

}  // namespace graphcap::fake::internal
