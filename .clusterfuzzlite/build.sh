#!/bin/bash -eu
# Builds the fuzz targets as OSS-Fuzz and ClusterFuzzLite expect: everything compiled by
# $CC / $CXX with $CFLAGS / $CXXFLAGS (their sanitizer and coverage flags), each target linked
# with $LIB_FUZZING_ENGINE, and in $OUT each fuzz_X beside its seed corpus
# fuzz_X_seed_corpus.zip and its dictionary fuzz_X.dict. Run in their image (Dockerfile), or
# by hand with those variables set (.clusterfuzzlite/test_build.sh).

# The libraries come from the distribution, built against libstdc++: libc++, which OSS-Fuzz
# adds for MemorySanitizer's sake, cannot link with them (so MSan is not offered).
CXXFLAGS="${CXXFLAGS//-stdlib=libc++/}"

src=$SRC/cutcheck
build=$WORK/cutcheck-build
# Build type None: no optimisation or NDEBUG of CMake's own; the flags are the fuzzer's.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS" \
  -DCUTCHECK_TESTS=OFF -DCUTCHECK_FUZZ_ENGINE="$LIB_FUZZING_ENGINE"

targets=()
for file in "$src"/fuzz/fuzz_*.cpp; do
  name=$(basename "$file" .cpp)
  targets+=("$name")
done
cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}"

for name in "${targets[@]}"; do
  short=${name#fuzz_}
  cp "$build/fuzz/$name" "$OUT/"
  if [ -d "$src/fuzz/corpus/$short" ]; then
    rm -f "$OUT/${name}_seed_corpus.zip"
    (cd "$src/fuzz/corpus/$short" && zip -q -r "$OUT/${name}_seed_corpus.zip" .)
  fi
  if [ -f "$src/fuzz/dict/$short.dict" ]; then
    cp "$src/fuzz/dict/$short.dict" "$OUT/$name.dict"
  fi
done
