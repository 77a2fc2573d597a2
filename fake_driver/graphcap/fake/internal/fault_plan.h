// Fault injection: which upcoming calls of which entry points fail, and with what code.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <graphcap/driver/cuda_types.h>

namespace graphcap::fake::internal {

class FaultPlan {
 public:
  // The nth next call of `entry_point` (1 = the very next) returns `code`.
  void fail_call(std::string_view entry_point, CUresult code, int nth);
  // Every call of `entry_point` returns `code` until clear().
  void fail_always(std::string_view entry_point, CUresult code);
  void clear();

  // Called once for every call of `entry_point`: the code to inject, if any. A planned nth call
  // takes precedence over fail_always.
  std::optional<CUresult> next(std::string_view entry_point);

 private:
  struct Planned {
    std::string entry_point;
    int calls_left;  // this many more calls, then this one fails
    CUresult code;
  };
  std::vector<Planned> planned_;
  std::map<std::string, CUresult, std::less<>> always_;
};

}  // namespace graphcap::fake::internal
