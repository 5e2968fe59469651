#!/usr/bin/env bash
# Builds the benchmarks, runs them once, and prints the tables of docs/performance.md. Seeded
# weights for the larger models are written once to $CUTCHECK_BENCH_DATA (default
# build/bench-data; llama1b takes 4.2 GB, llama1b-bf16 2.1 GB).
#   usage: bash bench/run.sh [google-benchmark flags, e.g. --benchmark_filter=stories]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export CUTCHECK_BENCH_DATA=${CUTCHECK_BENCH_DATA:-$root/build/bench-data}
cmake --preset release -DCUTCHECK_BENCH=ON >/dev/null
cmake --build --preset release --target cutcheck cutcheck_bench cutcheck_peak_memory cutcheck_plain_generate >/dev/null
bin=$root/build/release/bench
for model in bench512 llama1b llama1b-bf16; do "$bin/cutcheck_peak_memory" --prepare "$model"; done
out=$(mktemp -d)
# Three repetitions of each, the table takes their medians: one run on this machine (a
# virtual one) moves by up to 10%.
"$bin/cutcheck_bench" --benchmark_format=json --benchmark_out="$out/bench.json" --benchmark_out_format=json \
  --benchmark_repetitions=3 "$@" >/dev/null
for model in stories260K bench512 llama1b llama1b-bf16; do "$bin/cutcheck_peak_memory" "$model" 256 4 >>"$out/peak.jsonl"; done
checkpoint=$root/../shared/models/stories260K.bin
[ -f "$checkpoint" ] && bash "$root/bench/generate.sh" "$root/build/release" "$checkpoint" >"$out/generate.json"
python3 "$root/bench/table.py" "$out/bench.json" "$out/peak.jsonl" $([ -s "$out/generate.json" ] && echo "$out/generate.json")
