#!/usr/bin/env python3
"""The mutation gate: each one-edit mutant of tests/mutants/list must make its tests fail.

usage: run.py [--list FILE] [--build DIR] [--out DIR] [--jobs N] [--only NAME,...]
              [--timeout S]

For each mutant of the list: copy the tree (src, tests, scripts, Makefile) and
the up-to-date build (BUILD, without its own mutants directory) to
OUT/NAME, keeping file times so that make rebuilds only what the edit
touches (the copy of a caught mutant is removed, its log kept as
OUT/NAME.log); replace the mutant's fragment, which must occur exactly once in its
file; `make all` there (without the unit drivers unless 00-unit.bats guards it); run
bats on the mutant's guarding test files only, stopped at the first that fails.
Results:

  caught    a guarding test failed (or the run outlived --timeout)
  survived  every guarding test passed: the tests cannot see the mutant
  stale     the fragment does not occur exactly once: re-point the entry
  broken    the copy does not build: the mutant must be written so it builds

Prints a table and exits 1 unless every mutant run was caught.  Standard
library only.  Mutation tools for C (mull, dextool, universalmutator) either
need a clang plugin build of their own or mutate blindly and slowly; a short
list of the edits that matter, each with the tests that guard it, serves this
build better.
"""

import argparse
import concurrent.futures
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time

KEYS = ("name", "file", "find", "replace", "tests", "filter", "why")
TREE = ("src", "tests", "scripts", "Makefile")


def unescape(text):
    """\\n, \\t and \\\\ in a list value; nothing else is special."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def parse_list(path):
    """Blank-line separated entries of "key: value" lines; # starts a comment line."""
    mutants, entry, errors = [], {}, []

    def close(lineno):
        if not entry:
            return
        missing = [k for k in ("name", "file", "find", "replace", "tests") if k not in entry]
        if missing:
            errors.append(f"{path}:{lineno}: entry {entry.get('name', '?')} lacks {missing}")
        else:
            entry["tests"] = entry["tests"].split()
            mutants.append(dict(entry))
        entry.clear()

    with open(path, encoding="utf-8") as f:
        lineno = 0
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                close(lineno)
                continue
            if line.startswith("#"):
                continue
            key, sep, value = line.partition(":")
            if not sep or key not in KEYS or key in entry:
                errors.append(f"{path}:{lineno}: not a new key of {KEYS}: {line!r}")
                continue
            value = value[1:] if value.startswith(" ") else value
            entry[key] = unescape(value) if key in ("find", "replace") else value
        close(lineno + 1)
    names = [m["name"] for m in mutants]
    for n in sorted({n for n in names if names.count(n) > 1}):
        errors.append(f"{path}: mutant {n} is listed twice")
    return mutants, errors


def copy_tree(root, build, dest):
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    for name in TREE:
        src = os.path.join(root, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dest, name), symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, os.path.join(dest, name))
    # The default build only: the gates' own builds and the mutants stay out.
    keep = {"obj", "helpers", "unit", "hardening", "libbackoff.so", "backoff-schedule", "musl",
            "static", "go"}
    os.makedirs(os.path.join(dest, "build"))
    for name in os.listdir(build):
        if name not in keep:
            continue
        src = os.path.join(build, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dest, "build", name), symlinks=True)
        else:
            shutil.copy2(src, os.path.join(dest, "build", name))


def run_logged(cmd, cwd, log, timeout, env=None):
    """Runs cmd in a process group of its own; its status, or None after timeout."""
    with open(log, "ab") as out:
        out.write(("$ " + " ".join(cmd) + "\n").encode())
        out.flush()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            return None


def run_tests(cmd, cwd, log, timeout, env=None):
    """Runs bats as run_logged does, but stops it at its first failed test, once that
    test's diagnostics (its "# " lines) are written: the mutant is caught then, and the
    rest of its guarding tests would only take time.  Its status (1 when stopped), or
    None after timeout."""
    deadline = time.monotonic() + timeout
    with open(log, "ab") as out:
        out.write(("$ " + " ".join(cmd) + "\n").encode())
        out.flush()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        failed, pending = False, b""
        while True:
            left = deadline - time.monotonic()
            # After a failure, its diagnostics follow at once: a pause ends them.
            wait = min(left, 2.0) if failed else left
            if wait <= 0 and not failed:
                break
            ready, _, _ = select.select([p.stdout], [], [], max(wait, 0))
            if not ready:
                if failed:
                    break
                continue
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                p.stdout.close()
                rc = p.wait()
                return rc if rc is not None else None
            out.write(chunk)
            out.flush()
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if failed and not line.startswith(b"#"):
                    break
                if line.startswith(b"not ok "):
                    failed = True
            else:
                continue
            break
        os.killpg(p.pid, signal.SIGKILL)
        p.stdout.close()
        p.wait()
        if failed:
            out.write(b"(stopped at its first failed test)\n")
            return 1
        return None


