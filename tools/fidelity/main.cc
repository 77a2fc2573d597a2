// graphcap-fidelity: checks the fake driver against a real one with generated driver-API
// programs (tools/fidelity/README.md, docs/conformance.md "Generated programs").
//
//   graphcap-fidelity --driver=fake --seed=1 --programs=1000 [--record=DIR]
//   graphcap-fidelity --driver=cuda --seed=1 --programs=10000 --record=DIR [--jobs=8]
//       [--shrink=3] [--kernels=test_kernels.fatbin] [--deadline=SECONDS]
//   graphcap-fidelity --replay=DIR_OR_FILE [--driver=fake|cuda]
//   graphcap-fidelity --summary=DIR        (coverage and differences of recorded traces)
//
// --driver=cuda generates each program on a fake (the generator's model), runs it on the GPU,
// records the GPU's observations and compares them with the fake's, call by call; the first
// difference of each program is noted in its trace, and the first --shrink programs of each
// kind of difference are shrunk on both drivers to the shortest program that still shows it
// (DIR/shrunk-*.trace). Programs run in --jobs child processes: a program that crashes or hangs
// the driver is recorded as such and the run goes on. --replay runs recorded traces on a driver
// (the fake by default) and reports every call that answers other than the recording; its exit
// status is 1 if any does.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <graphcap/driver/cuda_driver.h>
#include <graphcap/driver/entry_traits.h>
#include <graphcap/driver/error_names.h>
#include <graphcap/fake/fake_driver.h>

#include "fake_model.h"
#include "generator.h"
#include "harness.h"
#include "kernels/test_kernels.h"
#include "replay.h"

namespace fs = std::filesystem;
using namespace graphcap;
using namespace graphcap::fidelity;

namespace {

struct Options {
  std::string driver = "fake";
  std::uint64_t seed = 1;
  std::uint64_t programs = 100;
  std::uint64_t start = 0;
  GeneratorOptions generator;
  std::string record, replay, summary, kernels;
  int jobs = 1;
  int shrink = 3;
  std::size_t show = 3;  // --replay: programs printed per kind of difference
  double deadline = 0;  // seconds after the start: no program is begun after it (0: none)
};

const auto kStarted = std::chrono::steady_clock::now();

bool past(double deadline) {
  return deadline > 0 &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - kStarted).count() >
             deadline;
}

using Fake = FidelityFake;

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot read " + path);
  const std::streamsize size = in.tellg();
  in.seekg(0);
  std::vector<std::byte> out(static_cast<std::size_t>(size) + 1);  // and a NUL after it
  if (!in.read(reinterpret_cast<char*>(out.data()), size)) {
    throw std::runtime_error("cannot read " + path);
  }
  return out;
}

std::string underscores(std::string text) {
  std::replace(text.begin(), text.end(), ' ', '_');
  return text;
}

void write(const fs::path& path, const Trace& trace) {
  std::ofstream out(path);
  write_trace(out, trace);
}

std::vector<Trace> read_all(const std::string& where) {
  std::vector<fs::path> files;
  if (fs::is_directory(where)) {
    for (const auto& entry : fs::recursive_directory_iterator(where)) {
      if (entry.path().extension() == ".trace") files.push_back(entry.path());
    }
  } else {
    files.push_back(where);
  }
  std::sort(files.begin(), files.end());
  std::vector<Trace> traces;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    for (Trace& trace : read_traces(in, file.string())) traces.push_back(std::move(trace));
  }
  return traces;
}

