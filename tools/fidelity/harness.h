// The harness runs a program's calls on one driver and observes them. It owns the symbol table
// (each symbolic handle of the program and the driver's handle behind it), four worker threads
// (a call runs on the thread it names, one call at a time, so a program is deterministic), and
// what it must know to keep the program defined on a real GPU whatever the driver answered:
//   - a handle whose creation failed, or that was released, is not passed on: the call is
//     skipped (observed as "skip");
//   - happens-before per stream (vector clocks from stream order, event waits and host waits):
//     a stream-ordered access to a buffer (or a launch of a module's kernel, or of a graph that
//     uses them) that could race with one not known to have finished is skipped, as is freeing
//     memory the device may still use, or unloading a module a graph still uses;
//   - a WHILE node's body must set its condition to 0 (set_condition(h, 0)) before the graph
//     holding it is instantiated or launched (so no loop can run forever).
// Observations: the result code; the capture status of every stream after the call (asked with
// cuStreamGetCaptureInfo from the harness's own thread, in RELAXED mode, which no capture rule
// refuses); the node types of a graph a capture ended into; at each host synchronisation, the
// bytes of every buffer whose last use has finished (read on the harness's own stream).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <graphcap/driver/driver_api.h>

#include "program.h"

namespace graphcap::fidelity {

// A thread that runs one task at a time, handed over and waited for.
class Worker {
 public:
  Worker();
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  void run(const std::function<void()>& task);

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  const std::function<void()>* task_ = nullptr;
  bool stop_ = false;
  std::thread thread_;
};

// The worker threads of a process (t0 to t3 of a program): reused by every program (a CUDA context
// per program would cost more than the program). Calls run one at a time whichever thread makes
// them, so a program with four threads is as deterministic as one with one; what differs is per
// thread: the current context and the capture mode, which the harness sets on every worker.
inline constexpr std::size_t kThreads = 4;
std::span<Worker> workers();

using Clock = std::map<std::string, std::uint64_t>;  // stream symbol -> its last op known done

struct Use {  // the last stream-ordered use of a buffer or module
  std::string stream;
  std::uint64_t seq = 0;
};

// A captured access of a buffer (races.cc): where in its capture (its lane and op), whether it
// writes the buffer, what the op writes, the op's clock (what it is ordered after, itself
// included) and the node it made (0 when not known). Saved with a graph or an executable, its
// lanes are renamed apart from every other capture's.
struct Access {
  Use at;
  bool write = false;
  std::vector<std::string> outputs;
  Clock after;
  std::uintptr_t node = 0;
};
using Accesses = std::map<std::string, std::vector<Access>>;  // per buffer

enum class Kind {
  stream, event, buffer, host, pageable, module, function, graph, exec, cond,
  vrange,  // a reserved virtual address range (cuMemAddressReserve)
  vmem,    // a physical allocation (cuMemCreate)
};

struct Symbol {
  Kind kind{};
  std::uintptr_t value = 0;  // the handle (a pointer or a device address)
  bool live = false;
  // buffers (device, pinned host, pageable host)
  std::size_t bytes = 0;
  bool graph_alloc = false;  // allocated by a captured cuMemAllocAsync: the graph's
  bool launched = false;     // a graph allocation a launch made (and nothing freed since)
  Use last;
  std::string shown;         // the bytes last observed
  bool racy = false;         // its bytes are unpredictable (races.cc): observed as "b2~=..."
  bool unset = false;        // its bytes depend on a conditional value the program does not
                             // define (races.cc): observed as "b2?=..."
  // streams
  std::uint64_t seq = 0;
  Clock clock;
  // ... and within the capture it is in: its lane (the stream's name, renamed when its
  // dependencies are set anew), the lane's last captured op, what it is ordered after
  std::string lane;
  std::uint64_t captured_seq = 0;
  Clock captured_clock;
  std::string status = "N";  // observed capture status: N, A<capture>/<deps>, I
  std::uint64_t capture = 0; // the driver's capture id while capturing
  // events
  std::optional<Clock> recorded;
  std::optional<Clock> captured_record;  // a record in a capture: that capture's clock
  // graphs and executables: the buffers their nodes write, and those some node of theirs writes
  // (or reads from) unordered with another's (races.cc)
  std::set<std::string> writes, racy_writes;
  // ... and those a conditional node steered by a value the program does not define may write
  // (a body of it, or whatever reads what such a body wrote; races.cc)
  std::set<std::string> unset_writes;
  // body graphs: the node holding it is steered by such a value (or it is inside such a body)
  bool unset_body = false;
  // conds: created with CU_GRAPH_COND_ASSIGN_DEFAULT (its default is its value at each launch)
  bool assign_default = false;
  // functions
  std::string module, kernel;
  // graphs and executables: their nodes' accesses (races.cc; a conditional body's are its own)
  Accesses accesses;
  // graphs and executables: what they use (buffers, modules), their WHILE bodies
  std::set<std::string> uses;
  std::vector<std::pair<std::string, std::string>> loops;  // (handle, body graph) per WHILE node
  bool terminates = false;   // a WHILE body graph: sets its condition to 0
  std::string owner;         // body graphs: the graph holding the node; conds: their graph
  std::vector<std::string> bodies;  // graphs: body graphs of its conditional nodes
  // vranges: the vmem mapped at its base ("" when none; no kernel ever uses VMM memory here, so
  // every VMM call's outcome is defined by the call alone)
  std::string mapped;
  std::size_t mapped_bytes = 0;  // vranges: the size of that mapping (its vmem's)
  bool borrowed = false;     // a capture's graph, named from cuStreamGetCaptureInfo
  std::string source;        // executables: the graph instantiated
  int order = 0;             // creation order (observations list streams in it)
};

struct Skip {};

inline constexpr std::size_t kPageableBytes = 4096;  // p1 and p2  // thrown by a call's arguments when the call must not be made

class Harness {
 public:
  // `image`: a module image with the test kernels (tests/kernels) for this driver.
  Harness(DriverApi& driver, std::span<const std::byte> image);
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  Observation run(const Call& call);
  // Ends what the program left open and releases everything it made.
  void finish();

