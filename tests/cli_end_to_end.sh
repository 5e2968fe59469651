#!/usr/bin/env bash
# The command line as a newcomer uses it: weights, author, inputs, run, generate, and
# the errors a typo earns. Usage: cli_end_to_end.sh CUTCHECK [SHARED_DIR]
set -euo pipefail
cutcheck=$1
shared=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

"$cutcheck" weights --spec tiny --seed 7 --dir weights >/dev/null
"$cutcheck" author --spec tiny --cut 'decode{ctx=16}' --dir weights --out decode >/dev/null
test -s decode/program.txt && test -s decode/manifest.json
"$cutcheck" inputs decode --seed 3 --out in.safetensors >/dev/null
"$cutcheck" run decode --inputs in.safetensors --outputs out.safetensors
test -s out.safetensors

# A fault is a rewrite of the program given: a folder written by hand takes it where its
# anchors are, and is refused (exit 2, the anchor named) where they are not.
cp -r "$here/programs/softmax_by_hand" hand
"$cutcheck" inputs hand --seed 1 --out hand-in.safetensors >/dev/null
"$cutcheck" run hand --inputs hand-in.safetensors --outputs hand-out.safetensors --fault softmax-without-max
"$cutcheck" run hand --inputs hand-in.safetensors --outputs hand-out.safetensors --fault bf16-activations
status=0
"$cutcheck" run hand --inputs hand-in.safetensors --outputs hand-out.safetensors --fault rope-position-off-by-one \
  2>anchor.txt || status=$?
[ "$status" = 2 ] || { echo "a fault without its anchor exited $status"; exit 1; }
grep -q "%rope.pos" anchor.txt || { echo "the missing anchor is not named:"; cat anchor.txt; exit 1; }

# The same cut authored against another folder gives the same text.
"$cutcheck" author --spec tiny --cut 'decode{ctx=16}' --dir elsewhere --out decode2 >/dev/null
cmp decode/program.txt decode2/program.txt

# Every path generates the same tokens.
first=$("$cutcheck" generate --weights weights --prompt 1,2,3 --steps 10)
for via in decode prefill batch pieces; do
  got=$("$cutcheck" generate --weights weights --prompt 1,2,3 --steps 10 --via "$via")
  [ "$got" = "$first" ] || { echo "via $via gave '$got', auto gave '$first'"; exit 1; }
done

# generate --backend --compare: a correct backend matches; a faulty one is stopped at the
# first step whose token differs (found here from two separate generations), exit 1.
out=$("$cutcheck" generate --weights weights --prompt 1,2,3 --steps 20 --backend "$cutcheck run" --compare)
grep -q "all 20 tokens match the reference's" <<<"$out" || { echo "compare, correct backend: $out"; exit 1; }
faulty="$cutcheck run --fault kv-write-wrong-row"
read -ra want <<<"$("$cutcheck" generate --weights weights --prompt 1,2,3 --steps 20)"
read -ra got <<<"$("$cutcheck" generate --weights weights --prompt 1,2,3 --steps 20 --backend "$faulty")"
step=0
while [ "${want[$step]}" = "${got[$step]}" ]; do step=$((step + 1)); done
set +e
out=$("$cutcheck" generate --weights weights --prompt 1,2,3 --steps 20 --backend "$faulty" --compare 2>&1)
status=$?
set -e
[ "$status" = 1 ] || { echo "compare, faulty backend: exit $status: $out"; exit 1; }
grep -q "^step $step (position $((step + 2))): the backend chose token ${got[$step]}, the reference ${want[$step]}$" <<<"$out" &&
  grep -q "^  reference top-2: ${want[$step]} ([-0-9.e]*), [0-9]* ([-0-9.e]*)$" <<<"$out" &&
  grep -q "^  backend   top-2: ${got[$step]} ([-0-9.e]*), [0-9]* ([-0-9.e]*)$" <<<"$out" ||
  { echo "compare, faulty backend: not step $step: $out"; exit 1; }

# A tp split runs on the unsplit inputs and gives the unsplit results, within rounding.
"$cutcheck" weights --spec tiny --seed 7 --dir weights --tp 2 >/dev/null
"$cutcheck" author --spec tiny --cut 'decode{ctx=16}' --dir weights --out split --tp 2 >/dev/null
test -s split/chip0/program.txt && test -s split/chip1/manifest.json
"$cutcheck" run split --inputs in.safetensors --outputs split-out.safetensors
split_tokens=$("$cutcheck" generate --weights weights --prompt 1,2,3 --steps 10 --tp 2)
[ "$split_tokens" = "$first" ] || { echo "tp 2 gave '$split_tokens', unsplit '$first'"; exit 1; }