// Coverage and differences of a set of traces.
void summarize(const std::vector<Trace>& traces, std::ostream& out) {
  std::map<std::string, std::size_t> calls, skipped;
  std::map<std::string, std::map<int, std::size_t>> codes;
  std::map<std::string, std::pair<std::size_t, std::uint64_t>> differences;
  std::size_t total = 0, crashed = 0, differing = 0, racy = 0, racy_calls = 0, unset = 0,
              unset_calls = 0;
  std::uint64_t first_racy = 0, first_unset = 0;
  for (const Trace& trace : traces) {
    if (!trace.status.empty()) ++crashed;
    if (trace.racy != 0 && racy++ == 0) first_racy = trace.index;
    racy_calls += trace.racy;
    if (trace.unset != 0 && unset++ == 0) first_unset = trace.index;
    unset_calls += trace.unset;
    if (!trace.difference.empty()) {
      ++differing;
      auto& d = differences[trace.difference];
      if (d.first++ == 0) d.second = trace.index;
    }
    for (std::size_t i = 0; i < trace.calls.size() && i < trace.observations.size(); ++i) {
      const std::string& entry = trace.calls[i].entry;
      if (trace.observations[i].skipped) {
        ++skipped[entry];
        continue;
      }
      ++total;
      ++calls[entry];
      ++codes[entry][trace.observations[i].code];
    }
  }
  out << "programs " << traces.size() << ", calls made " << total << ", programs that differ "
      << differing << ", programs the driver did not survive " << crashed << "\n\n";
  out << "| entry point | calls | skipped | results (code: count) |\n|---|---|---|---|\n";
  std::size_t below = 0;
  for (const EntryTraits& traits : kEntryTraits) {
    const std::string name(traits.name);
    out << "| `" << name << "` | " << calls[name] << " | " << skipped[name] << " | ";
    bool first = true;
    for (const auto& [code, count] : codes[name]) {
      out << (first ? "" : ", ") << code << ": " << count;
      first = false;
    }
    out << " |\n";
    if (calls[name] < 50) ++below;
  }
  out << "\nentry points called fewer than 50 times: " << below << "\n";
  if (!differences.empty() || racy != 0 || unset != 0) {
    out << "\n| first difference (entry point, recorded/fake) | programs | first program |\n"
           "|---|---|---|\n";
    for (const auto& [kind, d] : differences) {
      out << "| " << kind << " | " << d.first << " | " << d.second << " |\n";
    }
    // Not a difference of the fake: bytes no order predicts (harness.h), counted apart.
    if (racy != 0) {
      out << "| racy bytes (not compared; " << racy_calls << " calls) | " << racy << " | "
          << first_racy << " |\n";
    }
    // Nor are bytes a conditional value the program does not define steers (races.cc).
    if (unset != 0) {
      out << "| conditional value not set (not compared; " << unset_calls << " calls) | " << unset
          << " | " << first_unset << " |\n";
    }
  }
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) -> std::optional<std::string> {
      const std::string prefix = std::string(flag) + "=";
      if (arg.rfind(prefix, 0) == 0) return arg.substr(prefix.size());
      return std::nullopt;
    };
    std::optional<std::string> v;
    if ((v = value("--driver"))) o.driver = *v;
    else if ((v = value("--seed"))) o.seed = std::stoull(*v);
    else if ((v = value("--programs"))) o.programs = std::stoull(*v);
    else if ((v = value("--start"))) o.start = std::stoull(*v);
    else if ((v = value("--record"))) o.record = *v;
    else if ((v = value("--replay"))) o.replay = *v;
    else if ((v = value("--summary"))) o.summary = *v;
    else if ((v = value("--kernels"))) o.kernels = *v;
    else if ((v = value("--jobs"))) o.jobs = std::max(1, std::stoi(*v));
    else if ((v = value("--show"))) o.show = std::stoull(*v);
    else if ((v = value("--shrink"))) o.shrink = std::stoi(*v);
    else if ((v = value("--deadline"))) o.deadline = std::stod(*v);
    else if ((v = value("--calls"))) {
      const std::size_t colon = v->find(':');
      o.generator.min_calls = std::stoull(v->substr(0, colon));
      o.generator.max_calls = colon == std::string::npos ? o.generator.min_calls
                                                         : std::stoull(v->substr(colon + 1));
    } else {
      std::cerr << "graphcap-fidelity: unknown argument " << arg
                << " (see the comment at the top of tools/fidelity/main.cc)\n";
      std::exit(2);
    }
  }
  if (o.driver != "fake" && o.driver != "cuda") {
    std::cerr << "graphcap-fidelity: --driver is cuda or fake\n";
    std::exit(2);
  }
  o.generator.seed = o.seed;
  return o;
}