def run_mutant(m, root, build, out, timeout):
    start = time.monotonic()
    dest = os.path.join(out, m["name"])
    result = {"name": m["name"], "tests": " ".join(m["tests"]), "detail": ""}

    def done(what, detail=""):
        result.update(result=what, detail=detail, seconds=round(time.monotonic() - start))
        return result

    try:
        with open(os.path.join(root, m["file"]), encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return done("stale", f"{m['file']} does not exist")
    found = text.count(m["find"])
    if found != 1:
        return done("stale", f"fragment found {found} times in {m['file']}")
    copy_tree(root, build, dest)
    target = os.path.join(dest, m["file"])
    with open(target, "w", encoding="utf-8") as f:
        f.write(text.replace(m["find"], m["replace"]))
    log = os.path.join(dest, "mutant.log")
    env = dict(os.environ)
    env.pop("TEST_BUILD_DIR", None)
    # A test that cannot run must not count as catching the mutant: here it skips
    # (and a mutant caught by nothing else survives), whatever CI set for make check.
    env.pop("BACKOFF_TEST_NO_SKIP", None)
    env.pop("TEST_NO_SKIP", None)
    env.pop("MAKEFLAGS", None)
    env.pop("MAKELEVEL", None)
    # The unit drivers are relinked at every edit of src/ and only 00-unit.bats runs them.
    make = ["nice", "-n", "5", "make", "--no-print-directory", "-j2", "all"]
    if "00-unit.bats" not in m["tests"]:
        make.append("UNITS=")
    rc = run_logged(make, dest, log, timeout, env)
    result["build"] = round(time.monotonic() - start)
    if rc != 0:
        return done("broken", f"make all failed: see {os.path.relpath(log, root)}")
    bats = ["nice", "-n", "5", os.environ.get("BATS", "bats")]
    if m.get("filter"):
        bats += ["--filter", m["filter"]]
    bats += [os.path.join("tests", t) for t in m["tests"]]
    rc = run_tests(bats, dest, log, timeout - (time.monotonic() - start), env)
    with open(log, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    failed = [line for line in lines if line.startswith("not ok ")]
    skipped = [line for line in lines if re.match(r"^ok \d+ .*# skip", line)]
    ran = [line for line in lines if re.match(r"^(not )?ok \d+ ", line)]
    if rc is not None and not ran:
        return done("broken", f"bats ran no test: see {os.path.relpath(log, root)}")
    if rc != 0:
        # Caught: only the log is worth keeping (OUT/NAME.log), not the copy.
        shutil.copy2(log, dest + ".log")
        shutil.rmtree(dest)
    if rc is None:
        return done("caught", f"timed out after {timeout} s")
    if rc != 0:
        return done("caught", f"{len(failed)} of {len(ran)} failed: " +
                    "; ".join(re.sub(r"^not ok \d+ ", "", line) for line in failed[:2]))
    detail = f"all {len(ran)} passed"
    if skipped:
        detail += f", {len(skipped)} skipped"
    return done("survived", detail)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", default=os.path.join(root, "tests/mutants/list"))
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--out", default=None, help="scratch copies (default BUILD/mutants)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated mutant names")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per mutant")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out or os.path.join(build, "mutants"))

    mutants, errors = parse_list(args.list)
    for m in mutants:
        for t in m["tests"]:
            if not os.path.isfile(os.path.join(root, "tests", t)):
                errors.append(f"mutant {m['name']}: no test file tests/{t}")
    if args.only:
        wanted = [n for n in args.only.split(",") if n]
        unknown = [n for n in wanted if n not in {m["name"] for m in mutants}]
        errors += [f"no mutant named {n}" for n in unknown]
        mutants = [m for m in mutants if m["name"] in wanted]
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 2
    if not os.path.isfile(os.path.join(build, "libbackoff.so")):
        print(f"{build}/libbackoff.so is missing: run make first", file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)

    start = time.monotonic()
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_mutant, m, root, build, out, args.timeout) for m in mutants]
        for fut in concurrent.futures.as_completed(futures):
            r = fut.result()
            results.append(r)
            print(f"mutants: {r['name']}: {r['result']} ({r['seconds']} s) {r['detail']}",
                  flush=True)

    order = {m["name"]: i for i, m in enumerate(mutants)}
    results.sort(key=lambda r: order[r["name"]])
    wn = max([len("mutant")] + [len(r["name"]) for r in results])
    wt = max([len("guarding tests")] + [len(r["tests"]) for r in results])
    print()
    print(f"{'mutant':<{wn}}  {'guarding tests':<{wt}}  {'result':<8}  {'s':>4}")
    for r in results:
        print(f"{r['name']:<{wn}}  {r['tests']:<{wt}}  {r['result']:<8}  {r['seconds']:>4}")
    counts = {k: sum(r["result"] == k for r in results)
              for k in ("caught", "survived", "stale", "broken")}
    total = round(time.monotonic() - start)
    builds = sum(r.get("build", 0) for r in results)
    print(f"\nmutants: {len(results)} run in {total} s: " +
          ", ".join(f"{v} {k}" for k, v in counts.items()) +
          f" (their builds took {builds} s of the {sum(r['seconds'] for r in results)} s)")
    bad = [r for r in results if r["result"] != "caught"]
    for r in bad:
        print(f"mutants: {r['name']} {r['result']}: {r['detail']}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
