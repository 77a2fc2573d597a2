#include <graphcap/memory/slice_pool.h>

#include <algorithm>
#include <limits>
#include <string>

#include <graphcap/driver/driver_hooks.h>
#include <graphcap/log.h>
#include <graphcap/memory/size_class.h>

namespace graphcap::memory {
namespace {

const char* alloc_entry(SliceKind kind) {
  return kind == SliceKind::device ? "cuMemAlloc" : "cuMemAllocHost";
}

// Frees that failed, by driver code: one log line per cause, not one per allocation (a device
// fault fails every free of a closing pool alike).
class FailedFrees {
 public:
  explicit FailedFrees(SliceKind kind) : kind_(kind) {}
  void add(CUresult code, std::size_t bytes) {
    Count& count = by_code_[code];
    ++count.allocations;
    count.bytes += bytes;
  }
  void log_each(const char* doing, const SlicePool::TeardownLevel& level) const noexcept {
    try {
      for (const auto& [code, count] : by_code_) {
        log(level ? level(code) : LogLevel::warn,
            std::string(doing) + ": " +
                Error::from_driver(kind_ == SliceKind::device ? "cuMemFree" : "cuMemFreeHost", code)
                    .message() +
                " (" + std::to_string(count.allocations) +
                (count.allocations == 1 ? " allocation, " : " allocations, ") +
                std::to_string(count.bytes) + " bytes, left to the driver)");
      }
    } catch (...) {
      log(LogLevel::error, std::string(doing) + ": reporting failed frees failed");
    }
  }

