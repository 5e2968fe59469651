#!/usr/bin/env bash
# The package as a team would use it: install the build to a temporary prefix, then build
# and test examples/downstream against that prefix alone (a copy of the example outside
# the clone; nothing of the installed package may name the clone or its build folder), the
# example's CMakeLists.txt being the snippet in docs/ci.md. Also links a campaign through
# pkg-config alone, checks that the installed headers are the public ones (each compiles
# alone, and each is reached from what the example and that campaign include), runs the
# installed commands' --version and an export-onnx (the exporter is a program of its own
# beside cutcheck), and the installed cutcheck-ort and cutcheck-llamacpp: without their node
# packages they say how to fetch them (the command in docs/ci.md, whose folders are
# checked); with them (the clone's tools/*/node_modules, where present) a campaign passes
# through each.
#   install_downstream.sh BUILD_DIR SOURCE_DIR [COMPILER_LAUNCHER]
set -euo pipefail
build=$(cd "$1" && pwd) source=$(cd "$2" && pwd) launcher=${3:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cutcheck-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tmp=$(cd "$tmp" && pwd -P)  # as the launchers, which resolve their own location, name it
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in cmake/cutcheck/cutcheckConfig.cmake cmake/cutcheck/cutcheckConfigVersion.cmake pkgconfig/cutcheck.pc; do
  [ -f "$(echo "$prefix"/lib*/"$f")" ] || { echo "not installed: $f" >&2; exit 1; }
done
[ -f "$prefix/include/cutcheck/backend/backend.h" ] || { echo "headers not under include/cutcheck/" >&2; exit 1; }
for tool in ort llamacpp; do
  [ -x "$prefix/bin/cutcheck-$tool" ] || { echo "not installed: bin/cutcheck-$tool" >&2; exit 1; }
  for f in run.mjs package.json package-lock.json; do
    [ -f "$prefix/share/cutcheck/$tool/$f" ] || { echo "not installed: share/cutcheck/$tool/$f" >&2; exit 1; }
  done
done
for generic in core model backend campaign report; do
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

# The node programs, before their packages are fetched: exit 2, naming the command to run
# (with node) or node itself.
"$prefix/bin/cutcheck" inputs "$tmp/program" --out "$tmp/inputs.safetensors" >/dev/null
export CUTCHECK_ORT_CACHE=$tmp/ort-cache
code=0
"$prefix/bin/cutcheck-ort" run "$tmp/program" --inputs "$tmp/inputs.safetensors" --outputs "$tmp/ort.safetensors" \
  2>"$tmp/err.txt" || code=$?
[ $code = 2 ] || { echo "cutcheck-ort without onnxruntime-node exited $code: $(cat "$tmp/err.txt")" >&2; exit 1; }
if command -v node >/dev/null 2>&1; then
  grep -qF -- "--prefix $prefix/share/cutcheck/ort" "$tmp/err.txt" ||
    { echo "cutcheck-ort does not say where to fetch its packages: $(cat "$tmp/err.txt")" >&2; exit 1; }
fi
code=0
"$prefix/bin/cutcheck-llamacpp" describe 2>"$tmp/err.txt" || code=$?
[ $code = 2 ] || { echo "cutcheck-llamacpp without node-llama-cpp exited $code: $(cat "$tmp/err.txt")" >&2; exit 1; }
if command -v node >/dev/null 2>&1; then
  grep -qF -- "--prefix $prefix/share/cutcheck/llamacpp" "$tmp/err.txt" ||
    { echo "cutcheck-llamacpp does not say where to fetch its packages: $(cat "$tmp/err.txt")" >&2; exit 1; }
fi
# The install command of docs/ci.md, with npm standing in: it fetches, with
# --ignore-scripts, into the folders that hold the installed lock files.
guide=$source/docs/ci.md
fetch=$(grep -m1 'npm ci .*--prefix /opt/cutcheck/' "$guide") ||
  { echo "docs/ci.md has no npm ci command for the installed prefix" >&2; exit 1; }
npm() {
  local dir=""
  [ "$1" = ci ] && [[ " $* " == *" --ignore-scripts "* ]] || { echo "docs/ci.md: not npm ci --ignore-scripts: npm $*" >&2; exit 1; }
  while [ $# -gt 0 ]; do [ "$1" = --prefix ] && dir=$2; shift; done
  [ -f "$dir/package-lock.json" ] || { echo "docs/ci.md: npm ci --prefix '$dir', which holds no package-lock.json" >&2; exit 1; }
  echo "$dir" >> "$tmp/fetched.txt"
}
eval "${fetch//\/opt\/cutcheck/$prefix}"
[ "$(sort "$tmp/fetched.txt")" = "$(printf '%s\n' "$prefix/share/cutcheck/llamacpp" "$prefix/share/cutcheck/ort")" ] ||
  { echo "the command in docs/ci.md fetched into: $(cat "$tmp/fetched.txt")" >&2; exit 1; }
unset -f npm
# With their packages (the clone's, where fetched there), each passes a campaign as installed.
if command -v node >/dev/null 2>&1 && [ -d "$source/tools/ort/node_modules/onnxruntime-node" ]; then
  ln -s "$source/tools/ort/node_modules" "$prefix/share/cutcheck/ort/node_modules"
  "$prefix/bin/cutcheck" conform --backend "$prefix/bin/cutcheck-ort run" --cuts decode --cases 2 --keep "$tmp/keep" \
    --timeout 3600 >"$tmp/out.txt" 2>&1 || { echo "the installed cutcheck-ort: $(cat "$tmp/out.txt")" >&2; exit 1; }
  echo "the installed cutcheck-ort passes"
elif [ -n "${CUTCHECK_REQUIRE_ORT:-}" ]; then
  echo "CUTCHECK_REQUIRE_ORT is set, but node or tools/ort/node_modules is missing" >&2; exit 1
fi
if command -v node >/dev/null 2>&1 && [ -d "$source/tools/llamacpp/node_modules/node-llama-cpp" ]; then
  ln -s "$source/tools/llamacpp/node_modules" "$prefix/share/cutcheck/llamacpp/node_modules"
  "$prefix/bin/cutcheck" conform-engine --engine "$prefix/bin/cutcheck-llamacpp" --cases 1 --timeout 3600 \
    --keep "$tmp/keep" >"$tmp/out.txt" 2>&1 || { echo "the installed cutcheck-llamacpp: $(cat "$tmp/out.txt")" >&2; exit 1; }
  echo "the installed cutcheck-llamacpp passes"
elif [ -n "${CUTCHECK_REQUIRE_LLAMACPP:-}" ]; then
  echo "CUTCHECK_REQUIRE_LLAMACPP is set, but node or tools/llamacpp/node_modules is missing" >&2; exit 1
fi

# The CMake snippet of docs/ci.md is the example's CMakeLists.txt, less its opening comments.
python3 - "$guide" "$source/examples/downstream/CMakeLists.txt" <<'EOF' ||
import re, sys
guide, example = open(sys.argv[1]).read(), open(sys.argv[2]).read()
snippets = re.findall(r"```cmake\n(.*?)```", guide, re.S)
assert len(snippets) == 1, f"docs/ci.md has {len(snippets)} CMake snippets"
body = re.sub(r"\A(#.*\n)+", "", example)
assert snippets[0] == body, "the snippet of docs/ci.md and examples/downstream/CMakeLists.txt differ"
EOF
  { echo "the CMake snippet of docs/ci.md is not examples/downstream/CMakeLists.txt" >&2; exit 1; }

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
# Tests found (a project without enable_testing() has none, and plain ctest passes it), and passing.
ctest --test-dir "$tmp/build" --output-on-failure --no-tests=error

# pkg-config alone: a campaign of the reference as a backend, compiled and linked from a
# plain compiler line, which must pass.
cat >"$tmp/campaign.cpp" <<'CPP'
#include <backend/backend.h>
#include <campaign/campaign.h>
#include <core/version.h>
#include <report/report.h>
#include <cstdio>
int main(int, char** argv) {
  cutcheck::ReferenceBackend reference;
  cutcheck::ConformOptions o;
  o.cases = 4;
  o.tp = {1, 2};
  o.shapes = cutcheck::ShapeSpace::small();
  o.keep = argv[1];
  const cutcheck::ConformReport report = cutcheck::conform(reference, o);
  std::printf("%s\n%s", cutcheck::version_line().c_str(), cutcheck::summary_table(report).c_str());
  return report.passed() && report.count(cutcheck::Verdict::passed) == o.cases ? 0 : 1;
}
CPP
export PKG_CONFIG_PATH=$(echo "$prefix"/lib*/pkgconfig)
# shellcheck disable=SC2046  # pkg-config's words are meant to split
${launcher} c++ -O1 "$tmp/campaign.cpp" -o "$tmp/campaign" $(pkg-config --cflags --libs cutcheck)
"$tmp/campaign" "$tmp/keep-pkg-config"

# The installed headers are the public ones: each compiles alone (none needs a header left
# out), and each is reached, as the compiler follows includes, from the headers the example
# and the campaign above include (no header is installed that a downstream backend does not
# need, such as the kernels' SIMD internals).
find "$prefix/include/cutcheck" -name '*.h' -printf '%P\n' | sort >"$tmp/installed.txt"
mkdir "$tmp/alone"
while read -r header; do echo "#include <$header>" >"$tmp/alone/${header//\//.}.cpp"; done <"$tmp/installed.txt"
# shellcheck disable=SC2046
c++ -std=c++20 -fsyntax-only "$tmp"/alone/*.cpp $(pkg-config --cflags cutcheck) ||
  { echo "an installed header does not compile alone from the prefix" >&2; exit 1; }
grep -h '^#include <[a-z_]*/[a-z_0-9]*\.h>' "$source"/examples/downstream/*.cpp "$source"/examples/downstream/*.h \
  "$tmp/campaign.cpp" | sort -u >"$tmp/public.cpp"
# shellcheck disable=SC2046
c++ -std=c++20 -MM -x c++ "$tmp/public.cpp" $(pkg-config --cflags cutcheck) | tr ' \\' '\n\n' | grep '\.h$' |
  xargs realpath -m | sed -n "s|^$prefix/include/cutcheck/||p" | sort -u >"$tmp/reached.txt"
if unreached=$(comm -23 "$tmp/installed.txt" "$tmp/reached.txt") && [ -n "$unreached" ]; then
  echo "installed headers that no public header includes:" >&2
  echo "$unreached" >&2
  exit 1
fi
echo "$(wc -l <"$tmp/installed.txt") public headers installed"
