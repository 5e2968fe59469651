#!/usr/bin/env bash
# cutcheck-llamacpp (tools/llamacpp) on models cutcheck exports: llama.cpp's greedy tokens
# are the reference's on a small random model in f32 and f16, and llama2.c's 64 fixture
# tokens on stories260K (also from its Q8_0 export; its Q4_0 export loads and generates);
# the planted fault changes them; bad requests exit 2, a format it does not load 77. Skips
# where node or tools/llamacpp/node_modules is missing, unless CUTCHECK_REQUIRE_LLAMACPP is
# set (CI).
#   usage: cli_llamacpp.sh CUTCHECK CUTCHECK_LLAMACPP SOURCE_DIR [SHARED]
set -euo pipefail
cutcheck=$1
engine=$2
source_dir=$3
shared=${4:-}
if ! command -v node >/dev/null 2>&1 || [ ! -d "$source_dir/tools/llamacpp/node_modules/node-llama-cpp" ]; then
  [ -z "${CUTCHECK_REQUIRE_LLAMACPP:-}" ] || { echo "CUTCHECK_REQUIRE_LLAMACPP is set, but node or tools/llamacpp/node_modules is missing"; exit 1; }
  echo "cli llamacpp: skipped (no node or no tools/llamacpp/node_modules)"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }

# requests VOCAB PROMPT STEPS: one request, reporting the prompt's positions.
requests() {
  python3 - "$@" >req.json <<'PY'
import json, sys
vocab, prompt, steps = int(sys.argv[1]), [int(t) for t in sys.argv[2].split(',')], int(sys.argv[3])
print(json.dumps({"format": "cutcheck-engine-1", "vocab": vocab, "top_k": 0,
                  "requests": [{"id": 7, "prompt": prompt, "steps": steps, "positions": list(range(len(prompt)))}]}))
PY
}
# tokens OUT: the generated tokens of the one result, space-separated.
tokens() { python3 -c 'import json,sys; print(*json.load(open(sys.argv[1]))["results"][0]["tokens"])' "$1"; }

"$engine" describe | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["format"] == "cutcheck-engine-1" and d["model_formats"] == ["gguf"], d'

# A spec with grouped-query attention, an untied head and the half rotary order: the
# exporter permutes q and k for llama.cpp.
cat >spec.json <<'EOF'
{"name": "small", "vocab": 48, "dim": 24, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 6, "ffn": 40,
 "norm_eps": 1e-5, "rope_theta": 10000, "rope_style": "half", "tied": false}
EOF
prompt=3,1,4,1,5,9,2,6
want=$("$cutcheck" generate --spec spec.json --seed 11 --prompt $prompt --steps 12 | tail -1)
for dtype in f32 f16; do
  "$cutcheck" export-gguf --spec spec.json --seed 11 --out small-$dtype.gguf --dtype $dtype >/dev/null
  requests 48 $prompt 12
  "$engine" run --model "$PWD/small-$dtype.gguf" --format gguf --precision $dtype --requests "$PWD/req.json" --out "$PWD/out.json"
  if [ $dtype = f32 ]; then
    [ "$(tokens out.json)" = "$want" ] || fail "llama.cpp generated $(tokens out.json), the reference $want"
  fi
  python3 - out.json <<'PY' || fail "the $dtype answer is malformed"
import json, math, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["id"] == 7 and len(r["tokens"]) == 12 and len(r["logprobs"]) == 8
for row in r["logprobs"]:
    assert len(row) == 48 and abs(sum(math.exp(v) for v in row if v is not None) - 1) < 1e-4
PY
done
# f16 weights: the reference computes with the same stored values, so the tokens agree too.
"$cutcheck" export-gguf --spec spec.json --seed 11 --out small-f16.gguf --dtype f16 >/dev/null
"$cutcheck" import-gguf small-f16.gguf --out small-f16 >/dev/null
want16=$("$cutcheck" generate --weights small-f16 --prompt $prompt --steps 12 | tail -1)
"$engine" run --model "$PWD/small-f16.gguf" --format gguf --precision f16 --requests "$PWD/req.json" --out "$PWD/out.json"
[ "$(tokens out.json)" = "$want16" ] || fail "llama.cpp (f16) generated $(tokens out.json), the reference $want16"

