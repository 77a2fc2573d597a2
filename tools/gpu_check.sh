#!/usr/bin/env bash
# One batched GPU session (device tool): configure the gpu preset, build what runs on the real
# driver, and run it: every cuda-driver test (label gpu), the fault sweep and the many-graph model
# over libcuda (label gpu_sweep), the generated programs of graphcap-fidelity (first, alone on
# the GPU), the examples on the real driver, then graphcap-bench alone on the GPU. The
# fake's own suites run in CI (.ci/run); `all-fake` adds them here too. Logs go to $OUT (at most
# 8 files come back).
#   usage: tools/gpu_check.sh [all|tests|bench|all-fake|fidelity|startup] [fidelity programs (default 10000)]
#   fidelity: graphcap-fidelity alone, once per seed in GRAPHCAP_FIDELITY_SEEDS (default 11), each
#   seed's summary as fidelity-summary-<seed>.md, its traces as fidelity-traces-<seed>.tgz, and its
#   shrunk programs with the traces that differ or crashed and the tool's stderr as
#   fidelity-shrunk-<seed>.tgz (small: it comes back when the traces are too many; two seeds
#   are 8 files with env.txt and fidelity.txt); GRAPHCAP_FIDELITY_CALLS (MIN:MAX) and GRAPHCAP_FIDELITY_DEADLINE (seconds, default 300)
#   are one per seed, space-separated (one deadline for all if only one is given);
#   GRAPHCAP_FIDELITY_SHRINK: programs shrunk per kind of difference (default 1).
#   startup: the fidelity step (GRAPHCAP_SKIP_FIDELITY=1: none, nor its build), then graphcap-bench's
#   Startup family and PyTorch's startup (bench/startup_torch.py), alone on the GPU;
#   GRAPHCAP_STARTUP_TESTS=1: then the GraphCache and record_all tests over libcuda too
#   (startup-tests.txt; their build is the long part). GRAPHCAP_SKIP_PEERS=1: no PyTorch/CuPy step;
#   GRAPHCAP_PACK_LOGS=1: every log in one logs.tgz (for the device tool's 8 files).
set -uo pipefail
what="${1:-all}"
programs="${2:-10000}"
out="${OUT:-/tmp/graphcap-gpu}"
mkdir -p "$out"
cd "$(dirname "$0")/.."
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}  # the presets pin no job count
started=$SECONDS
stamp() { echo "[$((SECONDS - started)) s] $*"; }

{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv
  nvcc --version | tail -2
  cmake --version | head -1
} > "$out/env.txt" 2>&1
cat "$out/env.txt"

targets=(graphcap_tests_cuda graphcap_free_memory_tests_cuda graphcap_fault_sweep_cuda
         graphcap_many_graphs_cuda graphcap_safe_life_cuda graphcap-fidelity graphcap-bench graphcap_test_kernels_fatbin
         quickstart patterns decode_loop serving_loop cublas_external checked_replay)
[[ "$what" == all-fake ]] && targets=(all)
[[ "$what" == fidelity ]] && targets=(graphcap-fidelity graphcap_test_kernels_fatbin)
if [[ "$what" == startup ]]; then
  targets=(graphcap-bench)
  [[ "${GRAPHCAP_SKIP_FIDELITY:-0}" == 1 ]] || targets+=(graphcap-fidelity graphcap_test_kernels_fatbin)
  [[ "${GRAPHCAP_STARTUP_TESTS:-0}" == 1 ]] && targets+=(graphcap_tests_cuda)
fi
# ctest runs every test the configure registered: the NCCL example is one where NCCL was found.
configured=0
cmake --preset gpu > "$out/build.log" 2>&1 && configured=1
[[ "$what" == all || "$what" == tests ]] && grep -q "NCCL found" "$out/build.log" && targets+=(nccl_allreduce)
if [[ $configured != 1 ]] || ! cmake --build --preset gpu --target "${targets[@]}" >> "$out/build.log" 2>&1; then
  echo "BUILD FAILED"; grep -E "error|Error" "$out/build.log" | head -40; tail -20 "$out/build.log"
  exit 1
