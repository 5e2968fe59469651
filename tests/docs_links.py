#!/usr/bin/env python3
"""Every link of the README and docs/ resolves: a Markdown link's file exists and its
#anchor is a heading of that file (as GitHub names headings), a mention of a page
(`docs/NAME.md`) names one that exists, and a section cited after it by its title
(`docs/NAME.md`, "Title") is a heading of that page. Exits 1 listing each broken link.
  docs_links.py SOURCE_DIR"""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1]).resolve()
pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# A page named by its path from the clone's root, and the section title that may follow.
MENTION = re.compile(r"(docs/[A-Za-z0-9_.-]+\.md)`?(?:\s*,\s*(?:section\s+)?\"([^\"]+)\")?")


def prose(path):
    """The lines outside fenced code blocks, with their numbers."""
    inside = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if FENCE.match(line):
            inside = not inside
        elif not inside:
            yield number, line


def lines(path):
    return list(enumerate(path.read_text().splitlines(), 1))


def titles(path):
    return [m.group(2) for _, line in prose(path) if (m := HEADING.match(line))]


def slug(title):
    """GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces to -."""
    text = re.sub(r"[`*]", "", title).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    seen, found = {}, set()
    for title in titles(path):
        base = slug(title)
        n = seen.get(base, 0)
        found.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return found


def plain(title):
    return re.sub(r"[`*]", "", title)


broken = []
for page in pages:
    name = page.relative_to(root)
    for number, line in prose(page):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # a web address: not checked (nothing is downloaded)
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{name}:{number}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{name}:{number}: {target}: no heading #{anchor} in {dest.relative_to(root)}")
    for number, line in lines(page):
        for mentioned, section in MENTION.findall(line):
            dest = root / mentioned
            if not dest.exists():
                broken.append(f"{name}:{number}: {mentioned}: no such page")
            elif section and not any(plain(t).startswith(section) for t in titles(dest)):
                broken.append(f"{name}:{number}: {mentioned}, \"{section}\": no such section")

for problem in broken:
    print(problem, file=sys.stderr)
if broken:
    sys.exit(1)
print(f"{len(pages)} pages, every link resolves")
