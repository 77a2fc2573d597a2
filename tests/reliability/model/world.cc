#include "model/world.h"

#include <algorithm>

#include "device_fixture.h"
#include "injected_codes.h"

namespace graphcap::testing::model {

World::World(std::uint64_t seed, std::unique_ptr<TestDriver> driver, Outcomes& outcomes)
    : Journal(outcomes),
      rng_(seed),
      test_driver_(std::move(driver)),
      fake_(test_driver_->fake()),
      faults_(test_driver_->api(), {.settle_queries = fake_ == nullptr, .record_calls = false}),
      expected_(kStreams, CaptureState::no_capture) {}

World::~World() {
  buffers_.clear();
  events_.clear();
  check_events_.clear();
  device_.reset();
  release_context();
}

bool World::open() {
  if (!hold_context()) {
    diverge("the harness could not retain the primary context");
    return false;
  }
  Result<std::unique_ptr<Device>> opened = Device::open(faults_);
  if (!opened) {
    diverge("Device::open failed: " + to_string(opened.error()));
    return false;
  }
  device_ = std::move(*opened);
  Result<Module> module = device_->load_module(test_driver_->kernel_image());
  if (!module) {
    diverge("load_module failed: " + to_string(module.error()));
    return false;
  }
  module_ = *module;
  for (auto [kernel, name] : {std::pair{&add_one_, "add_one"}, std::pair{&fill_, "fill"},
                              std::pair{&copy_, "copy"},
                              std::pair{&set_condition_, "set_condition"}}) {
    Result<Kernel> found = module_.kernel(name);
    if (!found) {
      diverge("kernel failed: " + to_string(found.error()));
      return false;
    }
    *kernel = *found;
  }
  streams_.push_back(&device_->stream());
  for (int s = 1; s <= kStreams; ++s) {
    Result<Stream*> made = device_->create_stream();
    if (!made) {
      diverge("create_stream failed: " + to_string(made.error()));
      return false;
    }
    (s < kStreams ? streams_.emplace_back() : checker_) = *made;
  }
  for (int e = 0; e < kEvents + kStreams; ++e) {
    Result<Event> made = device_->create_event();
    if (!made) {
      diverge("create_event failed: " + to_string(made.error()));
      return false;
    }
    (e < kEvents ? events_ : check_events_).push_back(std::move(*made));
  }
  return true;
}

void World::close(const fake::LiveHandles& leaked) {
  buffers_.clear();
  events_.clear();
  check_events_.clear();
  add_one_ = fill_ = copy_ = set_condition_ = Kernel{};
  module_ = Module{};
  // Streams the device leaves to the driver (a conditional body's, its capture invalidated) stay.
  fake::LiveHandles expected = leaked;
  const std::size_t left = device_ ? device_->streams_left_to_driver() : 0;
  expected.streams += left;
  expected.contexts += left != 0 ? 1 : 0;  // the device keeps its context with them
  device_.reset();
  if (diverged()) return;
  const fake::LiveHandles live = faults_.live_handles();
  if (live != expected) {
    diverge("the closed device left " + std::to_string(live.total()) +
            " handle(s) through the decorator, where failed releases leaked " +
            std::to_string(leaked.total()) + " and " +
            std::to_string(left) + " stream(s) were left to the driver");
  }
  if (context_ != nullptr) (void)test_driver_->api().cuCtxSetCurrent(context_);
  (void)faults_.release_leaked();
  if (fake_ != nullptr) {
    fake::LiveHandles harness;
    harness.contexts = 1 + (left != 0 ? 1 : 0);  // the harness's own (released below), the device's
    harness.streams = left;
    if (fake_->live_handles() != harness) {
      diverge("the fake counts " + std::to_string(fake_->live_handles().total()) +
              " live handle(s) after the close, the harness's context reference aside");
    }
    if (fake_->reclaimed_handles() != 0) diverge("handles were reclaimed with the context");
    if (!fake_->violations().empty()) diverge("fake violation: " + fake_->violations().front());
  }
}

void World::expect_all_idle() { std::fill(expected_.begin(), expected_.end(), CaptureState::no_capture); }

int World::upload(int owner) {
  HostBuffer buffer;
  for (std::uint32_t& word : buffer.bytes) word = value();
  std::vector<std::uint32_t> words(buffer.bytes.begin(), buffer.bytes.end());
  Result<Buffer> made = device_->upload(std::as_bytes(std::span(words)), stream(owner));
  if (!made) {
    diverge("upload on stream " + std::to_string(owner) + " failed: " + to_string(made.error()));
    return -1;
  }
  buffer.handle = std::move(*made);
  buffer.owner = owner;
  buffer.live = true;
  std::fill(buffer.known.begin(), buffer.known.end(), std::uint8_t{1});
  buffers_.push_back(std::move(buffer));
  return static_cast<int>(buffers_.size() - 1);
}

int World::adopt(Buffer handle, int owner) {
  HostBuffer buffer;
  buffer.handle = std::move(handle);
  buffer.owner = owner;
  buffer.live = true;
  buffers_.push_back(std::move(buffer));
  return static_cast<int>(buffers_.size() - 1);
}

void World::drop(int b) {
  buf(b).handle = Buffer{};
  buf(b).live = false;
}

std::vector<int> World::live_of(int owner) const {
  std::vector<int> out;
  for (std::size_t b = 0; b < buffers_.size(); ++b) {
    if (buffers_[b].live && buffers_[b].owner == owner) out.push_back(static_cast<int>(b));
  }
  return out;
}

int World::known_of(int owner) {
  std::vector<int> known;
  for (int b : live_of(owner)) {
    if (buf(b).all_known() && !buf(b).failure) known.push_back(b);
  }
  return known.empty() ? upload(owner) : known[pick(known.size())];
}

Result<void> World::fill(Stream& s, const Buffer& dst, std::uint32_t v, std::uint32_t words) {
  return fill(s, dst, Arg::value(v), words);
}
Result<void> World::fill(Stream& s, const Buffer& dst, const Arg& value, std::uint32_t words) {
  return device_->launch(s, fill_, dims_for(words), {Arg::out(dst), value, Arg::value(words)});
}
Result<void> World::add_one(Stream& s, const Buffer& src, const Buffer& dst, std::uint32_t words) {
  return device_->launch(s, add_one_, dims_for(words), {Arg::in(src), Arg::out(dst), Arg::value(words)});
}
Result<void> World::copy(Stream& s, const Buffer& src, const Buffer& dst, std::uint32_t words) {
  return device_->launch(s, copy_, dims_for(words), {Arg::in(src), Arg::out(dst), Arg::value(words)});
}

Result<void> World::set_condition(Stream& s, const Arg& condition, std::uint32_t v) {
  return device_->launch(s, set_condition_, LaunchDims{}, {condition, Arg::value(v)});
}

void World::barrier() {
  for (int s = 0; s < kStreams; ++s) {
    if (Result<void> r =
            device_->record_event(check_events_[static_cast<std::size_t>(s)], stream(s));
        !r) {
      diverge("barrier: record on stream " + std::to_string(s) + ": " + to_string(r.error()));
      return;
    }
  }
  for (int s = 0; s < kStreams; ++s) {
    for (int other = 0; other < kStreams; ++other) {
      if (other == s) continue;
      Result<void> r = device_->wait(stream(s), check_events_[static_cast<std::size_t>(other)]);
      if (!r) {
        diverge("barrier: wait on stream " + std::to_string(s) + ": " + to_string(r.error()));
        return;
      }
    }
  }
}

void World::recorded_allocation(const Buffer& buffer, int b) {
  recorded_.push_back(Range{buffer.native_handle(), buffer.size(), b});
}

void World::inject(const char* entry, int nth) {
  const std::optional<CUresult> code = injected_code(entry);
  if (!code) {
    diverge(std::string("no injected code for ") + entry + " (tests/support/injected_codes.h)");
    return;
  }
  faults_.fail_call(entry, *code, nth);
  log() << "  [fault armed: " << entry << " call " << nth << "]\n";
}

void World::check() {
  if (diverged()) return;
  check_streams();
  if (!diverged()) check_overlaps();
  if (!diverged()) check_bytes();
}

void World::check_streams() {
  for (int s = 0; s <= kStreams && !diverged(); ++s) {
    Stream& on = s < kStreams ? stream(s) : checker();
    const CaptureState want = s < kStreams ? expected_[static_cast<std::size_t>(s)] : CaptureState::no_capture;
    if (on.capture_state() != want) {
      diverge("stream " + std::to_string(s) + " is in " + to_string(on.capture_state()) +
              " state, the model says " + to_string(want));
      return;
    }
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (CUresult r = test_driver_->api().cuStreamIsCapturing(on.native_handle(), &status);
        r != CUDA_SUCCESS) {
      diverge("cuStreamIsCapturing failed with " + std::to_string(r));
      return;
    }
    if (want != CaptureState::capture && status != CU_STREAM_CAPTURE_STATUS_NONE) {
      diverge("stream " + std::to_string(s) + " is left capturing in the driver (status " +
              std::to_string(status) + ") where graphcap says " + to_string(on.capture_state()));
    }
  }
}

void World::check_overlaps() {
  std::vector<Range> ranges = recorded_;
  for (std::size_t b = 0; b < buffers_.size(); ++b) {
    const HostBuffer& buffer = buffers_[b];
    if (!buffer.live) continue;
    const int id = static_cast<int>(b);
    const bool listed = std::any_of(recorded_.begin(), recorded_.end(),
                                    [&](const Range& r) { return r.buffer == id; });
    if (!listed) ranges.push_back(Range{buffer.handle.native_handle(), buffer.handle.size(), id});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    const Range& a = ranges[i - 1];
    const Range& b = ranges[i];
    if (a.begin + a.bytes > b.begin) {
      auto name = [](const Range& r) {
        return r.buffer >= 0 ? "buffer " + std::to_string(r.buffer) : std::string("an intermediate");
      };
      diverge("two live allocations overlap: " + name(a) + " at +" + std::to_string(a.begin) +
              " (" + std::to_string(a.bytes) + " B) and " + name(b) + " at +" + std::to_string(b.begin));
      return;
    }
  }
}

bool World::order_checker() {
  for (int s = 0; s < kStreams; ++s) {
    Event& e = check_events_[static_cast<std::size_t>(s)];
    Result<void> recorded = device_->record_event(e, stream(s));
    Result<void> waited = recorded ? device_->wait(checker(), e) : Result<void>{};
    if (!recorded || !waited) {
      diverge("ordering the checking stream failed: " + to_string(recorded ? waited.error() : recorded.error()));
      return false;
    }
  }
  return true;
}

void World::check_bytes() {
  for (CaptureState state : expected_) {
    if (state != CaptureState::no_capture) return;  // reads are refused while a window is open
  }
  if (!order_checker()) return;
  for (std::size_t b = 0; b < buffers_.size() && !diverged(); ++b) {
    const HostBuffer& buffer = buffers_[b];
    if (!buffer.live || buffer.unsure) continue;
    Result<std::vector<std::byte>> read = device_->read(buffer.handle, checker());
    // Named only when something is wrong: every buffer is checked after every step.
    const auto name = [&] {
      return "buffer " + std::to_string(b) + " (stream " + std::to_string(buffer.owner) + ")";
    };
    if (buffer.failure) {
      if (read) diverge("check: " + name() + " read back bytes where the model says it carries a failure");
      continue;
    }
    if (!read) {
      diverge("check: reading " + name() + " failed: " + to_string(read.error()));
      continue;
    }
    if (!buffer.all_known()) continue;
    const std::vector<std::uint32_t> words = to_u32(*read);
    if (buffer.first_mismatch(words, 0)) diverge(*buffer.mismatch(words, 0, "check: " + name()));
  }
}

void World::check_pool(const GraphPool& pool, std::size_t need, const std::string& what) {
  if (diverged() || !pool) return;
  const GraphPoolStats stats = pool.stats();
  const std::size_t granule = stats.granularity == 0 ? 1 : stats.granularity;
  const std::size_t want = (need + granule - 1) / granule * granule;
  const bool right = need == 0 ? stats.bytes_held == 0
                     : stats.virtual_memory ? stats.bytes_held == want
                                            : stats.bytes_held >= need;
  count(std::string("pool check (") + (stats.virtual_memory ? "virtual memory" : "plain") + ")");
  if (!right) {
    diverge(what + ": the " + (stats.virtual_memory ? "virtual-memory" : "plain") + " pool holds " +
            std::to_string(stats.bytes_held) + " B where its live graphs need " + std::to_string(need) +
            " B" + (stats.virtual_memory ? " (" + std::to_string(want) + " B to the granule)" : ""));
  }
}

// The harness's reference to the primary context (through the driver under test, not the
// decorator), so the device's close can be checked for what it left.
bool World::hold_context() {
  DriverApi& api = test_driver_->api();
  if (api.cuInit(0) != CUDA_SUCCESS || api.cuDeviceGet(&ordinal_, 0) != CUDA_SUCCESS) return false;
  if (api.cuDevicePrimaryCtxRetain(&context_, ordinal_) != CUDA_SUCCESS) {
    context_ = nullptr;
    return false;
  }
  if (fake_ == nullptr) {
    // One more for the whole process: the context is not rebuilt for every sequence.
    static const bool held = [&] {
      CUcontext context = nullptr;
      return api.cuDevicePrimaryCtxRetain(&context, ordinal_) == CUDA_SUCCESS;
    }();
    if (!held) return false;
  }
  return true;
}

void World::release_context() {
  if (context_ != nullptr) (void)test_driver_->api().cuDevicePrimaryCtxRelease(ordinal_);
  context_ = nullptr;
}

}  // namespace graphcap::testing::model
