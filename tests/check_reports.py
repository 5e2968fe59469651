#!/usr/bin/env python3
"""Checks cutcheck's reports with tools outside cutcheck.

  check_reports.py junit FILE...      parse with junitparser; counts agree with the cases
  check_reports.py html FILE OUTDIR   load in headless Chromium: screenshot and DOM
  check_reports.py same A.json B.json the two JSON reports agree, timings aside
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def check_junit(path):
    from junitparser import Error, Failure, JUnitXml, Skipped

    xml = JUnitXml.fromfile(path)
    suites = list(xml) if hasattr(xml, "__iter__") else [xml]
    total = 0
    for suite in suites:
        cases = list(suite)
        failures = sum(1 for c in cases for r in c.result if isinstance(r, Failure))
        errors = sum(1 for c in cases for r in c.result if isinstance(r, Error))
        skipped = sum(1 for c in cases for r in c.result if isinstance(r, Skipped))
        if (suite.tests, suite.failures, suite.errors, suite.skipped) != (len(cases), failures, errors, skipped):
            fail(f"{path}: suite {suite.name} says tests={suite.tests} failures={suite.failures} errors={suite.errors} "
                 f"skipped={suite.skipped}, its cases {len(cases)}, {failures}, {errors}, {skipped}")
        if not suite.timestamp or not suite.hostname:
            fail(f"{path}: suite {suite.name} has no timestamp or hostname")
        names = {p.name for p in suite.properties()}
        if "cutcheck.version" not in names or "seed" not in names:
            fail(f"{path}: suite {suite.name} lacks the version or seed property: {sorted(names)}")
        for case in cases:
            for result in case.result:
                if isinstance(result, Failure) and result.type != "mismatch":
                    fail(f"{path}: <failure> of type {result.type}: crashes, timeouts and protocol errors are <error>")
                if isinstance(result, Error) and result.type == "mismatch":
                    fail(f"{path}: a mismatch reported as <error>")
        total += len(cases)
    print(f"{path}: {len(suites)} suites, {total} testcases, valid")


def png_colours(path):
    """The number of distinct colours of an 8-bit RGB(A) PNG (as Chromium writes them)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    at, idat, width, height, ctype = 8, b"", 0, 0, 0
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                return -1  # another layout: not decoded here
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw = zlib.decompress(idat)
    channels = 3 if ctype == 2 else 4
    stride = width * channels
    colours, previous, at = set(), bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            up_left = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 255
        for i in range(0, stride, channels * 7):  # a sample of the pixels is enough
            colours.add(bytes(line[i:i + 3]))
        previous = line
    return len(colours)


def check_html(path, outdir):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        fail("chromium is not installed (Debian's chromium, listed in .ci/packages)")
    text = open(path, encoding="utf-8").read()
    for remote in ("http://", "https://", "//cdn", "src=\""):
        if remote in text.replace("http://www.w3.org/2000/svg", ""):
            fail(f"{path} refers to something outside itself ({remote})")
    url = "file://" + os.path.abspath(path)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr", "--v=0",
             "--window-size=1200,1600"]
    with tempfile.TemporaryDirectory() as profile:
        shot = os.path.join(outdir, "report.png")
        # The time limits only end a browser that hangs: generous, for a loaded machine.
        run = subprocess.run([browser, *flags, f"--user-data-dir={profile}/a", f"--screenshot={shot}", url],
                             capture_output=True, text=True, timeout=3600)
        console = [l for l in run.stderr.splitlines() if "CONSOLE" in l]
        if run.returncode != 0 or not os.path.exists(shot):
            fail(f"chromium could not screenshot {path}: {run.stderr[-2000:]}")
        dom = subprocess.run([browser, *flags, f"--user-data-dir={profile}/b", "--dump-dom", url],
                             capture_output=True, text=True, timeout=3600)
        console += [l for l in dom.stderr.splitlines() if "CONSOLE" in l]
    if dom.returncode != 0:
        fail(f"chromium could not load {path}: {dom.stderr[-2000:]}")
    open(os.path.join(outdir, "report.dom.html"), "w").write(dom.stdout)
    if console:
        fail(f"console messages while loading {path}: {console}")
    body = dom.stdout[dom.stdout.find("<body"):][:300]
    attributes = dict(part.split("=", 1) for part in body.split(">")[0].split()[1:] if "=" in part)
    plots = attributes.get("data-plots", "").strip('"')
    drawn = attributes.get("data-plots-drawn", "").strip('"')
    if "data-script-error" in attributes:
        fail(f"{path}: script error {attributes['data-script-error']}")
    if not plots or plots != drawn or int(plots) < 2:
        fail(f"{path}: {drawn} of {plots} plots drawn")
    colours = png_colours(shot)
    if 0 <= colours < 5:
        fail(f"{path}: the screenshot has {colours} colours: nothing was drawn")
    print(f"{path}: {plots} plots drawn, no console messages, screenshot with {colours} colours in {shot}")


def without_timings(x):
    if isinstance(x, dict):
        return {k: without_timings(v) for k, v in x.items() if k not in ("seconds", "run")}
    if isinstance(x, list):
        return [without_timings(v) for v in x]
    return x


def check_same(a, b):
    ja, jb = (without_timings(json.load(open(p))) for p in (a, b))
    if ja != jb:
        fail(f"{a} and {b} differ beyond timings")
    print(f"{a} and {b}: the same report, timings aside")


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "junit":
        for f in args:
            check_junit(f)
    elif command == "html":
        check_html(*args)
    elif command == "same":
        check_same(*args)
    else:
        fail(f"unknown command {command}")
