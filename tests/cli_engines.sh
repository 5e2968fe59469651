#!/usr/bin/env bash
# conform-engine end to end (docs/engines.md): the pure-Python example engine passes; each
# fault planted in the test engine is caught, shrunk to a small case, and its replay fails
# again; engines that break the protocol fail their cases with the reason, blamed on them;
# cutcheck's own errors exit 2.
# With CUTCHECK_LLAMACPP (and tools/llamacpp/node_modules), llama.cpp passes on random
# specs, and its adapter's planted fault is caught and shrunk.
# Usage: cli_engines.sh CUTCHECK TEST_ENGINE [CUTCHECK_LLAMACPP SOURCE_DIR]
set -uo pipefail
engines=$(cd "$(dirname "$0")/engines" && pwd)
test_engine=$2
llamacpp=${3:-}
source_dir=${4:-}
source "$(dirname "$0")/backend_sandbox.sh" "$1" engines

check_json() {  # $1 = label, $2 = a Python expression over the report r
  python3 -c "import json, sys; r = json.load(open('report.json')); assert $2, r" 2>/dev/null || fail "$1: not true: $2"
}

# The example engine, written from docs/engines.md alone, passes; the reports parse.
"$cutcheck" conform-engine --engine "python3 $engines/example_engine.py" --cases 2 --positions \
  --json report.json --junit report.xml --html report.html > out.txt 2> err.txt
rc=$?
[ $rc = 0 ] || fail "the example engine: exited $rc: $(cat out.txt err.txt)"
python3 -c "import xml.etree.ElementTree as E; E.parse('report.xml')" || fail "the JUnit report does not parse"
check_json "the example engine" "r['format'] == 'cutcheck-conform-engine-1' and r['counts']['passed'] == 2 and r['by_position']"
grep -q "worst |dlogp|" out.txt || fail "--positions printed no per-position table"
nothing_left "the example engine"