  DriverApi& driver() { return driver_; }
  CUcontext context() const { return context_; }
  std::span<const std::byte> image() const { return image_; }
  const std::map<std::string, Symbol>& symbols() const { return symbols_; }
  const Symbol* find(const std::string& name) const;
  std::vector<std::string> live(Kind kind) const;
  // Streams whose observed status is A (active) / I.
  bool capturing(const std::string& stream) const;
  bool any_capture() const;
  int retained() const { return retained_; }

  // ---- for the calls (calls.cc) ---------------------------------------------------------------
  Symbol& need(const std::string& name, Kind kind);  // live, or Skip
  Symbol& bind(const std::string& name, Kind kind, std::uintptr_t value);
  void kill(const std::string& name);
  void kill_graph(std::uintptr_t handle);
  // A capture into an existing graph that ends in failure (`ended`: the end's code, or
  // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED for a capture whose stream was destroyed) takes that
  // graph with it (measured on the H200: cuda-driver-facts.md, runs 3 and 8; the driver reuses its
  // address for the next graph): the graph's names are killed. A body's graph belongs to its node.
  void capture_ended(std::uint64_t capture, CUresult ended);
  // A stream-ordered access by the call on `stream` (Skip if it could race); `commit` after
  // the call succeeded. Captured calls record the uses into the capture instead.
  void access(const std::string& stream, const std::vector<std::string>& uses);
  // A graph's allocation (a captured cuMemAllocAsync) is accessed by captured work (a copy, a
  // fill, a kernel: nodes that dereference it) only inside the capture that made it, until a
  // launch of its graph allocates it. CUDA's programming guide ("Graph memory nodes") makes an
  // access outside the allocation's lifetime undefined, and a capture records a node without
  // looking at its pointers; the H200's driver crashed (SIGSEGV) in a program whose second capture
  // memset another capture's allocation and whose graph was then instantiated and uploaded
  // (docs/conformance.md, "Generated programs"). Eager work is not held to it: the driver checks
  // its pointers (1 on the H200), and neither is a free, which another graph may make.
  // Skip for a use of such an allocation from any other capture (`capture`: 0 for none).
  void need_allocation_in_scope(std::uint64_t capture, const std::vector<std::string>& uses) const;
  // `writes`: the uses the call writes (all of them when not given).
  void commit(const std::string& stream, const std::vector<std::string>& uses,
              const std::optional<std::vector<std::string>>& writes = std::nullopt);
  // Races (races.cc): a captured access by the call on `stream` against the capture's earlier
  // ones; an eager one taints what it writes when it reads unpredictable bytes.
  void captured_access(const std::string& stream, const std::vector<std::string>& uses,
                       const std::vector<std::string>& writes);
  void eager_access(const std::vector<std::string>& uses, const std::vector<std::string>& writes);
  void launched(const Symbol& exec);       // an executable's racy writes are now unpredictable
  // After a call: the nodes its captured accesses made, asked of their streams.
  void name_captured_nodes();
  // A capture into the existing graph `graph` began: what its nodes use and access comes first.
  void capture_into(std::uint64_t capture, const Symbol& graph);
  // The accesses of `capture`, lanes renamed apart: kept by every live name of the graph it ended
  // into (keep_accesses), or by an executable made while it builds a graph (captured_accesses).
  void keep_accesses(std::uint64_t capture, std::uintptr_t graph);
  Accesses captured_accesses(std::uint64_t capture);
  // An executable's node `node` now runs a kernel with these uses and writes
  // (cuGraphExecKernelNodeSetParams): what it or any node no edge orders with it writes, and
  // whatever reads that, is racy in the executable.
  void kernel_node_changed(Symbol& exec, std::uintptr_t node, const std::vector<std::string>& uses,
                           const std::vector<std::string>& writes);
  // An executable took `graph`'s parameters (cuGraphExecUpdate; `merged`: that graph's symbol with
  // its aliases'): its nodes' accesses are that graph's, named by its source graph's nodes.
  void exec_updated(Symbol& exec, const std::string& graph, const Symbol& merged);
  // A conditional node added to `graph` with handle `cond`, ordered after the capture
  // dependencies of `after` ("" when given otherwise): whether its handle's value is defined
  // when it runs (races.cc). A captured set_condition of the handle, by `stream`:
  bool condition_defined(const std::string& graph, const std::string& cond,
                         const std::string& after) const;
  void condition_set(const std::string& stream, const std::string& cond);
  void overwritten(const std::string& buffer);  // wholly written by one ordered op: known again
  void new_lane(const std::string& stream);     // its capture dependencies were set to none
  void host_waited(const Clock& clock);
  Clock stream_clock(const std::string& stream);
  bool complete(const Symbol& used) const;
  void need_complete(const std::string& name);  // Skip unless its last use finished
  void need_unused(const std::string& module);  // Skip while a graph or capture uses it
  // The capture `stream` is in (its symbolic number), 0 when none.
  std::uint64_t capture_of(const std::string& stream) const;
  std::map<std::uint64_t, std::set<std::string>> capture_uses;      // by driver capture id
  std::map<std::uint64_t, std::vector<std::pair<std::string, std::string>>> capture_loops;
  std::map<std::uint64_t, std::string> capture_target;  // capture into an existing graph
  std::map<std::uint64_t, std::string> capture_origin;  // ... and the stream it began on
  std::map<std::uint64_t, std::set<std::string>> capture_borrowed;
  // Per capture: each buffer's captured accesses (races.cc), what is racy and written so far, and
  // for a capture into an existing graph the buffers the graph's nodes used before it began (its
  // nodes' accesses are the capture's first, on lanes no stream of it is ordered after).
  std::map<std::uint64_t, Accesses> capture_accesses;
  std::map<std::uint64_t, std::set<std::string>> capture_racy, capture_writes, capture_prior;
  // Per capture: what is unknown for want of a conditional value, and the set_condition
  // launches recorded (handle, where).
  std::map<std::uint64_t, std::set<std::string>> capture_unset;
  std::map<std::uint64_t, std::vector<std::pair<std::string, Use>>> capture_sets;
  std::map<std::string, std::string> body_handle;  // WHILE body graph -> its handle
  std::map<std::string, std::string> pending_target;  // stream -> graph it began capturing into
  std::vector<std::string> pending_init;  // device buffers cuMemAlloc made: filled before use
  bool body_capture(const std::string& stream) const;  // captures into a conditional body
  std::string detail;            // appended to the observation
  bool synchronized = false;     // the call was a host wait that succeeded: snapshot
  std::vector<std::string> observe_graphs;  // graphs whose nodes to observe after the call
  void graph_nodes(const std::string& graph, std::vector<CUgraphNode>* nodes);
  int thread = 0;                // of the call in progress
  int retained_ = 0;             // primary-context retains the program holds

 private:
  void observe_streams();
  void snapshot();

  DriverApi& driver_;
  std::span<const std::byte> image_;
  CUcontext context_ = nullptr;
  CUdevice device_ = 0;
  CUstream observer_ = nullptr;
  void* staging_ = nullptr;  // pinned: where snapshots copy device buffers to
  std::size_t staging_bytes_ = 0;
  Clock host_;
  std::map<std::string, Symbol> symbols_;
  int next_order_ = 0;
  int lanes_ = 0;  // lanes made by new_lane
  int renamed_ = 0;  // sets of saved accesses whose lanes were renamed apart
  struct UnnamedNode {  // a captured access of this call: its capture, stream and place
    std::uint64_t capture = 0;
    std::string stream;
    Use at;
  };
  std::vector<UnnamedNode> unnamed_nodes_;
  std::map<std::uint64_t, int> capture_numbers_;  // driver capture id -> symbolic number
  bool finished_ = false;
};

// Runs `call` on `harness`; implemented per entry point in calls.cc. Returns the driver's code;
// throws Skip when the call must not be made.
CUresult run_call(Harness& harness, const Call& call);

}  // namespace graphcap::fidelity