# Conformance of the reference against itself, with reports CI readers can parse.
"$cutcheck" conform --backend "$cutcheck run" --cases 30 --tp 1 --tp 2 --junit report.xml --json report.json >/dev/null
python3 -c "import sys, json, xml.etree.ElementTree as E; t = E.parse(sys.argv[1]).getroot(); \
assert t.get('tests') == '30' and t.get('failures') == '0', t.attrib; \
j = json.load(open(sys.argv[2])); assert j['passed'] and j['counts']['passed'] == 30" report.xml report.json
# A faulty backend fails the run (exit 1), with a reproducer that replays the failure. The
# shrink's default wall-time budget can run out before bisection on a loaded machine: its
# run budget bounds it instead.
if "$cutcheck" conform --backend "$cutcheck run --fault swiglu-gate-up-swapped" --cases 20 --shrink-time 3600 --keep kept \
  --junit bad.xml >conform.txt 2>&1; then echo "a faulty backend passed"; exit 1; fi
grep -q "first failing piece: layer 0" conform.txt
python3 -c "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])" bad.xml
replay=$(grep -m1 "re-run:" conform.txt | sed 's/.*re-run: cutcheck //')
if eval "\"$cutcheck\" $replay" >replay.txt 2>&1; then echo "the replay passed"; exit 1; fi
grep -q "^failed:" replay.txt

# Errors: non-zero exit and a message naming the problem, never a crash.
expect_error() {
  local pattern=$1; shift
  if out=$("$cutcheck" "$@" 2>&1); then echo "expected failure: $*"; exit 1; fi
  grep -q -- "$pattern" <<<"$out" || { echo "expected '$pattern' from: $*"; echo "$out"; exit 1; }
}
expect_error "layer 5 does not exist" author --spec tiny --cut 'decode_layer{layer=5,ctx=4}' --dir weights --out x
expect_error "expected ',' or '}'" author --spec tiny --cut 'decode{ctx=4' --dir weights --out x
expect_error "neither a built-in spec" author --spec nosuch --cut 'decode{ctx=4}' --dir weights --out x
expect_error "input 'token' (i32\[\]) was not given" run decode --inputs out.safetensors --outputs o.safetensors
printf 'garbage' > junk.safetensors
expect_error "too short for a safetensors file" run decode --inputs junk.safetensors --outputs o.safetensors
expect_error "tp = 3 does not divide heads = 4" author --spec tiny --cut 'decode{ctx=4}' --dir weights --out x --tp 3
expect_error "prefill{rows=2,ctx=4} cannot be split yet" author --spec tiny --cut 'prefill{rows=2,ctx=4}' --dir weights --out x --tp 2

# Usage errors exit 2 before anything runs or is written (docs/exit-codes.md).
expect_exit() {
  local want=$1
  shift
  set +e
  "$cutcheck" "$@" >/dev/null 2>&1
  local got=$?
  set -e
  [ "$got" = "$want" ] || { echo "expected exit $want, got $got: $*"; exit 1; }
}
expect_exit 2 frobnicate
expect_exit 2 genrate
expect_error "unknown command 'genrate'; did you mean 'generate'?" genrate --steps 3
expect_exit 2 run --no-such-option
expect_exit 2 check --cases 1 --seed 18446744073709551616
expect_exit 2 check --cases 1 --seed -1
expect_exit 2 conform --backend "$cutcheck run" --tp 0 --cases 1
expect_exit 2 conform --backend "$cutcheck run" --tp -1 --cases 1
expect_exit 2 weights --spec tiny --dir w0 --tp 0
expect_exit 2 weights --spec tiny --dir w3 --tp 3
[ ! -e w0 ] && [ ! -e w3 ] || { echo "a refused weights command wrote files"; exit 1; }
expect_exit 0 --help
expect_exit 2 generate --weights weights --steps 3 --compare                   # --compare needs --backend
expect_exit 2 generate --spec tiny --steps 3 --backend "$cutcheck run"          # --backend needs --weights
expect_exit 77 generate --weights weights --steps 3 --backend "$cutcheck run" --tp 2  # not split yet

