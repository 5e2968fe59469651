#!/usr/bin/env bash
# Runs build.sh outside Docker, with the variables OSS-Fuzz sets for a libFuzzer + ASan
# build (clang, its flags as in OSS-Fuzz's base images), then checks $OUT and runs each
# target briefly on its seed corpus. A full instrumented build of the libraries: minutes,
# so it is run by hand, not by the test suite.
#   bash .clusterfuzzlite/test_build.sh [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/cutcheck-cflite-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export SRC=$scratch/src WORK=$scratch/work OUT=${1:-$scratch/out}
mkdir -p "$SRC" "$WORK" "$OUT"
ln -s "$root" "$SRC/cutcheck"

export CC=clang CXX=clang++
export SANITIZER=address FUZZING_ENGINE=libfuzzer FUZZING_LANGUAGE=c++ ARCHITECTURE=x86_64
export LIB_FUZZING_ENGINE=-fsanitize=fuzzer
export CFLAGS="-O1 -fno-omit-frame-pointer -gline-tables-only -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION \
-fsanitize=address -fsanitize-address-use-after-scope -fsanitize=fuzzer-no-link"
export CXXFLAGS="$CFLAGS -stdlib=libc++"
bash "$root/.clusterfuzzlite/build.sh"

status=0
for target in "$OUT"/fuzz_*; do
  [ -x "$target" ] && [ -f "$target" ] || continue
  name=$(basename "$target")
  corpus=$WORK/corpus-$name
  mkdir -p "$corpus"
  [ -f "$OUT/${name}_seed_corpus.zip" ] && (cd "$corpus" && unzip -q -o "$OUT/${name}_seed_corpus.zip")
  dict=()
  [ -f "$OUT/$name.dict" ] && dict=(-dict="$OUT/$name.dict")
  if "$target" -runs=200 -seed=1 "${dict[@]}" "$corpus" > "$WORK/$name.log" 2>&1; then
    echo "$name: built, seed corpus $(ls "$corpus" | wc -l) files, dictionary ${dict[*]:-none}, 200 runs: ok"
  else
    echo "$name: FAILED, see:"; tail -20 "$WORK/$name.log"; status=1
  fi
done
exit $status
