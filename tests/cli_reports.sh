#!/usr/bin/env bash
# The reports as a CI reads them: JUnit validated by junitparser, the HTML page loaded in
# headless Chromium (screenshot and DOM), shards merged by merge-reports equal to the
# unsharded report, a killed run's JSON still valid, check's reports, and the progress
# lines on a terminal and off it.
#   cli_reports.sh CUTCHECK_BINARY
set -uo pipefail
cutcheck=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/cutcheck-reports-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# Debian's python3, which sees python3-junitparser, even where another python3 comes first on PATH.
python=/usr/bin/python3
[ -x $python ] || python=python3
check() { $python "$here/check_reports.py" "$@" || fail "check_reports.py $*"; }

# A campaign with failures: JSON, JUnit, HTML.
campaign=(conform --backend "$cutcheck run --fault kv-write-wrong-row" --cuts 'decode,decode_layer,batch_embed,decode_head'
          --tp 1 --tp 2 --cases 12 --seed 3 --shrink-time 3600 --keep keep)
"$cutcheck" "${campaign[@]}" --json all.json --junit all.xml --html all.html > out.txt 2> err.txt
rc=$?
[ $rc = 1 ] || fail "a failing campaign exited $rc: $(tail -3 err.txt)"
check junit all.xml
mkdir -p html && check html all.html html
grep -q "<svg" all.html && grep -q "First failing piece" all.html && grep -q -- "--replay" all.html \
  || fail "the HTML lacks plots, the bisected piece or the replay command"

# Two shards, two workers each, merged: the unsharded report.
for i in 1 2; do
  "$cutcheck" "${campaign[@]}" --shard $i/2 --jobs 2 --json shard$i.json > /dev/null 2>&1
  [ $? = 1 ] || fail "shard $i/2 of a failing campaign did not exit 1"
done
"$cutcheck" merge-reports shard1.json shard2.json --json merged.json --junit merged.xml --html merged.html > merged.txt
[ $? = 1 ] || fail "merge-reports of a failing campaign did not exit 1"
check same all.json merged.json
check junit merged.xml
"$cutcheck" merge-reports shard1.json > /dev/null 2> err.txt
[ $? = 2 ] && grep -q "shard 2/2 is missing" err.txt || fail "a missing shard: $(cat err.txt)"

# A report destination that is a folder: refused before any backend runs.
mkdir -p a-folder
"$cutcheck" conform --backend "$here/backends/segfault.sh" --html a-folder > out.txt 2> err.txt
rc=$?
[ $rc = 2 ] && grep -q -- "--html: 'a-folder'" err.txt && ! grep -q "cases:" out.txt || fail "--html a-folder: exit $rc: $(cat err.txt)"

# Reports that are not shards of one campaign, or not reports: exit 2, naming the file.
head -c 300 shard2.json > truncated.json
$python -c "import json; r = json.load(open('shard2.json')); del r['cases'][0]['index']; json.dump(r, open('holed.json', 'w'))"
echo '{"format": "cutcheck-check-1"}' > other.json
for bad in truncated holed other; do
  "$cutcheck" merge-reports shard1.json $bad.json > /dev/null 2> err.txt
  rc=$?
  [ $rc = 2 ] && grep -q "$bad.json" err.txt || fail "merging $bad.json: exit $rc: $(cat err.txt)"
done
# A shard of 1 GiB (sparse: it takes no disk) is refused by its size before it is read.
truncate -s 1G huge.json
/usr/bin/time -f "%M" -o peak.txt "$cutcheck" merge-reports shard1.json huge.json > /dev/null 2> err.txt
rc=$?
[ $rc = 2 ] && grep -q "huge.json' is 1073741824 bytes, more than the .* bytes allowed" err.txt ||
  fail "merging a 1 GiB shard: exit $rc: $(cat err.txt)"
[ "$(tail -1 peak.txt)" -lt 200000 ] || fail "merging a 1 GiB shard peaked at $(tail -1 peak.txt) KiB"
rm -f huge.json

# Killed with SIGKILL mid-run, once the JSON holds a case: what was written so far is a
# valid, partial report. Each run takes a second at least, so 40 cannot all finish first.
export CUTCHECK=$cutcheck CUTCHECK_TEST_SLEEP=1
# Its scratch folder, which a SIGKILL leaves behind, goes under $work.
TMPDIR="$work" "$cutcheck" conform --backend "$here/backends/sleepy.sh" --cases 40 --json killed.json > /dev/null 2>&1 &
pid=$!
for _ in $(seq 6000); do
  python3 -c "import json, sys; sys.exit(json.load(open('killed.json'))['counts']['cases'] == 0)" 2> /dev/null && break
  sleep 0.1
done
kill -9 $pid
wait $pid 2> /dev/null
python3 -c "
import json, sys
r = json.load(open('killed.json'))
assert r['finished'] is False and 0 < r['counts']['cases'] < 40, (r['finished'], r['counts'])
print('killed run: a valid partial report of', r['counts']['cases'], 'cases')" || fail "the killed run's JSON"
unset CUTCHECK_TEST_SLEEP

# check --junit --json
"$cutcheck" check --cases 3 --filter 'roundtrip*' --junit check.xml --json check.json > /dev/null || fail "check failed"
check junit check.xml
python3 -c "import json; r = json.load(open('check.json')); assert r['finished'] and r['passed'] and r['properties']" \
  || fail "check's JSON"

# Progress: off a terminal a line per tenth and no colour; on one, colour unless NO_COLOR.
"$cutcheck" conform --backend "$cutcheck run" --cases 20 > /dev/null 2> plain.txt
[ "$(grep -c '^\[[0-9]*/20\]' plain.txt)" -ge 10 ] || fail "non-terminal progress: $(cat plain.txt)"
! grep -q $'\033' plain.txt || fail "colour off a terminal"
script -qec "$cutcheck conform --backend '$cutcheck run' --cases 20 >/dev/null" /dev/null > tty.txt 2>&1
grep -q $'\033\\[32m' tty.txt && grep -q 'left' tty.txt || fail "terminal progress: $(tr -d '\033' < tty.txt | head -c 300)"
NO_COLOR=1 script -qec "$cutcheck conform --backend '$cutcheck run' --cases 5 >/dev/null" /dev/null > nocolor.txt 2>&1
! grep -q $'\033\\[3' nocolor.txt || fail "colour despite NO_COLOR"

[ $failures = 0 ] && echo "reports: all checks passed"
exit $((failures > 0))
