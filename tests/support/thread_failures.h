// Failures seen on worker threads, collected under a lock and reported on the test's thread
// (a gtest assertion on a worker thread would not stop the test, and could race its report).
#pragma once

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <graphcap/error.h>
#include <graphcap/result.h>

namespace graphcap::testing {

class ThreadFailures {
 public:
  void add(std::string what) {
    std::lock_guard lock(mutex_);
    list_.push_back(std::move(what));
  }
  // True when `result` succeeded; otherwise adds "<what>: <the error>".
  template <class T>
  bool check(const Result<T>& result, const std::string& what) {
    if (result) return true;
    add(what + ": " + to_string(result.error()));
    return false;
  }
  std::vector<std::string> list() const {
    std::lock_guard lock(mutex_);
    return list_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> list_;
};

}  // namespace graphcap::testing
