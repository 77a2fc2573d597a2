#!/bin/bash
# Keeps recorded H200 programs for CI (tests/fidelity/trace_replay_test.cc): from a run's record
# folder, the first COUNT programs by index that the driver survived and that answered as the fake
# did (no "differs", no "status" on their first line), in files of PER_FILE programs named
# PREFIX-0.trace, PREFIX-1.trace, ..., leaving out the program indices listed one a line in the
# file EXCLUDE (optional: e.g. those `--replay` says differ on the fake as it is now). Usage:
#   tools/fidelity/keep_traces.sh /tmp/run4 tests/fidelity/traces/h200-2026-12-04-run4 2000 500 [EXCLUDE]
set -euo pipefail
dir=$1 prefix=$2 count=$3 per_file=$4 exclude=${5:-/dev/null}
kept=0
file=0
rm -f "$prefix"-*.trace
for trace in $(ls "$dir" | grep -E '^t[0-9]+\.trace$' | sed 's/^t//; s/\.trace$//' | sort -n); do
  path="$dir/t$trace.trace"
  head -1 "$path" | grep -qE ' (differs|status) ' && continue
  grep -qx "$trace" "$exclude" && continue
  cat "$path" >> "$prefix-$file.trace"
  kept=$((kept + 1))
  (( kept % per_file == 0 )) && file=$((file + 1))
  (( kept == count )) && break
done
echo "kept $kept programs in $(ls "$prefix"-*.trace | wc -l) files, $(cat "$prefix"-*.trace | wc -c) bytes"
