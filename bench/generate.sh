#!/usr/bin/env bash
# `cutcheck generate` of 256 stories260K tokens against the same generation by the plain C
# loops (bench/plain_generate.cpp), each as a whole process, alternating, 11 runs each;
# prints one JSON line with the medians and whether the tokens agree.
#   usage: bash bench/generate.sh BUILD_DIR CHECKPOINT
set -euo pipefail
build=$1 checkpoint=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/cutcheck" import-llama2c "$checkpoint" --out "$work/w" >/dev/null
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >"$work/out"; t1=$(date +%s.%N); python3 -c "print(round($t1 - $t0, 4))"; }
ref=() plain=()
for _ in $(seq 1 11); do
  ref+=("$(seconds "$build/cutcheck" generate --weights "$work/w" --steps 256)"); cp "$work/out" "$work/ref.txt"
  plain+=("$(seconds "$build/bench/cutcheck_plain_generate" "$checkpoint" 256)"); cp "$work/out" "$work/plain.txt"
done
median() { printf '%s\n' "$@" | sort -g | sed -n 6p; }
same=$(cmp -s "$work/ref.txt" "$work/plain.txt" && echo true || echo false)
echo "{\"reference_s\": $(median "${ref[@]}"), \"plain_s\": $(median "${plain[@]}"), \"same_tokens\": $same}"
