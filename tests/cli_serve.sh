#!/usr/bin/env bash
# The persistent backend protocol (--serve, docs/conformance.md "Persistent backends"):
# the reference and the Python example as servers, N servers with --jobs N, generate
# through one server, and hostile servers, each of which fails the run it spoils while
# the campaign goes on, leaving no process behind.
# Usage: cli_serve.sh CUTCHECK
set -uo pipefail
backends=$(cd "$(dirname "$0")/backends" && pwd)
docs=$(cd "$(dirname "$0")/../docs" && pwd)
source "$backends/../backend_sandbox.sh" "$1" serve
export CUTCHECK=$cutcheck  # the engine of serve_example.py and hostile_server.py

server_processes="$backends/hostile_server|$backends/serve_example"  # and their engines: `$cutcheck run --serve`

# Small decode cases, so that a run takes milliseconds; none runs past $limit seconds.
conform() {
  timeout "${limit:-900}" "$cutcheck" conform --cuts decode --ctx-max 32 --large-share 0 --keep keep --no-shrink --json report.json "$@" \
    > out.txt 2> err.txt
}

# The verdict and failure type of each case, "passed -" or "failed protocol", one a line.
verdicts() {
  python3 -c "import json; [print(c['verdict'], c['failure_type'] or '-') for c in json.load(open('report.json'))['cases']]"
}

# The Python server shown on docs/conformance.md is the one tested here.
python3 - "$docs/conformance.md" "$backends/serve_example.py" <<'EOF' || fail "docs/conformance.md shows another serve_example.py"
import sys
doc, example = open(sys.argv[1]).read(), open(sys.argv[2]).read()
assert "```python\n" + example + "```" in doc
EOF

# Usage errors (exit 2).
"$cutcheck" run --serve decode > /dev/null 2> err.txt
[ $? = 2 ] && grep -q "from stdin" err.txt || fail "run --serve FOLDER: $(cat err.txt)"
"$cutcheck" run > /dev/null 2> err.txt
[ $? = 2 ] && grep -q "needs FOLDER" err.txt || fail "run without a folder: $(cat err.txt)"
"$cutcheck" generate --serve > /dev/null 2> err.txt
[ $? = 2 ] && grep -q "needs --backend" err.txt || fail "generate --serve without --backend: $(cat err.txt)"

# The reference as a server is bitwise; a fault planted in it is caught through --serve.
conform --backend "$cutcheck run" --serve --cases 6 || fail "cutcheck run --serve did not pass: $(cat out.txt err.txt)"
nothing_left "the reference as a server" "$server_processes"
conform --backend "$cutcheck run --fault swiglu-gate-up-swapped" --serve --cases 4
[ $? = 1 ] || fail "a faulty server was not caught: $(cat out.txt)"
[ "$(verdicts | sort -u)" = "failed mismatch" ] || fail "a faulty server: $(verdicts)"
grep -q -- "--serve" keep/*/README* 2>/dev/null || grep -rq -- "--serve" keep || fail "the reproducer does not say --serve"
# Its command by hand is the process-per-run protocol's, which the backend answers.
for kept in keep/*/; do
  by_hand=$(sed -n 's/^or by hand: //p' "$kept/report.txt")
  (cd "$kept" && rm -f actual.safetensors && sh -c "$by_hand" 2> by-hand.err && [ -s actual.safetensors ]) ||
    fail "the command by hand '$by_hand' did not run: $(cat "$kept/by-hand.err")"
done
nothing_left "a faulty server" "$server_processes"
rm -rf keep

# The Python example of the docs, as a server and process per run.
conform --backend "python3 $backends/serve_example.py" --serve --cases 6 ||
  fail "serve_example.py --serve did not pass: $(cat out.txt err.txt)"
conform --backend "python3 $backends/serve_example.py" --cases 2 ||
  fail "serve_example.py (process per run) did not pass: $(cat out.txt err.txt)"
nothing_left "the Python example" "$server_processes"

# --jobs 2: at most two servers, side by side.
export CUTCHECK_TEST_STATE=$work/servers
conform --backend "python3 $backends/hostile_server.py ok" --serve --jobs 2 --cases 8 ||
  fail "--jobs 2 --serve did not pass: $(cat out.txt err.txt)"
n=$(sort -u servers | wc -l)
[ "$n" -ge 1 ] && [ "$n" -le 2 ] || fail "--jobs 2 started $n servers"
rm -f servers
nothing_left "--jobs 2" "$server_processes"

