#!/bin/sh
# A backend that logs each of its runs, then runs another: `counted.sh LOG COMMAND...`
# (cutcheck appends FOLDER --inputs IN --outputs OUT, which go on to COMMAND).
log=$1
shift
echo run >> "$log"
exec "$@"
