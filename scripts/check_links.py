#!/usr/bin/env python3
"""Fails on a link that would be broken where it is read.

README.md is also the crate's front page on docs.rs, where a relative link leads
nowhere: every link and image there must be absolute (or an anchor). In docs/*.md,
rendered as rustdoc modules and on GitHub, a relative link must name a file that
exists. Intra-doc links are checked by `RUSTDOCFLAGS="-D warnings" cargo doc`."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# [text](target) and ![alt](target), outside code spans and fenced blocks.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def links(text):
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        for match in LINK.finditer(line):
            yield number, match.group(1)


def absolute(target):
    return target.startswith(("https://", "http://", "#", "mailto:"))


def main():
    broken = []
    readme = ROOT / "README.md"
    for number, target in links(readme.read_text()):
        if not absolute(target) and not target.startswith("crate::"):
            broken.append(f"README.md:{number}: {target} (relative: broken on docs.rs)")
    for doc in sorted((ROOT / "docs").glob("*.md")):
        for number, target in links(doc.read_text()):
            if absolute(target) or target.startswith("crate::"):
                continue
            path = (doc.parent / target.split("#")[0]).resolve()
            if not path.exists():
                broken.append(f"docs/{doc.name}:{number}: {target} (no such file)")
    for line in broken:
        print(line)
    if broken:
        sys.exit(1)
    print("links: ok")


if __name__ == "__main__":
    main()
