#!/usr/bin/env bash
# One batched GPU session (device tool): configure + build the gpu preset, run every test on both
# drivers, the benchmarks and the example on the real driver. Logs go to $OUT (at most 8 files).
#   usage: tools/gpu_check.sh [tests|bench|all]   (default all)
set -uo pipefail
what="${1:-all}"
out="${OUT:-/tmp/graphcap-gpu}"
mkdir -p "$out"
cd "$(dirname "$0")/.."
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}  # the presets pin no job count

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nvcc --version | tail -2
  cmake --version | head -1
  nproc
} > "$out/env.txt" 2>&1
cat "$out/env.txt"

if ! { cmake --preset gpu && cmake --build --preset gpu; } > "$out/build.log" 2>&1; then
  echo "BUILD FAILED"; grep -E "error|Error" "$out/build.log" | head -40; tail -20 "$out/build.log"
  exit 1
fi
echo "build ok"

rc=0
if [[ "$what" == tests || "$what" == all ]]; then
  ctest --preset gpu > "$out/ctest.log" 2>&1 || rc=1
  grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest.log" | tail -40
  grep -cE "Test +#[0-9]+: cuda\." "$out/ctest.log" | sed 's/^/cuda tests run: /'
  grep -cE "Test +#[0-9]+: fake\." "$out/ctest.log" | sed 's/^/fake tests run: /'
fi
if [[ "$what" == bench || "$what" == all ]]; then
  # The examples on the real driver, one log.
  for example in quickstart/quickstart patterns/patterns decode_loop/decode_loop serving_loop/serving_loop cublas_external/cublas_external; do
    exe=build/gpu/examples/$example
    [[ -x $exe ]] || continue
    echo "== $example" >> "$out/examples.txt"
    "$exe" --driver=cuda >> "$out/examples.txt" 2>&1 || { rc=1; echo "FAILED: $example" >> "$out/examples.txt"; }
    if [[ $example == decode_loop/decode_loop ]]; then
      "$exe" --driver=cuda --until-device-stop >> "$out/examples.txt" 2>&1 || { rc=1; echo "FAILED: $example --until-device-stop" >> "$out/examples.txt"; }
      "$exe" --driver=cuda --skip-by-device >> "$out/examples.txt" 2>&1 || { rc=1; echo "FAILED: $example --skip-by-device" >> "$out/examples.txt"; }
    fi
  done
  [[ -f "$out/examples.txt" ]] && cat "$out/examples.txt"
  # The fault sweep on the real driver, with its totals table (docs/reliability.md).
  if [[ -x build/gpu/tests/graphcap_fault_sweep_cuda ]]; then
    /usr/bin/time -f "sweep wall %e s" build/gpu/tests/graphcap_fault_sweep_cuda > "$out/sweep.txt" 2>&1 || rc=1
    tail -40 "$out/sweep.txt"
  fi
  if [[ -x build/gpu/bench/graphcap-bench ]]; then
    build/gpu/bench/graphcap-bench --driver=cuda --benchmark_repetitions=5 \
      --benchmark_report_aggregates_only=true --benchmark_out="$out/bench.json" \
      --benchmark_out_format=json > "$out/bench.txt" 2>&1 || rc=1
    tail -60 "$out/bench.txt"
  fi
fi
exit $rc