# The planted fault is visible: the prompt one position late gives other distributions.
"$engine" run --model "$PWD/small-f32.gguf" --format gguf --precision f32 --requests "$PWD/req.json" --out "$PWD/right.json"
"$engine" --fault late run --model "$PWD/small-f32.gguf" --format gguf --precision f32 --requests "$PWD/req.json" --out "$PWD/late.json"
python3 - right.json late.json <<'PY' || fail "--fault late left the log-probabilities as they were"
import json, sys
a, b = (json.load(open(f))["results"][0]["logprobs"] for f in sys.argv[1:])
sys.exit(0 if max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)) > 1e-2 else 1)
PY

# Errors: a request outside the vocabulary (2), a format it does not load (77).
requests 48 3,99 1
code=0; "$engine" run --model "$PWD/small-f32.gguf" --format gguf --precision f32 --requests "$PWD/req.json" --out "$PWD/x.json" 2>err.txt || code=$?
[ $code -eq 2 ] && grep -q "requests\[0\].prompt" err.txt || fail "a token outside the vocabulary: exit $code, $(cat err.txt)"
code=0; "$engine" run --model "$PWD/small-f32.gguf" --format hf --precision f32 --requests "$PWD/req.json" --out "$PWD/x.json" 2>err.txt || code=$?
[ $code -eq 77 ] || fail "--format hf: exit $code, $(cat err.txt)"
[ ! -e x.json ] || fail "a refused run wrote its answer"

# stories260K: llama.cpp reproduces llama2.c's 64 greedy tokens from BOS, in f32 and f16.
if [ -n "$shared" ] && [ -f "$shared/models/stories260K.bin" ]; then
  "$cutcheck" import-llama2c "$shared/models/stories260K.bin" --out stories >/dev/null
  fixture=$(python3 -c 'import json,sys; print(*json.load(open(sys.argv[1]))["tokens"])' "$shared/fixtures/stories260K-greedy.json")
  requests 512 1 64
  for dtype in f32 f16; do
    "$cutcheck" export-gguf --weights stories --out stories-$dtype.gguf --dtype $dtype >/dev/null
    "$engine" run --model "$PWD/stories-$dtype.gguf" --format gguf --precision $dtype --requests "$PWD/req.json" --out "$PWD/out.json"
    [ "$(tokens out.json)" = "$fixture" ] || fail "stories260K ($dtype) on llama.cpp: $(tokens out.json)"
  done
  # Quantized exports (llama-quantize's Q8_0 and Q4_0 recipes): llama.cpp loads them and
  # generates; from Q8_0 the fixture's 64 tokens. Q4_0 changes the model: its tokens are
  # compared with the reference's on the import of the same file (the dequantized weights),
  # and how long they agree is printed (llama.cpp also rounds activations to 8-bit blocks).
  for kind in q8_0 q4_0; do
    "$cutcheck" export-gguf --weights stories --out stories-$kind.gguf --dtype $kind >/dev/null
    "$engine" run --model "$PWD/stories-$kind.gguf" --format gguf --precision f32 --requests "$PWD/req.json" --out "$PWD/out.json"
    got=$(tokens out.json)
    [ "$(wc -w <<<"$got")" = 64 ] || fail "stories260K ($kind) on llama.cpp: $got"
    [ $kind != q8_0 ] || [ "$got" = "$fixture" ] || fail "stories260K (q8_0) on llama.cpp: $got"
    "$cutcheck" import-gguf stories-$kind.gguf --out stories-$kind >/dev/null
    reference=$("$cutcheck" generate --weights stories-$kind --prompt 1 --steps 64 | tail -1)
    python3 - "$kind" "$got" "$reference" "$fixture" <<'PY'
import sys
kind, got, reference, fixture = (sys.argv[1],) + tuple(a.split() for a in sys.argv[2:])
def agree(a, b):
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]: n += 1
    return n
print('stories260K %s: llama.cpp agrees with the reference on the import for %d of 64 tokens, with the f32 '
      'model for %d' % (kind, agree(got, reference), agree(got, fixture)))
PY
  done
elif [ -n "${CUTCHECK_REQUIRE_SHARED:-}" ]; then
  fail "CUTCHECK_REQUIRE_SHARED is set, but stories260K.bin is not there"
fi
echo "cli llamacpp: ok"
