// decode_loop: a decode-like loop run eagerly, then captured once and replayed.
//
// Each step of the loop feeds a new token into a state, as a language model's decode step does:
// the host writes the step's token into the token buffer (the input, rewritten every step), then
// `embed` mixes it into the state and `layers` rounds of `mix` + `axpy` run over ping-pong buffers
// allocated for the step, and `copy` writes the result back as the next state: 2 * layers + 2
// launches per step.
//
// The loop runs `steps` steps eagerly (every launch through Device::launch). Then, from the same
// initial state, it is captured once: prepare_capture, one warm-up step, begin_capture, one
// recorded step, end_capture. The graph is replayed for `steps` steps, the token rewritten before
// each replay. Both final states must equal each other and a host-computed reference; the
// program exits 1 and says where they differ otherwise.
//
//   decode_loop [--driver=fake|cuda] [--steps=N] [--elements=N] [--layers=N]
//               [--until-device-stop | --skip-by-device]
//
// --until-device-stop: the next token is computed on the device from the new state, and so is
// whether decoding stops (an "end of sequence" token, or --steps steps at most): the host can't
// know the step count in advance. The loop runs three ways from the same start, side by side:
// replay + read the stop flag + sync per step (the way without conditional nodes), one replay of
// a graph holding a WHILE loop over the step (Device::begin_while), and blind replay of the step
// count the first way found (the lower bound). All three final states, and the step counts, must
// equal the host reference.
//
// --skip-by-device: each step may end with one more refining layer over the state, and whether it
// does is decided on the device from the new state (decode::refine_after): the recorded step is
// the step, then `decide` (which sets a Condition), then an IF (Device::begin_if .. end_if) whose
// body is the refinement. The graph is replayed for `steps` steps; the final state and the number
// of steps that refined must equal the host reference's.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <graphcap/graphcap.h>

#include "decode_kernels.h"
#include "example_support.h"

namespace {

using graphcap::Arg;
using graphcap::Buffer;
using graphcap::Device;
using graphcap::Error;
using graphcap::Graph;
using graphcap::Kernel;
using graphcap::LaunchDims;
using graphcap::Result;
using Clock = std::chrono::steady_clock;

struct Options {
  bool cuda = false;
  bool until_device_stop = false;
  bool skip_by_device = false;
  std::uint32_t steps = 200;
  std::uint32_t elements = 1024;
  std::uint32_t layers = 16;
};

using example::check;
using example::fail;

bool parse_count(std::string_view text, std::string_view name, std::uint32_t min,
                 std::uint32_t max, std::uint32_t& out) {
  if (text.substr(0, name.size()) != name) return false;
  const std::string value(text.substr(name.size()));
  char* end = nullptr;
  const unsigned long parsed = std::strtoul(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || parsed < min || parsed > max) {
    fail(std::string(name.substr(0, name.size() - 1)) + " needs a whole number from " + std::to_string(min) + " to " +
         std::to_string(max) + ", not '" + value + "'");
  }
  out = static_cast<std::uint32_t>(parsed);
  return true;
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--driver=fake") {
      options.cuda = false;
    } else if (arg == "--driver=cuda") {
      options.cuda = true;
    } else if (arg == "--until-device-stop") {
      options.until_device_stop = true;
    } else if (arg == "--skip-by-device") {
      options.skip_by_device = true;
    } else if (parse_count(arg, "--steps=", 1, 1000000, options.steps) ||
               parse_count(arg, "--elements=", 1, 1u << 26, options.elements) ||
               parse_count(arg, "--layers=", 1, 1000, options.layers)) {
    } else if (arg == "--help" || arg == "-h") {
      std::puts("usage: decode_loop [--driver=fake|cuda] [--steps=N] [--elements=N] [--layers=N] "
                "[--until-device-stop | --skip-by-device]");
      std::exit(0);
    } else {
      fail("unknown argument '" + std::string(arg) + "' (try --help)");
    }
  }
  if (options.until_device_stop && options.skip_by_device) {
    fail("--until-device-stop and --skip-by-device are separate runs: choose one");
  }
  return options;
}

