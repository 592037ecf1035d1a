#!/usr/bin/env python3
"""make coverage: line and branch coverage of the given sources from gcov's JSON.

usage: coverage.py OBJ_ROOT SOURCE... [--require SOURCE=PERCENT]...

OBJ_ROOT is where the objects of a --coverage build are (build/coverage/obj):
the counts of SOURCE are read from OBJ_ROOT/SOURCE's directory.  Prints one
line per source and each branch never taken in a source with a requirement;
exits 1 if a requirement is not met.

A branch that no test can take is excluded by a comment on its line that
says why:  /* LCOV_EXCL_BR_LINE: <reason> */  (the marker lcov and gcovr know
too).  A marker without a reason is an error.
"""

import argparse
import json
import os
import re
import subprocess
import sys

MARKER = re.compile(r"LCOV_EXCL_BR_LINE(.*)")


def gcov_json(obj_root, source):
    objdir = os.path.join(obj_root, os.path.dirname(source))
    out = subprocess.run(
        ["gcov", "--json-format", "--stdout", "--branch-probabilities", "-o", objdir, source],
        check=True,
        capture_output=True,
    ).stdout
    # One JSON document per line, one per object that holds the source.
    for doc in out.decode().splitlines():
        if doc.strip():
            yield json.loads(doc)


def exclusions(source):
    """Line numbers whose branches are excluded, each with a reason."""
    excluded = {}
    with open(source, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            m = MARKER.search(text)
            if not m:
                continue
            reason = m.group(1).strip(" :*/")
            if not reason:
                sys.exit(f"{source}:{n}: LCOV_EXCL_BR_LINE without a reason")
            excluded[n] = reason
    return excluded


def measure(obj_root, source):
    lines, hit = {}, {}
    branches = {}  # line -> [taken?...]
    for doc in gcov_json(obj_root, source):
        for f in doc["files"]:
            if os.path.normpath(f["file"]) != os.path.normpath(source):
                continue
            for ln in f["lines"]:
                n = ln["line_number"]
                lines[n] = True
                hit[n] = hit.get(n, 0) + ln["count"]
                for i, b in enumerate(ln["branches"]):
                    taken = branches.setdefault(n, [])
                    while len(taken) <= i:
                        taken.append(False)
                    taken[i] = taken[i] or b["count"] > 0
    return lines, hit, branches


def pct(a, b):
    return 100.0 * a / b if b else 100.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("obj_root")
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--require", action="append", default=[], metavar="SOURCE=PERCENT")
    args = ap.parse_args()
    required = {}
    for r in args.require:
        src, _, p = r.partition("=")
        required[os.path.normpath(src)] = float(p)

    failed = False
    print(f"{'source':28} {'lines':>16} {'branches':>18} {'excluded':>9}")
    for source in args.sources:
        lines, hit, branches = measure(args.obj_root, source)
        excluded = exclusions(source)
        nl = len(lines)
        hl = sum(1 for n in lines if hit[n] > 0)
        nb = hb = nx = 0
        missed = []
        for n in sorted(branches):
            taken = branches[n]
            if n in excluded:
                nx += len(taken)
                continue
            nb += len(taken)
            hb += sum(taken)
            if not all(taken):
                missed.append((n, taken))
        print(
            f"{source:28} {hl:5}/{nl:<5} {pct(hl, nl):5.1f}% {hb:6}/{nb:<5} {pct(hb, nb):5.1f}% "
            f"{nx:9}"
        )
        need = required.get(os.path.normpath(source))
        if need is None:
            continue
        for n in sorted(excluded):
            if n in branches:
                print(f"    {source}:{n}: excluded: {excluded[n]}")
        for n, taken in missed:
            print(f"    {source}:{n}: branches never taken: "
                  f"{[i for i, t in enumerate(taken) if not t]} of {len(taken)}")
        if pct(hb, nb) < need:
            print(f"coverage: {source}: {pct(hb, nb):.1f}% of branches, {need:.0f}% required",
                  file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
