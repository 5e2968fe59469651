#!/bin/sh
# A backend that computes the right outputs (the reference) into a file of its own and makes
# OUT a symbolic link to it: OUT must be the file itself, so the link is the backend's
# failure, and what it points to is not read.
#   linked_output.sh CUTCHECK FOLDER --inputs IN --outputs OUT
cutcheck=$1 folder=$2 inputs=$4 out=$6
"$cutcheck" run "$folder" --inputs "$inputs" --outputs "$out.real" || exit 1
ln -s "$out.real" "$out"
