#!/usr/bin/env bash
# `cutcheck check --backend`: a backend's own invariances. The reference (`cutcheck run`)
# holds every one bitwise but the tp split (its all_reduce sums in another order, within
# the tolerance); each misbehaving backend (backends/misbehaving.cpp) is told apart: a
# batch summing in another order agrees within the tolerance, noise on a second run fails
# determinism, mixed rows fail batch invariance; refusals are "unsupported"; a backend that
# cannot run at all stops the check after three runs. Small cases
# through --serve, so that each check takes a second or two.
# Usage: cli_check_backend.sh CUTCHECK MISBEHAVING FIXED_FUNCTION MLIR
set -uo pipefail
backends=$(cd "$(dirname "$0")/backends" && pwd)
source "$backends/../backend_sandbox.sh" "$1" check-backend
misbehaving=$2 fixed_function=$3
mlir=$work/bin/cutcheck-mlir  # a link of this test's own: its servers are told apart from others'
ln -s "$4" "$mlir"

check() {  # ARGS...: check --backend, $CASES cases (8) a property, the report in report.json
  "$cutcheck" check --cases "${CASES:-8}" --json report.json --junit report.xml --keep keep "$@" > out.txt 2> err.txt
}

# The verdict of each property, "name verdict" one a line.
verdicts() {
  python3 -c "import json; [print(p['name'], p['verdict']) for p in json.load(open('report.json'))['properties']]"
}
verdict_of() { verdicts | awk -v p="$1" '$1 == p { print $2 $3 }'; }

# Usage errors (exit 2), before any backend runs.
for args in "--serve" "--spec tiny" "--tp 4" "--backend x --filter oracle" "--backend x --weights w" \
  "--backend x --spec tiny --tp 3" "--backend x --precision f64"; do
  "$cutcheck" check $args > /dev/null 2> err.txt
  [ $? = 2 ] || fail "check $args: not a usage error: $(cat err.txt)"
done
grep -q "splits the spec" <(
  "$cutcheck" check --backend x --spec tiny --tp 3 2>&1
) || fail "--tp 3 with tiny: the error does not say why"

# The reference as a backend: bitwise everywhere but the split.
check --backend "$cutcheck run" --serve || fail "the reference: $(cat out.txt err.txt)"
[ "$(verdicts | grep -v '^tp\.' | awk '{ print $2 }' | sort -u)" = "bitwise" ] || fail "the reference: $(verdicts)"
[ "$(verdict_of composition.decode)" = bitwise ] || fail "the reference: no composition.decode in $(verdicts)"
[ "$(verdict_of tp.split_equals_unsplit)" = withintolerance ] || fail "the reference split: $(verdicts)"
[ "$(verdicts | wc -l)" = 10 ] || fail "the reference: not the 10 backend properties: $(verdicts)"
grep -q "worst headroom" out.txt || fail "within tolerance without its figure: $(cat out.txt)"
cp report.json reference.json
nothing_left "the reference"

# --jobs 2: the same verdicts, each property in a process of its own.
check --backend "$cutcheck run" --serve --jobs 2 || fail "--jobs 2: $(cat out.txt err.txt)"
python3 - reference.json report.json <<'EOF' || fail "--jobs 2 reports otherwise than --jobs 1"
import json, sys
a, b = (json.load(open(f))["properties"] for f in sys.argv[1:])
drop = lambda p: {k: v for k, v in p.items() if k != "seconds"}
assert [drop(p) for p in a] == [drop(p) for p in b], (a, b)
EOF
nothing_left "--jobs 2"

# A batch summing in another order: within the tolerance, not bitwise.
check --backend "$misbehaving batch-order" --serve --tp 1 || fail "batch-order: $(cat out.txt err.txt)"
[ "$(verdict_of batch_invariance)" = withintolerance ] || fail "batch-order: $(verdicts)"
[ "$(verdict_of determinism)" = bitwise ] || fail "batch-order: $(verdicts)"
python3 -c "
import json; p = [p for p in json.load(open('report.json'))['properties'] if p['name'] == 'batch_invariance'][0]
assert 0 < p['headroom'] <= 1 and 'against decode' in p['worst'], p" || fail "batch-order: no worst figure"
grep -q "<system-out>within tolerance: worst headroom" report.xml || fail "batch-order: JUnit without the figure"
nothing_left "batch-order"

# Noise on a second run: determinism fails, shrunk, with a reproducer that replays it;
# process per run as well as served.
for serve in --serve ""; do
  check --backend "$misbehaving noisy" $serve --tp 1 --filter determinism
  [ $? = 1 ] || fail "noisy $serve: not exit 1: $(cat out.txt err.txt)"
  [ "$(verdict_of determinism)" = fails ] || fail "noisy $serve: $(verdicts)"
  grep -q "run twice" out.txt || fail "noisy $serve: $(cat out.txt)"
done
[ -f keep/determinism/report.txt ] && grep -q "failed again" keep/determinism/report.txt ||
  fail "noisy: no reproducer: $(cat keep/determinism/report.txt)"
