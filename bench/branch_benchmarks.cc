// The device-side control figures (benchmarks.h): programmatic dependent launch chains and the cost
// of a branch.
//
// PdlChain/n/blocks: a chain of n `chain` kernels (128 threads, `blocks` blocks; each lets the
// next begin at once and waits for its predecessor before it reads), five ways in one iteration,
// in rotating order: graphcap's programmatic chain replayed (LaunchOptions::programmatic), the same
// chain captured and replayed through raw driver calls (cuLaunchKernelEx, cuGraphLaunch), graphcap's
// plain chain replayed, and graphcap's programmatic and plain chains launched eagerly. Each way's
// device time is measured with CUDA events recorded on the stream around it (timing events made
// through the driver, as the H200 probe did: docs/cuda-driver-facts.md, P02); counters are medians
// in us and the ratios the issue sets goals for (pdl_vs_raw, the graphcap chain over the raw one:
// goal <= 1.05; plain_vs_pdl, graphcap's plain chain over its programmatic one: goal >= 1.15 at 64
// kernels of 8-132 blocks). Every way is checked once to compute the chain (the last buffer holds n
// in every block's word) before timing.
//
// BranchCost/k: the device time of one replay (events around it) of graphs of a one-thread setter
// kernel followed by: k empty kernels (plain), an IF whose body is k empty kernels taken (if_true)
// or skipped (if_false), an IF with an empty body skipped (if_empty), a SWITCH of 4 bodies of k
// kernels taking case 3 (switch), and, captured through raw driver calls, an IF of size 1 (no ELSE
// body) skipped (raw_if1_false: what graphcap's always-present ELSE body costs). In graphs without
// a branch the setter's stand-in is `sink`, a one-thread kernel of one 32-bit parameter (sink_us
// alone). The host time of Graph::replay() of the plain and the if_true graph is counted too.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <graphcap/driver/launch_config.h>
#include <graphcap/driver/node_params.h>

#include "bench_env.h"
#include "benchmarks.h"
#include "kernels/bench_kernels.h"

