#!/usr/bin/env python3
"""Start-up: what a preloaded process and a launched command cost, beside peers' libraries.

usage: startup.py --build DIR --out DIR [--quick]

Three measures, each a ratio of runs made side by side in this one invocation
(pairs interleaved, so that the load of a shared machine falls on both):

- spawn loop: a shell starting /bin/true 300 times, with a library preloaded
  (every /bin/true loads it) over the same loop without; libbackoff, under the
  launcher too, an empty library (build/bench/empty.so: the floor that any
  preload pays, measured in this run), and the peers' libraries that are
  installed (Debian's eatmydata, torsocks, faketime: a peer that is missing is
  skipped);
- launcher: backoff -- /bin/true against env /bin/true, ms per invocation,
  with the default engine and with --engine preload, and a static program
  (build/static/whoami, which only the supervisor reaches) through the
  launcher against the same through env; the launcher is the program that
  make install installs (build/backoff), not the source tree's shell entry;
- short exchanges: a loop of nc clients against a healthy local server that
  answers and closes, clients per second with the library over without;
- instructions: /bin/true's user-space instructions (valgrind's callgrind:
  the same count at every run), without a preload, with the empty library and
  with libbackoff, and what the loader and the constructor take of the
  difference.

Writes OUT/startup.md.  Standard library only.
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The peers' libraries where Debian installs them (multiarch directory of this machine).
PEERS = [
    ("libeatmydata", "eatmydata", "libeatmydata.so"),
    ("libtorsocks", "torsocks", "torsocks/libtorsocks.so"),
    ("libfaketime", "faketime", "faketime/libfaketime.so.1"),
]

# Goals of the start-up issue, for the verdict column.
GOAL_SPAWN = 1.10
# Against the empty library of the same run: the floor of a preload.
GOAL_SPAWN_OVER_EMPTY = 0.03
GOAL_EXCHANGE_UNDER_EMPTY = 0.03
GOAL_LAUNCHER_RATIO = 1.15
GOAL_LAUNCHER_STATIC_RATIO = 2.0
GOAL_EXCHANGE_PRELOAD = 0.95
GOAL_EXCHANGE_LAUNCHER = 0.90
GOAL_INSTRUCTIONS_OVER_EMPTY = 20000


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BACKOFF") and k not in ("LD_PRELOAD", "LIBBACKOFF_NAMES_SAID")}
    env.update(extra)
    return env


def multiarch_dirs():
    dirs = []
    try:
        arch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True,
                              check=False).stdout.strip()
        if arch:
            dirs.append(os.path.join("/usr/lib", arch))
    except OSError:
        pass
    return dirs + ["/usr/lib", "/usr/lib64"]


def find_peers():
    found = []
    for name, package, rel in PEERS:
        for d in multiarch_dirs():
            path = os.path.join(d, rel)
            if os.path.exists(path):
                found.append((name, package, path))
                break
        else:
            found.append((name, package, None))
    return found


def timed(cmd, env, stdin=None):
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdin=stdin, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def spawn_loop(n):
    return ["sh", "-c", f'i=0; while [ $i -lt {n} ]; do /bin/true; i=$((i + 1)); done']


def ratio_rows(variants, pairs):
    """variants: (label, cmd, env) run in pairs with the bare (first) one; median ratios."""
    bare_label, bare_cmd, bare_env = variants[0]
    ratios = {label: [] for label, _, _ in variants[1:]}
    bare_times = []
    for _ in range(pairs):
        for label, cmd, env in variants[1:]:
            a = timed(bare_cmd, bare_env)
            b = timed(cmd, env)
            bare_times.append(a)
            ratios[label].append(b / a)
    return statistics.median(bare_times), {k: statistics.median(v) for k, v in ratios.items()}


def serve(sock, stop, greet):
    """A healthy server: each connection gets one line (a greeting, or the answer to the
    client's line), then the close."""
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            conn, _ = sock.accept()
        except socket.timeout:
            continue
        except OSError:
            return
        try:
            if not greet:
                conn.settimeout(5)
                conn.recv(100)
            conn.sendall(b"ok\n")
        except OSError:
            pass
        conn.close()


def exchange_loop(port, n, greet):
    said = "</dev/null\n" if greet else "<<EOF\nhi\nEOF\n"
    return ["sh", "-c", f'i=0; while [ $i -lt {n} ]; do nc -N 127.0.0.1 {port} >/dev/null {said}'
            f'[ $? = 0 ] || exit 1; i=$((i + 1)); done']


def callgrind_true(preload, out):
    """(total, {part: inclusive count}) of /bin/true with @preload (None: none) under callgrind."""
    env = clean_env(**({"LD_PRELOAD": preload} if preload else {}))
    r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "/bin/true"],
                       env=env, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"callgrind: {r.stderr[-300:]}")
    a = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                       capture_output=True, text=True, check=False).stdout
    total, parts = 0, {}
    for line in a.splitlines():
        f = line.split()
        if not f or not f[0][0].isdigit():
            continue
        n = int(f[0].replace(",", ""))
        if "PROGRAM TOTALS" in line:
            total = n
        for key, part in (("dl-reloc.c:_dl_relocate_object", "relocation"),
                          ("dl-version.c:_dl_check_all_versions", "versions"),
                          (":init_constructor ", "constructor"),
                          ("dlsym.c:dlsym@", "dlsym")):
            if key in line and part not in parts:
                parts[part] = n
    return total, parts


