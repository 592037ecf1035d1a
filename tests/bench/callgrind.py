"""Instructions counted by valgrind's callgrind, for the benchmarks that count them."""

import collections
import os
import re
import subprocess


def total(fastpath, mode, n, env, out):
    """(instructions, per function) of `fastpath MODE N` under @env, the profile in @out."""
    r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        fastpath, mode, str(n)], env=env, capture_output=True,
                       text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"callgrind {mode}: {r.stderr[-500:]}")
    with open(out, encoding="utf-8") as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1]), functions(out)
    raise RuntimeError(f"callgrind {mode}: no totals line")


def functions(out):
    """Instructions per function from callgrind_annotate: {"function (object)": count}."""
    r = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no",
                        "--show-percs=no", out], capture_output=True, text=True, check=False)
    funcs = collections.Counter()
    for line in r.stdout.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+(\S+?):(\S+)(?:\s+\[(.+)\])?\s*$", line)
        if not m:
            continue
        count, path, func, obj = m.groups()
        where = os.path.basename(obj) if obj else f"{os.path.basename(path)}, inlined"
        where = where.split(".so")[0] if ".so" in where else where
        funcs[f"{func} ({where})"] += int(count.replace(",", ""))
    return funcs
