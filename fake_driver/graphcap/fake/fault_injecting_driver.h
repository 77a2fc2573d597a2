// FaultInjectingDriver: a DriverApi that wraps any other DriverApi (FakeDriver, or libcuda on a
// GPU), forwards every call to it, and fails chosen calls instead: the nth call of an entry point,
// every call, or every call a predicate picks, each with the CUresult given. It speaks
// FakeDriver's fault vocabulary (<graphcap/fake/faults.h>: fail_call, fail_always, fail_when,
// clear_faults, calls, call_count, live_handles) and shares its fault plan's code, so one fault
// plan drives either driver: the fault tests and the fault sweep run unchanged on the fake and on
// the H200.
//
//   graphcap::fake::FaultInjectingDriver faults(real_or_fake_driver);
//   faults.fail_call("cuGraphUpload", graphcap::CUDA_ERROR_OUT_OF_MEMORY);  // the next upload
//   auto device = graphcap::Device::open(faults);
//
// A failed call is not forwarded, so it has no effect, with the exceptions below: where the real
// failure has an effect, or where not forwarding would leave the process unsound on a real
// driver, the decorator does what that needs. Which entry point is which follows from its traits
// in entry_points.def (docs/fake-driver.md, "FaultInjectingDriver", says the same with the
// reasons):
//
//   traits of the failed entry point     | what the decorator does
//   -------------------------------------+---------------------------------------------------------
//   capture `ends` (cuStreamEndCapture)  | forwards it (the capture must end: a stream left
//                                        | capturing records all that follows), destroys the graph
//                                        | it returned, sets *graph = NULL, returns the code. The
//                                        | stream is back to NONE, as after a real failed end.
//   host `waits` (cuStreamSynchronize,   | forwarded, then the code is reported: the wait happens.
//   cuEventSynchronize, cuCtxSynchronize)| A caller that goes on after a failed wait (graphcap
//                                        | destroys a graph anyway) must not find the device still
//                                        | running work it was told had stopped: on a GPU that
//                                        | would be a real race on memory it then reuses.
//   order `ordered` (cuLaunchKernel,     | not forwarded, and if the stream captures, the capture
//   cuMemcpy*, cuMemset*, cuMemAllocAsync| is invalidated as a real failed captured call
//   cuMemFreeAsync, cuEventRecord,       | invalidates it: cuStreamQuery of the stream (900 and
//   cuStreamWaitEvent, cuGraphLaunch,    | invalidates, in every mode; facts: "What invalidates a
//   cuGraphUpload)                       | capture"). Outside a capture: nothing enqueued.
//   host `queries` (cuStreamQuery,       | not forwarded: a failed (or NOT_READY) query says the
//   cuEventQuery)                        | work has not passed, the safe answer (nothing is reused).
//   handle `releases` (cuMemFree,        | not forwarded: the handle stays alive (a leak), exactly
//   cuStreamDestroy, cuGraphDestroy,     | as after a real failed release, which releases nothing.
//   cuDevicePrimaryCtxRelease, ...)      | Forwarding would be unsound: the caller was told the
//                                        | handle is alive; one that keeps or retries it would then
//                                        | use a freed handle (a freed address the driver may hand
//                                        | out again). live_handles() counts the leak and
//                                        | release_leaked() frees it, while its context is alive.
//   anything else (cuGraphInstantiate-   | not forwarded; outputs untouched (no executable exists,
//   WithFlags, cuStreamBeginCapture, ...)| nothing begun).
//
// Handles are tracked from the calls that pass through (a create that succeeded, a release that
// was forwarded and succeeded: entry_points.def's handle column), so live_handles() works over
// libcuda too, where the driver's own handles cannot be counted. Allocations and frees a capture
// records (cuMemAllocAsync, cuMemFreeAsync on a capturing stream) are graph nodes, not counted.
//
// Thread-safe: the plan, the log and the tracker are behind one mutex, never held while the
// wrapped driver runs. Predicates run with it held: they must not call this driver.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include <graphcap/driver/driver_api.h>
#include <graphcap/driver/forwarding_driver.h>
#include <graphcap/fake/faults.h>

namespace graphcap::fake {

struct FaultInjectingOptions {
  // Make a query wait before it answers: cuEventQuery and cuStreamQuery that are not failed are
  // forwarded after cuEventSynchronize / cuStreamSynchronize of the same event or stream, so they
  // always find the work done. That is what FakeDriver does unless paused (its device catches up
  // when asked), and it makes a real GPU's call sequence independent of timing: the fault sweep
  // plans "the nth call of X" from one run's log and needs the next run to make the same calls.
  bool settle_queries = false;
  bool record_calls = true;  // keep the ordered call log (counts are always kept)
};

class FaultInjectingDriver : public ForwardingDriver {
 public:
  // `inner` must outlive this driver.
  explicit FaultInjectingDriver(DriverApi& inner, FaultInjectingOptions options = {});
  ~FaultInjectingDriver() override;
  FaultInjectingDriver(const FaultInjectingDriver&) = delete;
  FaultInjectingDriver& operator=(const FaultInjectingDriver&) = delete;

  // ---- fault injection (FakeDriver's vocabulary) ---------------------------------------------
  void fail_call(std::string_view entry_point, CUresult code, int nth = 1);
  void fail_always(std::string_view entry_point, CUresult code);
  void fail_when(std::string_view entry_point, CUresult code, FaultPredicate predicate);
  void clear_faults();
  // fail_call faults not yet fired (faults.h).
  std::vector<std::string> unfired_faults() const;

  // ---- observation -----------------------------------------------------------------------------
  // Calls made through this driver (not the ones it makes itself to undo an effect).
  std::vector<CallRecord> calls() const;
  std::size_t call_count(std::string_view entry_point) const;
  std::size_t total_calls() const;
  void clear_calls();
  // Handles created through this driver and not released through it (see above).
  LiveHandles live_handles() const;
  // Releases, through the wrapped driver, every handle live_handles() counts (executables,
  // graphs, events, streams, modules, allocations, then context references) and forgets them.
  // Call it only while their context is alive (hold a primary-context reference of your own):
  // handles the driver already reclaimed must not be released again. Returns how many it released.
  std::size_t release_leaked();

  // ---- DriverApi ---------------------------------------------------------------------------------
#define GRAPHCAP_DRIVER_ENTRY(name, version, versioned, params, ...) \
  CUresult name(GRAPHCAP_PARAMS(params)) override;
#include <graphcap/driver/entry_points.def>

  struct State;  // the plan, the log and the tracker (fault_injecting_driver.cc)

 private:
  std::unique_ptr<State> state_;
};

}  // namespace graphcap::fake
