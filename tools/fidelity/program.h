// A generated driver-API program and its trace. A program is a list of calls, each an entry point
// of entry_points.def with symbolic arguments (handles are names such as s1, b3, g2, so one
// program runs on either driver) and the worker thread (t0 to t3) that makes it. A trace is a
// program with one driver's observations of each call: the result code, then what changed
// (capture status of each stream, node types of a graph that ended, the bytes of each buffer at a
// synchronisation). The text form, one call per line, is what --record writes and --replay reads:
//
//   program 17 seed 1 driver cuda
//   t0 cuStreamCreate s1 1 = 0 ; s1:N
//   t0 cuStreamBeginCapture s1 GLOBAL = 0 ; s1:A1/0
//   t1 cuGraphInstantiateWithFlags x1 g9 0 = skip
//   end
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace graphcap::fidelity {

struct Call {
  int thread = 0;
  std::string entry;              // "cuLaunchKernel"
  std::vector<std::string> args;  // symbolic arguments, as tokens
  std::string text() const;       // "t0 cuLaunchKernel ..."
};

// One call's observation: "skip" when the call was not made (a handle it needs does not exist on
// this driver, or the call would not be defined); otherwise the result code and what changed.
struct Observation {
  bool skipped = false;
  int code = 0;
  std::string detail;  // "; s1:A1/0 ; b2=7x64" (empty when nothing changed)
  std::string text() const;
  static std::optional<Observation> parse(const std::string& text);
};

struct Trace {
  std::uint64_t index = 0;  // the program's number within its seed
  std::uint64_t seed = 0;
  std::string driver;       // "cuda" or "fake": whose observations these are
  std::string status;       // "" normally; "crashed" / "hung" when the driver did not survive it
  // Where this driver's observations first differ from the fake's (a run on a GPU), and how:
  // Difference::kind() with spaces as '_'. Empty when they agree.
  std::string difference;
  std::size_t difference_at = 0;
  // Calls whose unpredictable bytes (buffers the harness shows as racy, "b2~=...") differ from
  // the fake's: counted, not compared.
  std::size_t racy = 0;
  // Calls whose bytes steered by a conditional value the program does not define (a handle made
  // without CU_GRAPH_COND_ASSIGN_DEFAULT and not set before its node: "b2?=...") differ from the
  // fake's: counted, not compared.
  std::size_t unset = 0;
  std::vector<Call> calls;
  std::vector<Observation> observations;  // one per call (fewer if the program did not finish)
};

// Reads every program of a trace file; throws std::runtime_error naming the line on bad input.
std::vector<Trace> read_traces(std::istream& in, const std::string& source);
void write_trace(std::ostream& out, const Trace& trace);

// The calls whose codes depend on the device's timing: a query (or elapsed time) of work that is
// not done yet answers CUDA_ERROR_NOT_READY on a GPU where the fake, whose device catches up when
// asked, answers CUDA_SUCCESS. These two codes compare equal for them.
bool timing_dependent(const std::string& entry);
// Bytes of a buffer either side shows as racy ("b2~=...": written by work no order separates,
// harness.h) or as unset ("b2?=...": steered by a conditional value the program does not define)
// are not compared, on both sides; racy_bytes_differ and unset_bytes_differ say whether they
// differ.
bool same_observation(const std::string& entry, const Observation& a, const Observation& b);
bool racy_bytes_differ(const Observation& a, const Observation& b);
bool unset_bytes_differ(const Observation& a, const Observation& b);
// An observation's detail in its parts: " ; s1:A1/0", " ; b2=7x64", ...
std::vector<std::string> detail_parts(const std::string& detail);

}  // namespace graphcap::fidelity
