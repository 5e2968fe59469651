# Sourced by the command-line tests that start backends. `nothing_left LABEL [PATTERN]`
# fails (through the caller's `fail`) when a process carrying CUTCHECK_TEST_MARKER, the
# test's $cutcheck or PATTERN is still running, when the private TMPDIR ./tmp holds
# anything, or when an OUT.tmp.* file is left; then clears them for the next check.
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
