#!/usr/bin/env bash
# Consecutive CI runs on one clean clone (issue 14's "10 consecutive runs"): clones this checkout's
# HEAD into a temporary directory and runs .ci/run N times (default 10) with a fresh HOME, printing
# one line per run. Stops at the first failure unless --keep-going. About 4-8 minutes a run on 2 cores.
set -uo pipefail
runs=10 keep_going=0
for arg in "$@"; do
  case "$arg" in
    --keep-going) keep_going=1 ;;
    *[!0-9]*|"") echo "usage: $0 [N] [--keep-going]" >&2; exit 2 ;;
    *) runs=$arg ;;
  esac
done
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
clone="$(mktemp -d)/gpubot"
git clone -q "$src" "$clone" || exit 2
echo "clone of $(git -C "$clone" log --oneline -1) in $clone"
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  log="$clone.run-$i.log"
  (cd "$clone" && HOME="$(mktemp -d)" CI=true bash .ci/run) >"$log" 2>&1
  rc=$?
  # test.sh runs two passes (the parallel one, then the exclusive tests alone): both counts
  echo "run $i: rc=$rc $(( $(date +%s) - start )) s: $(grep -E '[0-9]+ (passed|failed)' "$log" | paste -sd';' -) (log: $log)"
  if [ "$rc" -ne 0 ] && [ "$keep_going" -eq 0 ]; then exit "$rc"; fi
done
