// The ordered log of DriverApi calls and the per-entry-point call counts.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <graphcap/fake/faults.h>

namespace graphcap::fake::internal {

class CallLog {
 public:
  explicit CallLog(bool keep_records) : keep_records_(keep_records) {}

  void record(std::string_view entry_point, CUresult result, bool injected);
  const std::vector<CallRecord>& records() const noexcept { return records_; }
  std::size_t count(std::string_view entry_point) const;
  std::size_t total() const noexcept { return total_; }
  void clear();

 private:
  bool keep_records_;
  std::vector<CallRecord> records_;
  std::map<std::string, std::size_t, std::less<>> counts_;
  std::size_t total_ = 0;
};

}  // namespace graphcap::fake::internal
