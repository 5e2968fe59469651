#!/usr/bin/env bash
# export-gguf and export-hf from the command line: an export imports back as the same
# model (spec and weights), and bad input exits 2 with a clear message and writes nothing.
#   usage: cli_export.sh CUTCHECK
set -euo pipefail
cutcheck=$1
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*"; exit 1; }
# expect_error CODE TEXT CMD...: the command exits CODE and says TEXT on stderr.
expect_error() {
  local code=$1 text=$2
  shift 2
  local got=0
  "$@" >out.txt 2>err.txt || got=$?
  [ "$got" -eq "$code" ] || fail "$* exited $got, not $code: $(cat err.txt)"
  grep -qF -- "$text" err.txt || fail "$* did not say '$text': $(cat err.txt)"
}

# Round trips: the imported weights equal the exported model's (bf16 rounds on the way).
"$cutcheck" weights --spec tiny --dir tiny --seed 5 >/dev/null
"$cutcheck" export-gguf --weights tiny --out tiny.gguf | grep -q "wrote tiny.gguf (tiny, f32)"
"$cutcheck" import-gguf tiny.gguf --out back-gguf >/dev/null
python3 - tiny back-gguf <<'PY' || fail "the GGUF round trip changed the weights"
import json, struct, sys
def tensors(d):
    raw = open(d + '/model.safetensors', 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    h = json.loads(raw[8:8 + n])
    return {k: raw[8 + n + v['data_offsets'][0]: 8 + n + v['data_offsets'][1]] for k, v in h.items() if k != '__metadata__'}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
sys.exit(0 if a == b else 1)
PY
"$cutcheck" export-hf --weights tiny --out hf --dtype bf16 >/dev/null
[ -f hf/config.json ] && [ -f hf/model.safetensors ] || fail "export-hf wrote $(ls hf)"
"$cutcheck" import-hf hf --out back-hf >/dev/null
grep -q '"dtype": "bf16"' back-hf/spec.json || fail "the bf16 export did not import as bf16"
grep -q '"rope_style": "half"' back-hf/spec.json || fail "the Hugging Face folder is not in the half order"

# Bad input: exit 2, a message naming what is wrong, nothing written.
expect_error 2 "--dtype 'f64': choose f32, f16, bf16, q8_0, q4_0 or q4_k_m" "$cutcheck" export-gguf --weights tiny --out x.gguf --dtype f64
cat >qwen.json <<'EOF'
{"name": "q", "vocab": 16, "dim": 8, "layers": 1, "heads": 2, "kv_heads": 1, "head_dim": 4, "ffn": 8,
 "norm_eps": 1e-6, "rope_theta": 10000, "rope_style": "half", "tied": true, "qk_norm": true}
EOF
expect_error 2 "cannot express spec 'q': qk_norm" "$cutcheck" export-gguf --spec qwen.json --seed 1 --out x.gguf
[ ! -e x.gguf ] || fail "a refused export left x.gguf"
expect_error 2 "give --weights (a weights folder) or --seed" "$cutcheck" export-gguf --spec tiny --out x.gguf
mkdir locked && chmod a-w locked
if [ "$(id -u)" -ne 0 ]; then
  expect_error 2 "locked/x.gguf" "$cutcheck" export-gguf --weights tiny --out locked/x.gguf
  [ -z "$(ls -A locked)" ] || fail "a failed export left $(ls -A locked)"
fi
touch file
expect_error 2 "/file' is not a folder" "$cutcheck" export-gguf --weights tiny --out file/x.gguf
mkdir folder
expect_error 2 "'folder': exists and is not a regular file" "$cutcheck" export-gguf --weights tiny --out folder
mkdir mine && echo keep >mine/notes.txt
expect_error 2 "holds 'notes.txt', which export-hf does not write" "$cutcheck" export-hf --weights tiny --out mine
[ "$(cat mine/notes.txt)" = keep ] && [ "$(ls mine)" = notes.txt ] || fail "a refused export-hf touched mine/"
echo "cli export: ok"
