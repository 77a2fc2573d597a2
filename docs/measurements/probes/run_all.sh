#!/usr/bin/env bash
# Compiles every driver probe of this folder and runs each, one after another (their timings and
# cuMemGetInfo readings must not overlap), each bounded by a timeout. Logs go to $OUT (or ./out):
#   env.txt        date, GPU, driver, compile results
#   <probe>.txt    the probe's lines (one per case)
#   timings.txt    seconds per case (each case is a child process)
# Usage: bash docs/measurements/probes/run_all.sh [probe ...]     (default: all, in the order below)
set -u
export PATH="$PATH:/usr/local/cuda/bin"
cd "$(dirname "$0")"
out="${OUT:-$PWD/out}"
mkdir -p "$out" bin

# name:timeout_s; the longest last, so a short budget loses the least. (Timeouts are below 120 s so
# that the whole run fits one device call.)
all="fault_probe:60 vmm_probe:40 branch_probe:40 pdl_probe:40 instantiate_params_probe:30 graph_memory_probe:90"
if [ $# -gt 0 ]; then
  sel=""
  for p in "$@"; do sel="$sel $(echo "$all" | tr ' ' '\n' | grep "^$p:")"; done
  all="$sel"
fi

{
  echo "date (UTC): $(date -u '+%Y-%m-%d %H:%M:%S')"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
  nvcc --version | tail -1
} >"$out/env.txt"

# Compile in parallel (the machine has cores to spare); running is sequential.
for entry in $all; do
  p="${entry%%:*}"
  # A binary built elsewhere (prebuilt/, same nvcc) stands in only if this compile fails.
  (nvcc -O2 -arch=sm_90 -o "bin/$p" "$p.cu" -lcuda >"bin/$p.log" 2>&1 && echo "compiled $p" ||
    { echo "COMPILE FAILED $p: $(head -c 2000 "bin/$p.log")";
      [ -x "prebuilt/$p" ] && cp "prebuilt/$p" "bin/$p" && echo "  using prebuilt/$p"; }) >"bin/$p.status" &
done
wait
for entry in $all; do cat "bin/${entry%%:*}.status" >>"$out/env.txt"; done

for entry in $all; do
  p="${entry%%:*}"
  t="${entry##*:}"
  [ -x "bin/$p" ] || continue
  start=$SECONDS
  echo "## $p" >>"$out/timings.txt"
  timeout -k 5 "$t" "bin/$p" >"$out/$p.txt" 2>>"$out/timings.txt"
  rc=$?
  echo "$p: exit $rc after $((SECONDS - start)) s (timeout $t s)" | tee -a "$out/env.txt"
done
