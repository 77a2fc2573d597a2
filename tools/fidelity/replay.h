// Running a program on a driver, comparing two drivers' observations, and shrinking a
// difference to the shortest program that still shows it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <graphcap/driver/driver_api.h>

#include "program.h"

namespace graphcap::fidelity {

// Where run_program notes "<program> <call>" before each call (a file descriptor, -1 for none),
// so that a program that never returns from a call says which.
void note_progress_to(int fd, std::uint64_t program);

// The observations of `calls` run on `driver` (a fresh harness; everything released after).
std::vector<Observation> run_program(const std::vector<Call>& calls, DriverApi& driver,
                                     std::span<const std::byte> image);

struct Difference {
  std::size_t call = 0;  // index into the program
  std::string entry;
  Observation expected;  // the recorded driver's
  Observation got;       // the driver replaying it
  // What differs, for grouping: "cuGraphInstantiateWithFlags 900/0" (codes), or
  // "cuStreamEndCapture status" / "... bytes" / "... nodes" / "... detail" / "... skip".
  std::string kind() const;
};

// The first call whose observations differ (codes of timing-dependent calls compare equal).
std::optional<Difference> first_difference(const std::vector<Call>& calls,
                                           const std::vector<Observation>& expected,
                                           const std::vector<Observation>& got);

// How many calls show racy bytes (program.h) that differ: the kind "racy bytes", counted apart.
std::size_t racy_differences(const std::vector<Call>& calls,
                             const std::vector<Observation>& expected,
                             const std::vector<Observation>& got);
// ... and unset bytes (program.h): the kind "conditional value not set", counted apart.
std::size_t unset_differences(const std::vector<Call>& calls,
                              const std::vector<Observation>& expected,
                              const std::vector<Observation>& got);

// Removes calls (delta debugging, then one at a time) while `still_shows` holds; at most
// `budget` evaluations. Calls whose handles are gone become skips, so every candidate runs.
std::vector<Call> shrink(std::vector<Call> calls,
                         const std::function<bool(const std::vector<Call>&)>& still_shows,
                         std::size_t budget = 400);

}  // namespace graphcap::fidelity