def instructions(lib, empty, tmp):
    """The instructions section's lines."""
    runs = {label: callgrind_true(pre, os.path.join(tmp, f"cg.{i}"))
            for i, (label, pre) in enumerate((("without", None), ("empty library", empty),
                                               ("libbackoff", lib)))}
    base = runs["empty library"]
    over = runs["libbackoff"][0] - base[0]
    lines = ["## Instructions: /bin/true, start to exit", "",
             "User-space instructions counted by callgrind (one run each: the count is the same "
             "at every run). Goal: libbackoff at most "
             f"{GOAL_INSTRUCTIONS_OVER_EMPTY:,} over the empty library.", "",
             "| preload | instructions | over the empty library | relocation | versions "
             "| constructor | of which dlsym | goal |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for label, (total, parts) in runs.items():
        cells = [f"{parts.get(k, 0):,}" for k in ("relocation", "versions", "constructor",
                                                    "dlsym")]
        rel = "" if label == "without" else f"{total - base[0]:+,}"
        goal = verdict(over <= GOAL_INSTRUCTIONS_OVER_EMPTY) if label == "libbackoff" else ""
        lines.append(f"| {label} | {total:,} | {rel} | " + " | ".join(cells) + f" | {goal} |")
    lines.append("")
    return lines


def verdict(ok):
    return "met" if ok else "missed"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    lib = os.path.abspath(os.path.join(a.build, "libbackoff.so"))
    launcher = os.path.abspath(os.path.join(a.build, "backoff"))
    static = os.path.abspath(os.path.join(a.build, "static", "whoami"))
    empty = os.path.abspath(os.path.join(a.build, "bench", "empty.so"))
    spawns, pairs = (50, 2) if a.quick else (300, 10)
    invocations, lrounds = (20, 2) if a.quick else (200, 5)
    clients, epairs = (20, 2) if a.quick else (100, 7)
    os.makedirs(a.out, exist_ok=True)
    lines = ["# Start-up cost", ""]
    if a.quick:
        lines += ["Quick run: reduced sizes, not for numbers.", ""]

    # 1. The spawn loop.
    peers = find_peers()
    bare = clean_env()
    variants = [("without", spawn_loop(spawns), bare),
                ("libbackoff", spawn_loop(spawns), clean_env(LD_PRELOAD=lib)),
                ("empty library", spawn_loop(spawns), clean_env(LD_PRELOAD=empty)),
                ("libbackoff, launcher --engine preload",
                 [launcher, "--engine", "preload", "--"] + spawn_loop(spawns), bare),
                ("libbackoff, launcher (default engine)",
                 [launcher, "--"] + spawn_loop(spawns), bare)]
    for name, _, path in peers:
        if path:
            variants.append((name, spawn_loop(spawns), clean_env(LD_PRELOAD=path)))
    base, ratios = ratio_rows(variants, pairs)
    lines += [f"## Spawn loop: a shell starting /bin/true {spawns} times", "",
              f"Median of {pairs} pairs, each the loop with the library over the loop without "
              f"({base / spawns * 1e6:.0f} us per /bin/true without). Goals for libbackoff "
              f"preloaded: at most {GOAL_SPAWN:.2f}, and at most the empty library's ratio "
              f"plus {GOAL_SPAWN_OVER_EMPTY:.2f}.", "",
              "| library | ratio | extra per exec (us) | goal |", "|---|---|---|---|"]
    for label, r in ratios.items():
        goal = ""
        if label == "libbackoff" and not a.quick:
            goal = verdict(r <= GOAL_SPAWN and
                           r <= ratios["empty library"] + GOAL_SPAWN_OVER_EMPTY)
        lines.append(f"| {label} | {r:.3f} | {(r - 1) * base / spawns * 1e6:+.0f} | {goal} |")
    for name, package, path in peers:
        if not path:
            lines.append(f"| {name} | skipped: not installed (apt-get install {package}) | | |")
    lines.append("")

    # 2. The launcher, per invocation: each row against its own program through env.
    one = {"env /bin/true": (["env", "/bin/true"], None, None),
           "backoff --engine preload -- /bin/true":
               ([launcher, "--engine", "preload", "--", "/bin/true"], "env /bin/true", None),
           "backoff -- /bin/true":
               ([launcher, "--", "/bin/true"], "env /bin/true", GOAL_LAUNCHER_RATIO),
           "env STATIC": (["env", static], None, None),
           "backoff -- STATIC": ([launcher, "--", static], "env STATIC",
                                 GOAL_LAUNCHER_STATIC_RATIO)}
    samples = {k: [] for k in one}
    for _ in range(lrounds):
        for k, (cmd, _, _) in one.items():
            t = time.perf_counter()
            for _ in range(invocations):
                subprocess.run(cmd, env=bare, check=True, stdout=subprocess.DEVNULL)
            samples[k].append((time.perf_counter() - t) / invocations * 1000)
    lines += ["## Launcher: one short command", "",
              f"Each command {invocations} times a round, the rounds interleaved, median of "
              f"{lrounds} rounds; each row over its program started by `env`. STATIC is "
              "build/static/whoami, a static program that runs under the supervisor. Goals: "
              f"`backoff -- /bin/true` at most {GOAL_LAUNCHER_RATIO:.2f} times "
              f"`env /bin/true`, a static program at most {GOAL_LAUNCHER_STATIC_RATIO:.1f} "
              "times.", "",
              "| command | ms per invocation | ratio | goal |", "|---|---|---|---|"]
    for k, (_, base, goal) in one.items():
        m = statistics.median(samples[k])
        if base is None:
            lines.append(f"| {k} | {m:.2f} | | |")
            continue
        r = m / statistics.median(samples[base])
        mark = "" if goal is None or a.quick else verdict(r <= goal)
        lines.append(f"| {k} | {m:.2f} | {r:.2f} | {mark} |")
    lines.append("")

    # 3. Short exchanges against a healthy server.
    lines += ["## Short exchanges: nc clients against a healthy server", ""]
    if not shutil.which("nc"):
        lines += ["Skipped: nc not installed (apt-get install netcat-openbsd).", ""]
    else:
        # A state file of the run's own, in which nothing is down: the host of a healthy
        # process (its first client maps it and leaves the quiet mark beside it).
        state_dir = tempfile.mkdtemp(prefix="backoff-startup-")
        env = {"BACKOFF_SHARED": os.path.join(state_dir, "state")}
        results = {}
        for greet in (False, True):
            srv = socket.socket()
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            srv.bind(("127.0.0.1", 0))
            srv.listen(256)
            port = srv.getsockname()[1]
            stop = threading.Event()
            th = threading.Thread(target=serve, args=(srv, stop, greet), daemon=True)
            th.start()
            try:
                loop = exchange_loop(port, clients, greet)
                variants = [("without", loop, bare),
                            ("empty library", loop, clean_env(LD_PRELOAD=empty)),
                            ("preload", loop, clean_env(LD_PRELOAD=lib, **env))]
                if not greet:
                    variants.append(("launcher", [launcher, "--"] + loop, clean_env(**env)))
                _, results[greet] = ratio_rows(variants, epairs)
            finally:
                stop.set()
                th.join()
                srv.close()
        shutil.rmtree(state_dir, ignore_errors=True)
        lines += [f"A shell running {clients} `nc -N` clients one after another, each "
                  "sending a line (a here-document) and answered with one line, then the "
                  "close; the rate (clients per second) with "
                  f"libbackoff over the rate without, median of {epairs} pairs, on a host where "
                  "nothing is down (a state file of the run's own). Goals: at "
                  f"least {GOAL_EXCHANGE_PRELOAD:.2f} preloaded, "
                  f"{GOAL_EXCHANGE_LAUNCHER:.2f} under the launcher, and each at least the "
                  f"empty library's rate minus {GOAL_EXCHANGE_UNDER_EMPTY:.2f}. The last two "
                  "rows: clients that send nothing, to a server that greets them on a port "
                  "whose protocol does not say it speaks first: each process notes that "
                  "the server greets, host-wide (for a later close before the greeting), "
                  "which maps the state file.", "",
                  "| under | rate ratio | goal |", "|---|---|---|"]
        r = results[False]
        floor = 1 / r["empty library"]
        lines.append(f"| empty library | {floor:.3f} | |")
        for label, goal in (("preload", GOAL_EXCHANGE_PRELOAD),
                            ("launcher", GOAL_EXCHANGE_LAUNCHER)):
            rate = 1 / r[label]
            ok = rate >= goal and rate >= floor - GOAL_EXCHANGE_UNDER_EMPTY
            lines.append(f"| {label} | {rate:.3f} | {'' if a.quick else verdict(ok)} |")
        g = results[True]
        lines.append(f"| empty library, a greeting server | {1 / g['empty library']:.3f} | |")
        lines.append(f"| preload, a greeting server | {1 / g['preload']:.3f} | |")
        lines.append("")

    # 4. Instructions.
    if shutil.which("valgrind") and shutil.which("callgrind_annotate"):
        lines += instructions(lib, empty, a.out)
        for i in range(3):
            try:
                os.unlink(os.path.join(a.out, f"cg.{i}"))
            except OSError:
                pass

    lines.append("Generated by tests/bench/startup.py.")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "startup.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
