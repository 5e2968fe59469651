#!/usr/bin/env bash
# A bf16 model's peak memory follows its file size: seeded bf16 weights streamed to disk,
# a Decode authored and run by `cutcheck run`; the peak resident set (getrusage, through
# /usr/bin/time) stays below 1.5 times the weights file, where widening the model to f32
# as a whole would take at least twice it. Also: the program declares the weights in bf16.
#   usage: cli_bf16_memory.sh CUTCHECK
set -euo pipefail
cutcheck=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# 128 MiB of bf16 weights, almost all in the layers (a small vocab keeps the head small).
cat >spec.json <<'JSON'
{"name": "bf16-mem", "vocab": 512, "dim": 1024, "layers": 4, "heads": 8, "kv_heads": 4, "head_dim": 128,
 "ffn": 4096, "norm_eps": 1e-05, "rope_theta": 500000.0, "rope_style": "half", "tied": true, "dtype": "bf16"}
JSON
"$cutcheck" weights --spec spec.json --dir w >/dev/null
"$cutcheck" author --spec spec.json --cut 'decode{ctx=64}' --dir w --out p >/dev/null
grep -q '^weight %layers.0.attention.wq : bf16\[1024,1024\]$' p/program.txt
"$cutcheck" inputs p --out in.safetensors >/dev/null
/usr/bin/time -f '%M' -o rss.txt "$cutcheck" run p --inputs in.safetensors --outputs out.safetensors
file_bytes=$(stat -c %s w/model.safetensors)
peak_bytes=$(( $(tail -1 rss.txt) * 1024 ))
echo "weights file $file_bytes bytes, peak resident $peak_bytes bytes"
python3 - "$file_bytes" "$peak_bytes" <<'PY'
import sys
file_bytes, peak = int(sys.argv[1]), int(sys.argv[2])
ratio = peak / file_bytes
print(f"peak / file = {ratio:.3f}")
assert ratio > 0.9, "the run did not touch the weights?"
assert ratio < 1.5, f"peak {peak} is {ratio:.2f}x the bf16 file: weights widened as a whole?"
PY
