#include "replay.h"

#include "harness.h"

#include <unistd.h>

#include <string>

namespace graphcap::fidelity {
namespace {
int progress_fd = -1;
std::uint64_t progress_program = 0;
}  // namespace

void note_progress_to(int fd, std::uint64_t program) {
  progress_fd = fd;
  progress_program = program;
}

std::vector<Observation> run_program(const std::vector<Call>& calls, DriverApi& driver,
                                     std::span<const std::byte> image) {
  Harness harness(driver, image);
  std::vector<Observation> observations;
  observations.reserve(calls.size());
  auto note = [&] {
    if (progress_fd < 0) return;
    const std::string text = std::to_string(progress_program) + " " +
                             std::to_string(observations.size()) + "          \n";
    (void)!pwrite(progress_fd, text.data(), text.size(), 0);
  };
  for (const Call& call : calls) {
    note();
    observations.push_back(harness.run(call));
  }
  // A crash from here on is the clean-up's ("crashed-at-call-<the count of calls>"), not the
  // last call's (program 5168 of seed 12: it said call 47, the last one).
  note();
  harness.finish();
  return observations;
}

std::string Difference::kind() const {
  if (expected.skipped != got.skipped) return entry + " skip";
  if (expected.code != got.code) {
    return entry + " " + std::to_string(expected.code) + "/" + std::to_string(got.code);
  }
  // The first part of the detail that differs says what kind of observation it is.
  const std::vector<std::string> a = detail_parts(expected.detail), b = detail_parts(got.detail);
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string& part = i < a.size() ? a[i] : b[i];
    if (i < a.size() && i < b.size() && a[i] == b[i]) continue;
    if (part.rfind(" ; s", 0) == 0 && part.find(':') != std::string::npos) return entry + " status";
    if (part.rfind(" ; g", 0) == 0) return entry + " nodes";
    if (part.rfind(" ; b", 0) == 0 || part.rfind(" ; h", 0) == 0 || part.rfind(" ; p", 0) == 0) {
      return entry + " bytes";
    }
    return entry + " detail";
  }
  return entry + " detail";
}

std::optional<Difference> first_difference(const std::vector<Call>& calls,
                                           const std::vector<Observation>& expected,
                                           const std::vector<Observation>& got) {
  const std::size_t n = std::min({calls.size(), expected.size(), got.size()});
  for (std::size_t i = 0; i < n; ++i) {
    if (!same_observation(calls[i].entry, expected[i], got[i])) {
      return Difference{i, calls[i].entry, expected[i], got[i]};
    }
  }
  return std::nullopt;
}

std::size_t racy_differences(const std::vector<Call>& calls,
                             const std::vector<Observation>& expected,
                             const std::vector<Observation>& got) {
  const std::size_t n = std::min({calls.size(), expected.size(), got.size()});
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) count += racy_bytes_differ(expected[i], got[i]) ? 1 : 0;
  return count;
}

std::size_t unset_differences(const std::vector<Call>& calls,
                              const std::vector<Observation>& expected,
                              const std::vector<Observation>& got) {
  const std::size_t n = std::min({calls.size(), expected.size(), got.size()});
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) count += unset_bytes_differ(expected[i], got[i]) ? 1 : 0;
  return count;
}

std::vector<Call> shrink(std::vector<Call> calls,
                         const std::function<bool(const std::vector<Call>&)>& still_shows,
                         std::size_t budget) {
  std::size_t used = 0;
  auto holds = [&](const std::vector<Call>& candidate) {
    if (used >= budget) return false;
    ++used;
    return still_shows(candidate);
  };
  // Nothing after the difference matters: cut there first (the caller's predicate finds it).
  std::size_t chunks = 2;
  while (calls.size() >= 2 && used < budget) {
    const std::size_t size = (calls.size() + chunks - 1) / chunks;
    bool reduced = false;
    for (std::size_t start = 0; start < calls.size(); start += size) {
      std::vector<Call> candidate(calls.begin(), calls.begin() + static_cast<long>(start));
      candidate.insert(candidate.end(),
                       calls.begin() + static_cast<long>(std::min(start + size, calls.size())),
                       calls.end());
      if (!candidate.empty() && holds(candidate)) {
        calls = std::move(candidate);
        chunks = std::max<std::size_t>(chunks - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (chunks >= calls.size()) break;
      chunks = std::min(chunks * 2, calls.size());
    }
  }
  for (std::size_t i = calls.size(); i-- > 0 && used < budget;) {
    if (calls.size() < 2) break;
    std::vector<Call> candidate = calls;
    candidate.erase(candidate.begin() + static_cast<long>(i));
    if (holds(candidate)) calls = std::move(candidate);
  }
  return calls;
}

}  // namespace graphcap::fidelity
