#!/usr/bin/env bash
# Wall time of `conform --jobs N` against --jobs 1, for a backend that sleeps 0.1 s per run
# (tests/backends/sleepy.sh: the reference after the pause), and whether the JSON reports
# agree (timings aside). One run each; on a shared machine read the ratio, not the seconds.
#   usage: bash bench/conform_jobs.sh [CUTCHECK_BINARY] [CASES] [JOBS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CUTCHECK=$(realpath "${1:-$root/build/release/cutcheck}")
cases=${2:-40}
jobs=${3:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
run() {
  local start end
  start=$(date +%s.%N)
  "$CUTCHECK" conform --backend "$root/tests/backends/sleepy.sh" --cases "$cases" --jobs "$1" --json "jobs$1.json" \
    >/dev/null 2>&1
  end=$(date +%s.%N)
  python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$end"
}
one=$(run 1)
many=$(run "$jobs")
if python3 "$root/tests/check_reports.py" same jobs1.json "jobs$jobs.json" > /dev/null; then same=identical; else same=DIFFER; fi
python3 -c "import sys; one, many = float(sys.argv[1]), float(sys.argv[2]); print(f'{sys.argv[4]} cases, backend \
sleeping 0.1 s per run: --jobs 1 {one:.2f} s, --jobs {sys.argv[3]} {many:.2f} s, ratio {many / one:.2f}; reports \
{sys.argv[5]} (timings aside)')" "$one" "$many" "$jobs" "$cases" "$same"
[ "$same" = identical ]
