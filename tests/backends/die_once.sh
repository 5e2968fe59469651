#!/bin/sh
# A backend whose first run hangs (the test then kill -9s it) and whose later runs fail at
# once. CUTCHECK_TEST_STATE names a file that tells the runs apart.
if [ -e "$CUTCHECK_TEST_STATE" ]; then exit 1; fi
: > "$CUTCHECK_TEST_STATE"
setsid sh -c 'sleep 1000; :' "${CUTCHECK_TEST_MARKER:-die_once}" >/dev/null 2>&1 < /dev/null &
sh -c 'sleep 1000; :' "${CUTCHECK_TEST_MARKER:-die_once}"
