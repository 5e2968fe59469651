#!/bin/sh
# The reference (cutcheck run, from $CUTCHECK) after a pause of CUTCHECK_TEST_SLEEP seconds
# (default 0.1): a slow but correct backend, for timing --jobs.
sleep "${CUTCHECK_TEST_SLEEP:-0.1}"
exec "$CUTCHECK" run "$@"
