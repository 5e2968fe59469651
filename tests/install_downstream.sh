#!/usr/bin/env bash
# The package as a team would use it: install the build to a temporary prefix, then build
# and test examples/downstream against that prefix alone (a copy of the example outside
# the clone; nothing of the installed package may name the clone or its build folder).
# Also links a program through pkg-config, runs the installed commands' --version and an
# export-onnx (the exporter is a program of its own beside cutcheck).
#   install_downstream.sh BUILD_DIR SOURCE_DIR [COMPILER_LAUNCHER]
set -euo pipefail
build=$(cd "$1" && pwd) source=$(cd "$2" && pwd) launcher=${3:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cutcheck-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in cmake/cutcheck/cutcheckConfig.cmake cmake/cutcheck/cutcheckConfigVersion.cmake pkgconfig/cutcheck.pc; do
  [ -f "$(echo "$prefix"/lib*/"$f")" ] || { echo "not installed: $f" >&2; exit 1; }
done
[ -f "$prefix/include/cutcheck/conform/backend.h" ] || { echo "headers not under include/cutcheck/" >&2; exit 1; }
for generic in core model conform; do
  [ ! -e "$prefix/include/$generic" ] || { echo "include/$generic installed: headers belong under include/cutcheck/" >&2; exit 1; }
done
if leaks=$(grep -rIl -e "$source" -e "$build" "$prefix"); then
  echo "installed files that name the source or build tree:" >&2
  echo "$leaks" >&2
  exit 1
fi
"$prefix/bin/cutcheck" --version
"$prefix/bin/cutcheck-mlir" --version
# export-onnx runs the exporter installed beside cutcheck.
"$prefix/bin/cutcheck" weights --spec tiny --dir "$tmp/weights" >/dev/null
"$prefix/bin/cutcheck" author --spec tiny --cut 'decode{ctx=8}' --dir "$tmp/weights" --out "$tmp/program" >/dev/null
"$prefix/bin/cutcheck" export-onnx "$tmp/program" --out "$tmp/program/model.onnx"

# The example, copied out of the clone, configured with the prefix as the only way to cutcheck.
cp -r "$source/examples/downstream" "$tmp/src"
cmake -S "$tmp/src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher} >/dev/null
found=$(sed -n 's/^cutcheck_DIR:PATH=//p' "$tmp/build/CMakeCache.txt")
case "$found" in
  "$prefix"/*) echo "found the package in $found" ;;
  *) echo "cutcheck was found in '$found', not in the prefix" >&2; exit 1 ;;
esac
cmake --build "$tmp/build" -j 2 >/dev/null
ctest --test-dir "$tmp/build" --output-on-failure

# pkg-config: the conformance libraries from a plain compiler line.
cat >"$tmp/version.cpp" <<'CPP'
#include <conform/backend.h>
#include <core/version.h>
#include <cstdio>
int main() {
  cutcheck::ReferenceBackend reference;
  std::printf("%s, backend %s\n", cutcheck::version_line().c_str(), reference.name().c_str());
}
CPP
export PKG_CONFIG_PATH=$(echo "$prefix"/lib*/pkgconfig)
# shellcheck disable=SC2046  # pkg-config's words are meant to split
${launcher} c++ -O1 "$tmp/version.cpp" -o "$tmp/version" $(pkg-config --cflags --libs cutcheck)
"$tmp/version"
