#!/bin/bash
# graphcap-fidelity on a GPU machine (docs/conformance.md, "Generated programs"): builds the tool
# (Release; its library is built with the tests, only the tool is built) and the test kernels' fatbin from this checkout, runs NAME with SEED and
# PROGRAMS programs (no program begun after DEADLINE seconds) in one process, and leaves in $OUT:
# NAME-gpu.txt (GPU, driver, times), NAME-summary.md (coverage, differences), NAME-stderr.txt,
# NAME-traces.tgz (every program's trace). Usage: bash tools/fidelity/gpu_run.sh run3 11 10000 300
set -u
name=$1 seed=$2 programs=$3 deadline=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/fidelity-out}
mkdir -p "$out"
build=/tmp/graphcap-fidelity-build
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAPHCAP_BUILD_TESTS=ON \
  -DGRAPHCAP_BUILD_BENCH=OFF -DGRAPHCAP_BUILD_EXAMPLES=OFF > "$out/$name-build.txt" 2>&1 &&
  cmake --build "$build" --target graphcap-fidelity >> "$out/$name-build.txt" 2>&1 || exit 1
nvcc -std=c++20 -fatbin -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90 \
  -I"$root/src" -I"$root/fake_driver" -o "$build/test_kernels.fatbin" "$root/tests/kernels/test_kernels.cu" >> "$out/$name-build.txt" 2>&1 || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +%FT%TZ; } \
  > "$out/$name-gpu.txt" 2>&1
start=$SECONDS
"$build/tools/fidelity/graphcap-fidelity" --driver=cuda --seed="$seed" --programs="$programs" \
  --jobs=1 --shrink=1 --deadline="$deadline" --record="/tmp/$name" \
  --kernels="$build/test_kernels.fatbin" > "$out/$name-summary.md" 2> "$out/$name-stderr.txt"
echo "rc=$? wall_s=$((SECONDS - start))" >> "$out/$name-gpu.txt"
date -u +%FT%TZ >> "$out/$name-gpu.txt"
(cd /tmp && tar czf "$out/$name-traces.tgz" "$name")
