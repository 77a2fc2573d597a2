#!/usr/bin/env bash
# Where a test dies on the GPU (no gdb there): runs one gpu-preset test binary under a SIGSEGV /
# SIGABRT handler that prints the host stack, with graphcap's debug log, and resolves the
# binary's own frames with addr2line. Builds the target first.
#   usage: tools/gpu_backtrace.sh <target> '<gtest filter>'
#   e.g.   tools/gpu_backtrace.sh graphcap_tests_cuda 'ConditionalBodyFaultTest.ALoop*'
# Logs: $OUT/backtrace-<n>.txt, one per test the filter names; GRAPHCAP_ONE_PROCESS=1 runs the
# whole filter in one process instead (a crash that needs the tests before it), log
# $OUT/backtrace-all.txt, and names the test that was running.
set -uo pipefail
target="${1:?the test target, e.g. graphcap_tests_cuda}"
filter="${2:?a gtest filter}"
out="${OUT:-/tmp/graphcap-backtrace}"
mkdir -p "$out"
cd "$(dirname "$0")/.."
handler=$(mktemp -d)
cat > "$handler/on_crash.c" <<'C'
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>
static void on_crash(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  static const char banner[] = "CRASH BACKTRACE\n";
  (void)sig;
  (void)!write(2, banner, sizeof banner - 1);
  backtrace_symbols_fd(frames, n, 2);
  _exit(128 + sig);
}
__attribute__((constructor)) static void install(void) {
  signal(SIGSEGV, on_crash);
  signal(SIGABRT, on_crash);
}
C
cc -shared -fPIC -o "$handler/on_crash.so" "$handler/on_crash.c" || exit 1
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
{ cmake --preset gpu && cmake --build --preset gpu --target "$target"; } > "$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; exit 1; }
bin=$(find build/gpu -type f -name "$target" -perm -u+x | head -1)
resolve() {  # the binary's own frames of a log's crash, then the rest
  grep -A40 "CRASH BACKTRACE" "$1" | grep -o "$target(+0x[0-9a-f]*)" |
    sed 's/.*(+\(0x[0-9a-f]*\))/\1/' | xargs -r addr2line -f -C -e "$bin" | paste - - | head -25
  grep -A40 "CRASH BACKTRACE" "$1" | grep -v "$target(" | cut -c1-160 | head -15
}
if [[ "${GRAPHCAP_ONE_PROCESS:-0}" == 1 ]]; then
  log="$out/backtrace-all.txt"
  LD_PRELOAD="$handler/on_crash.so" "$bin" --gtest_filter="$filter" > "$log" 2>&1
  echo "== one process rc=$?"
  grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$log" | head -20
  grep -q "CRASH BACKTRACE" "$log" || exit 0
  echo "running when it crashed: $(grep -E '^\[ RUN      \]' "$log" | tail -1)"
  grep -B20 "CRASH BACKTRACE" "$log" | grep -v "CRASH BACKTRACE" | cut -c1-200
  resolve "$log"
  exit 1
fi
i=0
for test in $("$bin" --gtest_list_tests --gtest_filter="$filter" |
              awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}'); do
  i=$((i + 1))
  log="$out/backtrace-$i.txt"
  LD_PRELOAD="$handler/on_crash.so" GRAPHCAP_LOG=debug "$bin" --gtest_filter="$test" > "$log" 2>&1
  echo "== $test rc=$?"
  grep -q "CRASH BACKTRACE" "$log" || continue
  grep -B20 "CRASH BACKTRACE" "$log" | grep -v "CRASH BACKTRACE" | cut -c1-200
  resolve "$log"
done