ls keep/determinism/runs/*/run-0.inputs.safetensors > /dev/null || fail "noisy: the reproducer keeps no inputs"
replay=$(sed -n 's/^re-run: //p' keep/determinism/report.txt | sed "s|^cutcheck |\"$cutcheck\" |")
eval "$replay" > replay.txt 2>&1
[ $? = 1 ] && grep -q "1 properties, 1 cases\|determinism .* fails" replay.txt || fail "noisy: the replay: $(cat replay.txt)"
# A --keep that cannot be written is the user's error (exit 2), not a crash, found before
# the backend runs.
"$cutcheck" check --backend "touch ran; $misbehaving noisy" --tp 1 --filter determinism --cases 2 --keep /proc/nope \
  > /dev/null 2> err.txt
[ $? = 2 ] && grep -q -- "--keep: '/proc/nope': cannot create files in '/proc'" err.txt && [ ! -e ran ] ||
  fail "an unwritable --keep: $(cat err.txt)"
nothing_left "noisy"

# Mixed rows: batch invariance fails, shrunk to two rows.
check --backend "$misbehaving mixed-rows" --serve --tp 1 --filter batch_invariance,determinism
[ $? = 1 ] || fail "mixed-rows: not exit 1: $(cat out.txt err.txt)"
[ "$(verdict_of batch_invariance)" = fails ] && [ "$(verdict_of determinism)" = bitwise ] ||
  fail "mixed-rows: $(verdicts)"
grep -q "counterexample: cut batch{rows=2," out.txt || fail "mixed-rows: not shrunk to two rows: $(cat out.txt)"
grep -q '<failure' report.xml || fail "mixed-rows: no JUnit failure"
nothing_left "mixed-rows"

# Don't-care cache rows left otherwise by Batch than by Decode: still bitwise, as they are
# compared without them.
check --backend "$misbehaving zeroed-rows" --serve --tp 1 --filter composition.batch,batch_invariance ||
  fail "zeroed-rows: $(cat out.txt err.txt)"
[ "$(verdicts | awk '{ print $2 }' | sort -u)" = bitwise ] || fail "zeroed-rows: $(verdicts)"
nothing_left "zeroed-rows"

# Refusals: a fixed-function engine (Decode and Forward of llama2.c's layout) refuses the
# pieces; its Forward against its Decode holds.
check --backend "$fixed_function" --spec tiny --tp 1 --filter composition.decode,forward_is_decode_at_0 ||
  fail "fixed function: $(cat out.txt err.txt)"
[ "$(verdict_of composition.decode)" = unsupported ] && [ "$(verdict_of forward_is_decode_at_0)" != fails ] ||
  fail "fixed function: $(verdicts)"
grep -q '<skipped' report.xml || fail "fixed function: unsupported is not a JUnit skip"
# A backend that refuses everything checked nothing: a failure, not a pass.
CASES=2 check --backend "$backends/unsupported.sh" --filter composition.decode
[ $? = 1 ] && grep -q "refused every" err.txt || fail "all unsupported: $(cat out.txt err.txt)"
nothing_left "refusals"

# A backend that cannot run at all (a hang here; a missing command alike): after its first 3
# runs time out the same way, every later run is skipped, and one STOPPED line says why,
# instead of every property and its shrinking waiting out timeouts of their own.
printf '#!/bin/sh\necho run >> "%s/hang-runs.txt"\nexec sh "%s/hang.sh"\n' "$PWD" "$backends" > counting-hang.sh
chmod +x counting-hang.sh
check --backend "$PWD/counting-hang.sh" --timeout 1 --tp 1
[ $? = 1 ] || fail "hang: not exit 1: $(cat out.txt err.txt)"
grep -q "^STOPPED: the backend '.*hang.sh' timed out on each of the first 3 runs" out.txt ||
  fail "hang: no STOPPED line: $(cat out.txt)"
[ "$(verdicts | awk '{ print $2 }' | sort -u)" = fails ] || fail "hang: $(verdicts)"
# Three runs, and the first failure's reproducer replaying once (the other properties get none).
[ "$(wc -l < hang-runs.txt)" = 4 ] || fail "hang: $(wc -l < hang-runs.txt) runs: the runs past the third were not skipped"
nothing_left "hang"
# The same with 3 jobs: the first property's runs decide before any other property starts,
# so the count stays 4 (not 3 a worker).
rm hang-runs.txt
check --backend "$PWD/counting-hang.sh" --timeout 1 --tp 1 --jobs 3
[ $? = 1 ] || fail "hang, 3 jobs: not exit 1: $(cat out.txt err.txt)"
[ "$(verdicts | awk '{ print $2 }' | sort -u)" = fails ] || fail "hang, 3 jobs: $(verdicts)"
[ "$(wc -l < hang-runs.txt)" = 4 ] || fail "hang, 3 jobs: $(wc -l < hang-runs.txt) runs, not 4"
nothing_left "hang, 3 jobs"
# A server is named as it is run, in the STOPPED line too.
check --backend "$PWD/counting-hang.sh" --serve --timeout 1 --tp 1
grep -q "^STOPPED: the backend '.*hang.sh --serve' timed out on each of the first 3 runs" out.txt ||
  fail "hang, --serve: no STOPPED line naming the server: $(cat out.txt)"
nothing_left "hang, --serve"

# The MLIR backend in its spec precision: bitwise (docs/usage.md has the whole report).
# Where MLIR 22 is not installed the backend refuses everything: skipped, unless
# CUTCHECK_REQUIRE_MLIR is set (as CI sets it). A request compiles its program: a generous
# time limit, for a loaded machine.
CASES=2 check --backend "$mlir run" --serve --timeout 3600 --spec tiny --tp 1 --filter batch_invariance,determinism
rc=$?
if [ $rc = 1 ] && grep -q "refused every" err.txt && [ -z "${CUTCHECK_REQUIRE_MLIR:-}" ]; then
  echo "MLIR 22 is not installed here: its check skipped"
else
  [ $rc = 0 ] || fail "MLIR: $(cat out.txt err.txt)"
  [ "$(verdicts | awk '{ print $2 }' | sort -u)" = bitwise ] || fail "MLIR spec precision: $(verdicts)"
fi
nothing_left "MLIR" "$mlir"

[ $failures = 0 ] || { echo "$failures failures"; exit 1; }
echo "check --backend: all passed"
