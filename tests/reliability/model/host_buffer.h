// The host model of a device buffer for the random models of tests/reliability: the words it
// must hold, which of them are known (a fresh allocation holds garbage), the failure it carries
// (every read must fail with it), and whether a read may fail or give anything (after an injected
// fault). The effects of the test kernels (add_one, copy, fill: tests/kernels), host writes and
// Device::copy / Device::fill on it, applied when the work runs: eagerly, or at a replay for
// recorded work.
//
// Which work clears a carried failure is each model's rule: fill() and assign() are a whole
// Arg::out binding that ran (the failure is gone); the *_words forms change the words only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <graphcap/graphcap.h>

namespace graphcap::testing::model {

constexpr std::uint32_t kWords = 64;  // u32 elements of a model buffer, unless a model says
constexpr std::size_t kBufferBytes = kWords * sizeof(std::uint32_t);

struct HostBuffer {
  explicit HostBuffer(std::size_t words = kWords) : bytes(words, 0), known(words, 0) {}

  Buffer handle;
  int owner = 0;  // the stream it was allocated on
  bool live = false;
  std::vector<std::uint32_t> bytes;  // what the device must hold where known
  // Per word: 1 where bytes holds what the device holds (bytes, not std::vector<bool>: the models
  // check every buffer after every step, and test code is compiled unoptimised).
  std::vector<std::uint8_t> known;
  std::optional<Errc> failure;       // it carries a failure: every read must fail
  bool unsure = false;               // after an injected fault: a read may fail or give anything

  std::size_t words() const { return bytes.size(); }
  bool all_known() const;
  std::size_t known_count(std::size_t offset, std::size_t count) const;

  // ---- the words only ----------------------------------------------------------------------------
  void write_words(std::size_t offset, std::span<const std::uint32_t> data);
  void fill_words(std::uint32_t value, std::size_t count);
  // The first `count` words = src's + plus (add_one: 1; copy: 0), known where src's are.
  void copy_words(const HostBuffer& src, std::uint32_t plus, std::size_t count);
  void forget_words();

  // ---- a whole Arg::out binding that ran: the words, and no failure any more ----------------------
  void fill(std::uint32_t value) {
    fill_words(value, words());
    produced();
  }
  void assign(const HostBuffer& src, std::uint32_t plus) {
    copy_words(src, plus, words());
    produced();
  }
  void produced() {
    failure.reset();
    unsure = false;
  }

  // ---- failures ----------------------------------------------------------------------------------
  void fail(Errc code) {
    failure = code;
    unsure = false;
  }
  // After an injected fault: nothing is known, a read may fail or give anything.
  void forget() {
    unsure = true;
    failure.reset();
    forget_words();
  }

  // Words read back from word `offset` on: the index of the first known word that differs from
  // the model; nullopt when every known word agrees.
  std::optional<std::size_t> first_mismatch(std::span<const std::uint32_t> got,
                                            std::size_t offset) const;
  // The same as a sentence naming buffer `name`.
  std::optional<std::string> mismatch(std::span<const std::uint32_t> got, std::size_t offset,
                                      const std::string& name) const;
};

}  // namespace graphcap::testing::model
