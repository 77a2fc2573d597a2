#include <graphcap/fake/internal/fault_plan.h>

#include <utility>

namespace graphcap::fake::internal {

void FaultPlan::fail_call(std::string_view entry_point, CUresult code, int nth) {
  planned_.push_back(Planned{std::string(entry_point), nth < 1 ? 1 : nth, code});
}

void FaultPlan::fail_always(std::string_view entry_point, CUresult code) {
  always_.insert_or_assign(std::string(entry_point), code);
}

void FaultPlan::fail_when(std::string_view entry_point, CUresult code, FaultPredicate predicate) {
  when_.push_back(When{std::string(entry_point), code, std::move(predicate)});
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
