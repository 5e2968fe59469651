#!/usr/bin/env python3
# A planted bug for the ORT backend: the program is rewritten before export so the rotary
# angle is (pos + 1) * freq (angle = pos * freq + freq), then run by cutcheck-ort.
#   rope_off_by_one.py CUTCHECK_ORT FOLDER --inputs IN --outputs OUT
import json, os, pathlib, shutil, sys, tempfile

ort, folder, rest = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3:]
work = pathlib.Path(tempfile.mkdtemp(prefix="rope-off-by-one-"))
chips = sorted(folder.glob("chip*/program.txt"))
programs = [c.parent for c in chips] or [folder]
for p in programs:
    dest = work / p.relative_to(folder) if chips else work
    dest.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((p / "manifest.json").read_text())
    manifest["dir"] = str((p / manifest["dir"]).resolve())
    (dest / "manifest.json").write_text(json.dumps(manifest))
    if (p / "spec.json").exists():  # the manifest's spec lies beside it
        shutil.copy(p / "spec.json", dest / "spec.json")
    lines = []
    for line in (p / "program.txt").read_text().splitlines():
        if line.startswith("%rope.angle = multiply "):
            ty = line.rsplit(":", 1)[1]
            lines.append(line.replace("%rope.angle =", "%rope.angle0 =", 1))
            lines.append(f"%rope.angle = add %rope.angle0, %rope.freq_rows :{ty}")
        else:
            lines.append(line)
    (dest / "program.txt").write_text("\n".join(lines) + "\n")
rc = os.spawnv(os.P_WAIT, ort, [ort, "run", str(work)] + rest)
shutil.rmtree(work, ignore_errors=True)
sys.exit(rc)
