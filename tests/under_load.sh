#!/usr/bin/env bash
# The test suite on a loaded machine, as CI runners often are: busy loops (`yes`, two by
# default) keep the cores busy while the suite runs three times in a row, as
# docs/development.md runs it (ctest -j2); exits 1 if any run failed. No test's verdict may depend on how fast
# the machine is: this is how to see that it does not.
#   tests/under_load.sh [BUILD_DIR]    (default build/release, from the clone's root)
# UNDER_LOAD_RUNS and UNDER_LOAD_LOOPS change the number of runs and of busy loops. Each
# run's ctest output is kept in BUILD_DIR/under-load-N.log.
set -uo pipefail
build=${1:-build/release}
runs=${UNDER_LOAD_RUNS:-3} loops=${UNDER_LOAD_LOOPS:-2}
[ -f "$build/CTestTestfile.cmake" ] || {
  echo "under_load.sh: '$build' is not a build folder (cmake --preset release && cmake --build --preset release)" >&2
  exit 2
}

# Everything this script starts (the loops, the ctest running) is ended with it.
started=()
stop() { [ ${#started[@]} = 0 ] || kill "${started[@]}" 2>/dev/null; }
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq "$loops"); do
  yes > /dev/null &
  started+=($!)
done
echo "$loops busy loops (pids ${started[*]}); $runs runs of: ctest --test-dir $build -j2 --output-on-failure"

failed=0
for i in $(seq "$runs"); do
  log=$build/under-load-$i.log
  start=$SECONDS
  ctest --test-dir "$build" -j2 --output-on-failure > "$log" 2>&1 &  # waited for, so a signal stops it at once
  started+=($!)
  wait $!
  rc=$?
  summary=$(grep -E '^[0-9]+% tests passed' "$log" || echo "no summary (exit $rc)")
  if [ $rc = 0 ]; then
    echo "run $i: passed in $((SECONDS - start)) s: $summary"
  else
    failed=$((failed + 1))
    echo "run $i: FAILED in $((SECONDS - start)) s: $summary ($log)"
    sed -n '/The following tests FAILED:/,$p' "$log"
  fi
done
[ $failed = 0 ] && echo "under load: all $runs runs passed" || echo "under load: $failed of $runs runs failed"
exit $((failed > 0))
