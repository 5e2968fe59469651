#!/usr/bin/env python3
"""A server of the persistent protocol that misbehaves on the second request each server
process receives, in the way MODE names, and answers the others correctly (through
serve_example.py's engine). Usage: hostile_server.py MODE --serve

  ok           never misbehaves
  silent       never answers (once: the first server to get a second request hangs; its
               working folder holds the file `hung` from then on)
  twice        answers twice
  wrong-id     answers with another request's id
  garbage      writes a line that is not an answer, then the answer
  exit         exits (3) without answering
  crash        is killed by SIGKILL without answering
  close-stdout closes its stdout without answering and keeps running
  child        leaves a child running (setsid) on every request, and answers
  unsupported  answers "unsupported"
  error        answers "error"
Each server appends its pid to the file CUTCHECK_TEST_STATE when that is set.
"""
import json, os, signal, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_example import run_program

mode = sys.argv[1]
if os.environ.get("CUTCHECK_TEST_STATE"):
    with open(os.environ["CUTCHECK_TEST_STATE"], "a") as f:
        f.write(f"{os.getpid()}\n")


def answer(request_id, status, message=""):
    return json.dumps({"id": request_id, "status": status, "message": message}) + "\n"


for count, line in enumerate(sys.stdin, 1):
    request = json.loads(line)
    rid = request["id"]
    print(f"hostile_server {mode}: request {rid}", file=sys.stderr, flush=True)
    if mode == "child":
        marker = os.environ.get("CUTCHECK_TEST_MARKER", "hostile")
        subprocess.Popen(["setsid", "sh", "-c", f"sleep 300; : {marker}"])  # holding stdout and stderr open
    bad = count == 2 and mode != "ok" and mode != "child"
    if bad and mode == "silent" and not os.path.exists("hung"):
        open("hung", "w").close()
        time.sleep(3600)
    if bad and mode == "exit":
        sys.exit(3)
    if bad and mode == "crash":
        os.kill(os.getpid(), signal.SIGKILL)
    if bad and mode == "close-stdout":
        os.close(1)
        time.sleep(3600)
    if bad and mode in ("unsupported", "error"):
        sys.stdout.write(answer(rid, mode, f"hostile_server says {mode}"))
        sys.stdout.flush()
        continue
    status, message = run_program(rid, request["folder"], request["inputs"], request["outputs"])
    text = answer(rid, status, message)
    if bad and mode == "twice":
        text = text + text  # in one write: read together
    if bad and mode == "wrong-id":
        text = answer(rid + 1000, status, message)
    if bad and mode == "garbage":
        text = "the result is ready\n" + text
    sys.stdout.write(text)
    sys.stdout.flush()
