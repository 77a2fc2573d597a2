#include <graphcap/fake/internal/call_log.h>

#include <thread>

namespace graphcap::fake::internal {

void CallLog::record(std::string_view entry_point, CUresult result, bool injected) {
  ++total_;
  auto it = counts_.find(entry_point);
  if (it == counts_.end()) it = counts_.emplace(std::string(entry_point), 0).first;
  ++it->second;
  if (keep_records_) {
    records_.push_back(
        CallRecord{std::string(entry_point), result, injected, std::this_thread::get_id()});
  }
}

std::size_t CallLog::count(std::string_view entry_point) const {
  auto it = counts_.find(entry_point);
  return it == counts_.end() ? 0 : it->second;
}

void CallLog::clear() {
  records_.clear();
  counts_.clear();
  total_ = 0;
}

}  // namespace graphcap::fake::internal