// The token of step `step`: deterministic, different every step and every element.
std::vector<std::uint32_t> token_of(std::uint32_t step, std::uint32_t elements) {
  std::vector<std::uint32_t> token(elements);
  std::uint32_t x = 0x12345678u ^ (step * 0x01000193u);
  for (std::uint32_t& value : token) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    value = x;
  }
  return token;
}

std::vector<std::uint32_t> initial_state(std::uint32_t elements) {
  std::vector<std::uint32_t> state(elements);
  for (std::uint32_t i = 0; i < elements; ++i) state[i] = i * 2654435761u + 7u;
  return state;
}

std::uint32_t salt_of(std::uint32_t layer) { return 0xA5A5A5A5u + layer * 0x9E3779B9u; }
constexpr std::uint32_t kResidualScale = 3;

std::span<const std::byte> bytes_of(const std::vector<std::uint32_t>& values) {
  return std::as_bytes(std::span<const std::uint32_t>(values));
}

std::vector<std::uint32_t> words_of(const std::vector<std::byte>& bytes) {
  std::vector<std::uint32_t> words(bytes.size() / sizeof(std::uint32_t));
  std::memcpy(words.data(), bytes.data(), words.size() * sizeof(std::uint32_t));
  return words;
}

// One step on the host: embed the token into the state, then the layers (the kernels' arithmetic).
void host_step(const std::vector<std::uint32_t>& token, std::vector<std::uint32_t>& state,
               const Options& o) {
  std::vector<std::uint32_t> h(o.elements), s(o.elements), other(o.elements);
  for (std::uint32_t i = 0; i < o.elements; ++i) h[i] = decode::embed_one(token[i], state[i]);
  for (std::uint32_t layer = 0; layer < o.layers; ++layer) {
    for (std::uint32_t i = 0; i < o.elements; ++i) {
      s[i] = decode::mix_one(h[i], h[(i + 1) % o.elements], salt_of(layer));
    }
    for (std::uint32_t i = 0; i < o.elements; ++i) {
      other[i] = decode::axpy_one(kResidualScale, s[i], h[i]);
    }
    std::swap(h, other);
  }
  state = h;
}

// The refinement on the host (--skip-by-device): one more layer over the state itself.
void host_refine(std::vector<std::uint32_t>& state, const Options& o) {
  std::vector<std::uint32_t> s(o.elements), other(o.elements);
  for (std::uint32_t i = 0; i < o.elements; ++i) {
    s[i] = decode::mix_one(state[i], state[(i + 1) % o.elements], salt_of(o.layers));
  }
  for (std::uint32_t i = 0; i < o.elements; ++i) {
    other[i] = decode::axpy_one(kResidualScale, s[i], state[i]);
  }
  state = other;
}

// The skip-by-device loop on the host: the final state and how many steps refined.
std::pair<std::vector<std::uint32_t>, std::uint32_t> reference_with_refinement(const Options& o) {
  std::vector<std::uint32_t> state = initial_state(o.elements);
  std::uint32_t refined = 0;
  for (std::uint32_t step = 0; step < o.steps; ++step) {
    host_step(token_of(step, o.elements), state, o);
    if (decode::refine_after(state[0])) {
      host_refine(state, o);
      ++refined;
    }
  }
  return {state, refined};
}

// The same loop on the host: what both runs must produce.
std::vector<std::uint32_t> reference(const Options& o) {
  std::vector<std::uint32_t> state = initial_state(o.elements);
  for (std::uint32_t step = 0; step < o.steps; ++step) {
    host_step(token_of(step, o.elements), state, o);
  }
  return state;
}

// The device-stop loop on the host: the final state and how many steps ran.
std::pair<std::vector<std::uint32_t>, std::uint32_t> reference_until_stop(const Options& o) {
  std::vector<std::uint32_t> state = initial_state(o.elements);
  std::vector<std::uint32_t> token = token_of(0, o.elements);
  std::uint32_t left = o.steps;
  std::uint32_t steps = 0;
  for (;;) {
    host_step(token, state, o);
    ++steps;
    for (std::uint32_t i = 0; i < o.elements; ++i) {
      token[i] = decode::next_token_one(state[i], state[0]);
    }
    if (decode::stop_after(state[0], --left)) break;
  }
  return {state, steps};
}

