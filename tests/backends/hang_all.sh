#!/bin/sh
# A backend that hangs on every run, with a child in its own session, as a stuck
# accelerator runtime might.
setsid sh -c 'sleep 1000; :' "${CUTCHECK_TEST_MARKER:-hang}" >/dev/null 2>&1 < /dev/null &
sh -c 'sleep 1000; :' "${CUTCHECK_TEST_MARKER:-hang}"
