#!/usr/bin/env bash
# A/B on the GPU in one session: graphcap-bench of this tree beside the same benchmarks of an
# earlier tree (a source tree carried with the working copy, e.g. `git archive <commit>` unpacked
# under build/), run alternately (after, before, after, before, ...), so a change's effect is read
# from side-by-side figures on one GPU, not from runs of different sessions (whose spread is as
# large as what a change gains; docs/performance.md).
#   usage: GRAPHCAP_AB_BEFORE=build/ab-before GRAPHCAP_BENCH_FILTER='^(ExecUpdate|...)/' \
#          tools/gpu_ab.sh [rounds (default 2)]
# Logs: $OUT/ab-<side>-<round>.txt and build logs.
set -uo pipefail
before="${GRAPHCAP_AB_BEFORE:?set GRAPHCAP_AB_BEFORE to the earlier source tree}"
filter="${GRAPHCAP_BENCH_FILTER:?set GRAPHCAP_BENCH_FILTER}"
rounds="${1:-2}"
out="${OUT:-/tmp/graphcap-ab}"
mkdir -p "$out"
cd "$(dirname "$0")/.."
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
started=$SECONDS
stamp() { echo "[$((SECONDS - started)) s] $*"; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/ab-env.txt" 2>&1
if ! { cmake --preset gpu && cmake --build --preset gpu --target graphcap-bench; } \
    > "$out/ab-build-after.log" 2>&1; then
  echo "BUILD FAILED (after)"; tail -30 "$out/ab-build-after.log"; exit 1
fi
if ! { cmake -S "$before" -B build/gpu-before -G Ninja -DCMAKE_BUILD_TYPE=Release \
         -DGRAPHCAP_GPU=ON && cmake --build build/gpu-before --target graphcap-bench; } \
    > "$out/ab-build-before.log" 2>&1; then
  echo "BUILD FAILED (before)"; tail -30 "$out/ab-build-before.log"; exit 1
fi
stamp "builds ok"
for round in $(seq 1 "$rounds"); do
  for side in after before; do
    exe=build/gpu/bench/graphcap-bench
    [[ $side == before ]] && exe=build/gpu-before/bench/graphcap-bench
    "$exe" --driver=cuda --benchmark_repetitions=3 --benchmark_filter="$filter" \
      --benchmark_report_aggregates_only=true > "$out/ab-$side-$round.txt" 2>&1
    stamp "$side round $round rc=$?"
  done
done