class DecodeLoop {
 public:
  DecodeLoop(Device& device, const graphcap::Module& module, const Options& options)
      : device_(device), options_(options) {
    embed_ = check(module.kernel("embed"), "finding kernel embed");
    mix_ = check(module.kernel("mix"), "finding kernel mix");
    axpy_ = check(module.kernel("axpy"), "finding kernel axpy");
    copy_ = check(module.kernel("copy"), "finding kernel copy");
    next_token_ = check(module.kernel("next_token"), "finding kernel next_token");
    decide_ = check(module.kernel("decide"), "finding kernel decide");
    const unsigned blocks = std::min<unsigned>((options.elements + 255) / 256, 1024);
    dims_ = LaunchDims{graphcap::Dim3{blocks, 1, 1}, graphcap::Dim3{256, 1, 1}, 0};
    state_ = check(device.alloc(bytes(), device.stream()), "allocating the state");
    token_ = check(device.alloc(bytes(), device.stream()), "allocating the token buffer");
  }

  std::uint32_t launches_per_step() const { return 2 * options_.layers + 2; }
  std::size_t bytes() const { return std::size_t{options_.elements} * sizeof(std::uint32_t); }

  void reset_state() {
    check(device_.write(state_, bytes_of(initial_state(options_.elements)), device_.stream()),
          "writing the initial state");
  }
  void write_token(std::uint32_t step) {
    check(device_.write(token_, bytes_of(token_of(step, options_.elements)), device_.stream()),
          "writing the token");
  }

  // The step's launches. Its ping-pong buffers come from the stream's pool each step and go
  // back to it when the step ends (a recorded step's stay pinned on the graph).
  void launch_step() {
    graphcap::Stream& s = device_.stream();
    const std::uint32_t n = options_.elements;
    Buffer h = check(device_.alloc(bytes(), s), "allocating a step buffer");
    Buffer other = check(device_.alloc(bytes(), s), "allocating a step buffer");
    Buffer scratch = check(device_.alloc(bytes(), s), "allocating a step buffer");
    check(device_.launch(s, embed_, dims_,
                         {Arg::in(token_), Arg::in(state_), Arg::out(h), Arg::value(n)}),
          "launching embed");
    for (std::uint32_t layer = 0; layer < options_.layers; ++layer) {
      check(device_.launch(s, mix_, dims_,
                           {Arg::in(h), Arg::out(scratch), Arg::value(salt_of(layer)),
                            Arg::value(n)}),
            "launching mix");
      check(device_.launch(s, axpy_, dims_,
                           {Arg::in(scratch), Arg::in(h), Arg::out(other),
                            Arg::value(kResidualScale), Arg::value(n)}),
            "launching axpy");
      std::swap(h, other);
    }
    check(device_.launch(s, copy_, dims_, {Arg::in(h), Arg::out(state_), Arg::value(n)}),
          "launching copy");
  }

  // The device-side stop (--until-device-stop): the next token and the decision, from the new
  // state; `condition` is a loop's (Arg::condition) or a 0 handle (no loop).
  void launch_next_token(const Buffer& left, const Buffer& go, const Arg& condition) {
    check(device_.launch(device_.stream(), next_token_, dims_,
                         {Arg::in(state_), Arg::out(token_), Arg::inout(left), Arg::out(go),
                          condition, Arg::value(options_.elements)}),
          "launching next_token");
  }
  void write_first_token() { write_token(0); }