std::unique_ptr<DriverApi> cuda_driver() {
  Result<std::unique_ptr<DriverApi>> driver = load_cuda_driver();
  if (!driver) throw std::runtime_error(to_string(driver.error()));
  return std::move(*driver);
}

std::vector<std::byte> cuda_image(const Options& o) {
  if (o.kernels.empty()) {
    throw std::runtime_error("--driver=cuda needs --kernels=FILE: the test kernels' fatbin "
                             "(nvcc -fatbin tests/kernels/test_kernels.cu)");
  }
  return read_file(o.kernels);
}

// Whether the context took a sticky launch error (700-799: illegal address, launch failure,
// hardware exceptions): every later call of this process would answer it.
bool context_lost(DriverApi& cuda) {
  const CUresult r = cuda.cuCtxSynchronize();
  return r >= CUDA_ERROR_ILLEGAL_ADDRESS && r < 800;
}

// Programs [begin, end) on the GPU, each generated on a fresh fake first. Runs in a child.
void run_on_cuda(const Options& o, std::uint64_t begin, std::uint64_t end, int job) {
  std::unique_ptr<DriverApi> cuda = cuda_driver();
  const std::vector<std::byte> image = cuda_image(o);
  // The process's own reference to the primary context, so that it is not torn down and built
  // again between programs (each harness retains and releases one of its own).
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (cuda->cuInit(0) != CUDA_SUCCESS || cuda->cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      cuda->cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS) {
    throw std::runtime_error("no CUDA device 0");
  }
  std::map<std::string, int> shrunk;
  const fs::path dir(o.record);
  const int progress = ::open((dir / ("progress-" + std::to_string(job))).c_str(),
                              O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (std::uint64_t index = begin; index < end && !past(o.deadline); ++index) {
    note_progress_to(progress, index);
    alarm(15);  // a program that hangs the GPU ends this child; the parent records it
    Fake model;
    Trace fake_trace = generate(o.generator, index, model.driver, model.image);
    Trace trace = fake_trace;
    trace.driver = "cuda";
    trace.observations.clear();
    trace.status = "running";
    write(dir / ("t" + std::to_string(index) + ".trace"), trace);
    trace.status.clear();
    try {
      trace.observations = run_program(trace.calls, *cuda, image);
    } catch (const std::exception& e) {
      // The harness's own failure (its account of this driver's answers broke): not the
      // driver's doing. Recorded, and the run goes on.
      std::cerr << "graphcap-fidelity: program " << index << ": harness error: " << e.what()
                << "\n";
      trace.status = "harness-error";
      write(dir / ("t" + std::to_string(index) + ".trace"), trace);
      if (context_lost(*cuda)) _exit(4);
      continue;
    }
    trace.racy = racy_differences(trace.calls, trace.observations, fake_trace.observations);
    trace.unset = unset_differences(trace.calls, trace.observations, fake_trace.observations);
    if (auto d = first_difference(trace.calls, trace.observations, fake_trace.observations)) {
      const std::string kind = d->kind();
      trace.difference = underscores(kind);
      trace.difference_at = d->call;
      // Kept before shrinking: a shrunk candidate that crashes the driver must not leave this
      // program's trace as "running".
      write(dir / ("t" + std::to_string(index) + ".trace"), trace);
      if (shrunk[kind]++ < o.shrink && !past(o.deadline)) try {
        alarm(30);
        auto shows = [&](const std::vector<Call>& calls) {
          Fake fake;
          const std::vector<Observation> on_fake = run_program(calls, fake.driver, fake.image);
          const std::vector<Observation> on_cuda = run_program(calls, *cuda, image);
          auto again = first_difference(calls, on_cuda, on_fake);
          return again && again->kind() == kind;
        };
        std::vector<Call> calls(trace.calls.begin(),
                                trace.calls.begin() + static_cast<long>(d->call) + 1);
        calls = shrink(std::move(calls), shows, 80);
        Trace small = trace;
        small.calls = calls;
        small.observations = run_program(calls, *cuda, image);
        Fake fake;
        const std::vector<Observation> on_fake = run_program(calls, fake.driver, fake.image);
        if (auto again = first_difference(calls, small.observations, on_fake)) {
          small.difference_at = again->call;
        }
        write(dir / ("shrunk-" + underscores(kind).substr(0, 60) + "-" +
                     std::to_string(shrunk[kind]) + ".strace"),
              small);
      } catch (const std::exception& e) {
        // A shrunk candidate the harness could not follow: the program's own trace still
        // stands; only its shrinking is given up (a run of 2026-12-03 lost its job here).
        std::cerr << "graphcap-fidelity: program " << index << ": shrinking stopped: "
                  << e.what() << "\n";
      }
    }
    write(dir / ("t" + std::to_string(index) + ".trace"), trace);
    // A shrunk candidate is not a generated program: dropping calls from one can leave a kernel
    // writing where nothing is allocated now, and the context then answers 700 to every call
    // (a run of 2026-12-04 lost its last 1,117 programs so). The parent goes on in a new process.
    if (context_lost(*cuda)) _exit(4);
  }
  alarm(0);
}

int generate_on_cuda(const Options& o) {
  fs::create_directories(o.record);
  const std::uint64_t end = o.start + o.programs;
  const std::uint64_t per_job = (o.programs + static_cast<std::uint64_t>(o.jobs) - 1) /
                                static_cast<std::uint64_t>(o.jobs);
  struct Range {
    std::uint64_t begin, end;
    int job;
  };
  std::vector<Range> todo;
  for (int job = 0; job < o.jobs; ++job) {
    const std::uint64_t begin = o.start + per_job * static_cast<std::uint64_t>(job);
    if (begin < end) todo.push_back({begin, std::min(end, begin + per_job), job});
  }
  std::map<pid_t, Range> running;
  auto launch = [&](Range range) {
    const pid_t pid = fork();
    if (pid == 0) {
      try {
        run_on_cuda(o, range.begin, range.end, range.job);
      } catch (const std::exception& e) {
        std::cerr << "graphcap-fidelity (job " << range.job << "): " << e.what() << "\n";
        _exit(3);
      }
      _exit(0);
    }
    running[pid] = range;
  };
  for (const Range& range : todo) launch(range);
  int failures = 0;
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = wait(&status);
    if (pid < 0) break;
    const Range range = running.at(pid);
    running.erase(pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    std::uint64_t index = range.begin, call = 0;
    std::ifstream(fs::path(o.record) / ("progress-" + std::to_string(range.job))) >> index >> call;
    if (WIFEXITED(status)) {
      // The harness itself failed (it says why): not the program's doing. Its job goes on after
      // the program it was in, so one harness error costs one program, not the rest of the job.
      // Exit status 4: the context was lost (context_lost), nothing failed in the harness.
      if (WEXITSTATUS(status) != 4) ++failures;
      if (index + 1 < range.end) launch({index + 1, range.end, range.job});
      continue;
    }
    // Killed: by the watchdog (a hang) or by the driver (a crash). Record it, go on after it.
    const fs::path file = fs::path(o.record) / ("t" + std::to_string(index) + ".trace");
    std::vector<Trace> traces = read_all(file.string());
    // A program whose trace is complete crashed the driver while being shrunk: it stands as run.
    if (!traces.empty() && traces[0].status == "running") {
      traces[0].status = std::string(WTERMSIG(status) == SIGALRM ? "hung" : "crashed") +
                         "-at-call-" + std::to_string(call);
      write(file, traces[0]);
    }
    std::cerr << "graphcap-fidelity: program " << index << " "
              << (WTERMSIG(status) == SIGALRM ? "hung" : "crashed") << " (signal "
              << WTERMSIG(status) << ")\n";
    if (index + 1 < range.end) launch({index + 1, range.end, range.job});
  }
  std::ofstream summary(fs::path(o.record) / "summary.md");
  std::vector<Trace> traces;
  for (const Trace& trace : read_all(o.record)) traces.push_back(trace);
  summarize(traces, summary);
  summarize(traces, std::cout);
  return failures == 0 ? 0 : 3;
}

int generate_on_fake(const Options& o) {
  if (!o.record.empty()) fs::create_directories(o.record);
  std::vector<Trace> traces;
  for (std::uint64_t index = o.start; index < o.start + o.programs; ++index) {
    Fake model;
    Trace trace = generate(o.generator, index, model.driver, model.image);
    // The fake must answer a program the same way every time.
    Fake again;
    const std::vector<Observation> replayed = run_program(trace.calls, again.driver, again.image);
    if (auto d = first_difference(trace.calls, trace.observations, replayed)) {
      trace.difference = underscores("replay " + d->kind());
      trace.difference_at = d->call;
    }
    if (!o.record.empty()) write(fs::path(o.record) / ("t" + std::to_string(index) + ".trace"), trace);
    traces.push_back(std::move(trace));
  }
  summarize(traces, std::cout);
  return 0;
}

int replay(const Options& o) {
  std::vector<Trace> traces = read_all(o.replay);
  std::unique_ptr<DriverApi> cuda;
  std::vector<std::byte> image;
  if (o.driver == "cuda") {
    cuda = cuda_driver();
    image = cuda_image(o);
  }
  std::map<std::string, std::size_t> kinds;
  std::size_t differing = 0;
  const auto started = std::chrono::steady_clock::now();
  for (const Trace& trace : traces) {
    if (!trace.status.empty()) continue;  // the recorded driver did not survive it
    std::vector<Observation> got;
    std::vector<std::string> violations;
    if (cuda) {
      got = run_program(trace.calls, *cuda, image);
    } else {
      Fake fake;
      got = run_program(trace.calls, fake.driver, fake.image);
      violations = fake.driver.violations();
    }
    // A program the fake calls a violation is not a correct program (the H200 ran it, but its
    // answers there are not defined): it differs, as the CI replay test says.
    if (!violations.empty()) {
      ++differing;
      if (kinds["fake violation"]++ < o.show) {
        std::cout << "program " << trace.index << " (seed " << trace.seed << "): " << violations.front()
                  << "\n";
      }
      continue;
    }
    if (racy_differences(trace.calls, trace.observations, got) != 0) {
      ++kinds["(racy bytes, not compared)"];
    }
    if (unset_differences(trace.calls, trace.observations, got) != 0) {
      ++kinds["(conditional value not set, not compared)"];
    }
    if (auto d = first_difference(trace.calls, trace.observations, got)) {
      ++differing;
      if (kinds[d->kind()]++ < o.show) {
        std::cout << "program " << trace.index << " (seed " << trace.seed << ", recorded on "
                  << trace.driver << ") call " << d->call << ": " << trace.calls[d->call].text()
                  << "\n  recorded: " << d->expected.text() << "\n  " << o.driver << ":     "
                  << d->got.text() << "\n";
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "replayed " << traces.size() << " programs on " << o.driver << " in " << seconds
            << " s: " << differing << " differ\n";
  for (const auto& [kind, count] : kinds) std::cout << "  " << count << "  " << kind << "\n";
  return differing == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    if (!o.summary.empty()) {
      summarize(read_all(o.summary), std::cout);
      return 0;
    }
    if (!o.replay.empty()) return replay(o);
    if (o.driver == "cuda") {
      if (o.record.empty()) {
        std::cerr << "graphcap-fidelity: --driver=cuda needs --record=DIR\n";
        return 2;
      }
      return generate_on_cuda(o);
    }
    return generate_on_fake(o);
  } catch (const std::exception& e) {
    std::cerr << "graphcap-fidelity: " << e.what() << "\n";
    return 2;
  }
}
