#!/bin/sh
# A backend that never returns.
echo "thinking..." >&2
sleep 1000
