#!/bin/sh
# A backend that writes something that is not safetensors at all.
echo "oops, something broke" >&2
printf 'not a safetensors file' > "$5"