 private:
  struct Count {
    std::size_t allocations = 0;
    std::size_t bytes = 0;
  };
  SliceKind kind_;
  std::map<CUresult, Count> by_code_;
};

bool pop(std::map<std::size_t, std::vector<Slice>>& lists, std::size_t size, Slice& out) {
  auto it = lists.find(size);
  if (it == lists.end() || it->second.empty()) return false;
  out = it->second.back();
  it->second.pop_back();
  return true;
}

}  // namespace

Result<Slice> SlicePool::acquire(std::size_t bytes, bool may_allocate) {
  const bool persistent = armed_;
  const std::size_t capacity = persistent ? exact_size(bytes) : size_class(bytes);
  if (bytes == 0 || capacity == 0) {
    return Error(Errc::invalid_argument,
                 "allocation of " + std::to_string(bytes) +
                     " bytes: the size must be positive and leave room to round it up to the "
                     "pool's size class");
  }
  Slice slice;
  if (pop(persistent ? persistent_free_ : dynamic_free_, capacity, slice)) {
    slice.primed = priming_;
    return slice;
  }
  // A pool that may not grow now is out of memory for this request (Errc::out_of_memory); the
  // message says why it may not grow.
  if (recording_) {
    return Error(Errc::out_of_memory,
                 "allocation of " + std::to_string(bytes) + " bytes inside the recording: the "
                 "persistent pool holds no free " + std::to_string(capacity) +
                 "-byte slice, and the driver may not allocate while a capture records (run the "
                 "exact sequence once between prepare_capture and begin_capture so the pool "
                 "primes every size the recording needs)");
  }
  if (!may_allocate) {
    return Error(Errc::out_of_memory,
                 "allocation of " + std::to_string(bytes) + " bytes while a capture records in "
                 "global mode: the pool has no free slice of that size, and a driver allocation "
                 "now would invalidate the recording");
  }
  return allocate(capacity, persistent);
}

Result<Slice> SlicePool::allocate(std::size_t capacity, bool persistent) {
  std::uintptr_t address = 0;
  auto call = [&]() -> CUresult {
    if (kind_ == SliceKind::device) {
      CUdeviceptr pointer = 0;
      CUresult result = driver_->cuMemAlloc(&pointer, capacity);
      address = static_cast<std::uintptr_t>(pointer);
      return result;
    }
    void* pointer = nullptr;
    CUresult result = driver_->cuMemAllocHost(&pointer, capacity);
    address = reinterpret_cast<std::uintptr_t>(pointer);
    return result;
  };
  CUresult result = call();
  if (result == CUDA_ERROR_OUT_OF_MEMORY && (!dynamic_free_.empty() || !persistent_free_.empty())) {
    // Cached free slices may be what stands between us and success: give them back, retry once.
    trim_free();
    result = call();
  }
  if (result != CUDA_SUCCESS) {
    return Error::from_driver(alloc_entry(kind_), result)
        .context("allocation of " + std::to_string(capacity) + " bytes");
  }
  ++driver_allocations_;
  owned_.emplace(address, capacity);
  reserved_bytes_ += capacity;
  Slice slice;
  slice.address = address;
  slice.capacity = capacity;
  slice.kind = kind_;
  slice.persistent = persistent;
  slice.primed = priming_;
  return slice;
}

void SlicePool::release(Slice slice) {
  if (owned_.find(slice.address) == owned_.end()) return;  // freed by free_all already
  // No Buffer holds it now (retained or free): a checking driver refuses accesses until it is
  // lent again (DriverApi's annotate_buffer hook).
  if (kind_ == SliceKind::device) {
    detail::DriverHooks::annotate_buffer(*driver_, slice.device_ptr(), 0);
  }
  if (priming_ && slice.primed) {
    retained_.push_back(slice);
    return;
  }
  slice.primed = false;
  (slice.persistent ? persistent_free_ : dynamic_free_)[slice.capacity].push_back(slice);
}

void SlicePool::arm() noexcept {
  armed_ = true;
  priming_ = true;
}

void SlicePool::end_priming() noexcept {
  priming_ = false;
  for (Slice& slice : retained_) {
    slice.primed = false;
    (slice.persistent ? persistent_free_ : dynamic_free_)[slice.capacity].push_back(slice);
  }
  retained_.clear();
}

void SlicePool::disarm() noexcept {
  end_priming();
  armed_ = false;
  recording_ = false;
}

CUresult SlicePool::driver_free(const Slice& slice) noexcept {
  return slice.kind == SliceKind::device ? driver_->cuMemFree(slice.device_ptr())
                                         : driver_->cuMemFreeHost(slice.host_ptr());
}

void SlicePool::trim(std::map<std::size_t, std::vector<Slice>>& lists) noexcept {
  FailedFrees failed(kind_);
  for (auto& [size, slices] : lists) {
    for (const Slice& slice : slices) {
      if (CUresult result = driver_free(slice); result != CUDA_SUCCESS) {
        failed.add(result, slice.capacity);
      }
      owned_.erase(slice.address);
      reserved_bytes_ -= slice.capacity;
    }
  }
  lists.clear();
  failed.log_each("trimming the pool", {});
}

void SlicePool::trim_free() noexcept {
  trim(dynamic_free_);
  trim(persistent_free_);
}

void SlicePool::trim_persistent() noexcept { trim(persistent_free_); }

void SlicePool::free_all(const std::vector<std::uintptr_t>& kept,
                         const TeardownLevel& level) noexcept {
  FailedFrees failed(kind_);
  std::unordered_map<std::uintptr_t, std::size_t> still_owned;
  for (const auto& [address, capacity] : owned_) {
    if (std::find(kept.begin(), kept.end(), address) != kept.end()) {
      still_owned.emplace(address, capacity);
      continue;
    }
    Slice slice;
    slice.address = address;
    slice.capacity = capacity;
    slice.kind = kind_;
    if (CUresult result = driver_free(slice); result != CUDA_SUCCESS) {
      failed.add(result, capacity);
    }
  }
  failed.log_each("closing the pool", level);
  owned_ = std::move(still_owned);
  dynamic_free_.clear();
  persistent_free_.clear();
  retained_.clear();
  reserved_bytes_ = 0;
  for (const auto& [address, capacity] : owned_) reserved_bytes_ += capacity;
}

bool SlicePool::free_kept(const Slice& slice) noexcept {
  auto found = owned_.find(slice.address);
  if (found == owned_.end()) return false;
  Slice whole = slice;
  whole.capacity = found->second;
  if (CUresult result = driver_free(whole); result != CUDA_SUCCESS) {
    log(LogLevel::warn,
        "freeing a closed device's memory after the last graph let go of it: " +
            Error::from_driver(kind_ == SliceKind::device ? "cuMemFree" : "cuMemFreeHost", result)
                .message());
  }
  reserved_bytes_ -= found->second;
  owned_.erase(found);
  return true;
}

PoolStats SlicePool::stats() const {
  PoolStats stats;
  stats.driver_allocations = driver_allocations_;
  stats.live_slices = owned_.size();
  stats.reserved_bytes = reserved_bytes_;
  for (const auto* lists : {&dynamic_free_, &persistent_free_}) {
    for (const auto& [size, slices] : *lists) stats.free_slices += slices.size();
  }
  stats.retained_slices = retained_.size();
  return stats;
}

}  // namespace graphcap::memory
