#include <graphcap/fake/internal/fault_plan.h>

#include <stdexcept>
#include <utility>

#include <graphcap/driver/entry_traits.h>
#include <graphcap/driver/error_names.h>

namespace graphcap::fake::internal {
namespace {

// The entry points whose names share the longest start with `name` (past "cu"), for the message.
std::string nearest_entry_points(std::string_view name) {
  std::size_t best = 2;
  std::string names;
  for (const EntryTraits& traits : kEntryTraits) {
    std::size_t common = 0;
    while (common < name.size() && common < traits.name.size() &&
           name[common] == traits.name[common]) {
      ++common;
    }
    if (common < best) continue;
    if (common > best) names.clear();
    best = common;
    names += (names.empty() ? "" : ", ") + std::string(traits.name);
  }
  return best > 2 ? names : std::string();
}

// A name no call will ever be made under can only arm a fault that never fires: refuse it.
void check_entry_point(const char* arming, std::string_view entry_point) {
  if (find_entry_traits(entry_point) != nullptr) return;
  std::string message = std::string(arming) + ": \"" + std::string(entry_point) +
                        "\" is not an entry point of graphcap's driver table (entry_points.def: "
                        "cuda.h's names without a version suffix)";
  if (std::string nearest = nearest_entry_points(entry_point); !nearest.empty()) {
    message += "; the nearest: " + nearest;
  }
  throw std::invalid_argument(message);
}

}  // namespace

void FaultPlan::fail_call(std::string_view entry_point, CUresult code, int nth) {
  check_entry_point("fail_call", entry_point);
  const int calls = nth < 1 ? 1 : nth;
  planned_.push_back(Planned{std::string(entry_point), calls, code, calls});
}

void FaultPlan::fail_always(std::string_view entry_point, CUresult code) {
  check_entry_point("fail_always", entry_point);
  always_.insert_or_assign(std::string(entry_point), code);
}

void FaultPlan::fail_when(std::string_view entry_point, CUresult code, FaultPredicate predicate) {
  if (!entry_point.empty()) check_entry_point("fail_when", entry_point);  // "" = any entry point
  when_.push_back(When{std::string(entry_point), code, std::move(predicate)});
}

std::vector<std::string> FaultPlan::unfired() const {
  std::vector<std::string> unfired;
  for (const Planned& planned : planned_) {
    const int seen = planned.nth - planned.calls_left;
    const char* name = cu_result_name(planned.code);
    unfired.push_back(planned.entry_point + ": call " + std::to_string(planned.nth) +
                      " from when it was armed never came (" + std::to_string(seen) +
                      (seen == 1 ? " call" : " calls") + " since), " +
                      (name != nullptr ? std::string(name)
                                       : "CUresult " + std::to_string(static_cast<int>(planned.code))) +
                      " not returned");
  }
  return unfired;
}

void FaultPlan::clear() {
  planned_.clear();
  when_.clear();
  always_.clear();
  seen_.clear();
}

std::optional<CUresult> FaultPlan::next(std::string_view entry_point, CUstream stream) {
  auto seen = seen_.find(entry_point);
  if (seen == seen_.end()) seen = seen_.emplace(std::string(entry_point), 0).first;
  const CallInfo call{entry_point, ++seen->second, stream};

  std::optional<CUresult> injected;
  // Every plan for this entry point counts this call; the first one due fires, and any other
  // due at the same call is spent with it.
  for (auto it = planned_.begin(); it != planned_.end();) {
    if (it->entry_point == entry_point && --it->calls_left == 0) {
      if (!injected) injected = it->code;
      it = planned_.erase(it);
    } else {
      ++it;
    }
  }
  if (injected) return injected;
  for (const When& when : when_) {
    if ((when.entry_point.empty() || when.entry_point == entry_point) && when.predicate &&
        when.predicate(call)) {
      return when.code;
    }
  }
  if (auto it = always_.find(entry_point); it != always_.end()) return it->second;
  return std::nullopt;
}

}  // namespace graphcap::fake::internal
