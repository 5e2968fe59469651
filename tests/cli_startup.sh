#!/usr/bin/env bash
# What every cutcheck process pays at start: cutcheck loads neither ONNX nor protobuf (only
# cutcheck-export-onnx, beside it, does); `cutcheck export-onnx` finds that program through
# /proc/self/exe (a symlinked cutcheck too) and names it when it is missing; every command
# --help lists works when it is the only one cutcheck defines (tools/main.cpp).
#   usage: cli_startup.sh CUTCHECK
set -euo pipefail
cutcheck=$1
exporter=$(dirname "$cutcheck")/cutcheck-export-onnx
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*"; exit 1; }
heavy='libonnx|libprotobuf'

# The libraries the loader maps, dependencies of dependencies included. The exporter's list
# shows the pattern matches what it should.
ldd "$cutcheck" >cutcheck.ldd
! grep -E "$heavy" cutcheck.ldd || fail "cutcheck loads ONNX or protobuf at start: $(grep -E "$heavy" cutcheck.ldd)"
ldd "$exporter" >exporter.ldd
grep -qE 'libonnx' exporter.ldd || fail "the check sees no libonnx in $exporter either: the pattern is stale"

# Through cutcheck, from the build tree and through a symlink elsewhere: a program exports,
# the exporter's own help and exit codes come back unchanged.
"$cutcheck" weights --spec tiny --dir weights >/dev/null
"$cutcheck" author --spec tiny --cut 'decode{ctx=8}' --dir weights --out prog >/dev/null
"$cutcheck" export-onnx prog --out model.onnx >out.txt
grep -q "wrote model.onnx" out.txt || fail "export-onnx said: $(cat out.txt)"
[ -s model.onnx ] && [ -s model.plan.json ] || fail "export-onnx left $(ls)"
ln -s "$cutcheck" linked-cutcheck
./linked-cutcheck export-onnx prog --out linked.onnx >/dev/null || fail "a symlinked cutcheck did not find the exporter"
"$cutcheck" export-onnx --help >help.txt
grep -q "Usage: cutcheck export-onnx" help.txt || fail "export-onnx --help is not the exporter's: $(head -3 help.txt)"
code=0
"$cutcheck" export-onnx prog --out x.onnx --precision f16 2>err.txt || code=$?
[ "$code" -eq 2 ] && grep -q "choose spec" err.txt || fail "a bad --precision exited $code: $(cat err.txt)"

# A cutcheck without the exporter beside it: exit 2, naming the missing file.
mkdir alone
cp "$cutcheck" alone/cutcheck
code=0
alone/cutcheck export-onnx prog --out y.onnx 2>err.txt || code=$?
[ "$code" -eq 2 ] || fail "export-onnx without the exporter exited $code: $(cat err.txt)"
grep -qF "$work/alone/cutcheck-export-onnx is missing" err.txt || fail "the error does not name the missing file: $(cat err.txt)"
[ ! -e y.onnx ] || fail "export-onnx without the exporter wrote y.onnx"

# Each command of the list, defined alone, parses its own --help.
commands=$("$cutcheck" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF { print $1 }')
[ "$(echo "$commands" | wc -l)" -ge 20 ] || fail "--help lists only: $commands"
for c in $commands; do
  "$cutcheck" "$c" --help >help.txt 2>&1 || fail "$c --help: $(cat help.txt)"
  grep -q "Usage: .*$c" help.txt || fail "$c --help printed: $(head -3 help.txt)"
done
echo "ok: $(echo "$commands" | wc -l) commands; cutcheck maps $(wc -l <cutcheck.ldd) libraries"
