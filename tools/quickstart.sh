#!/usr/bin/env bash
# Installs cutcheck's dependencies, builds it, and runs its main job on the built-in
# tiny spec with seeded weights: author a cut, run it, generate through every cut path.
# Given a llama2.c checkpoint (or with ../shared/models/stories260K.bin beside the
# clone), it also imports the real model and generates from it.
#   usage: bash tools/quickstart.sh [MODEL.bin]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash .ci/install
cmake --preset release >/dev/null
cmake --build --preset release >/dev/null
cutcheck=$root/build/release/cutcheck
work=$root/out/quickstart
rm -rf "$work" && mkdir -p "$work" && cd "$work"

step() { printf '\n$ %s\n' "$*"; "$@"; }
step "$cutcheck" weights --spec tiny --seed 1 --dir tiny-weights
step "$cutcheck" author --spec tiny --cut 'decode{ctx=16}' --dir tiny-weights --out decode
step "$cutcheck" inputs decode --seed 2 --out inputs.safetensors
step "$cutcheck" run decode --inputs inputs.safetensors --outputs outputs.safetensors
for via in auto decode prefill batch pieces; do
  step "$cutcheck" generate --weights tiny-weights --prompt 1,2,3 --steps 12 --via "$via"
done

step "$cutcheck" check --cases 100
step "$cutcheck" conform --backend "$cutcheck run" --cases 50 --tp 1 --tp 2
step "$cutcheck" conform --backend "$root/build/release/cutcheck-mlir run" --spec tiny --cases 10

model=${1:-$root/../shared/models/stories260K.bin}
if [ -f "$model" ]; then
  step "$cutcheck" import-llama2c "$model" --out real
  step "$cutcheck" generate --spec real/spec.json --weights real --prompt 1 --steps 64
  step "$cutcheck" generate --weights real --prompt 1 --steps 64 --tp 4
fi
printf '\nquickstart: done (files in %s)\n' "$work"
