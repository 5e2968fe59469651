# Sourced by the command-line tests that start backends: `source backend_sandbox.sh CUTCHECK NAME`.
# Makes a work folder and goes there, with a private TMPDIR (./tmp) that must be empty
# after every campaign; sets $cutcheck to a link of this test's own to CUTCHECK, and
# CUTCHECK_TEST_MARKER, so that the processes of this test (and backends that carry the
# marker or run `$cutcheck`) are told apart from those of tests running beside it; kills
# what carries the marker and removes the folder on exit. Defines `fail MESSAGE` (counted
# in $failures), `wait_until SECONDS COMMAND...` and `nothing_left LABEL [PATTERN]`.
# Nothing here waits a fixed time: a loaded machine makes every step slower, so each wait
# is for a state, with a limit that only a broken run reaches.
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

# Polls COMMAND until it succeeds (returns 0) or SECONDS have passed (returns 1).
wait_until() {
  local limit=$1 start=$SECONDS
  shift
  until "$@"; do
    [ $((SECONDS - start)) -lt "$limit" ] || return 1
    sleep 0.1
  done
}

# The processes carrying the marker, $cutcheck or PATTERN ($1), one a line.
running() { pgrep -af "$CUTCHECK_TEST_MARKER|$cutcheck${1:+|$1}" | grep -v pgrep; }
none_running() { [ -z "$(running "${1:-}")" ]; }

# Fails when a process carrying the marker, $cutcheck or PATTERN is still running, when
# ./tmp holds anything, or when an OUT.tmp.* file is left; then clears them. Processes
# killed a moment ago may take a while to go on a loaded machine: up to 60 s is allowed,
# far less than the backends' own sleeps (300 s and more) that a leak would leave.
nothing_left() {
  wait_until 60 none_running "${2:-}" || fail "$1: processes left: $(running "${2:-}")"
  pkill -KILL -f "$CUTCHECK_TEST_MARKER" 2>/dev/null
  [ -z "$(ls -A tmp)" ] || fail "$1: left in TMPDIR: $(ls -A tmp)"
  rm -rf tmp/* tmp/.[!.]* 2>/dev/null
  [ -z "$(find . -name '*.tmp.*')" ] || fail "$1: temporary files left: $(find . -name '*.tmp.*')"
}
