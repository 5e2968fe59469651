#!/bin/sh
# A backend that crashes.
kill -SEGV $$