# Each planted fault is caught and shrunk; the kept case replays and fails again. The
# shrink's wall-time budget would stop it short on a loaded machine: its run budget bounds it.
for fault in late norm token; do
  "$cutcheck" conform-engine --engine "$test_engine $fault" --cases 4 --shrink-time 3600 --keep "keep-$fault" \
    --json report.json > out.txt 2> err.txt
  rc=$?
  [ $rc = 1 ] || fail "fault $fault: exited $rc, not 1: $(cat out.txt err.txt)"
  check_json "fault $fault" "r['failures'] and r['failures'][0]['shrink_runs'] > 0"
  check_json "fault $fault, shrunk" "r['failures'][0]['shrunk']['case']['spec']['layers'] == 1 and r['failures'][0]['shrunk']['case']['spec']['dim'] <= 8 and len(r['failures'][0]['shrunk']['case']['requests']) == 1"
  command=$(python3 -c "import json; print(json.load(open('report.json'))['failures'][0]['command'])")
  replay=${command/cutcheck /\"\$cutcheck\" }
  eval "$replay" > replay.txt 2>&1
  rc=$?
  [ $rc = 1 ] || fail "fault $fault: the replay exited $rc, not 1: $(cat replay.txt)"
  grep -q "^failed" replay.txt || fail "fault $fault: the replay did not fail: $(cat replay.txt)"
  nothing_left "fault $fault"
done
grep -q "the engine chose token" keep-token/*/report.txt || fail "fault token: the reproducer does not say the token"

# A top-k engine passes and is handed the reference's top token; one whose top-k leaves a
# likely token out fails. Half precisions: the model file in f16 / bf16, held to their bound.
"$cutcheck" conform-engine --engine "$test_engine top3" --cases 2 --json report.json > out.txt 2> err.txt
[ $? = 0 ] || fail "a top-k engine: did not pass: $(cat out.txt err.txt)"
check_json "a top-k engine" "r['options']['top_k'] == 3"
"$cutcheck" conform-engine --engine "$test_engine top3-gap" --cases 2 --no-shrink --json report.json > out.txt 2> err.txt
[ $? = 1 ] || fail "a top-k engine with a gap: not caught"
grep -q "missing from the engine's top-k" report.json || fail "a top-k engine with a gap: no reason: $(cat out.txt)"
for precision in f16 bf16; do
  "$cutcheck" conform-engine --engine "$test_engine none" --cases 2 --precision $precision --json report.json > out.txt 2> err.txt
  [ $? = 0 ] || fail "--precision $precision: the reference as an engine did not pass: $(cat out.txt err.txt)"
  check_json "--precision $precision" "r['tolerance']['precision'] == '$precision' and r['cases'][0]['case']['spec']['dtype'] == '$precision'"
done
nothing_left "top-k and half precisions"

# Engines that break the protocol fail, with the reason; the campaign goes on. Each run
# has the default time limit (120 s), but for the engine that never ends, whose two cases
# run side by side: its limit must still be generous for its describe.
hostile() {  # $1 = mode, $2 = expected failure_type, $3 = a phrase of the failure, [$4 = --timeout]
  "$cutcheck" conform-engine --engine "$engines/hostile_engine.sh $1" --cases 2 --jobs 2 --no-shrink \
    ${4:+--timeout $4} --keep keep-hostile --json report.json > out.txt 2> err.txt
  rc=$?
  [ $rc = 1 ] || fail "engine $1: exited $rc, not 1"
  check_json "engine $1" "r['counts']['failed'] == 2 and r['cases'][0]['failure_type'] == '$2'"
  grep -q -- "$3" report.json || fail "engine $1: the report does not say '$3': $(cat out.txt)"
  nothing_left "engine $1" "sleep 7919"
}
hostile not-json protocol "malformed JSON"
hostile short-vocab protocol "results\[0\].logprobs\[0\]: .* numbers, the vocabulary has"
hostile no-output protocol "without writing its results"
hostile huge protocol "bytes allowed"
hostile linked protocol "not a regular file (a symbolic link)"
hostile crash crash "killed by signal 11"
hostile hang timeout "timed out" 30

# An engine that crashes on every run the same way stops the campaign after its first 3
# cases, unshrunk, with one STOPPED line (the stop rule conform's campaigns apply).
"$cutcheck" conform-engine --engine "$engines/hostile_engine.sh crash" --cases 8 --keep keep-stopped --json report.json \
  > out.txt 2> err.txt
[ $? = 1 ] || fail "an engine crashing every run: not exit 1"
check_json "an engine crashing every run" "len(r['cases']) == 3 and r['counts']['failed'] == 3 and 'on each of the first 3 cases' in r['stopped'] and r['failures'][0]['shrink_runs'] == 0"
grep -q "^STOPPED: the engine '.*hostile_engine.sh crash' was killed by signal 11" out.txt ||
  fail "an engine crashing every run: no STOPPED line: $(cat out.txt)"
[ -f keep-stopped/case-0-seed-1/requests.json ] || fail "an engine crashing every run: the first failure is not kept"
nothing_left "an engine crashing every run"

"$cutcheck" conform-engine --engine "$engines/hostile_engine.sh unsupported" --cases 2 --json report.json > out.txt 2> err.txt
[ $? = 1 ] || fail "an engine that runs nothing: not exit 1 (no case passed)"
check_json "unsupported" "r['counts']['unsupported'] == 2 and 'no such model here' in r['cases'][0]['failure']"

"$cutcheck" conform-engine --engine "$engines/hostile_engine.sh bad-describe" --cases 2 > out.txt 2> err.txt
[ $? = 1 ] || fail "a bad describe: not exit 1"
grep -q "model_formats" err.txt || fail "a bad describe: the missing key is not named: $(cat err.txt)"
"$cutcheck" conform-engine --engine "no-such-engine-command" --cases 2 > out.txt 2> err.txt
[ $? = 1 ] || fail "a missing engine command: not exit 1"
nothing_left "hostile engines"

# cutcheck's own errors exit 2 and run no engine.
for args in "--spec no-such-spec" "--weights w" "--precision f64" "--format onnx" "--cases 0" "--keep /proc/1/x" \
  "--top-k -1" "--timeout nan"; do
  "$cutcheck" conform-engine --engine "touch ran; $test_engine none" $args > out.txt 2> err.txt
  rc=$?
  [ $rc = 2 ] || fail "conform-engine $args: exited $rc, not 2: $(cat err.txt)"
  [ ! -e ran ] || fail "conform-engine $args: ran the engine"
  rm -f ran
done

if [ -n "$llamacpp" ] && command -v node >/dev/null 2>&1 && [ -d "$source_dir/tools/llamacpp/node_modules/node-llama-cpp" ]; then
  "$cutcheck" conform-engine --engine "$llamacpp" --cases 2 --json report.json > out.txt 2> err.txt
  [ $? = 0 ] || fail "llama.cpp did not pass: $(cat out.txt err.txt)"
  check_json "llama.cpp" "r['counts']['passed'] == 2 and r['summary'][0]['worst']['headroom'] < 0.5"
  "$cutcheck" conform-engine --engine "$llamacpp --fault late" --cases 1 --shrink-time 15 --keep keep-llama \
    --json report.json > out.txt 2> err.txt
  [ $? = 1 ] || fail "llama.cpp with its fault: not caught: $(cat out.txt err.txt)"
  check_json "llama.cpp with its fault, shrunk" "r['failures'][0]['shrink_runs'] > 0 and r['failures'][0]['shrunk']['ctx'] <= r['failures'][0]['original']['ctx'] and r['failures'][0]['shrunk']['case']['spec']['dim'] <= r['failures'][0]['original']['case']['spec']['dim']"
  # Quantized models: llama.cpp's activation rounding beside Q4_0 weights is held, and a
  # kernel reading each block's neighbour's scale is caught.
  "$cutcheck" conform-engine --engine "$llamacpp" --precision q4_0 --cases 2 --json report.json > out.txt 2> err.txt
  [ $? = 0 ] || fail "llama.cpp on Q4_0 did not pass: $(cat out.txt err.txt)"
  check_json "llama.cpp on Q4_0" "r['counts']['passed'] == 2 and r['options']['precision'] == 'q4_0'"
  "$cutcheck" conform-engine --engine "$llamacpp --fault scale" --precision q4_0 --cases 2 --no-shrink --keep keep-scale \
    --json report.json > out.txt 2> err.txt
  [ $? = 1 ] || fail "llama.cpp with the scale fault: not caught: $(cat out.txt err.txt)"
  check_json "llama.cpp with the scale fault" "r['counts']['failed'] == 2"
  nothing_left "llama.cpp"
elif [ -n "${CUTCHECK_REQUIRE_LLAMACPP:-}" ]; then
  fail "CUTCHECK_REQUIRE_LLAMACPP is set, but node or tools/llamacpp/node_modules is missing"
else
  echo "llama.cpp: skipped (no node or no tools/llamacpp/node_modules)"
fi

[ $failures = 0 ] && echo "all passed"
exit $((failures > 0))
