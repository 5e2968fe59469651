#!/bin/sh
# A backend that leaves a process behind in a session of its own (setsid), then exits as
# if all were well, without outputs. Its argument list carries a marker the test looks for.
setsid sh -c 'sleep 1000; :' "${CUTCHECK_TEST_MARKER:-grandchild}" >/dev/null 2>&1 < /dev/null &
# and one that double-forks out of the process group too
( setsid sh -c 'sleep 1000; :' "${CUTCHECK_TEST_MARKER:-grandchild}" >/dev/null 2>&1 < /dev/null & ) 
exit 3