namespace graphcap::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr unsigned kChainThreads = 128;
constexpr unsigned kMaxBlocks = 256;

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Two timing events on the device's stream: the device time of what is enqueued between them.
class EventTimer {
 public:
  explicit EventTimer(BenchEnv& env) : env_(env) {
    ok_ = env.driver().cuEventCreate(&start_, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
          env.driver().cuEventCreate(&stop_, CU_EVENT_DEFAULT) == CUDA_SUCCESS;
  }
  ~EventTimer() {
    if (start_ != nullptr) (void)env_.driver().cuEventDestroy(start_);
    if (stop_ != nullptr) (void)env_.driver().cuEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  bool ok() const { return ok_; }

  // The device time of `issue` (us), or an error.
  Result<double> time(const std::function<Result<void>()>& issue) {
    DriverApi& driver = env_.driver();
    const CUstream stream = env_.stream().native_handle();
    if (CUresult r = driver.cuEventRecord(start_, stream); r != CUDA_SUCCESS) {
      return Error::from_driver("cuEventRecord", r);
    }
    if (Result<void> issued = issue(); !issued) return issued.error();
    if (CUresult r = driver.cuEventRecord(stop_, stream); r != CUDA_SUCCESS) {
      return Error::from_driver("cuEventRecord", r);
    }
    if (CUresult r = driver.cuEventSynchronize(stop_); r != CUDA_SUCCESS) {
      return Error::from_driver("cuEventSynchronize", r);
    }
    float ms = 0;
    if (CUresult r = driver.cuEventElapsedTime(&ms, start_, stop_); r != CUDA_SUCCESS) {
      return Error::from_driver("cuEventElapsedTime", r);
    }
    return static_cast<double>(ms) * 1000.0;
  }

 private:
  BenchEnv& env_;
  CUevent start_ = nullptr;
  CUevent stop_ = nullptr;
  bool ok_ = false;
};

// ---- PdlChain -----------------------------------------------------------------------------------

struct Chain {
  std::vector<Buffer> buffers;  // n + 1, kMaxBlocks words each
  Kernel kernel;
  Graph programmatic;
  Graph plain;
  CUgraph raw_graph = nullptr;
  CUgraphExec raw_exec = nullptr;
};

void destroy_raw(BenchEnv& env, Chain& c) {
  if (c.raw_exec != nullptr) (void)env.driver().cuGraphExecDestroy(c.raw_exec);
  if (c.raw_graph != nullptr) (void)env.driver().cuGraphDestroy(c.raw_graph);
  c.raw_exec = nullptr;
  c.raw_graph = nullptr;
}

LaunchDims chain_dims(unsigned blocks) {
  return LaunchDims{Dim3{blocks, 1, 1}, Dim3{kChainThreads, 1, 1}, 0};
}

// graphcap's chain: buffer i -> buffer i + 1, every link but the first programmatic when asked.
Result<void> launch_chain(BenchEnv& env, const Chain& c, unsigned blocks, bool programmatic) {
  const std::uint32_t wait = 1;
  for (std::size_t i = 0; i + 1 < c.buffers.size(); ++i) {
    LaunchOptions options;
    options.programmatic = programmatic && i > 0;
    if (Result<void> r = env.device().launch(
            env.stream(), c.kernel, chain_dims(blocks),
            {Arg::in(c.buffers[i]), Arg::out(c.buffers[i + 1]), Arg::value(wait)}, options);
        !r) {
      return r;
    }
  }
  return {};
}

// The same chain through raw cuLaunchKernelEx on the stream (captured by a raw capture).
CUresult raw_chain(BenchEnv& env, const Chain& c, unsigned blocks) {
  CUfunction function = c.kernel.native_handle();
  LaunchAttributeList attributes;
  attributes.programmatic();
  CUlaunchConfig config = launch_config(LaunchDims{.grid = {blocks}, .block = {kChainThreads}},
                                        env.stream().native_handle(), &attributes);
  std::uint32_t wait = 1;
  for (std::size_t i = 0; i + 1 < c.buffers.size(); ++i) {
    CUdeviceptr prev = c.buffers[i].native_handle();
    CUdeviceptr mine = c.buffers[i + 1].native_handle();
    void* params[] = {&prev, &mine, &wait};
    config.numAttrs = i > 0 ? 1 : 0;
    if (CUresult r = env.driver().cuLaunchKernelEx(&config, function, params, nullptr);
        r != CUDA_SUCCESS) {
      return r;
    }
  }
  return CUDA_SUCCESS;
}

Result<void> zero(BenchEnv& env, const Chain& c) {
  for (const Buffer& buffer : c.buffers) {
    if (Result<void> r = env.device().fill(buffer, std::uint32_t{0}, env.stream()); !r) return r;
  }
  return {};
}

// Runs `pass` from zeroed buffers and checks the last buffer holds n in every block's word.
Result<void> check_chain(BenchEnv& env, const Chain& c, unsigned blocks, const char* way,
                         const std::function<Result<void>()>& pass) {
  if (Result<void> r = zero(env, c); !r) return r;
  if (Result<void> r = pass(); !r) return r;
  Result<std::vector<std::byte>> bytes = env.device().read(c.buffers.back(), env.stream());
  if (!bytes) return bytes.error();
  std::vector<std::uint32_t> words(bytes->size() / 4);
  std::memcpy(words.data(), bytes->data(), words.size() * 4);
  const std::uint32_t n = static_cast<std::uint32_t>(c.buffers.size() - 1);
  for (unsigned b = 0; b < blocks; ++b) {
    if (words[b] != n) {
      return Error(Errc::invalid_argument, std::string("PdlChain: the ") + way +
                                               " way left block " + std::to_string(b) + " at " +
                                               std::to_string(words[b]) + ", not " +
                                               std::to_string(n));
    }
  }
  return {};
}

Result<Graph> record_chain(BenchEnv& env, const Chain& c, unsigned blocks, bool programmatic) {
  Device& device = env.device();
  if (Result<void> r = device.prepare_capture(env.stream()); !r) return r.error();
  if (Result<void> r = launch_chain(env, c, blocks, programmatic); !r) return r.error();
  if (Result<void> r = device.begin_capture(env.stream()); !r) return r.error();
  if (Result<void> r = launch_chain(env, c, blocks, programmatic); !r) return r.error();
  return device.end_capture(env.stream());
}

Result<void> make_chain(BenchEnv& env, Chain& c, unsigned n, unsigned blocks) {
  Result<Kernel> kernel = env.module().kernel(kChainKernel);
  if (!kernel) return kernel.error();
  c.kernel = *kernel;
  for (unsigned i = 0; i <= n; ++i) {
    Result<Buffer> buffer = env.device().alloc(kMaxBlocks * sizeof(std::uint32_t), env.stream());
    if (!buffer) return buffer.error();
    c.buffers.push_back(std::move(*buffer));
  }
  Result<Graph> programmatic = record_chain(env, c, blocks, true);
  if (!programmatic) return programmatic.error();
  c.programmatic = std::move(*programmatic);
  Result<Graph> plain = record_chain(env, c, blocks, false);
  if (!plain) return plain.error();
  c.plain = std::move(*plain);
  if (Result<void> r = env.sync(); !r) return r;
  DriverApi& driver = env.driver();
  const CUstream stream = env.stream().native_handle();
  if (CUresult r = driver.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
      r != CUDA_SUCCESS) {
    return Error::from_driver("cuStreamBeginCapture", r);
  }
  const CUresult launched = raw_chain(env, c, blocks);
  const CUresult ended = driver.cuStreamEndCapture(stream, &c.raw_graph);
  if (launched != CUDA_SUCCESS) return Error::from_driver("cuLaunchKernelEx", launched);
  if (ended != CUDA_SUCCESS) return Error::from_driver("cuStreamEndCapture", ended);
  if (CUresult r = driver.cuGraphInstantiateWithFlags(&c.raw_exec, c.raw_graph, 0);
      r != CUDA_SUCCESS) {
    return Error::from_driver("cuGraphInstantiateWithFlags", r);
  }
  if (CUresult r = driver.cuGraphUpload(c.raw_exec, stream); r != CUDA_SUCCESS) {
    return Error::from_driver("cuGraphUpload", r);
  }
  return {};
}

void pdl_chain_benchmark(benchmark::State& state, BenchEnv& env) {
  const auto n = static_cast<unsigned>(state.range(0));
  const auto blocks = static_cast<unsigned>(state.range(1));
  Chain c;
  EventTimer timer(env);
  auto fail = [&](const Error& error) {
    destroy_raw(env, c);
    state.SkipWithError(error.message().c_str());
  };
  if (!timer.ok()) return fail(Error(Errc::driver, "PdlChain: no timing events"));
  if (Result<void> made = make_chain(env, c, n, blocks); !made) return fail(made.error());
  DriverApi& driver = env.driver();
  const CUstream stream = env.stream().native_handle();
  const std::function<Result<void>()> ways[5] = {
      [&] { return c.programmatic.replay(); },
      [&]() -> Result<void> {
        if (CUresult r = driver.cuGraphLaunch(c.raw_exec, stream); r != CUDA_SUCCESS) {
          return Error::from_driver("cuGraphLaunch", r);
        }
        return {};
      },
      [&] { return c.plain.replay(); },
      [&] { return launch_chain(env, c, blocks, true); },
      [&] { return launch_chain(env, c, blocks, false); },
  };
  static constexpr const char* kNames[5] = {"graphcap programmatic", "raw programmatic",
                                            "graphcap plain", "eager programmatic", "eager plain"};
  for (int way = 0; way < 5; ++way) {
    if (Result<void> r = check_chain(env, c, blocks, kNames[way], ways[way]); !r) {
      return fail(r.error());
    }
  }
  std::vector<double> us[5];
  int rotation = 0;
  for (auto _ : state) {
    double first = 0;
    for (int i = 0; i < 5; ++i) {
      const int way = (rotation + i) % 5;
      Result<double> took = timer.time(ways[way]);
      if (!took) return fail(took.error());
      us[way].push_back(*took);
      if (way == 0) first = *took;
    }
    rotation = (rotation + 1) % 5;
    state.SetIterationTime(first * 1e-6);
  }
  const double pdl = median(us[0]);
  const double raw = median(us[1]);
  const double plain = median(us[2]);
  const double eager_pdl = median(us[3]);
  const double eager_plain = median(us[4]);
  state.counters["kernels"] = n;
  state.counters["blocks"] = blocks;
  state.counters["pdl_us"] = pdl;
  state.counters["raw_pdl_us"] = raw;
  state.counters["plain_us"] = plain;
  state.counters["eager_pdl_us"] = eager_pdl;
  state.counters["eager_plain_us"] = eager_plain;
  state.counters["pdl_vs_raw"] = raw > 0 ? pdl / raw : 0.0;
  state.counters["plain_vs_pdl"] = pdl > 0 ? plain / pdl : 0.0;
  state.counters["eager_plain_vs_pdl"] = eager_pdl > 0 ? eager_plain / eager_pdl : 0.0;
  state.counters["programmatic_edges"] =
      static_cast<double>(c.programmatic.report().programmatic_edges);
  destroy_raw(env, c);
}

// ---- BranchCost ----------------------------------------------------------------------------------

struct Branches {
  Kernel set_condition;
  Graph sink_only, plain, if_true, if_false, if_empty, switch_case;
  CUgraph raw_graph = nullptr;
  CUgraphExec raw_exec = nullptr;
};

void destroy_raw(BenchEnv& env, Branches& b) {
  if (b.raw_exec != nullptr) (void)env.driver().cuGraphExecDestroy(b.raw_exec);
  if (b.raw_graph != nullptr) (void)env.driver().cuGraphDestroy(b.raw_graph);
  b.raw_exec = nullptr;
  b.raw_graph = nullptr;
}

Result<void> empties(BenchEnv& env, int k) {
  for (int i = 0; i < k; ++i) {
    if (Result<void> r = env.device().launch(env.stream(), env.empty_kernel(),
                                             BenchEnv::kEmptyDims, {});
        !r) {
      return r;
    }
  }
  return {};
}

Result<void> sink(BenchEnv& env) {
  const std::uint32_t value = 0;
  return env.device().launch(env.stream(), env.sink_kernel(), LaunchDims{}, {Arg::value(value)});
}

// A graph recorded by `body` (no warm-up is needed: the bodies allocate nothing).
Result<Graph> record(BenchEnv& env, const std::function<Result<void>()>& body) {
  Device& device = env.device();
  if (Result<void> r = device.prepare_capture(env.stream()); !r) return r.error();
  if (Result<void> r = device.begin_capture(env.stream()); !r) return r.error();
  if (Result<void> r = body(); !r) {
    (void)device.abort_capture(env.stream());
    return r.error();
  }
  return device.end_capture(env.stream());
}

// setter(value) + IF { k empties } through graphcap.
Result<Graph> record_if(BenchEnv& env, const Branches& b, std::uint32_t value, int k) {
  return record(env, [&]() -> Result<void> {
    Device& device = env.device();
    Result<Condition> c = device.condition(env.stream());
    if (!c) return c.error();
    if (Result<void> r = device.launch(env.stream(), b.set_condition, LaunchDims{},
                                       {Arg::condition(*c), Arg::value(value)});
        !r) {
      return r;
    }
    if (Result<void> r = device.begin_if(env.stream(), *c); !r) return r;
    if (Result<void> r = empties(env, k); !r) return r;
    return device.end_if(env.stream(), *c);
  });
}

// The same IF through raw driver calls, with one body (size 1): setter(0) + IF { k empties }.
Result<void> record_raw_if1(BenchEnv& env, Branches& b, int k) {
  DriverApi& driver = env.driver();
  const CUstream stream = env.stream().native_handle();
  Result<Stream*> body_stream = env.device().create_stream();
  if (!body_stream) return body_stream.error();
  const CUstream body = (*body_stream)->native_handle();
  const CUfunction setter = b.set_condition.native_handle();
  const CUfunction empty = env.empty_kernel().native_handle();
  auto check = [](const char* what, CUresult r) -> Result<void> {
    if (r != CUDA_SUCCESS) return Error::from_driver(what, r);
    return {};
  };
  if (Result<void> r = check("cuStreamBeginCapture",
                             driver.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
      !r) {
    return r;
  }
  CUgraph graph = nullptr;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUcontext context = nullptr;
  CUgraphConditionalHandle handle = 0;
  CUresult failed = driver.cuStreamGetCaptureInfo(stream, &status, nullptr, &graph, nullptr,
                                                  nullptr, nullptr);
  if (failed == CUDA_SUCCESS) failed = driver.cuCtxGetCurrent(&context);
  if (failed == CUDA_SUCCESS) {
    failed = driver.cuGraphConditionalHandleCreate(&handle, graph, context, 0,
                                                   kGraphCondAssignDefault);
  }
  std::uint32_t value = 0;
  void* setter_params[] = {&handle, &value};
  if (failed == CUDA_SUCCESS) {
    failed = driver.cuLaunchKernel(setter, 1, 1, 1, 1, 1, 1, 0, stream, setter_params, nullptr);
  }
  const CUgraphNode* deps = nullptr;
  std::size_t count = 0;
  if (failed == CUDA_SUCCESS) {
    failed = driver.cuStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps, nullptr,
                                           &count);
  }
  CUgraphNodeParams params = conditional_node_params(handle, CU_GRAPH_COND_TYPE_IF, 1, context);
  CUgraphNode node = nullptr;
  if (failed == CUDA_SUCCESS) {
    const std::vector<CUgraphNode> after(deps, deps + count);
    failed = driver.cuGraphAddNode(&node, graph, after.data(), nullptr, after.size(), &params);
  }
  if (failed == CUDA_SUCCESS) {
    failed = driver.cuStreamUpdateCaptureDependencies(stream, &node, nullptr, 1,
                                                      CU_STREAM_SET_CAPTURE_DEPENDENCIES);
  }
  if (failed == CUDA_SUCCESS) {
    failed = driver.cuStreamBeginCaptureToGraph(body, params.conditional.phGraph_out[0], nullptr,
                                                nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED);
    for (int i = 0; failed == CUDA_SUCCESS && i < k; ++i) {
      failed = driver.cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, body, nullptr, nullptr);
    }
    CUgraph ended = nullptr;
    (void)driver.cuStreamEndCapture(body, &ended);
  }
  const CUresult end = driver.cuStreamEndCapture(stream, &b.raw_graph);
  if (failed != CUDA_SUCCESS) return Error::from_driver("BranchCost: the raw IF", failed);
  if (Result<void> r = check("cuStreamEndCapture", end); !r) return r;
  if (Result<void> r = check("cuGraphInstantiateWithFlags",
                             driver.cuGraphInstantiateWithFlags(&b.raw_exec, b.raw_graph, 0));
      !r) {
    return r;
  }
  return check("cuGraphUpload", driver.cuGraphUpload(b.raw_exec, stream));
}

Result<void> make_branches(BenchEnv& env, Branches& b, int k) {
  Result<Kernel> setter = env.module().kernel(kSetConditionKernel);
  if (!setter) return setter.error();
  b.set_condition = *setter;
  Result<Graph> sink_only = record(env, [&] { return sink(env); });
  if (!sink_only) return sink_only.error();
  b.sink_only = std::move(*sink_only);
  Result<Graph> plain = record(env, [&]() -> Result<void> {
    if (Result<void> r = sink(env); !r) return r;
    return empties(env, k);
  });
  if (!plain) return plain.error();
  b.plain = std::move(*plain);
  Result<Graph> if_true = record_if(env, b, 1, k);
  if (!if_true) return if_true.error();
  b.if_true = std::move(*if_true);
  Result<Graph> if_false = record_if(env, b, 0, k);
  if (!if_false) return if_false.error();
  b.if_false = std::move(*if_false);
  Result<Graph> if_empty = record_if(env, b, 0, 0);
  if (!if_empty) return if_empty.error();
  b.if_empty = std::move(*if_empty);
  Result<Graph> switch_case = record(env, [&]() -> Result<void> {
    Device& device = env.device();
    Result<Condition> c = device.condition(env.stream());
    if (!c) return c.error();
    const std::uint32_t three = 3;
    if (Result<void> r = device.launch(env.stream(), b.set_condition, LaunchDims{},
                                       {Arg::condition(*c), Arg::value(three)});
        !r) {
      return r;
    }
    if (Result<void> r = device.begin_switch(env.stream(), *c, 4); !r) return r;
    for (unsigned i = 0; i < 4; ++i) {
      if (Result<void> r = device.begin_case(env.stream(), *c, i); !r) return r;
      if (Result<void> r = empties(env, k); !r) return r;
    }
    return device.end_switch(env.stream(), *c);
  });
  if (!switch_case) return switch_case.error();
  b.switch_case = std::move(*switch_case);
  if (Result<void> r = env.sync(); !r) return r;
  return record_raw_if1(env, b, k);
}

void branch_cost_benchmark(benchmark::State& state, BenchEnv& env) {
  const int k = static_cast<int>(state.range(0));
  Branches b;
  EventTimer timer(env);
  auto fail = [&](const Error& error) {
    destroy_raw(env, b);
    state.SkipWithError(error.message().c_str());
  };
  if (!timer.ok()) return fail(Error(Errc::driver, "BranchCost: no timing events"));
  if (Result<void> made = make_branches(env, b, k); !made) return fail(made.error());
  DriverApi& driver = env.driver();
  const CUstream stream = env.stream().native_handle();
  const std::function<Result<void>()> ways[7] = {
      [&] { return b.sink_only.replay(); },
      [&] { return b.plain.replay(); },
      [&] { return b.if_true.replay(); },
      [&] { return b.if_false.replay(); },
      [&] { return b.if_empty.replay(); },
      [&] { return b.switch_case.replay(); },
      [&]() -> Result<void> {
        if (CUresult r = driver.cuGraphLaunch(b.raw_exec, stream); r != CUDA_SUCCESS) {
          return Error::from_driver("cuGraphLaunch", r);
        }
        return {};
      },
  };
  std::vector<double> us[7];
  std::vector<double> host_plain, host_if;
  int rotation = 0;
  for (auto _ : state) {
    for (int i = 0; i < 7; ++i) {
      const int way = (rotation + i) % 7;
      Result<double> took = timer.time(ways[way]);
      if (!took) return fail(took.error());
      us[way].push_back(*took);
    }
    rotation = (rotation + 1) % 7;
    for (auto [graph, host] : {std::pair{&b.plain, &host_plain}, std::pair{&b.if_true, &host_if}}) {
      const auto start = Clock::now();
      if (Result<void> r = graph->replay(); !r) return fail(r.error());
      host->push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
      if (Result<void> r = env.sync(); !r) return fail(r.error());
    }
    state.SetIterationTime(us[2].back() * 1e-6);
  }
  state.counters["k"] = k;
  state.counters["sink_us"] = median(us[0]);
  state.counters["plain_us"] = median(us[1]);
  state.counters["if_true_us"] = median(us[2]);
  state.counters["if_false_us"] = median(us[3]);
  state.counters["if_empty_us"] = median(us[4]);
  state.counters["switch_us"] = median(us[5]);
  state.counters["raw_if1_false_us"] = median(us[6]);
  state.counters["host_replay_plain_us"] = median(host_plain);
  state.counters["host_replay_if_us"] = median(host_if);
  destroy_raw(env, b);
}

}  // namespace

void register_branch_benchmarks(BenchEnv& env, const BenchPlan& plan) {
  const auto iterations = std::max<std::int64_t>(5, static_cast<std::int64_t>(25 * plan.scale));
  for (const int n : {16, 64}) {
    for (const int blocks : {1, 8, 132, 256}) {
      benchmark::RegisterBenchmark("PdlChain", [&env](benchmark::State& state) {
        pdl_chain_benchmark(state, env);
      })
          ->Args({n, blocks})
          ->Iterations(iterations)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (const int k : {10, 100}) {
    benchmark::RegisterBenchmark("BranchCost", [&env](benchmark::State& state) {
      branch_cost_benchmark(state, env);
    })
        ->Arg(k)
        ->Iterations(iterations)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace graphcap::bench