# A FIFO where a file is read is refused at once (never waits for a writer; `timeout` only
# ends a run that does).
mkfifo fifo
fifo_refused() {
  local out
  if out=$(timeout 600 "$cutcheck" "$@" 2>&1); then echo "expected failure: $*"; exit 1; fi
  grep -q "' is not a regular file" <<<"$out" || { echo "expected a FIFO refusal from: $*"; echo "$out"; exit 1; }
}
fifo_refused run decode --inputs fifo --outputs o.safetensors
fifo_refused import-llama2c fifo --out imported
fifo_refused author --spec fifo --cut 'decode{ctx=4}' --dir weights --out x
cp -r decode fifo_program && rm fifo_program/program.txt && mkfifo fifo_program/program.txt
fifo_refused inputs fifo_program --out i.safetensors
cp -r decode fifo_manifest && rm fifo_manifest/manifest.json && ln -s ../fifo fifo_manifest/manifest.json
fifo_refused run fifo_manifest --inputs in.safetensors --outputs o.safetensors

if [ -n "${CUTCHECK_REQUIRE_SHARED:-}" ] && [ ! -f "$shared/models/stories260K.bin" ]; then
  echo "CUTCHECK_REQUIRE_SHARED is set, but '$shared/models/stories260K.bin' is not there"
  exit 1
fi
if [ -n "$shared" ] && [ -f "$shared/models/stories260K.bin" ]; then
  "$cutcheck" import-llama2c "$shared/models/stories260K.bin" --out stories >/dev/null
  want=$(python3 -c "import json,sys; print(' '.join(map(str, json.load(open(sys.argv[1]))['tokens'])))" \
    "$shared/fixtures/stories260K-greedy.json")
  got=$("$cutcheck" generate --spec stories/spec.json --weights stories --prompt 1 --steps 64)
  [ "$got" = "$want" ] || { echo "stories260K: got '$got', want '$want'"; exit 1; }
  for tp in 2 4; do
    got=$("$cutcheck" generate --spec stories/spec.json --weights stories --prompt 1 --steps 64 --tp "$tp")
    [ "$got" = "$want" ] || { echo "stories260K with --tp $tp: got '$got'"; exit 1; }
  done
  expect_error "tp = 3 does not divide heads = 8" generate --weights stories --steps 4 --tp 3

  # A failure found on imported weights replays from its printed command, in a fresh shell
  # elsewhere; with the weights changed, the replay refuses.
  mkdir -p bin && ln -sf "$cutcheck" bin/cutcheck
  set +e
  PATH="$PWD/bin:$PATH" cutcheck conform --backend "$cutcheck run --fault rope-style-swapped" --spec stories/spec.json \
    --weights stories --cuts decode --tp 1 --tp 2 --cases 6 --keep kept --json found.json >/dev/null 2>&1
  status=$?
  set -e
  [ "$status" = 1 ] || { echo "the faulty backend was not caught on stories260K (exit $status)"; exit 1; }
  command=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['failures'][0]['command'])" found.json)
  mkdir -p elsewhere && cp -r stories stories.saved
  set +e
  (cd elsewhere && env -i PATH="$PWD/../bin:/usr/bin:/bin" bash -c "$command" >replay.txt 2>&1)
  status=$?
  set -e
  [ "$status" = 1 ] || { echo "the printed command did not reproduce the failure (exit $status): $command"; cat elsewhere/replay.txt; exit 1; }
  case_dir=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['failures'][0]['reproducer'])" found.json)
  if [ -f "$case_dir/weights/model.safetensors" ]; then weights_file="$case_dir/weights/model.safetensors"; else weights_file=stories/model.safetensors; fi
  printf 'x' | dd of="$weights_file" bs=1 seek=200 conv=notrunc status=none
  set +e
  (cd elsewhere && env -i PATH="$PWD/../bin:/usr/bin:/bin" bash -c "$command" >replay2.txt 2>&1)
  status=$?
  set -e
  [ "$status" = 2 ] && grep -q "not the ones this failure was found with" elsewhere/replay2.txt ||
    { echo "replay on changed weights was not refused (exit $status)"; cat elsewhere/replay2.txt; exit 1; }
  [ ! -e stories/tp2 ] || { echo "conform wrote shards into the user's weights folder"; exit 1; }
fi
echo "cli end to end: ok"
