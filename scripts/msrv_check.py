#!/usr/bin/env python3
"""Fails when a dependency needs a newer Rust than the crate promises.

For the default features and for each documented feature, the crates a build of
cairnloop pulls in (normal and build dependencies, as `cargo tree -p cairnloop` resolves
them for that feature set) are looked up in `cargo metadata`, and the highest
`rust-version` any of them declares is compared with the promise: the crate's own
`rust-version` for the defaults, and `[package.metadata.cairnloop.msrv]` for a feature
that needs more. Prints a table; exits 1 on any broken promise.
"""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def version(text):
    parts = [int(part) for part in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    manifest = tomllib.loads((ROOT / "Cargo.toml").read_text())
    package = manifest["package"]
    claimed_default = package["rust-version"]
    claims = package.get("metadata", {}).get("cairnloop", {}).get("msrv", {})
    # "core" is the no_std core alone; every other row adds a feature to the defaults.
    features = ["core", "default"] + [f for f in manifest["features"] if f != "default"]
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--all-features"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout
    )
    declared = {(p["name"], p["version"]): p.get("rust_version") for p in meta["packages"]}
    broken = 0
    print(f"{'features':<14} {'promised':>8} {'needed':>8}  by")
    for feature in features:
        args = ["cargo", "tree", "-p", "cairnloop", "-e", "normal,build", "--prefix", "none",
                "-f", "{p}", "--locked"]
        if feature == "core":
            args += ["--no-default-features"]
        elif feature != "default":
            args += ["--features", feature]
        tree = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True).stdout
        needed, by = (1, 0, 0), "-"
        for line in tree.splitlines():
            parts = line.split()
            if len(parts) < 2 or parts[0] == "cairnloop":
                continue
            name, ver = parts[0], parts[1].lstrip("v")
            rust = declared.get((name, ver))
            if rust and version(rust) > needed:
                needed, by = version(rust), f"{name} {ver}"
        promised = claims.get(feature, claimed_default)
        ok = needed <= version(promised)
        broken += not ok
        shown = ".".join(map(str, needed[:2]))
        print(f"{feature:<14} {promised:>8} {shown:>8}  {by}{'' if ok else '   <- broken promise'}")
    if broken:
        print(f"{broken} feature(s) need a newer Rust than promised", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