  // The refinement (--skip-by-device): one more mix + axpy layer over the state, copied back.
  void launch_refine() {
    graphcap::Stream& s = device_.stream();
    const std::uint32_t n = options_.elements;
    Buffer scratch = check(device_.alloc(bytes(), s), "allocating a refinement buffer");
    Buffer other = check(device_.alloc(bytes(), s), "allocating a refinement buffer");
    check(device_.launch(s, mix_, dims_,
                         {Arg::in(state_), Arg::out(scratch), Arg::value(salt_of(options_.layers)),
                          Arg::value(n)}),
          "launching mix (refine)");
    check(device_.launch(s, axpy_, dims_,
                         {Arg::in(scratch), Arg::in(state_), Arg::out(other),
                          Arg::value(kResidualScale), Arg::value(n)}),
          "launching axpy (refine)");
    check(device_.launch(s, copy_, dims_, {Arg::in(other), Arg::out(state_), Arg::value(n)}),
          "launching copy (refine)");
  }
  // Whether to refine, decided on the device from the new state: sets `refine`, counts in taken.
  void launch_decide(const Buffer& taken, const graphcap::Condition& refine) {
    check(device_.launch(device_.stream(), decide_, LaunchDims{},
                         {Arg::in(state_), Arg::inout(taken), Arg::condition(refine)}),
          "launching decide");
  }

  std::vector<std::uint32_t> read_state() {
    return words_of(check(device_.read(state_, device_.stream()), "reading the state"));
  }
  void sync() { check(device_.sync(device_.stream()), "syncing the stream"); }

 private:
  Device& device_;
  Options options_;
  Kernel embed_, mix_, axpy_, copy_, next_token_, decide_;
  LaunchDims dims_;
  Buffer state_;
  Buffer token_;
};

double us_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

