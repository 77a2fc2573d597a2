// The host model of a device buffer for the random models of tests/reliability: the bytes it must
// hold (64 words), whether they are known (a fresh allocation holds garbage), and whether a read
// must fail (the buffer carries a failure). The effects of the test kernels (add_one, copy, fill:
// tests/kernels) on it, applied when the work runs: eagerly, or at a replay for recorded work.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include <graphcap/graphcap.h>

namespace graphcap::testing::model {

constexpr std::uint32_t kWords = 64;  // u32 elements of every model buffer
constexpr std::size_t kBufferBytes = kWords * sizeof(std::uint32_t);

struct HostBuffer {
  Buffer handle;
  int owner = 0;  // the stream it was allocated on
  bool live = false;
  bool known = false;   // bytes holds what the device holds
  bool failed = false;  // it carries a failure: every read must fail
  bool unsure = false;  // after an injected fault: a read may fail or give anything
  std::array<std::uint32_t, kWords> bytes{};

  void fill(std::uint32_t value) {
    bytes.fill(value);
    known = true;
    failed = unsure = false;  // Arg::out: a full write clears a carried failure
  }
  // dst = src + plus (add_one: 1; copy: 0).
  void assign(const HostBuffer& src, std::uint32_t plus) {
    for (std::size_t i = 0; i < kWords; ++i) bytes[i] = src.bytes[i] + plus;
    known = src.known && !src.unsure;
    failed = unsure = false;
  }
  void fail() {
    failed = true;
    known = unsure = false;
  }
  void forget() {
    unsure = true;
    known = failed = false;
  }
};

}  // namespace graphcap::testing::model
