# Sourced by the command-line tests that start backends: `source backend_sandbox.sh CUTCHECK NAME`.
# Makes a work folder and goes there, with a private TMPDIR (./tmp) that must be empty
# after every campaign; sets $cutcheck to a link of this test's own to CUTCHECK, and
# CUTCHECK_TEST_MARKER, so that the processes of this test (and backends that carry the
# marker or run `$cutcheck`) are told apart from those of tests running beside it; kills
# what carries the marker and removes the folder on exit. Defines `fail MESSAGE` (counted
# in $failures) and `nothing_left LABEL [PATTERN]`.
work=$(mktemp -d)
mkdir "$work/bin" && ln -s "$1" "$work/bin/cutcheck"
cutcheck=$work/bin/cutcheck
export CUTCHECK_TEST_MARKER="cutcheck-$2-$$-$RANDOM"
cleanup() {
  pkill -KILL -f "$CUTCHECK_TEST_MARKER" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
mkdir tmp
export TMPDIR=$work/tmp
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Fails when a process carrying the marker, $cutcheck or PATTERN is still running, when
# ./tmp holds anything, or when an OUT.tmp.* file is left; then clears them.
nothing_left() {
  sleep 0.2
  local left
  left=$(pgrep -af "$CUTCHECK_TEST_MARKER|$cutcheck${2:+|$2}" | grep -v pgrep)
  [ -z "$left" ] || fail "$1: processes left: $left"
  pkill -KILL -f "$CUTCHECK_TEST_MARKER" 2>/dev/null
  [ -z "$(ls -A tmp)" ] || fail "$1: left in TMPDIR: $(ls -A tmp)"
  rm -rf tmp/* tmp/.[!.]* 2>/dev/null
  [ -z "$(find . -name '*.tmp.*')" ] || fail "$1: temporary files left: $(find . -name '*.tmp.*')"
}
