#!/usr/bin/env python3
"""A backend that speaks cutcheck's persistent protocol (docs/conformance.md).

    cutcheck conform --backend 'python3 serve_example.py' --serve

cutcheck starts `serve_example.py --serve` once and writes one request per line to its
stdin; the backend writes OUT, then answers each request with one line on stdout. Without
--serve it is an ordinary backend: `serve_example.py FOLDER --inputs IN --outputs OUT`.

run_program() is where a backend computes. Here it hands the program to an engine that
stays loaded between requests: the reference, `cutcheck run --serve` (CUTCHECK names the
binary), asked through the same protocol. A team puts its own framework's call there.
"""
import json, os, subprocess, sys

engine = None


def run_program(request_id, folder, inputs, outputs):
    """Writes `outputs`; returns ("ok" | "unsupported" | "error", message)."""
    global engine
    if engine is None:  # started at the first request, kept for the next ones
        command = [os.environ.get("CUTCHECK", "cutcheck"), "run", "--serve"]
        engine = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    request = {"id": request_id, "folder": folder, "inputs": inputs, "outputs": outputs}
    engine.stdin.write(json.dumps(request) + "\n")
    engine.stdin.flush()
    answer = json.loads(engine.stdout.readline())
    return answer["status"], answer.get("message", "")


def main(argv):
    if argv[1:] == ["--serve"]:
        for line in sys.stdin:  # until cutcheck closes stdin
            request = json.loads(line)
            try:
                status, message = run_program(request["id"], request["folder"], request["inputs"], request["outputs"])
            except Exception as e:  # a failure of this request: say so, and take the next one
                status, message = "error", f"{type(e).__name__}: {e}"
            print(json.dumps({"id": request["id"], "status": status, "message": message}), flush=True)
        return 0
    folder, inputs, outputs = argv[1], argv[argv.index("--inputs") + 1], argv[argv.index("--outputs") + 1]
    status, message = run_program(1, folder, inputs, outputs)
    if message:
        print(message, file=sys.stderr)
    return {"ok": 0, "unsupported": 77}.get(status, 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
