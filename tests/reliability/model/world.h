// The world a random model of tests/reliability runs its sequences in: a device opened through a
// FaultInjectingDriver around the driver under test (the fake, or libcuda for the _cuda targets),
// the test kernels, three streams and a fourth that only checks, events, the draws of the
// sequence's seed, the log of its calls and its first divergence, the host model of every live
// buffer (host_buffer.h) a model keeps here, the capture state each stream must be in, and the
// invariants checked after every step:
//   - every stream in the capture state the model says (graphcap's capture_state()), and the
//     driver agreeing that a stream graphcap says is not capturing is not (cuStreamIsCapturing,
//     through the driver under the decorator);
//   - no two live allocations overlap: the device address ranges of live buffers, and of every
//     allocation made inside the recording open now (each is its own memory);
//   - when no stream is recording, every live buffer's bytes equal the host model (read on the
//     checking stream, ordered after every other by events, so the check changes no buffer's
//     uses), and a buffer the model says carries a failure fails its read.
// A model with buffers of its own (more bookkeeping per buffer) keeps them itself and uses the
// rest. At the close: nothing left through the decorator but what failed releases leaked, and on
// the fake no live handle, none reclaimed with the context, no violation.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <graphcap/fake/fake_driver.h>
#include <graphcap/fake/fault_injecting_driver.h>
#include <graphcap/graphcap.h>

#include "model/host_buffer.h"
#include "model/journal.h"
#include "model/runner.h"
#include "test_driver.h"

namespace graphcap::testing::model {

// The sequence's record (log, divergence, outcomes) is its Journal.
class World : public Journal {
 public:
  static constexpr int kStreams = 3;
  static constexpr int kEvents = 6;

  World(std::uint64_t seed, std::unique_ptr<TestDriver> driver, Outcomes& outcomes);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Opens the device, kernels, streams and events; false (and a divergence) when it can't.
  bool open();
  // Drops everything, closes the device and checks that nothing was left behind but `leaked` (the
  // handles failed release calls leaked), then releases those.
  void close(const fake::LiveHandles& leaked = {});

  // ---- draws -------------------------------------------------------------------------------------
  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
  bool chance(int percent) { return static_cast<int>(pick(100)) < percent; }
  std::uint32_t value() { return static_cast<std::uint32_t>(rng_() & 0xFFFFF); }

  // ---- reaches: the shapes of work a model may draw (runner.h) ----------------------------------
  void set_reaches(std::uint64_t bits) { reaches_ = bits; }
  bool reaches(int reach) const { return (reaches_ >> reach & 1u) != 0; }
  // One of `among` that is on, drawn at random; -1 when none is.
  int draw(std::initializer_list<int> among) {
    std::vector<int> on;
    for (int reach : among) {
      if (reaches(reach)) on.push_back(reach);
    }
    return on.empty() ? -1 : on[pick(on.size())];
  }

  // ---- what the model holds ----------------------------------------------------------------------
  Device& device() { return *device_; }
  Stream& stream(int s) { return *streams_[static_cast<std::size_t>(s)]; }
  Stream& checker() { return *checker_; }
  Event& event(int e) { return events_[static_cast<std::size_t>(e)]; }
  bool on_fake() const { return fake_ != nullptr; }
  fake::FaultInjectingDriver& faults() { return faults_; }
  DriverApi& driver_under_test() { return test_driver_->api(); }
  // The capture state stream `s` must be in when the step's next check runs.
  CaptureState& expected_state(int s) { return expected_[static_cast<std::size_t>(s)]; }
  void expect_all_idle();

  HostBuffer& buf(int b) { return buffers_[static_cast<std::size_t>(b)]; }
  // A new buffer on stream `owner` holding random known words; -1 (and a divergence) on failure.
  int upload(int owner);
  // A buffer a step allocated (its bytes unknown until written).
  int adopt(Buffer buffer, int owner);
  void drop(int b);
  std::vector<int> live_of(int owner) const;
  // A live buffer of `owner` that holds known bytes and no failure (uploaded fresh when there is
  // none).
  int known_of(int owner);

  // The test kernels: issued only; the host model is the caller's to update (eagerly at once,
  // recorded work at its replay).
  // `words`: how many elements the launch covers.
  Result<void> fill(Stream& s, const Buffer& dst, std::uint32_t value, std::uint32_t words = kWords);
  Result<void> fill(Stream& s, const Buffer& dst, const Arg& value, std::uint32_t words = kWords);
  Result<void> add_one(Stream& s, const Buffer& src, const Buffer& dst, std::uint32_t words = kWords);
  Result<void> copy(Stream& s, const Buffer& src, const Buffer& dst, std::uint32_t words = kWords);
  // Sets a loop's or branch's condition on the device (Arg::condition).
  Result<void> set_condition(Stream& s, const Arg& condition, std::uint32_t value);
  Result<void> fill(int s, int b, std::uint32_t v) { return fill(stream(s), buf(b).handle, v); }
  Result<void> add_one(int s, int src, int dst) {
    return add_one(stream(s), buf(src).handle, buf(dst).handle);
  }

  // Every stream ordered after every other's work so far (events): the rules' plain way.
  void barrier();
  // The checking stream ordered after every stream's work so far; false (and a divergence) when
  // it can't be.
  bool order_checker();

  // An allocation made inside the open recording (`b`: its model buffer, or -1): its range must
  // overlap no other live allocation's until the recording closes (recording_closed()).
  void recorded_allocation(const Buffer& buffer, int b);
  void recording_closed() { recorded_.clear(); }

  // ---- faults ------------------------------------------------------------------------------------
  // The `nth` next call of `entry` fails with the code the entry point can return
  // (tests/support/injected_codes.h).
  void inject(const char* entry, int nth = 1);
  void clear_faults() { faults_.clear_faults(); }

  // ---- invariants --------------------------------------------------------------------------------
  void check();
  // A pool holds what its live graphs need: `need` bytes (the farthest end of their intermediates
  // from the pool's base); on virtual memory exactly that rounded up to the granule, on plain
  // allocations at least that, and nothing once no graph of it lives (need 0).
  void check_pool(const GraphPool& pool, std::size_t need, const std::string& what);

 private:
  void check_streams();
  void check_overlaps();
  void check_bytes();
  bool hold_context();
  void release_context();

  std::mt19937_64 rng_;
  std::unique_ptr<TestDriver> test_driver_;
  fake::FakeDriver* fake_;
  fake::FaultInjectingDriver faults_;
  CUdevice ordinal_{};
  CUcontext context_ = nullptr;
  std::unique_ptr<Device> device_;
  Module module_;
  Kernel add_one_, fill_, copy_, set_condition_;
  std::vector<Stream*> streams_;
  Stream* checker_ = nullptr;
  std::vector<Event> events_;
  std::vector<Event> check_events_;
  std::vector<CaptureState> expected_;
  std::vector<HostBuffer> buffers_;
  struct Range {
    CUdeviceptr begin = 0;
    std::size_t bytes = 0;
    int buffer = -1;
  };
  std::vector<Range> recorded_;
  std::uint64_t reaches_ = ~std::uint64_t{0};
};

}  // namespace graphcap::testing::model
