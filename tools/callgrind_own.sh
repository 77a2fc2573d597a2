#!/usr/bin/env bash
# graphcap's own instructions per operation on the fake: callgrind of one
# `Growth/<path>/<n>` benchmark, counting only inside graphcap::bench::growth_op_<path>, less the
# instructions inside the driver's calls (the bench's CountingDriver/ObservingDriver frames, each
# entry point counted once at its outermost frame), divided by the operation's calls.
#   usage: tools/callgrind_own.sh <path> <n> [graphcap-bench (default build/bench/bench/graphcap-bench)]
#   e.g.   tools/callgrind_own.sh update_close 100
# Needs valgrind and python3; prints "<path>/<n>: total T driver D calls C own/call O", then
# "code lines L": the 64-byte lines of graphcap's own code run at least LINES_PER times an
# operation (env LINES_PER, default 1; e.g. 100 for a pass of 100 launches: the lines every
# launch runs). What a path costs beside the real driver follows these lines, which each driver
# call evicts, as much as its instructions (docs/performance.md, "On the fake: graphcap's own instructions").
set -euo pipefail
path="$1"; n="$2"; bench="${3:-build/bench/bench/graphcap-bench}"
out="$(mktemp -d)/callgrind.out"
valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$out" --collect-atstart=no \
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
python3 - "$out" "$calls" "${LINES_PER:-1}" <<'PY'
import re, sys
# --dump-instr=yes: cost lines are "<instr> <line> <cost>", positions absolute (0x..), relative
# (+n / -n) or repeated (*); names are defined once as "fn=(id) name" or "cfn=(id) name".
names, lines, fn, addr, after_calls = {}, {}, None, 0, False
own = lambda f: f and 'graphcap::' in f and not re.search(r'fake::|FakeDriver|CountingDriver|ObservingDriver|bench::', f)
for raw in open(sys.argv[1]):
    line = raw.rstrip('\n')
    m = re.match(r'(c?fn)=\((\d+)\)(?: (.*))?', line)
    if m:
        if m.group(3): names[m.group(2)] = m.group(3)
        if m.group(1) == 'fn': fn = names.get(m.group(2))
        continue
    if line.startswith('calls='):
        after_calls = True  # the next cost line is the call's inclusive cost
        continue
    m = re.match(r'(0x[0-9a-f]+|[+-]\d+|\*)\s+\S+\s+(\d+)', line)
    if not m:
        continue
    a = m.group(1)
    addr = int(a, 16) if a.startswith('0x') else addr + int(a) if a[0] in '+-' else addr
    if after_calls:
        after_calls = False
        continue
    if own(fn):
        lines[addr // 64] = lines.get(addr // 64, 0) + int(m.group(2))
need = int(sys.argv[2]) * int(sys.argv[3])
print(f"code lines {sum(1 for cost in lines.values() if cost >= need)}")
PY
