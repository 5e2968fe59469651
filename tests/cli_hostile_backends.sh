#!/usr/bin/env bash
# Hostile backends (tests/backends/) and interrupted campaigns: cutcheck is never taken
# down, and nothing it or a backend started, and no temporary file, outlives the run.
# Usage: cli_hostile_backends.sh CUTCHECK
set -uo pipefail
backends=$(cd "$(dirname "$0")/backends" && pwd)
source "$backends/../backend_sandbox.sh" "$1" hostile

# A CUTCHECK_TEST_MARKER-carrying conform; $1 = label, the rest = arguments.
conform() { "$cutcheck" conform --cuts decode --keep keep "$@" > out.txt 2> err.txt; }

valid_reports() {
  python3 -c "import sys, json, xml.etree.ElementTree as E; E.parse(sys.argv[1]); json.load(open(sys.argv[2]))" \
    report.xml report.json || fail "$1: the reports do not parse"
}

# Usage errors, before any backend runs, naming the option: a --timeout that never or always
# expires, a negative --shrink-time, a destination that cannot be written (under /proc, a
# regular file as the keep folder, a report below a file), and below, a default --keep in
# a working folder that refuses new files.
echo x > a-file
for args in "--timeout nan" "--timeout -1" "--timeout 0" "--timeout inf" "--shrink-time -5" "--keep /proc/1/x" \
  "--keep a-file" "--json a-file/r.json" "--junit /proc/1/r.xml" "--html a-file/r.html"; do
  "$cutcheck" conform --backend "touch ran; false" --cases 1 $args > out.txt 2> err.txt
  rc=$?
  [ $rc = 2 ] || fail "conform $args exited $rc, not 2: $(cat err.txt)"
  [ ! -e ran ] || fail "conform $args ran the backend"
  grep -q -- "^${args%% *}: " err.txt || fail "conform $args: the option is not named: $(cat err.txt)"
  rm -f ran
done
(cd /proc/1 && "$cutcheck" conform --backend "touch $work/ran; false" --cases 1) > out.txt 2> err.txt
rc=$?
[ $rc = 2 ] && [ ! -e ran ] || fail "conform in a folder that refuses files: exited $rc, ran: $(ls ran 2>&1)"
grep -q -- "--keep 'conform-failures' (the default)" err.txt || fail "an unwritable default --keep is not named: $(cat err.txt)"
rm -f a-file

# A normal campaign (the reference) leaves nothing.
conform --backend "$cutcheck run" --cases 2 || fail "the reference did not pass: $(cat out.txt err.txt)"
nothing_left "a normal campaign"

# A failed campaign, shrunk, bisected and kept, leaves nothing but its reproducers.
conform --backend "$cutcheck run --fault swiglu-gate-up-swapped" --cases 10 --json report.json
rc=$?
[ $rc = 1 ] || fail "a faulty backend: exited $rc, not 1"
python3 -c "import json,sys; f=json.load(open('report.json'))['failures']; assert f and f[0]['shrunk'], f" ||
  fail "a faulty backend: no shrunk failure in the report"
[ -f keep/case-0/case.json ] || [ -n "$(ls keep/*/case.json 2>/dev/null)" ] || fail "a faulty backend: no reproducer kept"
nothing_left "a failed campaign"
rm -rf keep

# A backend that leaves setsid grandchildren behind: all of them are killed.
conform --backend "$backends/grandchild.sh" --cases 2 --no-shrink
[ $? = 1 ] || fail "grandchild: not exit 1"
nothing_left "setsid grandchildren"

# > 4 KiB of UTF-8, raw bytes and control characters on stderr: valid JSON and JUnit.
conform --backend "$backends/stderr_spam.sh" --cases 1 --no-shrink --junit report.xml --json report.json
rc=$?
[ $rc = 1 ] || fail "stderr spam exited $rc, not 1: $(tail -3 err.txt)"
valid_reports "stderr spam"
python3 -c "import json,sys; t=json.load(open('report.json'))['failures'][0]['shrunk']['stderr_tail']; \
assert '\ufffd' in t and '\x1b' not in t and '日本語' in t, t[-200:]" || fail "stderr spam: the tail is not cleaned"
nothing_left "stderr spam"

# OUT made a FIFO: refused at once, blamed on the backend (`timeout` only ends a run that
# waits for a writer).
timeout 600 "$cutcheck" conform --cuts decode --keep keep --backend "$backends/fifo_output.sh" --cases 1 --no-shrink \
  > out.txt 2> err.txt
rc=$?
[ $rc = 1 ] || fail "FIFO OUT exited $rc, not 1"
grep -q "not a regular file" out.txt || fail "FIFO OUT: no reason: $(cat out.txt)"
nothing_left "FIFO OUT"

