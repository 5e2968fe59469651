#!/usr/bin/env bash
# An engine that breaks the engine protocol (docs/engines.md) one way per MODE, for
# tests/cli_engines.sh:  hostile_engine.sh MODE describe | MODE run ... --out OUT
#   bad-describe   describe leaves out required keys
#   not-json       run writes text that is not JSON
#   short-vocab    run writes one log-probability too few at each position
#   no-output      run exits 0 and writes nothing
#   huge           run writes 30 MB, far more than its requests can take
#   linked         run makes OUT a symbolic link to /etc/passwd
#   crash          run kills itself with SIGSEGV
#   hang           run never ends
#   unsupported    run exits 77
mode=$1
if [ "$2" = describe ]; then
  if [ "$mode" = bad-describe ]; then echo '{"format": "cutcheck-engine-1", "name": "hostile"}'; exit 0; fi
  echo '{"format": "cutcheck-engine-1", "name": "hostile '"$mode"'", "model_formats": ["cutcheck"], "precisions": ["f32"], "max_context": 20}'
  exit 0
fi
out=""; requests=""
while [ $# -gt 0 ]; do
  case $1 in --out) out=$2; shift ;; --requests) requests=$2; shift ;; esac
  shift
done
case $mode in
  not-json) echo "this is not JSON" > "$out" ;;
  short-vocab)
    python3 - "$requests" "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
res = [{"id": q["id"], "tokens": [0] * q["steps"], "logprobs": [[-1.0] * (r["vocab"] - 1) for _ in q["positions"]]}
       for q in r["requests"]]
json.dump({"format": "cutcheck-engine-1", "results": res}, open(sys.argv[2], "w"))
PY
    ;;
  no-output) ;;
  huge) head -c 30000000 /dev/zero | tr '\0' ' ' > "$out" ;;
  linked) ln -s /etc/passwd "$out" ;;
  crash) kill -SEGV $$ ;;
  hang) sleep 7919 ;;
  unsupported) echo "no such model here" >&2; exit 77 ;;
esac
exit 0
