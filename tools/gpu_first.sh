#!/usr/bin/env bash
# The gpu tests most likely to have changed first (a short GPU session's first answer): the
# conditional-body faults, the fidelity rules, replay and fork order, over libcuda; then nothing
# else. Log: $OUT/first.txt.
#   usage: tools/gpu_first.sh [gtest filter]
set -uo pipefail
filter="${1:-ConditionalBodyFaultTest.*:FidelityRules.*:ReplayOrderTest.*:ForkOrderTest.*}"
out="${OUT:-/tmp/graphcap-gpu}"
mkdir -p "$out"
cd "$(dirname "$0")/.."
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
{ cmake --preset gpu && cmake --build --preset gpu --target graphcap_tests_cuda; } > "$out/first-build.log" 2>&1 ||
  { tail -30 "$out/first-build.log"; exit 1; }
bin=$(find build/gpu -type f -name graphcap_tests_cuda -perm -u+x | head -1)
"$bin" --gtest_filter="$filter" > "$out/first.txt" 2>&1
rc=$?
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/first.txt" | head -40
tail -3 "$out/first.txt"
echo "first rc=$rc"
exit $rc