std::string with_commas(std::size_t value) {
  const std::string digits = std::to_string(value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

// The first element where two states differ, if any.
std::optional<std::size_t> first_difference(const std::vector<std::uint32_t>& a,
                                            const std::vector<std::uint32_t>& b) {
  if (a.size() != b.size()) return std::min(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return i;
  }
  return std::nullopt;
}

std::uint32_t checksum(const std::vector<std::uint32_t>& words) {
  std::uint32_t hash = 2166136261u;  // FNV-1a over the words
  for (std::uint32_t word : words) hash = (hash ^ word) * 16777619u;
  return hash;
}

// --until-device-stop: see the header comment.
int run_until_device_stop(const Options& options) {
  example::DecodeDriver decode_driver(options.cuda, "decode_loop");
  graphcap::DriverApi* driver = &decode_driver.api();
  graphcap::fake::FakeDriver* fake = decode_driver.fake();
  std::unique_ptr<Device> device = check(Device::open(*driver), "opening the device");
  graphcap::Module module =
      check(device->load_module(decode_driver.image()), "loading the kernels");
  DecodeLoop loop(*device, module, options);
  graphcap::Stream& stream = device->stream();
  const Buffer left = check(device->alloc(sizeof(std::uint32_t), stream), "allocating left");
  const Buffer go = check(device->alloc(sizeof(std::uint32_t), stream), "allocating go");
  const Arg no_loop = Arg::value(graphcap::CUgraphConditionalHandle{0});
  auto start_state = [&] {
    loop.reset_state();
    loop.write_first_token();
    check(device->fill(left, std::uint32_t{options.steps}, stream), "setting left");
  };
  auto read_go = [&] {
    const std::vector<std::byte> bytes = check(device->read(go, stream), "reading the stop flag");
    std::uint32_t value = 0;
    std::memcpy(&value, bytes.data(), sizeof value);
    return value;
  };

  // The step graph (step + next token, no loop), and the loop graph (a WHILE loop over them).
  start_state();
  Graph step = check(device->record(stream,
                                    [&] {
                                      loop.launch_step();
                                      loop.launch_next_token(left, go, no_loop);
                                    }),
                     "record (the step)");
  // The loop's recording is not its warm-up (it opens a WHILE node around the step), so its
  // window is spelled out.
  check(device->prepare_capture(stream), "prepare_capture");
  start_state();  // the warm-up: one step primes the pool with the body's buffers
  loop.launch_step();
  loop.launch_next_token(left, go, no_loop);
  check(device->begin_capture(stream), "begin_capture");
  graphcap::Loop decode = check(device->begin_while(stream), "begin_while");
  loop.launch_step();
  loop.launch_next_token(left, go, Arg::condition(decode));
  check(device->end_while(stream, decode), "end_while");
  Graph looped = check(device->end_capture(stream), "end_capture (the loop)");

  struct Way {
    const char* name;
    std::vector<double> us;
    std::vector<double> host_us;
    std::vector<std::uint32_t> state;
    std::uint32_t steps = 0;
  };
  Way ways[3] = {{"replay + read + sync per step", {}, {}, {}, 0},
                 {"WHILE loop, one replay", {}, {}, {}, 0},
                 {"blind replay of the known count", {}, {}, {}, 0}};
  constexpr int kRuns = 5;
  for (int run = 0; run < kRuns; ++run) {
    for (int k = 0; k < 3; ++k) {
      const int way = (run + k) % 3;
      if (way == 2 && ways[0].steps == 0) continue;  // needs the count the first way found
      start_state();
      loop.sync();
      std::uint32_t steps = 0;
      const Clock::time_point start = Clock::now();
      double host_us = 0;
      if (way == 0) {
        do {
          check(step.replay(), "replay");
          ++steps;
        } while (read_go() != 0 && steps < options.steps);
        host_us = us_since(start);
      } else if (way == 1) {
        check(looped.replay(), "replay of the loop");
        host_us = us_since(start);
        loop.sync();
        steps = options.steps - [&] {
          const std::vector<std::byte> b = check(device->read(left, stream), "reading left");
          std::uint32_t value = 0;
          std::memcpy(&value, b.data(), sizeof value);
          return value;
        }();
      } else {
        for (steps = 0; steps < ways[0].steps; ++steps) check(step.replay(), "replay");
        host_us = us_since(start);
      }
      loop.sync();
      const double took = us_since(start);
      ways[way].us.push_back(took);
      ways[way].host_us.push_back(host_us);
      ways[way].state = loop.read_state();
      ways[way].steps = steps;
    }
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  const auto [expected, expected_steps] = reference_until_stop(options);
  std::printf("decode_loop --until-device-stop on the %s driver: %u-element state, %u layers, at "
              "most %u steps; the device decided to stop after %u\n\n",
              driver->name(), options.elements, options.layers, options.steps, ways[1].steps);
  std::printf("  %-34s %12s %14s\n", "way (median of 5)", "per step", "host per step");
  for (const Way& way : ways) {
    const double steps = way.steps > 0 ? way.steps : 1;
    std::printf("  %-34s %9.2f us %11.3f us\n", way.name, median(way.us) / steps,
                median(way.host_us) / steps);
  }
  const double per_step[3] = {median(ways[0].us) / std::max(1u, ways[0].steps),
                              median(ways[1].us) / std::max(1u, ways[1].steps),
                              median(ways[2].us) / std::max(1u, ways[2].steps)};
  std::printf("\n  WHILE loop vs replay + read + sync  %7.2fx faster per step\n",
              per_step[1] > 0 ? per_step[0] / per_step[1] : 0.0);
  std::printf("  WHILE loop vs blind replay         %7.2fx the time per step\n\n",
              per_step[2] > 0 ? per_step[1] / per_step[2] : 0.0);
  if (fake) {
    std::printf("(on the fake driver the times measure the simulation, not a GPU)\n\n");
  }
  int status = 0;
  if (fake) {
    for (const std::string& violation : fake->violations()) {
      std::printf("FAKE DRIVER VIOLATION: %s\n", violation.c_str());
      status = 1;
    }
  }
  for (const Way& way : ways) {
    if (way.steps != expected_steps || first_difference(way.state, expected)) {
      std::printf("MISMATCH: %s ran %u steps (the host reference %u), and its state %s the "
                  "reference's\n",
                  way.name, way.steps, expected_steps,
                  first_difference(way.state, expected) ? "differs from" : "equals");
      status = 1;
    }
  }
  if (status == 0) {
    std::printf("all three ways ran %u steps and their states equal the host reference "
                "(checksum 0x%08x)\n", expected_steps, checksum(expected));
  }
  check(step.destroy(), "destroying the step graph");
  check(looped.destroy(), "destroying the loop graph");
  return status;
}

// --skip-by-device: see the header comment.
int run_skip_by_device(const Options& options) {
  example::DecodeDriver decode_driver(options.cuda, "decode_loop");
  graphcap::DriverApi* driver = &decode_driver.api();
  graphcap::fake::FakeDriver* fake = decode_driver.fake();
  std::unique_ptr<Device> device = check(Device::open(*driver), "opening the device");
  graphcap::Module module =
      check(device->load_module(decode_driver.image()), "loading the kernels");
  DecodeLoop loop(*device, module, options);
  graphcap::Stream& stream = device->stream();
  const Buffer taken = check(device->alloc(sizeof(std::uint32_t), stream), "allocating taken");

  // The warm-up runs the step and the refinement (a decision needs the recording's condition):
  // the pool is primed with both bodies' buffers.
  check(device->prepare_capture(stream), "prepare_capture");
  loop.reset_state();
  loop.write_token(0);
  loop.launch_step();
  loop.launch_refine();
  check(device->begin_capture(stream), "begin_capture");
  loop.launch_step();
  graphcap::Condition refine = check(device->condition(stream), "making the condition");
  loop.launch_decide(taken, refine);
  check(device->begin_if(stream, refine), "begin_if");
  loop.launch_refine();
  check(device->end_if(stream, refine), "end_if");
  Graph graph = check(device->end_capture(stream), "end_capture");

  loop.reset_state();
  check(device->fill(taken, std::uint32_t{0}, stream), "clearing taken");
  loop.sync();
  const Clock::time_point start = Clock::now();
  for (std::uint32_t step = 0; step < options.steps; ++step) {
    loop.write_token(step);
    check(graph.replay(), "replay");
  }
  loop.sync();
  const double replay_us = us_since(start);
  const std::vector<std::uint32_t> replayed = loop.read_state();
  const std::vector<std::byte> taken_bytes = check(device->read(taken, stream), "reading taken");
  std::uint32_t refined = 0;
  std::memcpy(&refined, taken_bytes.data(), sizeof refined);
  const auto [expected, expected_refined] = reference_with_refinement(options);

  std::printf("decode_loop --skip-by-device on the %s driver: %u-element state, %u layers, %u "
              "steps\n",
              driver->name(), options.elements, options.layers, options.steps);
  std::printf("(each step: %u launches, then `decide` sets an IF whose body refines the state "
              "with 3 more launches)\n\n",
              loop.launches_per_step());
  std::printf("  %-32s %10u of %u (the host reference: %u)\n", "steps the device refined", refined,
              options.steps, expected_refined);
  std::printf("  %-32s %10zu\n", "conditional nodes in the graph",
              graph.report().nodes(graphcap::CU_GRAPH_NODE_TYPE_CONDITIONAL));
  std::printf("  %-32s %7.2f us\n\n", "time per step, replayed", replay_us / options.steps);
  if (fake) {
    std::printf("(on the fake driver the times measure the simulation, not a GPU)\n\n");
  }
  int status = 0;
  if (fake) {
    for (const std::string& violation : fake->violations()) {
      std::printf("FAKE DRIVER VIOLATION: %s\n", violation.c_str());
      status = 1;
    }
  }
  if (refined != expected_refined) {
    std::printf("MISMATCH: the device refined %u steps, the host reference %u\n", refined,
                expected_refined);
    status = 1;
  }
  if (std::optional<std::size_t> at = first_difference(replayed, expected)) {
    std::printf("MISMATCH: the replayed state differs from the host reference first at element "
                "%zu\n", *at);
    status = 1;
  }
  if (status == 0) {
    std::printf("the replayed state equals the host reference (checksum 0x%08x), and so does the "
                "count of refined steps\n", checksum(replayed));
  }
  check(graph.destroy(), "destroying the graph");
  return status;
}

int run(const Options& options) {
  if (options.until_device_stop) return run_until_device_stop(options);
  if (options.skip_by_device) return run_skip_by_device(options);
  // The driver: the fake (with the kernels' fake bodies) or libcuda (with the embedded fatbin).
  example::DecodeDriver decode_driver(options.cuda, "decode_loop");
  graphcap::DriverApi* driver = &decode_driver.api();
  graphcap::fake::FakeDriver* fake = decode_driver.fake();
  std::unique_ptr<Device> device = check(Device::open(*driver), "opening the device");
  graphcap::Module module =
      check(device->load_module(decode_driver.image()), "loading the kernels");
  DecodeLoop loop(*device, module, options);

  // Eager: one untimed step first (the pools reach their working set), then the timed run.
  loop.reset_state();
  loop.write_token(0);
  loop.launch_step();
  loop.sync();
  loop.reset_state();
  const Clock::time_point eager_start = Clock::now();
  for (std::uint32_t step = 0; step < options.steps; ++step) {
    loop.write_token(step);
    loop.launch_step();
  }
  loop.sync();
  const double eager_us = us_since(eager_start);
  const std::vector<std::uint32_t> eager = loop.read_state();

  // Captured: Device::record runs the step once eagerly (the warm-up), then records it (not
  // executed).
  graphcap::Stream& stream = device->stream();
  loop.reset_state();
  loop.write_token(0);
  Graph graph = check(device->record(stream, [&] { loop.launch_step(); }), "record");

  // Replayed, from the same initial state.
  loop.reset_state();
  loop.sync();
  const Clock::time_point replay_start = Clock::now();
  for (std::uint32_t step = 0; step < options.steps; ++step) {
    loop.write_token(step);
    check(graph.replay(), "replay");
  }
  loop.sync();
  const double replay_us = us_since(replay_start);
  const std::vector<std::uint32_t> replayed = loop.read_state();
  const std::vector<std::uint32_t> expected = reference(options);

  const graphcap::GraphReport& report = graph.report();
  const double eager_step = eager_us / options.steps;
  const double replay_step = replay_us / options.steps;
  std::printf("decode_loop on the %s driver: %u-element state, %u layers, %u steps\n",
              driver->name(), options.elements, options.layers, options.steps);
  std::printf("(a step writes the token, then makes %u launches eagerly or one graph replay)\n\n",
              loop.launches_per_step());
  std::printf("  %-24s %12u\n", "launches per step", loop.launches_per_step());
  std::printf("  %-24s %12zu  (%zu kernel)\n", "graph nodes", report.node_count,
              report.nodes(graphcap::CU_GRAPH_NODE_TYPE_KERNEL));
  std::printf("  %-24s %12s  (%zu slices)\n", "pinned bytes",
              with_commas(report.pinned_bytes).c_str(), report.pinned_slices);
  std::printf("  %-24s %9.2f us\n", "time per step, eager", eager_step);
  std::printf("  %-24s %9.2f us\n", "time per step, replayed", replay_step);
  std::printf("  %-24s %11.2fx\n\n", "speedup", replay_step > 0 ? eager_step / replay_step : 0.0);
  if (fake) {
    std::printf("(on the fake driver kernels run as host code when the stream is synced: the times\n"
                " measure the simulation and graphcap's own overhead, not a GPU)\n\n");
  }

  int status = 0;
  if (fake) {
    for (const std::string& violation : fake->violations()) {
      std::printf("FAKE DRIVER VIOLATION: %s\n", violation.c_str());
      status = 1;
    }
  }
  const auto report_difference = [&](const char* a_name, const std::vector<std::uint32_t>& a,
                                     const char* b_name, const std::vector<std::uint32_t>& b) {
    if (std::optional<std::size_t> at = first_difference(a, b)) {
      if (*at < a.size() && *at < b.size()) {
        std::printf("MISMATCH: the %s and %s states differ first at element %zu (0x%08x vs 0x%08x)\n",
                    a_name, b_name, *at, a[*at], b[*at]);
      } else {
        std::printf("MISMATCH: the %s state has %zu elements, the %s state %zu\n", a_name,
                    a.size(), b_name, b.size());
      }
      status = 1;
    }
  };
  report_difference("eager", eager, "replayed", replayed);
  report_difference("eager", eager, "host reference", expected);
  report_difference("replayed", replayed, "host reference", expected);
  if (status == 0) {
    std::printf("eager and replayed states are identical, and equal the host reference "
                "(checksum 0x%08x)\n", checksum(replayed));
  }
  check(graph.destroy(), "destroying the graph");
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  return example::run_main("decode_loop", [&] { return run(parse(argc, argv)); });
}