fi
stamp "build ok"
[[ "$what" == fidelity || "$what" == startup ]] && mv "$out/build.log" /tmp/  # at most 8 files come back

rc=0
if [[ "$what" != bench && "${GRAPHCAP_SKIP_FIDELITY:-0}" != 1 &&
      -x build/gpu/tools/fidelity/graphcap-fidelity ]]; then
  # The test kernels as the fidelity tool loads them (the same source the tests run). One process
  # with the GPU to itself: several contexts on one GPU wait for each other's time slices at every
  # synchronisation (docs/conformance.md), so it runs before the tests, not beside them.
  fatbin=$(find build/gpu -name '*.fatbin' -path '*test_kernels*' | head -1)
  seeds=(${GRAPHCAP_FIDELITY_SEEDS:-11})
  calls_ranges=(${GRAPHCAP_FIDELITY_CALLS:-})
  deadlines=(${GRAPHCAP_FIDELITY_DEADLINE:-300})
  i=0
  for seed in "${seeds[@]}"; do
    calls_flag=()
    [[ -n "${calls_ranges[$i]:-}" ]] && calls_flag=(--calls="${calls_ranges[$i]}")
    deadline=${deadlines[$i]:-${deadlines[0]}}
    i=$((i + 1))
    suffix=$([[ ${#seeds[@]} -gt 1 ]] && echo "-$seed" || true)
    {
      nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      echo "programs=$programs seed=$seed calls=${calls_flag[*]:-default} deadline=$deadline jobs=1 fatbin=$fatbin"
      s=$SECONDS
      rm -rf /tmp/fidelity-run
      build/gpu/tools/fidelity/graphcap-fidelity --driver=cuda --seed="$seed" --programs="$programs" \
        --jobs=1 --shrink="${GRAPHCAP_FIDELITY_SHRINK:-1}" --deadline="$deadline" "${calls_flag[@]}" \
        --record=/tmp/fidelity-run \
        --kernels="$fatbin" > "$out/fidelity-summary$suffix.md" 2> /tmp/fidelity-stderr.txt
      echo "rc=$? wall_s=$((SECONDS - s))"
      tail -5 /tmp/fidelity-stderr.txt
      mkdir -p /tmp/fidelity-run && mv /tmp/fidelity-stderr.txt /tmp/fidelity-run/stderr.txt
    } >> "$out/fidelity.txt" 2>&1
    (cd /tmp && tar czf "$out/fidelity-traces$suffix.tgz" fidelity-run &&
      { ls fidelity-run/*.strace 2>/dev/null; grep -lE "^program .* (differs|status) " fidelity-run/*.trace; } |
        tar czf "$out/fidelity-shrunk$suffix.tgz" -T - fidelity-run/stderr.txt)
    grep -E "^programs" "$out/fidelity-summary$suffix.md"
  done
  stamp "fidelity done"
  cat "$out/fidelity.txt"
  grep -hE "^programs|first difference" -A30 "$out"/fidelity-summary*.md | grep -E "^programs|^\| cu" | tail -40
fi
[[ "$what" == fidelity ]] && { stamp "rc=$rc"; exit $rc; }
if [[ "$what" == startup ]]; then
  build/gpu/bench/graphcap-bench --driver=cuda --benchmark_repetitions=1 \
    --benchmark_filter="${GRAPHCAP_BENCH_FILTER:-^Startup/}" > "$out/startup.txt" 2>&1 || rc=1
  stamp "startup bench done"
  grep -E "^Startup" "$out/startup.txt"
  python3 bench/startup_torch.py > "$out/startup-torch.md" 2>&1 || rc=1
  stamp "torch startup done"
  cat "$out/startup-torch.md"
  if [[ "${GRAPHCAP_STARTUP_TESTS:-0}" == 1 ]]; then
    build/gpu/tests/graphcap_tests_cuda --gtest_filter='RecordAll*:GraphCache*' \
      > "$out/startup-tests.txt" 2>&1 || rc=1
    stamp "record_all tests done"
    grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/startup-tests.txt"
  fi
  exit $rc
fi

if [[ "$what" != bench ]]; then
  if [[ "$what" == all-fake ]]; then
    ctest --preset gpu > "$out/ctest.log" 2>&1 || rc=1
  else
    ctest --preset gpu -L gpu > "$out/ctest.log" 2>&1 || rc=1  # gpu and gpu_sweep
  fi
  stamp "ctest done"
  grep -E "tests passed|tests failed|\(Failed\)|\*\*\*|Timeout" "$out/ctest.log" | tail -40
  grep -cE "Test +#[0-9]+: cuda\." "$out/ctest.log" | sed 's/^/cuda tests run: /'
  grep -cE "Test +#[0-9]+: cuda_sweep\." "$out/ctest.log" | sed 's/^/cuda sweep tests run: /'
  grep -E "\[ random   \] [0-9]+ many-graph|sweep .*injections|totals" "$out/ctest.log" | head -5
fi

if [[ "$what" != tests ]]; then
  for example in quickstart/quickstart patterns/patterns decode_loop/decode_loop serving_loop/serving_loop cublas_external/cublas_external checked_replay/checked_replay; do
    exe=build/gpu/examples/$example
    [[ -x $exe ]] || continue
    echo "== $example" >> "$out/examples.txt"
    "$exe" --driver=cuda >> "$out/examples.txt" 2>&1 || { rc=1; echo "FAILED: $example" >> "$out/examples.txt"; }
    if [[ $example == decode_loop/decode_loop ]]; then
      "$exe" --driver=cuda --until-device-stop >> "$out/examples.txt" 2>&1 || { rc=1; echo "FAILED: $example --until-device-stop" >> "$out/examples.txt"; }
      "$exe" --driver=cuda --skip-by-device >> "$out/examples.txt" 2>&1 || { rc=1; echo "FAILED: $example --skip-by-device" >> "$out/examples.txt"; }
    fi
  done
  [[ -f "$out/examples.txt" ]] && grep -E "^==|FAILED|ok|replay" "$out/examples.txt" | head -30
  stamp "examples done"
fi

if [[ "$what" != tests && -x build/gpu/bench/graphcap-bench ]]; then
  # Alone on the GPU: nothing else runs now.
  build/gpu/bench/graphcap-bench --driver=cuda --benchmark_repetitions=3 \
    --benchmark_filter="${GRAPHCAP_BENCH_FILTER:-.}" \
    --benchmark_report_aggregates_only=true --benchmark_out="$out/bench.json" \
    --benchmark_out_format=json > "$out/bench.txt" 2>&1 || rc=1
  stamp "bench done"
  grep -E "_median" "$out/bench.txt" | head -80
  # The peers in the same session: PyTorch's and CuPy's capture and instantiate.
  if [[ "${GRAPHCAP_SKIP_PEERS:-0}" != 1 ]]; then
    python3 bench/peers_capture.py --big > "$out/peers.md" 2>&1 || true
    stamp "peers done"
    cat "$out/peers.md"
  fi
fi
stamp "rc=$rc"
if [[ "${GRAPHCAP_PACK_LOGS:-0}" == 1 ]]; then
  # At most 8 files come back: every log in one archive, the traces beside it.
  tar czf /tmp/graphcap-logs.tgz -C "$out" --exclude='*.tgz' . && mv /tmp/graphcap-logs.tgz "$out/logs.tgz" &&
    find "$out" -maxdepth 1 -type f ! -name '*.tgz' -delete
fi
exit $rc
