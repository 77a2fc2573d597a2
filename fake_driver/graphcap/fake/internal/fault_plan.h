// Fault injection: which upcoming calls of which entry points fail, and with what code. The one
// implementation behind both FakeDriver's and FaultInjectingDriver's fail_call / fail_always /
// fail_when (<graphcap/fake/faults.h> has the vocabulary). Not thread-safe: its owner locks.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <graphcap/driver/cuda_types.h>
#include <graphcap/fake/faults.h>

namespace graphcap::fake::internal {

class FaultPlan {
 public:
  // Each arming call throws std::invalid_argument for a name that is not a line of
  // entry_points.def (a misspelt or versioned name would arm a fault that can never fire), before
  // anything is armed.
  // The nth next call of `entry_point` (1 = the very next) returns `code`.
  void fail_call(std::string_view entry_point, CUresult code, int nth);
  // Every call of `entry_point` returns `code` until clear().
  void fail_always(std::string_view entry_point, CUresult code);
  // Every call of `entry_point` ("" = any) for which `predicate` holds returns `code` until clear().
  void fail_when(std::string_view entry_point, CUresult code, FaultPredicate predicate);
  void clear();

  // The fail_call faults still armed (never fired), in the order armed, each a sentence that
  // starts with the entry point: "cuGraphUpload: call 1 from when it was armed never came (0
  // calls since), CUDA_ERROR_OUT_OF_MEMORY not returned".
  std::vector<std::string> unfired() const;

  // Called once for every call of `entry_point` (on `stream`, nullptr if it takes none): the code
  // to inject, if any. A planned nth call takes precedence over fail_when, and that over
  // fail_always.
  std::optional<CUresult> next(std::string_view entry_point, CUstream stream);

 private:
  struct Planned {
    std::string entry_point;
    int calls_left;  // this many more calls, then this one fails
    CUresult code;
    int nth;  // as armed
  };
  struct When {
    std::string entry_point;  // "" = any
    CUresult code;
    FaultPredicate predicate;
  };
  std::vector<Planned> planned_;
  std::vector<When> when_;
  std::map<std::string, CUresult, std::less<>> always_;
  std::map<std::string, std::size_t, std::less<>> seen_;  // calls per entry point since clear()
};

}  // namespace graphcap::fake::internal
