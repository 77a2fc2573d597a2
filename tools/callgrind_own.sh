#!/usr/bin/env bash
# graphcap's own instructions per operation on the fake (issue 24): callgrind of one
# `Growth/<path>/<n>` benchmark, counting only inside graphcap::bench::growth_op_<path>, less the
# instructions inside the driver's calls (the bench's CountingDriver/ObservingDriver frames, each
# entry point counted once at its outermost frame), divided by the operation's calls.
#   usage: tools/callgrind_own.sh <path> <n> [graphcap-bench (default build/dev/bench/graphcap-bench)]
#   e.g.   tools/callgrind_own.sh update_close 100
# Needs valgrind and python3; prints "<path>/<n>: total T driver D calls C own/call O".
set -euo pipefail
path="$1"; n="$2"; bench="${3:-build/dev/bench/graphcap-bench}"
out="$(mktemp -d)/callgrind.out"
valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
  --toggle-collect="*graphcap::bench::growth_op_${path}?*" "$bench" \
  --benchmark_filter="^Growth/${path}/${n}/" --benchmark_repetitions=1 > /dev/null 2>&1
callgrind_annotate --inclusive=yes --threshold=100 "$out" > "$out.inclusive" 2> /dev/null
calls=$(callgrind_annotate --tree=caller --inclusive=yes "$out" 2> /dev/null |
  grep "< .*growth_op_${path}[(<].*x)" | head -1 | sed 's/.*(\([0-9,]*\)x).*/\1/' | tr -d ,)
python3 - "$out.inclusive" "$calls" "$path/$n" <<'PY'
import re, sys
total, driver = 0, {}
for line in open(sys.argv[1]):
    m = re.match(r'\s*([\d,]+) \([^)]*\)\s+(\S.*)$', line)
    if not m or '=>' in line:
        continue
    cost, rest = int(m.group(1).replace(',', '')), m.group(2)
    if 'PROGRAM TOTALS' in rest:
        total = cost
        continue
    f = re.search(r'(?:entry_points\.def|observing_driver\.h):graphcap::bench::(?:Counting|Observing)Driver::(cu\w+)\(', rest)
    if f:  # the outermost frame of an entry point is the largest
        driver[f.group(1)] = max(driver.get(f.group(1), 0), cost)
calls = int(sys.argv[2])
drv = sum(driver.values())
print(f"{sys.argv[3]}: total {total} driver {drv} calls {calls} own/call {(total - drv) // calls}")
PY
