#!/usr/bin/env bash
# --serve (the persistent protocol) against a process per run, on the same cases, one run
# each: conform campaigns (cases/s) through the reference (`cutcheck run`), the Python
# example (tests/backends/serve_example.py) and cutcheck-mlir, and generate (tokens/s)
# through the reference and cutcheck-mlir. The MLIR backend's compiled objects come from a
# warm-up campaign (a private cache), so that both modes measure running, not compiling.
# Each pair's reports must agree. On a shared machine read the ratios, not the rates.
#   usage: bash bench/serve.sh [BUILD_DIR] [CASES] [STEPS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build/release}")
cases=${2:-40}
steps=${3:-64}
export CUTCHECK=$build/cutcheck  # serve_example.py's engine
mlir=$build/cutcheck-mlir
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export CUTCHECK_MLIR_CACHE=$work/mlir-cache

seconds() {  # runs the command, prints its wall time
  local start end
  start=$(date +%s.%N)
  "$@" > out.txt 2> err.txt || { cat out.txt err.txt >&2; return 1; }
  end=$(date +%s.%N)
  python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$end"
}

# Decode steps of stories260K's shape with random weights, ctx up to 512.
campaign=(conform --spec stories260K --cuts decode --ctx-max 512 --cases "$cases" --seed 1 --no-shrink)
compare_campaigns() {  # LABEL BACKEND
  local each serve
  each=$(seconds "$CUTCHECK" "${campaign[@]}" --backend "$2" --json each.json)
  serve=$(seconds "$CUTCHECK" "${campaign[@]}" --backend "$2" --serve --json serve.json)
  python3 -c "import json, sys; v = lambda f: [(c['verdict'], c['failure_type']) for c in json.load(open(f))['cases']]; \
sys.exit(v('each.json') != v('serve.json'))" || echo "$1: the verdicts DIFFER"
  python3 -c "import sys; c, e, s = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]); \
print(f'{sys.argv[1]:<22} conform, {c} cases: process per run {c / e:7.1f} cases/s, --serve {c / s:7.1f} cases/s, x{e / s:.1f}')" \
    "$1" "$cases" "$each" "$serve"
}

"$CUTCHECK" "${campaign[@]}" --backend "$mlir run" > /dev/null 2>&1  # the warm-up: compiles into the cache
compare_campaigns "cutcheck run" "$CUTCHECK run"
compare_campaigns "serve_example.py" "python3 $root/tests/backends/serve_example.py"
compare_campaigns "cutcheck-mlir run" "$mlir run"

shared=$root/../shared/models/stories260K.bin
if [ -f "$shared" ]; then
  "$CUTCHECK" import-llama2c "$shared" --out stories > /dev/null
  compare_generations() {  # LABEL BACKEND
    local each serve
    each=$(seconds "$CUTCHECK" generate --weights stories --prompt 1 --steps "$steps" --via decode --backend "$2")
    cp out.txt each.txt
    serve=$(seconds "$CUTCHECK" generate --weights stories --prompt 1 --steps "$steps" --via decode --backend "$2" --serve)
    cmp -s each.txt out.txt || echo "$1: the tokens DIFFER"
    python3 -c "import sys; n, e, s = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]); \
print(f'{sys.argv[1]:<22} generate, {n} tokens: process per step {n / e:7.1f} tokens/s, --serve {n / s:7.1f} tokens/s, x{e / s:.1f}')" \
      "$1" "$steps" "$each" "$serve"
  }
  compare_generations "cutcheck run" "$CUTCHECK run"
  "$CUTCHECK" generate --weights stories --prompt 1 --steps "$steps" --via decode --backend "$mlir run" > /dev/null  # compiles
  compare_generations "cutcheck-mlir run" "$mlir run"
fi