# OUT made a symbolic link to the right outputs: not followed, blamed on the backend.
conform --backend "$backends/linked_output.sh $cutcheck" --cases 2 --no-shrink
rc=$?
[ $rc = 1 ] || fail "a linked OUT exited $rc, not 1: $(cat out.txt err.txt)"
grep -q "outputs.safetensors' is a symbolic link" out.txt || fail "a linked OUT: no reason: $(cat out.txt)"
nothing_left "a linked OUT"

# A backend that hangs on every run: stopped after a few cases (3 of the 10 run, not all
# waiting out their timeouts), with a JUnit report.
conform --backend "$backends/hang_all.sh" --cases 10 --timeout 1 --junit report.xml --json report.json
rc=$?
[ $rc = 1 ] || fail "hang: exited $rc, not 1"
python3 -c "import json; r = json.load(open('report.json')); assert len(r['cases']) == 3, len(r['cases'])" ||
  fail "hang: not stopped after 3 cases"
grep -q "timed out on each of the first 3 cases" err.txt || fail "hang: no stop message: $(cat err.txt)"
valid_reports "hang"
nothing_left "hang on every run"

# A misspelled backend command: a few runs, then one message naming it.
conform --backend "cutchek-no-such-command run" --cases 50
rc=$?
[ $rc = 1 ] || fail "misspelled: exited $rc"
grep -q "cutchek-no-such-command" err.txt && grep -q "127" err.txt || fail "misspelled: $(cat err.txt)"
grep -q "^3 cases" out.txt || fail "misspelled: not stopped after 3 cases: $(cat out.txt)"
nothing_left "misspelled command"

# Both processes of a hanging backend (its setsid child and its own) have started.
backend_hangs() { [ "$(pgrep -fc "sleep 1000; :.*$CUTCHECK_TEST_MARKER")" -ge 2 ]; }

# SIGINT and SIGTERM in the middle of a campaign: the backend tree is killed, the reports
# of what finished are written, and the exit code is 128 + the signal.
for sig in INT TERM; do
  "$cutcheck" conform --cuts decode --keep keep --backend "$backends/hang_all.sh" --cases 5 --timeout 3600 \
    --junit report.xml --json report.json > out.txt 2> err.txt &
  pid=$!
  wait_until 600 backend_hangs || fail "SIG$sig: the backend did not start"
  kill -s $sig $pid
  wait $pid
  rc=$?
  want=$([ $sig = INT ] && echo 130 || echo 143)
  [ $rc = $want ] || fail "SIG$sig: exited $rc, not $want: $(cat err.txt)"
  valid_reports "SIG$sig"
  nothing_left "SIG$sig"
done

# kill -9 of the backend is a crashed backend; its orphans die with the run.
export CUTCHECK_TEST_STATE=$work/state
"$cutcheck" conform --cuts decode --keep keep --backend "$backends/die_once.sh" --cases 1 --timeout 3600 \
  > out.txt 2> err.txt &
pid=$!
wait_until 600 backend_hangs || fail "kill -9 of the backend: it did not start"
# The backend, below the keeper cutcheck forks for each run (core/process.cpp).
victim=$(for keeper in $(pgrep -P $pid); do pgrep -P "$keeper" -f "die_once.sh"; done | head -1)
[ -n "$victim" ] && kill -9 "$victim" || fail "kill -9 of the backend: no backend process below a keeper"
wait $pid
rc=$?
[ $rc = 1 ] || fail "kill -9 of the backend: exited $rc, not 1: $(cat err.txt)"
grep -q "killed by signal 9" out.txt || fail "kill -9: not reported as a crash: $(cat out.txt)"
nothing_left "kill -9 of the backend"

# kill -9 of cutcheck itself: the keeper of the run in flight (a fork of cutcheck, with
# $cutcheck's command line) ends with it and kills the backend's process group
# (core/process.cpp); before, both waited for the backend to end by itself. The backend's
# sleep is named by a length of its own. Nothing can remove the campaign's scratch folder
# after a SIGKILL, so TMPDIR is cleared before the check.
hang=600.$$
CUTCHECK=$cutcheck CUTCHECK_TEST_SLEEP=$hang "$cutcheck" conform --backend "$backends/sleepy.sh" --cases 4 \
  > out.txt 2> err.txt &
pid=$!
sleeping() { pgrep -f "sleep $hang" > /dev/null; }
wait_until 600 sleeping || fail "kill -9 of cutcheck: the backend did not start"
kill -9 $pid
wait $pid 2> /dev/null
# The keeper ends the run on its own time, not cutcheck's: TMPDIR is cleared once it has.
wait_until 60 none_running "sleep $hang"
rm -rf tmp/*
nothing_left "kill -9 of cutcheck" "sleep $hang"

[ $failures = 0 ] || { echo "$failures failures"; exit 1; }
echo "hostile backends: all passed"
