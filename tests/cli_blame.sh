#!/usr/bin/env bash
# Whose error is it: what the user gave cutcheck (weights it cannot read, a broken
# reproducer, a malformed environment variable) exits 2 with the place named, before any
# backend runs, and is never reported as a backend failure. Usage: cli_blame.sh CUTCHECK
set -uo pipefail
cutcheck=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A backend that leaves a mark when it runs, then runs the reference.
backend="touch $work/ran; $cutcheck run"

# `$1` (a pattern) must be in the error of a command that exits 2 without running the backend.
users_error() {
  local pattern=$1
  shift
  rm -f ran
  "$cutcheck" "$@" > out.txt 2> err.txt
  local rc=$?
  [ $rc = 2 ] || fail "exit $rc, not 2: $*: $(cat out.txt err.txt)"
  [ ! -e ran ] || fail "the backend ran: $*"
  grep -q -- "$pattern" err.txt || fail "no '$pattern' in the error of: $*: $(cat err.txt)"
}

"$cutcheck" weights --spec tiny --seed 3 --dir w > /dev/null

# Weights files that do not fit the spec: the same tensors stored as F16 (a dtype the tiny
# spec does not declare), I64 (one cutcheck does not read) or I32.
python3 - << 'EOF'
import json, os, struct
data = open("w/model.safetensors", "rb").read()
size = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + size])
for dtype, width in (("F16", 2), ("I64", 8), ("I32", 4)):
    out, offset = {}, 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        count = 1
        for d in t["shape"]:
            count *= d
        out[name] = {"dtype": dtype, "shape": t["shape"], "data_offsets": [offset, offset + count * width]}
        offset += count * width
    text = json.dumps(out).encode()
    text += b" " * (-len(text) % 8)
    os.makedirs("w" + dtype, exist_ok=True)
    open("w" + dtype + "/model.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + bytes(offset))
EOF
users_error "'tok_embeddings' is f16\[32,16\], the spec needs f32" conform --spec tiny --weights wF16 --backend "$backend" --cases 3
users_error "dtype I64 is not supported" conform --spec tiny --weights wI64 --backend "$backend" --cases 3
users_error "'tok_embeddings' is i32\[32,16\], the spec needs f32" conform --spec tiny --weights wI32 --backend "$backend" --cases 3
users_error "wF16/model.safetensors" conform --spec tiny --weights wF16 --backend "$backend" --cases 3 --tp 2
users_error "missing/model.safetensors" conform --spec tiny --weights missing --backend "$backend" --cases 3

# A reproducer to break in every way a moved or edited folder can be broken.
"$cutcheck" conform --spec tiny --weights w --backend "$cutcheck run --fault swiglu-gate-up-swapped" --cuts decode \
  --cases 3 --seed 1 --no-shrink --keep kept > /dev/null 2>&1
[ -f kept/case-0-seed-1/case.json ] && [ -f kept/case-0-seed-1/weights.json ] || fail "no reproducer was kept"
broken() { rm -rf "$1" && cp -r kept/case-0-seed-1 "$1"; }
edit_json() {  # FILE PYTHON-STATEMENT on j
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); $2; json.dump(j, open(sys.argv[1], 'w'))" "$1"
}
broken r1 && printf '{"spec":' > r1/case.json
users_error "r1/case.json: malformed JSON" conform --backend "$backend" --replay r1
broken r2 && rm r2/case.json
users_error "r2/case.json" conform --backend "$backend" --replay r2
users_error "nowhere/case.json" conform --backend "$backend" --replay nowhere
broken r3 && edit_json r3/case.json "j['tp'] = 0"
users_error "r3/case.json: tp must be at least 1" conform --backend "$backend" --replay r3
broken r4 && edit_json r4/case.json "j['positions'] = []"
users_error "r4/case.json" conform --backend "$backend" --replay r4
broken r5 && rm -r r5/weights
users_error "r5/weights/model.safetensors" conform --backend "$backend" --replay r5
broken r6 && edit_json r6/weights.json "j['copied'] = False; j['path'] = '$work/gone'"
users_error "gone/model.safetensors" conform --backend "$backend" --replay r6
broken r7 && echo '[1, 2]' > r7/weights.json
users_error "r7/weights.json" conform --backend "$backend" --replay r7
# The right hash of unreadable weights: refused as weights, not run.
broken r8 && cp wI64/model.safetensors r8/weights/model.safetensors &&
  edit_json r8/weights.json "import hashlib; j['sha256'] = hashlib.sha256(open('r8/weights/model.safetensors','rb').read()).hexdigest()"
users_error "dtype I64 is not supported" conform --backend "$backend" --replay r8

# A malformed CUTCHECK_MEMORY_LIMIT is named, for every command.
for value in lots -5 " 5G" 5T; do
  CUTCHECK_MEMORY_LIMIT="$value" "$cutcheck" spec tiny > out.txt 2> err.txt
  rc=$?
  [ $rc = 2 ] || fail "CUTCHECK_MEMORY_LIMIT='$value' exited $rc, not 2"
  grep -q "CUTCHECK_MEMORY_LIMIT" err.txt || fail "CUTCHECK_MEMORY_LIMIT='$value': the variable is not named: $(cat err.txt)"
done
rm -f ran
CUTCHECK_MEMORY_LIMIT=lots "$cutcheck" conform --backend "$backend" --cases 1 > out.txt 2> err.txt
rc=$?
[ $rc = 2 ] && [ ! -e ran ] && grep -q "CUTCHECK_MEMORY_LIMIT: 'lots' is not a byte size" err.txt ||
  fail "conform with CUTCHECK_MEMORY_LIMIT=lots: exit $rc: $(cat err.txt)"

# Authoring against a weights folder of another model is refused then, not at the first run.
users_error "holds the weights of another spec (w/spec.json: tiny" author --spec stories260K --cut 'decode{ctx=4}' --dir w --out p
mkdir -p bare && cp w/model.safetensors bare/
users_error "weight 'tok_embeddings' is f32\[32,16\], the spec needs f32\[512,64\]" author --spec stories260K \
  --cut 'decode{ctx=4}' --dir bare --out p
[ ! -e p ] || fail "a refused author wrote its folder"

# Re-authoring a folder that held a split, without --tp: no stale chip*/ remains, and the
# folder runs as the new, unsplit program.
"$cutcheck" weights --spec tiny --seed 3 --dir w --tp 2 > /dev/null
"$cutcheck" author --spec tiny --cut 'decode{ctx=8}' --dir w --out prog --tp 2 > /dev/null
[ -d prog/chip1 ] || fail "the split was not written"
"$cutcheck" author --spec tiny --cut 'decode{ctx=8}' --dir w --out prog > /dev/null || fail "re-authoring failed"
[ -z "$(ls -d prog/chip* 2> /dev/null)" ] || fail "stale chip folders remain: $(ls prog)"
[ -f prog/program.txt ] || fail "re-authoring wrote no program"
"$cutcheck" inputs prog --seed 1 --out in.safetensors > /dev/null && "$cutcheck" run prog --inputs in.safetensors \
  --outputs out.safetensors || fail "the re-authored folder does not run"

[ $failures = 0 ] || { echo "$failures failures"; exit 1; }
echo "blame: all passed"
