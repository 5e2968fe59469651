#!/usr/bin/env bash
# Tolerances on the command line: the bound policy and --precision, the fixed presets by
# their new names (the old ones refused with the new named), variants as backends, and
# the tolerance report. Usage: cli_tolerance.sh CUTCHECK
set -euo pipefail
cutcheck=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

expect_exit() {  # CODE TEXT ARGS...: exit code CODE, and TEXT in what it printed
  local want=$1 text=$2
  shift 2
  set +e
  out=$("$cutcheck" "$@" 2>&1)
  got=$?
  set -e
  [ "$got" = "$want" ] || { echo "cutcheck $*: exit $got, expected $want: $out"; exit 1; }
  case "$out" in *"$text"*) ;; *) echo "cutcheck $*: '$text' not in: $out"; exit 1 ;; esac
}

expect_exit 2 "fixed-f32" conform --backend "$cutcheck run" --tolerance f32 --cases 1
expect_exit 2 "fixed tolerance" conform --backend "$cutcheck run" --atol 1e-3 --cases 1
expect_exit 2 "unknown precision 'fp8'" conform --backend "$cutcheck run" --precision fp8 --cases 1
expect_exit 2 "excludes" run x --inputs i --outputs o --variant bf16 --fault norm-eps-wrong

# A bf16 backend passes where bf16 is declared and fails where f32 is.
expect_exit 0 "0 failed" conform --backend "$cutcheck run --variant bf16" --precision bf16 --cases 25 --tp 1 --tp 2
expect_exit 1 "FAILED" conform --backend "$cutcheck run --variant bf16" --cases 25 --no-shrink

# An f32 backend summing in another order passes the default, and the report says how
# close it came.
expect_exit 0 "headroom" conform --backend "$cutcheck run --variant f32-reversed" --cases 25 --tp 1 --tp 4 --json r.json
python3 -c "import json, sys; r = json.load(open('r.json')); \
assert r['tolerance']['policy'] == 'bound' and r['tolerance']['precision'] == 'f32', r['tolerance']; \
h = [e['headroom'] for c in r['cases'] for e in c['errors']]; assert h and max(h) < 1, max(h)"

# The fixed preset is still there, under its new name.
expect_exit 0 "fixed atol=0.0001" conform --backend "$cutcheck run" --tolerance fixed-f32 --cases 10

expect_exit 0 "bound f32" tolerance-report --cases 6 --precision f32 --layer-cases 1 --json t.json
python3 -c "import json; r = json.load(open('t.json')); assert r['format'] == 'cutcheck-tolerance-report-2' and r['cases'] == 6, r"
# A shard judges its slice of the seed's cases (5/6: case 4 alone); --fault runs the named
# faults only; bad values of either are refused.
expect_exit 0 "1 cases" tolerance-report --cases 6 --shard 5/6 --precision f32 --layer-cases 0 --fault final-norm-gain-dropped --json s.json
python3 -c "import json; r = json.load(open('s.json')); f = r['policies'][0]['faults']; \
assert r['cases'] == 1 and list(f) == ['final-norm-gain-dropped'], (r['cases'], list(f))"
expect_exit 2 "no fault named 'nope'" tolerance-report --cases 1 --fault nope
expect_exit 2 "--shard '0/3'" tolerance-report --cases 1 --shard 0/3
echo "cli tolerance: ok"