# Hostile servers: each spoils the second request it gets; that run fails, and the third
# (on a fresh server when the spoiler was killed, as all but "error" and "unsupported"
# are) passes. Side by side, each in a folder of its own: they mostly wait.
hostile() {  # MODE, the verdicts of the 3 cases, a phrase of the second's failure
  local mode=$1 want=$2 phrase=$3
  mkdir "$mode" && cd "$mode" || return
  fail() { echo "FAIL: $*" >> failures.txt; }
  # Generous, silent included (whose second request never ends, whatever the limit): a
  # server's start-up is part of its first request's time, and the machine may be loaded.
  local timeout=60
  # A server that closes its stdout and still runs fails its request at once: with a
  # timeout past the campaign's own limit, waiting for the timeout fails the test. `exec`:
  # the shell that runs the command holds the pipe while it waits, unless it becomes the server.
  local limit=900 server="python3 $backends/hostile_server.py $mode"
  [ $mode = close-stdout ] && timeout=600 limit=300 server="exec $server"
  conform --backend "$server" --serve --cases 3 --timeout $timeout
  local rc=$?
  [ $rc = 1 ] || [ $mode = unsupported ] || fail "$mode: exited $rc, not 1: $(cat out.txt err.txt)"
  [ "$(verdicts | tr '\n' ';')" = "$want" ] || fail "$mode: verdicts $(verdicts | tr '\n' ';')"
  python3 -c "import json,sys; c=json.load(open('report.json'))['cases'][1]; \
assert sys.argv[1] in c['failure'], c['failure']; \
assert c['verdict'] != 'failed' or 'hostile_server' in c['stderr_tail'], c['stderr_tail']" "$phrase" ||
    fail "$mode: the failure does not say '$phrase' with the server's stderr"
}
hostile silent "passed -;failed timeout;passed -;" "timed out" &
hostile twice "passed -;failed protocol;passed -;" "more than its answer" &
hostile wrong-id "passed -;failed protocol;passed -;" "with id" &
hostile garbage "passed -;failed protocol;passed -;" "no answer to request" &
hostile exit "passed -;failed exit;passed -;" "exited with 3 while running request" &
hostile crash "passed -;failed crash;passed -;" "killed by signal 9" &
hostile close-stdout "passed -;failed protocol;passed -;" "closed its stdout while running request" &
hostile error "passed -;failed exit;passed -;" "answered error: hostile_server says error" &
hostile unsupported "passed -;unsupported -;passed -;" "hostile_server says unsupported" &
wait
for mode in silent twice wrong-id garbage exit crash close-stdout error unsupported; do
  [ -e "$mode/report.json" ] || fail "$mode: no report"
  [ ! -e "$mode/failures.txt" ] || { cat "$mode/failures.txt"; failures=$((failures + 1)); }
done
nothing_left "hostile servers" "$server_processes"

# A server whose every request leaves a setsid child: all pass, and nothing is left.
conform --backend "python3 $backends/hostile_server.py child" --serve --cases 3 ||
  fail "child: did not pass: $(cat out.txt err.txt)"
nothing_left "a server that leaves children" "$server_processes"

# A server that is not one (the command fails at once): three runs, then one message.
conform --backend "cutchek-no-such-command run" --serve --cases 20
[ $? = 1 ] && grep -q "127" err.txt || fail "a misspelled server: $(cat err.txt)"
nothing_left "a misspelled server" "$server_processes"

# SIGINT while a server hangs: 130, reports written, nothing left.
rm -f servers hung
"$cutcheck" conform --cuts decode --ctx-max 32 --keep keep --backend "python3 $backends/hostile_server.py silent" \
  --serve --cases 4 --timeout 3600 --json report.json > out.txt 2> err.txt &
pid=$!
hanging() { [ -e hung ]; }  # the first request answered, the second hanging
wait_until 600 hanging || fail "SIGINT: the server never got its second request"
kill -INT $pid
wait $pid
rc=$?
[ $rc = 130 ] || fail "SIGINT: exited $rc, not 130: $(cat err.txt)"
python3 -c "import json; json.load(open('report.json'))" || fail "SIGINT: no report"
nothing_left "SIGINT" "$server_processes"

# generate through one server: the reference's tokens, and a single server for every step.
"$cutcheck" weights --spec tiny --seed 7 --dir weights > /dev/null
rm -f servers
out=$("$cutcheck" generate --weights weights --prompt 1,2,3 --steps 12 \
  --backend "python3 $backends/hostile_server.py ok" --serve --compare 2>&1) || fail "generate --serve: $out"
grep -q "all 12 tokens match" <<<"$out" || fail "generate --serve: $out"
[ "$(wc -l < servers)" = 1 ] || fail "generate --serve started $(wc -l < servers) servers"
nothing_left "generate --serve" "$server_processes"

[ $failures = 0 ] || { echo "$failures failures"; exit 1; }
echo "serve: all passed"
