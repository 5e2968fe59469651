#!/usr/bin/env bash
# Every numeric option and every destination of every command, found from --help (not
# listed here): a number the option's declared range does not take (NaN, an infinity, -1,
# 0 or 2^64 where they mean nothing) exits 2 naming the option; one it takes is accepted;
# a destination that cannot be written (under /proc, below a regular file, a file where a
# folder goes or the reverse) exits 2 naming the option, and checking one leaves nothing
# behind. Nothing exits 70, crashes or hangs.
#   usage: cli_options.sh CUTCHECK
set -euo pipefail
exec python3 - "$1" <<'PY'
import atexit
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

cutcheck = os.path.abspath(sys.argv[1])
work = tempfile.mkdtemp()
os.chdir(work)
atexit.register(shutil.rmtree, work)
failures = []


def run(args):
    try:
        p = subprocess.run([cutcheck] + args, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        failures.append(f"{' '.join(args)}: still running after 60 s")
        return None, ""
    if p.returncode == 70 or p.returncode < 0:
        failures.append(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return p.returncode, p.stdout + p.stderr


def commands():
    help_text = run(["--help"])[1]
    names = [line.split()[0] for line in help_text.split("Subcommands:")[1].splitlines() if line.strip()]
    if len(names) < 20:
        sys.exit(f"FAIL: --help lists only {names}")
    return names


# "  --tp INT in [1, 4096]=[1] ...": the option, its type and the rest of the line.
option_line = re.compile(r"^\s+(?:-\w,)?(--[\w-]+)\s+(INT|UINT|FLOAT|FILE|FOLDER)\b(.*)")
range_text = re.compile(r"^ in ([\[(])([^,]+), ([^\])]+)([\])])")


def takes(value, kind, declared):
    low_bracket, low, high, high_bracket = declared.groups()
    try:
        number = int(value) if kind == "INT" else float(value)
    except ValueError:
        return False
    if kind == "FLOAT" and not math.isfinite(number):
        return False
    low, high = (int(low), int(high)) if kind == "INT" else (float(low), float(high))
    return (number > low or (number == low and low_bracket == "[")) and (
        number < high or (number == high and high_bracket == "]"))


numbers = destinations = 0
with open("a-file", "w") as f:
    f.write("x")
os.mkdir("a-folder")
for command in commands():
    for line in run([command, "--help"])[1].splitlines():
        match = option_line.match(line)
        if not match:
            continue
        option, kind, rest = match.groups()
        if kind in ("FILE", "FOLDER"):
            destinations += 1
            unwritable = ["/proc/1/x", "a-file/x", "a-file" if kind == "FOLDER" else "a-folder"]
            for path in unwritable:
                code, out = run([command, option, path])
                if code is not None and (code != 2 or option not in out):
                    failures.append(f"{command} {option} {path}: exit {code}, not 2 naming {option}: {out.strip()}")
            before = sorted(os.listdir("."))
            code, out = run([command, option, "new/place", "--help"])
            if code != 0:
                failures.append(f"{command} {option} new/place: refused: {out.strip()}")
            if sorted(os.listdir(".")) != before:
                failures.append(f"{command} {option}: checking the destination left {sorted(os.listdir('.'))}")
            continue
        numbers += 1
        declared = range_text.match(rest) if kind != "UINT" else None
        if not declared:  # still, no option takes these three
            failures.append(f"{command} {option}: a numeric option declared without its range: {line.strip()}")
        for value in ["nan", "inf", "-1", "0", "18446744073709551616"]:
            if not declared and value in ("-1", "0"):
                continue
            if declared and takes(value, kind, declared):
                code, out = run([command, option, value, "--help"])
                if code is not None and code != 0:
                    failures.append(f"{command} {option} {value}: in its range, yet refused: {out.strip()}")
            else:
                code, out = run([command, option, value])
                if code is not None and (code != 2 or option not in out):
                    failures.append(f"{command} {option} {value}: exit {code}, not 2 naming {option}: {out.strip()}")

if numbers < 40 or destinations < 20:
    failures.append(f"only {numbers} numeric options and {destinations} destinations found: is --help parsed right?")
for f in failures:
    print(f"FAIL: {f}")
if not failures:
    print(f"ok: {numbers} numeric options, {destinations} destinations")
sys.exit(1 if failures else 0)
PY
