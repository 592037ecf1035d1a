#!/usr/bin/env python3
"""libbackoff benchmarks: fast-path cost, recovery, the herd, timing, size, scale, shared fate.

usage: run.py --build DIR --out DIR [--quick]

Writes OUT/report.md and OUT/herd.svg; raw logs go to BUILD/bench/data (or
BUILD/bench-quick/data).  Standard library only.  --quick runs a reduced set
in well under a minute, only to prove that every part still runs: it asserts
nothing about speed.  Absolute times on a shared machine are noisy, so every
comparison is a ratio of runs made in the same invocation.  Part 7 makes network
namespaces (unshare -n, a veth pair): without root its herd rows are skipped.
"""

import argparse
import collections
import json
import math
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import callgrind  # noqa: E402  (next to this script)
import figure  # noqa: E402
import machine  # noqa: E402
import nginx as nginx_conf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Published results compared with in part 3 (../shared/research/backoff-policies.md,
# "connect storm", N = 1000, outage 5 s, capacity 50 per 100 ms, base 100 ms, cap 10 s):
# attempts per client, of which after recovery, p50 and p99 connect (s), peak per 100 ms
# after recovery.  Its "none" row is exponential without jitter; its proportional row is the
# gRPC shape (100 ms, x1.6, +-20 %); additive has no counterpart.
PUBLISHED = {
    "none": (30.4, 24.4, 233.0, 503.0, 1000),
    "full": (8.3, 1.01, 7.6, 14.1, 32),
    "equal": (7.7, 1.07, 8.6, 11.5, 67),
    "decorrelated": (9.0, 1.12, 6.3, 11.9, 73),
    "proportional": (9.3, 1.32, 7.4, 12.4, 99),
}

HTTP_REPLY = "HTTP/1.0 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"

# Part 7 runs its herds in network namespaces of their own (unshare -n), so that the kernel's
# Tcp counters count only their attempts.  Each script prints the namespace's two "Tcp:" lines
# of /proc/net/snmp before and after "$@", as "snmp before|after HEADER|VALUES".
NETNS_SNMP = r"""
snmp() { printf 'snmp %s %s\n' "$1" "$(grep '^Tcp:' "$2" | paste -sd '|')"; }
"""
# The clients' namespace is the one unshare made: loopback up, nothing else.
NETNS_LOCAL = NETNS_SNMP + r"""
ip link set lo up || exit 97
snmp before /proc/net/snmp
"$@"
rc=$?
snmp after /proc/net/snmp
exit "$rc"
"""
# The server stays in the namespace unshare made (10.9.0.2 on veth0); the clients enter a
# second one (10.9.0.1 on veth1), held by a sleeping process: herd's children join it through
# HERD_NETNS.  Both namespaces, and the veth pair with them, go when their processes end.
NETNS_REMOTE = NETNS_SNMP + r"""
ip link set lo up || exit 97
unshare -n sleep 600 &
hold=$!
i=0
while [ "$(readlink "/proc/$hold/ns/net")" = "$(readlink /proc/self/ns/net)" ]; do
    i=$((i + 1))
    [ "$i" -lt 500 ] || exit 98
    sleep 0.01
done
if ! { ip link add veth0 type veth peer name veth1 netns "$hold" &&
    ip addr add 10.9.0.2/24 dev veth0 && ip link set veth0 up &&
    nsenter -t "$hold" -n sh -c 'ip link set lo up && ip addr add 10.9.0.1/24 dev veth1 &&
        ip link set veth1 up'; }; then
    kill "$hold"
    exit 98
fi
snmp before "/proc/$hold/net/snmp"
HERD_ADDR=10.9.0.2 HERD_NETNS=/proc/$hold/ns/net "$@"
rc=$?
snmp after "/proc/$hold/net/snmp"
kill "$hold"
exit "$rc"
"""


# ---------------------------------------------------------------------------- helpers

def percentile(values, p):
    """Linear interpolation between closest ranks (numpy's default)."""
    v = sorted(values)
    if not v:
        return float("nan")
    k = (len(v) - 1) * p / 100.0
    lo = math.floor(k)
    hi = math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def median(values):
    return percentile(values, 50)


def median_ci(values, level=0.95, resamples=2000):
    """A bootstrap confidence interval of the median (fixed seed: the same data, the same CI)."""
    rng = random.Random(1)
    meds = sorted(median(rng.choices(values, k=len(values))) for _ in range(resamples))
    lo = meds[int(resamples * (1 - level) / 2)]
    hi = meds[int(resamples * (1 + level) / 2) - 1]
    return lo, hi


def clean_env(**extra):
    """The driver's environment without any BACKOFF_* or LD_PRELOAD, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BACKOFF") and k not in ("LD_PRELOAD", "MALLOC_COUNT_FILE")}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_spaced(jobs, work, spacing):
    """Run work(job) for each job in a thread of its own, started spacing s apart;
    returns the seconds until all ended."""
    threads = []
    started = time.monotonic()
    for job in jobs:
        th = threading.Thread(target=work, args=(job,))
        th.start()
        threads.append(th)
        time.sleep(spacing)
    for th in threads:
        th.join()
    return time.monotonic() - started


def read_json_lines(path):
    events = []
    if not os.path.exists(path):
        return events
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass
    return events


def loadavg():
    with open("/proc/loadavg", encoding="ascii") as f:
        return " ".join(f.read().split()[:3])


def fmt_ratio(r):
    return "n/a" if r is None or math.isnan(r) else f"{r:.3f}"


def fmt_num(v, digits=0):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{v:,.{digits}f}"


class Bench:
    def __init__(self, args):
        self.quick = args.quick
        self.build = os.path.abspath(args.build)
        self.out = os.path.abspath(args.out)
        self.lib = os.path.join(self.build, "libbackoff.so")
        self.probe = os.path.join(self.build, "helpers", "probe")
        self.listener = os.path.join(self.build, "helpers", "late-listener")
        self.fastpath = os.path.join(self.build, "bench", "fastpath")
        self.herd = os.path.join(self.build, "bench", "herd")
        self.malloc_count = os.path.join(self.build, "bench", "malloc_count.so")
        self.gate = os.path.join(self.build, "bench", "gate.so")
        self.data = os.path.join(self.build, "bench-quick" if self.quick else "bench", "data")
        for f in (self.lib, self.probe, self.listener, self.fastpath, self.herd,
                  self.malloc_count, self.gate):
            if not os.path.exists(f):
                sys.exit(f"bench: {f} is missing: build with make bench")
        shutil.rmtree(self.data, ignore_errors=True)
        os.makedirs(self.data)
        os.makedirs(self.out, exist_ok=True)
        self.sections = []
        self.headline = []
        self.missed = []
        self.notes = []
        self.failures = []  # runs that did not do what they should: make bench fails
        self.loads = []

    def judge(self, ok, what):
        """The verdict for a target; a quick run judges nothing (its sizes are too small)."""
        if self.quick:
            return "not judged (quick run)"
        if not ok:
            self.missed.append(what)
        return "met" if ok else "**missed**"

    def log(self, msg):
        print(f"bench: {msg}", flush=True)

    def mark_load(self, label):
        self.loads.append((label, loadavg()))

    # ------------------------------------------------------------------ 1. fast path

    def part_fastpath(self):
        self.log("1/7 fast-path cost")
        if self.quick:
            modes = [("send", 10000, 2), ("poll", 10000, 2), ("epoll", 10000, 2),
                     ("unix-connect", 1000, 2), ("tcp-connect", 1000, 2)]
        else:
            # Pairs per program: more for the short runs, about 15-30 s each.
            modes = [("send", 1000000, 21), ("poll", 1000000, 41), ("epoll", 1000000, 41),
                     ("unix-connect", 100000, 21), ("tcp-connect", 100000, 15)]
        targets = {"send": 1.01, "poll": 1.01, "epoll": 1.01, "unix-connect": 1.02,
                   "tcp-connect": 1.02}
        cpu = max(os.sched_getaffinity(0))

        def pin():
            os.sched_setaffinity(0, {cpu})

        def once(mode, n, preload):
            env = clean_env(LD_PRELOAD=self.lib) if preload else clean_env()
            t0 = time.perf_counter_ns()
            r = subprocess.run([self.fastpath, mode, str(n)], env=env, capture_output=True,
                               text=True, preexec_fn=pin, check=False)
            wall = time.perf_counter_ns() - t0
            if r.returncode != 0:
                raise RuntimeError(f"fastpath {mode}: {r.stderr.strip()}")
            loop = int(re.search(r"loop_ns=(\d+)", r.stdout).group(1))
            return wall, loop

        rows = []
        for mode, n, pairs in modes:
            once(mode, n, False)  # warm the page cache and the branch predictors
            walls = {False: [], True: []}
            loops = {False: [], True: []}
            for i in range(pairs):
                order = (False, True) if i % 2 == 0 else (True, False)
                for preload in order:
                    w, lp = once(mode, n, preload)
                    walls[preload].append(w)
                    loops[preload].append(lp)
            ratios = [w / o for w, o in zip(walls[True], walls[False])]
            loop_ratios = [w / o for w, o in zip(loops[True], loops[False])]
            extra_ns = [(w - o) / n for w, o in zip(loops[True], loops[False])]
            r = {
                "mode": mode, "n": n, "pairs": pairs,
                "ns_without": median(loops[False]) / n, "ns_with": median(loops[True]) / n,
                "ratio_med": median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                "loop_ratio_med": median(loop_ratios), "extra_ns": median(extra_ns),
                "min_ratio": min(walls[True]) / min(walls[False]),
                "ci": median_ci(ratios),
                "target": targets[mode],
            }
            rows.append(r)
            self.log(f"  {mode}: ratio {r['ratio_med']:.3f} [{r['ratio_min']:.3f}, "
                     f"{r['ratio_max']:.3f}]")
        self.mark_load("after fast-path timing")
        worst = max(rows[:3], key=lambda r: r["ratio_med"])
        worst_c = max(rows[3:], key=lambda r: r["ratio_med"])
        self.headline.append(
            f"fast path: whole-process time ratio with/without at most {worst['ratio_med']:.3f} "
            f"(`{worst['mode']}`) for send/poll/epoll_wait and {worst_c['ratio_med']:.3f} "
            f"(`{worst_c['mode']}`) for connect (medians of "
            f"{min(m[2] for m in modes)}-{max(m[2] for m in modes)} pairs)")
        cg = self.callgrind()

        lines = ["## 1. Fast-path cost", ""]
        lines.append(
            "Each program runs *pairs* times without and as many times with `LD_PRELOAD`, in "
            "alternation (ABBA order), pinned to one CPU; the ratio is with / without of the "
            "wall time of the whole process (start-up included), one ratio per pair. *95 % CI* "
            "is a bootstrap interval of the median ratio: what this machine's noise allows "
            "the run to resolve. "
            "*loop ratio* times the loop alone (inside the program); *fastest* is the ratio "
            "of the fastest run with to the fastest run without, the least disturbed by "
            "other work on the machine.")
        lines.append("")
        lines.append("| program | calls | pairs | ns/call without | ns/call with | ratio median | "
                     "95 % CI | min | max | loop ratio | fastest | target | |")
        lines.append("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|")
        names = {"send": "`send` 1 byte, unix dgram socketpair",
                 "poll": "`poll` one ready fd, timeout 0",
                 "epoll": "`epoll_wait` one ready fd, timeout 0",
                 "unix-connect": "`connect`+`close` unix stream (+accept)",
                 "tcp-connect": "`connect`+`close` TCP loopback (+accept)"}
        for r in rows:
            noise = r["ci"][0] <= r["target"] < r["ratio_med"]
            verdict = self.judge(
                r["ratio_med"] <= r["target"],
                f"fast path `{r['mode']}`: whole-process ratio {r['ratio_med']:.3f} > "
                f"{r['target']} (95 % CI {r['ci'][0]:.3f}-{r['ci'][1]:.3f}, min "
                f"{r['ratio_min']:.3f}, max {r['ratio_max']:.3f}, fastest runs "
                f"{r['min_ratio']:.3f})" + (": within this run's noise, the interval reaches "
                                           "the target; the instruction count below is the "
                                           "stable measure" if noise else ""))
            if noise and not self.quick:
                verdict += " (within noise)"
            lines.append(
                f"| {names[r['mode']]} | {r['n']:,} | {r['pairs']} | {r['ns_without']:.0f} | "
                f"{r['ns_with']:.0f} | **{r['ratio_med']:.3f}** | "
                f"{r['ci'][0]:.3f}-{r['ci'][1]:.3f} | {r['ratio_min']:.3f} | "
                f"{r['ratio_max']:.3f} | {r['loop_ratio_med']:.3f} | {r['min_ratio']:.3f} | "
                f"<= {r['target']} | {verdict} |")
        lines.append("")
        lines.append(
            "`send` drains the receiver with one `recvmmsg` (not intercepted) every 64 sends, "
            "so that the socket buffer never fills. The connect loops do `socket`, `connect`, "
            "`accept`, then `close` both ends; on TCP the client closes with `SO_LINGER` 0 "
            "(a reset), so no socket lingers in TIME_WAIT and 10^5 connects do not run out of "
            "ephemeral ports. `perf stat -e instructions` is not supported on this virtual "
            "machine, so the instruction counts come from callgrind.")
        lines.append("")
        lines += cg
        self.sections.append("\n".join(lines))

    def callgrind_total(self, mode, n, preload):
        env = clean_env(LD_PRELOAD=self.lib) if preload else clean_env()
        out = os.path.join(self.data, f"cg-{mode}-{n}-{int(preload)}.out")
        return callgrind.total(self.fastpath, mode, n, env, out)

    def callgrind(self):
        if shutil.which("valgrind") is None:
            self.notes.append("valgrind is not installed: no instruction counts")
            return ["valgrind is not installed: no instruction counts.", ""]
        if self.quick:
            modes = [("poll", 1000), ("close", 1000), ("unix-connect", 200)]
        else:
            modes = [("send", 20000), ("poll", 20000), ("epoll", 20000), ("close", 20000),
                     ("write", 20000), ("unix-connect", 2000), ("tcp-connect", 2000)]
        per = {}
        rows = []
        for mode, n in modes:
            runs = {(p, k): self.callgrind_total(mode, k, p) for p in (False, True)
                    for k in (0, n)}
            t = {key: v[0] for key, v in runs.items()}
            f = {key: v[1] for key, v in runs.items()}
            where = collections.Counter()
            for key in set().union(*f.values()):
                d = ((f[(True, n)][key] - f[(True, 0)][key]) -
                     (f[(False, n)][key] - f[(False, 0)][key])) / n
                if abs(d) >= 0.5:
                    where[key] = d
            base = (t[(False, n)] - t[(False, 0)]) / n
            extra = ((t[(True, n)] - t[(True, 0)]) - (t[(False, n)] - t[(False, 0)])) / n
            startup = t[(True, 0)] - t[(False, 0)]
            per[mode] = extra
            rows.append((mode, n, base, extra, startup, where))
        lines = ["### Instructions per call (callgrind)", "",
                 "User-space instructions counted by `valgrind --tool=callgrind` (kernel time "
                 "is not counted, so this is exactly what the hooks add). Extra per call = "
                 "((with, N) - (with, 0) - (without, N) + (without, 0)) / N: the runs with 0 "
                 "iterations remove start-up. *start-up* is what loading the library adds "
                 "once per process (constructor, symbol resolution, configuration).", "",
                 "| loop | N | instructions per iteration without | extra with libbackoff | "
                 "target | | where the extra goes, per call | start-up extra |",
                 "|---|---:|---:|---:|---:|---|---|---:|"]
        targets = {"send": 25, "poll": 25, "epoll": 25}
        for mode, n, base, extra, startup, where in rows:
            tgt = targets.get(mode)
            verdict = ""
            if tgt is not None:
                verdict = self.judge(extra <= tgt, f"callgrind `{mode}`: {extra:.1f} extra "
                                     f"instructions per call > {tgt}")
            label = {"close": "`dup`+`close` (the close hook)",
                     "write": "`write` 1 byte to /dev/null (the read/write hooks)",
                     "unix-connect": "unix connect iteration (connect + 2 close)",
                     "tcp-connect": "TCP connect iteration (connect + 2 close)"}.get(
                         mode, f"`{mode}`")
            spots = ", ".join(f"`{k}` {v:+.0f}" for k, v in where.most_common(4))
            lines.append(f"| {label} | {n:,} | {base:,.0f} | **{extra:.1f}** | "
                         f"{'<= ' + str(tgt) if tgt else ''} | {verdict} | {spots} | "
                         f"{startup:,} |")
        close_extra = per.get("close")
        if close_extra is not None:
            for mode in ("unix-connect", "tcp-connect"):
                if mode in per:
                    c = per[mode] - 2 * close_extra
                    verdict = self.judge(c <= 60, f"callgrind `{mode}`: {c:.1f} extra "
                                         "instructions per connect > 60")
                    lines.append(f"| `connect` alone ({mode.split('-')[0]}): iteration - 2 x "
                                 f"close | | | **{c:.1f}** | <= 60 | {verdict} | | |")
        lines.append("")
        self.cg_per = per
        parts = [f"{'epoll_wait' if m == 'epoll' else m} {per[m]:.0f}"
                 for m in ("send", "poll", "epoll") if m in per]
        text = ", ".join(parts) + " (target 25)" if parts else ""
        conn = [per[m] - 2 * close_extra for m in ("unix-connect", "tcp-connect")
                if m in per and close_extra is not None]
        if conn:
            text += f"; connect {max(conn):.0f} (target 60)"
        others = [f"{m} {per[m]:.0f}" for m in ("close", "write") if m in per]
        if others:
            text += "; " + ", ".join(others) + " (no target)"
        self.headline.append("instructions added per call (callgrind): " + text)
        return lines

    # ------------------------------------------------------------------ 2. recovery

    def recovery_job(self, t_ms, method, seed, tmp):
        d = tempfile.mkdtemp(prefix=f"rec-{t_ms}-{method[0]}-", dir=tmp)
        port_file = os.path.join(d, "port")
        log = os.path.join(d, "log.json")
        count = 2 if method[0] == "wait-for-it" else 1
        srv = subprocess.Popen(
            [self.listener, "--tcp", "127.0.0.1:0", "--port-file", port_file, "--after",
             str(t_ms), "--count", str(count), "--send", HTTP_REPLY, "--linger-ms", "2000"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
        deadline = time.monotonic() + 5
        while not os.path.exists(port_file) and time.monotonic() < deadline:
            time.sleep(0.002)
        with open(port_file, encoding="ascii") as f:
            port = int(f.read().strip())
        addr = f"127.0.0.1:{port}"
        url = f"http://{addr}/"
        kind, extra = method
        # The policies alone: looks for the listener (part 7) would hide them.
        lib_env = dict(LD_PRELOAD=self.lib, BACKOFF_LOG="info", BACKOFF_LOG_FORMAT="json",
                       BACKOFF_LOG_FILE=log, BACKOFF_SEED=seed, BACKOFF_SHARED="off", **extra)
        if kind == "libbackoff":
            cmd, env = [self.probe, addr], clean_env(**lib_env)
        elif kind == "libbackoff-curl":
            cmd = ["curl", "--no-progress-meter", "-o", "/dev/null", url]
            env = clean_env(**lib_env)
        elif kind == "curl":
            cmd = ["curl", "--no-progress-meter", "-o", "/dev/null", "--retry", "30",
                   "--retry-connrefused", url]
            env = clean_env()
        else:  # wait-for-it: probe once a second, then start the client
            script = ('n=0; until "$0" "$1" >/dev/null 2>&1; do n=$((n+1)); sleep 1; done; '
                      'echo "probes=$((n+1))" >&2; exec "$0" "$1"')
            cmd, env = ["sh", "-c", script, self.probe, addr], clean_env()
        cli = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120,
                             check=False)
        out, _ = srv.communicate(timeout=60)
        listening = [int(x) for x in re.findall(r"listening mono_ms=(\d+)", out)]
        accepted = [int(x) for x in re.findall(r"accepted mono_ms=(\d+)", out)]
        res = {"t_ms": t_ms, "method": method, "ok": False}
        if cli.returncode != 0 or not listening or len(accepted) < count:
            res["error"] = f"client rc={cli.returncode} {cli.stderr.strip()[-200:]}"
            return res
        res["gap_ms"] = accepted[count - 1] - listening[0]
        if kind in ("libbackoff", "libbackoff-curl"):
            ev = read_json_lines(log)
            succ = [e for e in ev if e.get("event") == "success"]
            res["attempts"] = succ[-1]["attempt"] if succ else 1
        elif kind == "curl":
            res["attempts"] = cli.stderr.count("Will retry") + 1
        else:
            m = re.search(r"probes=(\d+)", cli.stderr)
            res["attempts"] = int(m.group(1)) + 1 if m else float("nan")
        res["ok"] = True
        shutil.rmtree(d, ignore_errors=True)
        return res

    def part_recovery(self):
        self.log("2/7 recovery after the server appears")
        methods = [
            ("libbackoff `default`", ("libbackoff", {"BACKOFF_POLICY": "default"})),
            ("libbackoff `grpc`", ("libbackoff", {"BACKOFF_POLICY": "grpc"})),
            ("libbackoff `google`", ("libbackoff", {"BACKOFF_POLICY": "google"})),
            ("libbackoff `BACKOFF_CAP=1s`", ("libbackoff", {"BACKOFF_CAP": "1s"})),
            ("curl under libbackoff `default` (non-blocking)", ("libbackoff-curl", {})),
            ("curl `--retry 30 --retry-connrefused`", ("curl", {})),
            ("wait-for-it loop (probe every 1 s, then client)", ("wait-for-it", {})),
        ]
        if self.quick:
            ts, seeds, spacing = [500], 1, 0.05
            methods = [m for m in methods if m[1][0] != "libbackoff" or
                       m[0] == "libbackoff `default`"]
        else:
            ts, seeds, spacing = [500, 2000, 10000], 20, 0.1
        # The server's time varies by +-25 % from run to run (the same for every method of a
        # run index): a fixed schedule (curl, the 1 s loop) would otherwise always meet T in
        # the same phase; 2 s and 10 s are whole seconds, as the loop's probes are.
        rng = random.Random(5)
        t_run = {(t, s): round(t * rng.uniform(0.75, 1.25)) for t in ts for s in range(seeds)}
        jobs = [(t, t_run[(t, s)], label, m, 1000 + s) for t in ts for label, m in methods
                for s in range(seeds)]
        rng.shuffle(jobs)
        results = []
        lock = threading.Lock()
        tmp = tempfile.mkdtemp(prefix="recovery-", dir=self.data)

        def work(job):
            t, run_t, label, m, seed = job
            try:
                r = self.recovery_job(run_t, m, seed, tmp)
            except Exception as e:  # noqa: BLE001 - recorded as a failed run
                r = {"ok": False, "error": repr(e)}
            r["label"] = label
            r["t_ms"] = t
            with lock:
                results.append(r)

        self.log(f"  {len(jobs)} runs in {run_spaced(jobs, work, spacing):.0f} s")
        self.mark_load("after recovery runs")

        lines = ["## 2. Recovery after the server appears", ""]
        lines.append(
            f"A server (`late-listener`) binds at once and listens only T after start (before "
            f"that every SYN gets a reset: `ECONNREFUSED`); the client starts at 0. T varies "
            f"by +-25 % around the nominal value from one run index to the next, the same for "
            f"every method (so that fixed schedules do not always meet the server in the same "
            f"phase: 2 s and 10 s are whole seconds like the 1 s loop's probes). *gap* = "
            f"accepted connection - listen, from the server's own clock; *attempts* = connect "
            f"attempts the client made. {seeds} runs per cell (libbackoff: `BACKOFF_SEED` "
            f"1000..{1000 + seeds - 1}); all runs of all cells overlap in time, started "
            f"{spacing * 1000:.0f} ms apart in random order (they sleep almost all the time). "
            "The libbackoff rows use the C `probe` (a blocking connect); curl under libbackoff "
            "retries inside curl's own event loop. *ratio* = the row's median gap / libbackoff "
            "`default`'s median gap at the same T (lower is faster recovery). The libbackoff rows "
            "run with `BACKOFF_SHARED=off`: the policies alone, since a look for the listener "
            "would find it within 10 ms whatever the policy (part 7).")
        lines.append("")
        lines.append("| T | method | median gap ms | p90 gap ms | median attempts | "
                     "p90 attempts | gap ratio to `default` | runs |")
        lines.append("|---:|---|---:|---:|---:|---:|---:|---:|")
        failures = [r for r in results if not r["ok"]]
        summary = {}
        for t in ts:
            base = [r["gap_ms"] for r in results
                    if r["ok"] and r["t_ms"] == t and r["label"] == methods[0][0]]
            base_med = median(base) if base else float("nan")
            for label, _ in methods:
                rs = [r for r in results if r["ok"] and r["t_ms"] == t and r["label"] == label]
                if not rs:
                    lines.append(f"| {t / 1000:g} s | {label} | failed | | | | | 0 |")
                    continue
                gaps = [r["gap_ms"] for r in rs]
                att = [r["attempts"] for r in rs]
                ratio = median(gaps) / base_med if base_med else float("nan")
                summary[(t, label)] = (median(gaps), ratio)
                lines.append(
                    f"| {t / 1000:g} s | {label} | {median(gaps):,.0f} | "
                    f"{percentile(gaps, 90):,.0f} | {median(att):g} | "
                    f"{percentile(att, 90):.1f} | {fmt_ratio(ratio)} | {len(rs)} |")
            lines.append(f"| {t / 1000:g} s | ideal | 0 | 0 | 1 (after T) | 1 | 0 | |")
        lines.append("")
        if failures:
            lines.append(f"{len(failures)} run(s) failed: " + "; ".join(
                f"T={r['t_ms']} {r.get('label')}: {r.get('error')}" for r in failures[:5]))
            lines.append("")
            self.failures.append(f"recovery: {len(failures)} run(s) failed")
        lines.append(
            "Expected shapes: full jitter (`default`, cap 10 s) waits U(0, w) with w doubling "
            "from 100 ms, so its gap grows with T up to the cap; `BACKOFF_CAP=1s` bounds the gap "
            "by about 1 s at the cost of more attempts; `grpc` (1 s x1.6 +-20 %) and `google` "
            "(1 s x2 + U(0, 1 s)) start at 1 s; curl retries after 1, 2, 4, 8 ... s; the "
            "wait-for-it loop is within 1 s plus a process start. The trade is visible in the "
            "attempts column: a fixed 1 s loop (or a 1 s cap) recovers fastest but its "
            "attempts grow linearly with the outage, which is what the herd (part 3) multiplies "
            "by the number of clients.")
        self.sections.append("\n".join(lines))
        self.rec_summary = summary
        t_mid = 10000 if 10000 in ts else ts[0]
        parts = []
        for label, short in (("curl `--retry 30 --retry-connrefused`", "curl --retry"),
                             ("wait-for-it loop (probe every 1 s, then client)", "wait-for-it"),
                             ("libbackoff `grpc`", "grpc"),
                             ("libbackoff `BACKOFF_CAP=1s`", "cap 1s")):
            if (t_mid, label) in summary:
                parts.append(f"{short} {fmt_ratio(summary[(t_mid, label)][1])}")
        if (t_mid, methods[0][0]) in summary:
            self.headline.append(
                f"recovery (T = {t_mid / 1000:g} s): libbackoff `default` median gap "
                f"{summary[(t_mid, methods[0][0])][0]:.0f} ms; gap ratios of the others to it: "
                + ", ".join(parts))

    # ------------------------------------------------------------------ 3. herd

    def run_herd(self, strategy, clients, after_ms, tag, extra_env=None, probe_args=()):
        log = os.path.join(self.data, f"{tag}.json")
        # The jitter strategies alone, unless the caller shares (part 7).
        env = clean_env(HERD_PRELOAD=self.lib, HERD_GATE=self.gate, BACKOFF_LOG="info", BACKOFF_LOG_FORMAT="json",
                        BACKOFF_LOG_FILE=log, **{"BACKOFF_SHARED": "off", **(extra_env or {})})
        if strategy:
            env["BACKOFF_JITTER"] = strategy
        r = subprocess.run([self.herd, str(clients), str(after_ms), self.probe, *probe_args],
                           env=env, capture_output=True, text=True, timeout=after_ms / 1000 + 150,
                           check=False)
        released = int(re.search(r"released mono_ms=(\d+)", r.stdout).group(1))
        listening = int(re.search(r"listening mono_ms=(\d+)", r.stdout).group(1))
        accepted = [int(x) for x in re.findall(r"accepted mono_ms=(\d+)", r.stdout)]
        done = re.search(r"done clients=(\d+) ok=(\d+) accepted=(\d+)", r.stdout)
        ok = int(done.group(2)) if done else 0
        return {"events": read_json_lines(log), "released": released, "listening": listening,
                "accepted": accepted, "ok": ok, "stderr": r.stderr}

    def part_herd(self):
        self.log("3/7 the herd")
        strategies = ["none", "full", "equal", "decorrelated", "additive", "proportional"]
        if self.quick:
            clients, after, strategies = 20, 1000, ["none", "full"]
        else:
            clients, after = 200, 5000
        window = 100
        rows = []
        series = []
        for s in strategies:
            h = self.run_herd(s, clients, after, f"herd-{s}")
            ev = [e for e in h["events"] if e.get("event") in ("retry", "success", "giveup")]
            attempts_t = [e["mono_ms"] for e in ev if e["event"] in ("retry", "success")]
            succ = [e for e in ev if e["event"] == "success"]
            rel, lis = h["released"], h["listening"]
            first = [e["mono_ms"] for e in ev if e["event"] == "retry" and e["attempt"] == 1]
            after_t = [t for t in attempts_t if t >= lis]
            last = max((e["mono_ms"] for e in succ), default=lis)
            nwin = max(1, math.ceil((last - lis + 1) / window))
            wins = [0] * nwin
            for t in after_t:
                k = (t - lis) // window
                if k < nwin:
                    wins[k] += 1
            peak = max(wins)
            mean = len(after_t) / nwin
            ttc = [(e["mono_ms"] - rel) / 1000 for e in succ]
            rows.append({
                "strategy": s, "clients": clients, "connected": len(succ), "ok": h["ok"],
                "attempts": len(attempts_t), "per_client": len(attempts_t) / clients,
                "after_per_client": len(after_t) / clients, "peak": peak,
                "peak_ratio": peak / mean if mean else float("nan"), "mean": mean,
                "p50": percentile(ttc, 50), "p99": percentile(ttc, 99),
                "max": max(ttc) if ttc else float("nan"),
                "spread": (max(first) - min(first)) if first else 0,
                "server_peak": self.server_peak(h["accepted"], lis, window),
                "events": ev, "released": rel, "listening": lis,
            })
            total_end = max(attempts_t) - rel + window
            bins = [0] * (total_end // window + 1)
            for t in attempts_t:
                bins[(t - rel) // window] += 1
            series.append((s, [((i + 0.5) * window / 1000, c) for i, c in enumerate(bins)]))
            if len(succ) != clients or h["ok"] != clients:
                self.failures.append(f"herd `{s}`: {len(succ)} of {clients} clients logged a "
                                     f"success, {h['ok']} exited 0")
            self.log(f"  {s}: attempts {len(attempts_t)}, peak {peak}/100 ms, "
                     f"p99 {rows[-1]['p99']:.1f} s, connected {len(succ)}/{clients}")
        self.mark_load("after herd runs")
        self.herd_rows = rows

        # Series start at 0 (the loss) and are padded to the longest with zeros.
        longest = max(len(p) for _, p in series)
        padded = []
        for name, pts in series:
            pts = list(pts) + [((i + 0.5) * window / 1000, 0) for i in range(len(pts), longest)]
            padded.append((name, [(0.0, 0)] + pts))
        jittered = [r["peak"] for r in rows if r["strategy"] in ("full", "equal", "decorrelated")]
        zoom = None
        if jittered and max(r["peak"] for r in rows) > 3 * max(jittered):
            zoom = max(10, figure.nice_step(max(jittered) * 2, 4) *
                       math.ceil(max(jittered) * 2 / figure.nice_step(max(jittered) * 2, 4)))
        svg = os.path.join(self.out, "herd.svg")
        figure.line_chart(
            svg, padded,
            title=f"Connect attempts per {window} ms, {clients} clients, server back at "
                  f"{after / 1000:g} s",
            x_label="seconds since the server was lost",
            y_label=f"attempts per {window} ms",
            markers=[(after / 1000, "server listens again")], zoom_y=zoom,
            subtitle=f"libbackoff BACKOFF_JITTER=<strategy>, base 100 ms, x2, cap 10 s; "
                     f"from the clients' JSON logs ({self.machine['date']})")

        lines = ["## 3. The herd", ""]
        lines.append(
            f"{clients} processes of the C `probe` (blocking connect, libbackoff preloaded, "
            "base 100 ms, x2, cap 10 s, only `BACKOFF_JITTER` changed, no seed: each process "
            "draws its own; `BACKOFF_SHARED=off`, so that each backs off alone: part 7 has the "
            "shared herd) are started by `herd` and parked, already loaded, in the "
            "constructor of a preloaded `gate.so`, then released together through a pipe. "
            "`herd` holds a bound but not listening port (every attempt refused) and listens "
            f"after "
            f"{after / 1000:g} s with backlog 4096, accepting everything at once (no capacity "
            "limit: the published model accepts 50 per 100 ms). Attempts and times come from "
            "the clients' JSON log (one shared `BACKOFF_LOG_FILE`, one line per `write`). "
            f"Windows of {window} ms start at the listen. *mean* = attempts after recovery / "
            "windows until the last client connected. Time to connect counts from the release.")
        lines.append("")
        lines.append("| jitter | attempts | per client | after recovery per client | "
                     f"peak / {window} ms | peak / mean | p50 connect s | p99 connect s | "
                     "max s | connected |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            lines.append(
                f"| `{r['strategy']}` | {r['attempts']:,} | {r['per_client']:.2f} | "
                f"{r['after_per_client']:.2f} | {r['peak']} | {r['peak_ratio']:.1f} | "
                f"{r['p50']:.2f} | {r['p99']:.2f} | {r['max']:.2f} | "
                f"{r['connected']}/{r['clients']} |")
        lines.append("")
        spread = max(r["spread"] for r in rows)
        lines.append(
            f"The first attempts of the {clients} processes followed the release within at "
            f"most {spread} ms (two cores wake {clients} processes), so they lost the server "
            "together.")
        lines.append("")
        lines.append(f"![attempts per {window} ms]({'herd.svg'})")
        lines.append("")
        lines += self.herd_ordering(rows)
        self.sections.append("\n".join(lines))
        by = {r["strategy"]: r for r in rows}
        if "none" in by and "full" in by:
            self.headline.append(
                f"herd ({clients} clients, server back at {after / 1000:g} s): peak per "
                f"{window} ms after recovery {by['none']['peak']} without jitter vs "
                f"{by['full']['peak']} with full jitter "
                f"({by['none']['peak'] / max(1, by['full']['peak']):.0f}x); attempts after "
                f"recovery per client {by['none']['after_per_client']:.2f} vs "
                f"{by['full']['after_per_client']:.2f}; p99 connect "
                f"{by['none']['p99']:.1f} s vs {by['full']['p99']:.1f} s")

    @staticmethod
    def server_peak(accepted, lis, window):
        if not accepted:
            return 0
        c = collections.Counter((t - lis) // window for t in accepted)
        return max(c.values())

    def herd_ordering(self, rows):
        ours = {r["strategy"]: r for r in rows if r["strategy"] in PUBLISHED}
        if len(ours) < 2:
            return []
        lines = ["### Against the published simulation", "",
                 "`backoff-policies.md` simulates 1000 clients losing a server for 5 s that then "
                 "accepts 50 connections per 100 ms and refuses the rest (base 100 ms, cap "
                 "10 s). Its `none` is exponential without jitter, its `proportional` the gRPC "
                 "shape (x1.6 +-20 %, ours is x2 +-20 %); `additive` has no counterpart. Here "
                 "the server accepts everything, so every client needs exactly one attempt after "
                 "recovery and un-jittered clients are not starved: compare the peaks and the "
                 "jittered strategies' attempts and times, not the no-jitter attempts.", "",
                 "| jitter | attempts / client: published | here | p50 connect s: published | "
                 "here | p99: published | here | peak / 100 ms: published (of 1000) | "
                 f"here (of {rows[0]['clients']}) |",
                 "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for s in PUBLISHED:
            if s not in ours:
                continue
            a, _, p50, p99, peak = PUBLISHED[s]
            r = ours[s]
            lines.append(f"| `{s}` | {a:g} | {r['per_client']:.2f} | {p50:g} | {r['p50']:.2f} | "
                         f"{p99:g} | {r['p99']:.2f} | {peak} | {r['peak']} |")
        lines.append("")
        pub_peak = sorted(ours, key=lambda s: PUBLISHED[s][4])
        our_peak = sorted(ours, key=lambda s: (ours[s]["peak"], s))
        jit = [s for s in ("full", "equal", "decorrelated") if s in ours]
        pub_att = sorted(jit, key=lambda s: PUBLISHED[s][0])
        our_att = sorted(jit, key=lambda s: ours[s]["per_client"])
        lines.append("| ordering, best first | published | here | same |")
        lines.append("|---|---|---|---|")
        lines.append(f"| post-recovery peak | {' < '.join(pub_peak)} | {' < '.join(our_peak)} | "
                     f"{'yes' if pub_peak == our_peak else 'no'} |")
        if len(jit) > 1:
            lines.append(f"| attempts per client (full, equal, decorrelated) | "
                         f"{' < '.join(pub_att)} | {' < '.join(our_att)} | "
                         f"{'yes' if pub_att == our_att else 'no'} |")
        lines.append("")
        full_lowest = our_peak[0] == "full"
        none_highest = "none" in ours and ours["none"]["peak"] >= max(
            ours[s]["peak"] for s in ours)
        self.herd_claims = (full_lowest, none_highest)
        lines.append(
            f"The published claims: full jitter has the lowest post-recovery peak - here "
            f"**{'yes' if full_lowest else 'no'}**; no jitter re-creates the herd (the highest "
            f"peak) - here **{'yes' if none_highest else 'no'}**. Peaks are maxima of small "
            "counts: neighbours a few attempts apart can swap from one run to the next.")
        lines.append("")
        return lines

    # ------------------------------------------------------------------ 4. timing

    def part_timing(self):
        self.log("4/7 timing precision")
        clients = 5 if self.quick else 20
        dur = 1000 if self.quick else 3000
        conditions = [("idle", 0)] if self.quick else [("idle", 0), ("both cores busy", 2)]
        extra = {"BACKOFF_BASE": "10ms", "BACKOFF_CAP": "100ms", "BACKOFF_TIMEOUT": f"{dur}ms"}
        rows = []
        for cond, busy in conditions:
            hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(busy)]
            try:
                time.sleep(0.2 if busy else 0)
                for mode, args in (("blocking", ()), ("poll (non-blocking)", ("--mode", "poll"))):
                    h = self.run_herd(None, clients, dur + 300,
                                      f"timing-{cond.split()[0]}-{mode.split()[0]}", extra, args)
                    late = self.lateness(h["events"])
                    rows.append((cond, mode, late))
            finally:
                for p in hogs:
                    p.kill()
                    p.wait()
        self.mark_load("after timing runs")
        lines = ["## 4. Timing precision", ""]
        lines.append(
            f"{clients} `probe` processes retry against a refusing port for {dur / 1000:g} s "
            "(base 10 ms, cap 100 ms, full jitter), blocking and non-blocking (`--mode poll`: "
            "the wait happens inside the program's `poll`). Lateness = (mono_ms of retry "
            "event k+1 - mono_ms of retry event k) - wait_ms of event k, per process. It "
            "includes one refused connect and one log write. mono_ms is in whole "
            "milliseconds, and the library sleeps until an absolute deadline on the same grid "
            "(the millisecond of the failure plus wait_ms), so 0 means it woke within the "
            "planned millisecond; the real wait may be up to 1 ms shorter than wait_ms, which "
            "these logs cannot show. *Busy*: one `sh` busy loop per core, at the same "
            "priority.")
        lines.append("")
        lines.append("| load | mode | intervals | mean ms | median ms | p99 ms | max ms |")
        lines.append("|---|---|---:|---:|---:|---:|---:|")
        for cond, mode, late in rows:
            if not late:
                lines.append(f"| {cond} | {mode} | 0 | | | | |")
                continue
            lines.append(f"| {cond} | {mode} | {len(late):,} | {statistics.fmean(late):.2f} | "
                         f"{median(late):g} | {percentile(late, 99):.1f} | {max(late)} |")
        lines.append("")
        self.sections.append("\n".join(lines))
        self.timing_rows = rows
        parts = []
        for cond, mode, late in rows:
            if late and mode == "blocking":
                parts.append(f"{cond} median {median(late):g} ms / p99 "
                             f"{percentile(late, 99):.0f} ms")
        if parts:
            self.headline.append("timing (actual - planned delay, blocking): " + "; ".join(parts))

    @staticmethod
    def lateness(events):
        by_pid = collections.defaultdict(list)
        for e in events:
            if e.get("event") == "retry":
                by_pid[e["pid"]].append(e)
        late = []
        for evs in by_pid.values():
            evs.sort(key=lambda e: e["attempt"])
            for a, b in zip(evs, evs[1:]):
                if b["attempt"] == a["attempt"] + 1:
                    late.append(b["mono_ms"] - a["mono_ms"] - a["wait_ms"])
        return late

    # ------------------------------------------------------------------ 5. size and memory

    def part_size(self):
        self.log("5/7 size and memory")
        stripped = os.path.join(self.data, "libbackoff.stripped.so")
        subprocess.run(["strip", "--strip-all", "-o", stripped, self.lib], check=True)
        size_out = subprocess.run(["size", stripped], capture_output=True, text=True,
                                  check=False).stdout.split("\n")
        text = data = bss = None
        if len(size_out) > 1 and size_out[1].split():
            text, data, bss = (int(x) for x in size_out[1].split()[:3])
        unstripped = os.path.getsize(self.lib)
        ssize = os.path.getsize(stripped)

        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))  # bound, never listening: every connect is refused
        closed_port = closed.getsockname()[1]
        scenarios = [
            ("blocking, late server, log off", ["--after", "300"], [], {}),
            ("blocking, late server, JSON log to a file", ["--after", "300"], [],
             {"BACKOFF_LOG": "info", "BACKOFF_LOG_FORMAT": "json"}),
            ("`poll` (non-blocking), late server, JSON log", ["--after", "300"],
             ["--mode", "poll"], {"BACKOFF_LOG": "info", "BACKOFF_LOG_FORMAT": "json"}),
            ("`epoll-lt` (non-blocking), late server, text log", ["--after", "300"],
             ["--mode", "epoll-lt"], {"BACKOFF_LOG": "info"}),
            ("`select` (non-blocking), late unix socket, JSON log", ["--unix"],
             ["--mode", "select"], {"BACKOFF_LOG": "info", "BACKOFF_LOG_FORMAT": "json"}),
            ("blocking, give-up after 300 ms, stats at exit", None, [],
             {"BACKOFF_TIMEOUT": "300ms", "BACKOFF_STATS": "1"}),
        ]
        rows = []
        for name, srv_args, probe_args, env_extra in scenarios:
            counts = {}
            for with_lib in (False, True):
                counts[with_lib] = self.count_allocs(srv_args, probe_args, env_extra, with_lib,
                                                     closed_port)
            rows.append((name, counts))
        closed.close()

        # Peak RSS of the probe in the first run (blocking, late server, log off).
        rss = {w: rows[0][1][w]["hwm_kb"] for w in (False, True)}

        lines = ["## 5. Size and memory", ""]
        lines.append("| | bytes |")
        lines.append("|---|---:|")
        lines.append(f"| `libbackoff.so` as built (`-O2 -g`) | {unstripped:,} |")
        lines.append(f"| stripped (`strip --strip-all`) | **{ssize:,}** |")
        if text is not None:
            lines.append(f"| text / data / bss (`size`) | {text:,} / {data:,} / {bss:,} |")
        lines.append(f"| peak RSS (VmHWM) of `probe` without / with the preload (KiB) | "
                     f"{rss[False]:,.0f} / {rss[True]:,.0f} |")
        lines.append("")
        lines.append(
            "Heap allocations, counted by `malloc_count.so` (preloaded before the library; "
            "it counts every malloc/calloc/realloc/memalign-family call). *from libbackoff* = "
            "calls whose return address lies in libbackoff.so; *difference* = total with the "
            "library - total without it for the same run, which also catches allocations glibc "
            "makes on the library's behalf (`fopen`, `strdup`...). Each run makes at least one "
            "retry. The probe itself allocates once (its stdout buffer).")
        lines.append("")
        lines.append("| run | allocations without | with | from libbackoff | difference | "
                     "must be 0 |")
        lines.append("|---|---:|---:|---:|---:|---|")
        worst = 0
        for name, c in rows:
            diff = c[True]["total"] - c[False]["total"]
            own = c[True]["lib"]
            worst = max(worst, diff, own)
            verdict = self.judge(diff == 0 and own == 0, f"memory: {name}: {own} allocation(s) "
                                 f"from libbackoff, difference {diff}")
            lines.append(f"| {name} | {c[False]['total']} | {c[True]['total']} | {own} | "
                         f"{diff} | {verdict} |")
        lines.append("")
        self.sections.append("\n".join(lines))
        self.headline.append(f"size: {ssize:,} bytes stripped; heap allocations by the library "
                             f"during retrying runs: {worst}")

    def count_allocs(self, srv_args, probe_args, env_extra, with_lib, closed_port):
        d = tempfile.mkdtemp(prefix="malloc-", dir=self.data)
        out = os.path.join(d, "count")
        srv = None
        if srv_args is None:
            addr = f"127.0.0.1:{closed_port}"
        elif srv_args == ["--unix"]:
            path = os.path.join(d, "sock")
            addr = f"unix:{path}"
            srv = subprocess.Popen([self.listener, "--unix", path, "--after", "300"],
                                   stdout=subprocess.DEVNULL, env=clean_env())
        else:
            pf = os.path.join(d, "port")
            srv = subprocess.Popen([self.listener, "--tcp", "127.0.0.1:0", "--port-file", pf,
                                    *srv_args], stdout=subprocess.DEVNULL, env=clean_env())
            deadline = time.monotonic() + 5
            while not os.path.exists(pf) and time.monotonic() < deadline:
                time.sleep(0.002)
            with open(pf, encoding="ascii") as f:
                addr = f"127.0.0.1:{f.read().strip()}"
        preload = f"{self.malloc_count} {self.lib}" if with_lib else self.malloc_count
        env = clean_env(LD_PRELOAD=preload, MALLOC_COUNT_FILE=out,
                        BACKOFF_LOG_FILE=os.path.join(d, "log"), **env_extra)
        subprocess.run([self.probe, *probe_args, addr], env=env, capture_output=True,
                       timeout=30, check=False)
        if srv:
            # Without the library the probe fails at once and the server waits in vain.
            try:
                srv.wait(timeout=2 if with_lib else 0.01)
            except subprocess.TimeoutExpired:
                srv.kill()
                srv.wait()
        with open(out, encoding="ascii") as f:
            line = f.read()
        m = re.search(r"total=(\d+) libbackoff=(\d+) hwm_kb=(-?\d+)", line)
        shutil.rmtree(d, ignore_errors=True)
        return {"total": int(m.group(1)), "lib": int(m.group(2)), "hwm_kb": int(m.group(3))}

    # ------------------------------------------------------------ 6. event loop at scale

    def fastpath_loop(self, mode, n, preload, extra_env=None, inflight=0):
        env = clean_env(**(extra_env or {}))
        if preload:
            env["LD_PRELOAD"] = self.lib
        if inflight:
            env["FASTPATH_INFLIGHT"] = str(inflight)

        def limits():
            import resource
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            want = inflight + 256
            if soft < want:
                resource.setrlimit(resource.RLIMIT_NOFILE,
                                   (min(want, hard) if hard != resource.RLIM_INFINITY else want,
                                    hard))

        r = subprocess.run([self.fastpath, mode, str(n)], env=env, capture_output=True,
                           text=True, preexec_fn=limits, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"fastpath {mode}: {r.stderr.strip()}")
        return int(re.search(r"loop_ns=(\d+)", r.stdout).group(1))

    def strace_calls(self, argv, env, pid=None, during=None):
        """System calls counted by strace -c -f, in all; None without strace."""
        if shutil.which("strace") is None:
            return None
        out = tempfile.mktemp(prefix="strace-", dir=self.data)
        if pid is None:
            subprocess.run(["strace", "-f", "-c", "-o", out] + argv, env=env,
                           capture_output=True, check=False)
        else:
            tracer = subprocess.Popen(["strace", "-f", "-c", "-o", out, "-p", str(pid)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            during()
            tracer.terminate()
            tracer.wait()
        try:
            with open(out, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            return None
        counts = {}
        for line in text.splitlines():
            f = line.split()
            if len(f) >= 5 and f[-1] != "total" and f[3].isdigit():
                counts[f[-1]] = int(f[3])
        return sum(counts.values()), counts

    def part_scale(self):
        self.log("6/7 event loop at scale")
        lines = ["## 6. The event-loop machinery at scale", ""]
        # (a) a hook's cost with connects in flight
        n = 20000 if self.quick else 300000
        ks = (1, 100, 1000) if self.quick else (1, 100, 1000, 10000)
        env = {"BACKOFF_BASE": "60s", "BACKOFF_CAP": "60s"}
        rows = []
        for k in ks:
            w = [self.fastpath_loop("poll", n, True, env, k) / n for _ in range(3)]
            wo = [self.fastpath_loop("poll", n, False, None, k) / n for _ in range(3)]
            rows.append((k, median(w), median(wo)))
        one = rows[0][1]
        lines.append("`poll` on one ready fd (timeout 0) while K non-blocking connects to a port "
                     "that refuses are in flight: under the library each is hidden, awaiting a "
                     "retry 60 s later. ns per call, median of 3 runs of "
                     f"{n:,} calls each; the goal is a cost that does not grow with K "
                     "(1000 in flight at most 2x the cost with 1).")
        lines.append("")
        lines.append("| connects in flight | ns/call with | ns/call without | with / with at K=1 "
                     "| |")
        lines.append("|---:|---:|---:|---:|---|")
        for k, w, wo in rows:
            verdict = ""
            if k == 1000:
                verdict = self.judge(w <= 2 * one, f"poll with 1000 connects in flight costs "
                                     f"{w / one:.2f}x its cost with 1 (goal <= 2)")
            lines.append(f"| {k:,} | {w:.0f} | {wo:.0f} | {w / one:.2f} | {verdict} |")
        lines.append("")
        k1000 = [r for r in rows if r[0] == 1000]
        if k1000:
            self.headline.append(f"a hook with 1000 connects in flight: {k1000[0][1] / one:.2f}x "
                                 "its cost with 1 (goal <= 2)")
        # (b) an event loop's connects, with and without, and their system calls
        n = 2000 if self.quick else 30000
        pairs = 2 if self.quick else 9
        ratios = []
        for i in range(pairs):
            order = (False, True) if i % 2 == 0 else (True, False)
            t = {p: self.fastpath_loop("nb-connect", n, p) for p in order}
            ratios.append(t[False] / t[True])
        # Counted over 2000 connects and over none, so that start-up cancels out.
        sc = {(p, k): self.strace_calls([self.fastpath, "nb-connect", str(k)],
                                        dict(clean_env(),
                                             **({"LD_PRELOAD": self.lib} if p else {})))
              for p in (False, True) for k in (0, 2000)}
        lines.append("A C epoll loop that connects as an event-loop proxy does (non-blocking "
                     "socket added to epoll before `connect`, `epoll_wait` for EPOLLOUT, "
                     "`SO_ERROR`, close), to a listener in the same process, as fast as it can "
                     "(nothing but connects: the worst case for a per-connect cost): "
                     f"throughput with / without, {pairs} pairs of {n:,} connects in ABBA "
                     "order; system calls per connect counted by `strace -c` over 2000.")
        lines.append("")
        lines.append("| loop | throughput ratio median | min | max | syscalls/connect without "
                     "| with | |")
        lines.append("|---|---:|---:|---:|---:|---:|---|")
        per, total = {}, {}
        for p in (False, True):
            if sc[(p, 2000)] and sc[(p, 0)]:
                full, empty = sc[(p, 2000)][1], sc[(p, 0)][1]
                per[p] = {k: v - empty.get(k, 0) for k, v in full.items()}
                total[p] = (sc[(p, 2000)][0] - sc[(p, 0)][0]) / 2000
            else:
                per[p], total[p] = None, None
        extra = total[True] - total[False] if per[False] and per[True] else None
        med = median(ratios)
        # Rounded: the table's pages are mapped once (a few mmap in 2000 connects).
        verdict = self.judge(extra is None or round(extra, 2) <= 1.0,
                             f"nb-connect: {extra:.3f} extra system calls per connect (goal <= 1)")
        lines.append(f"| nb-connect | **{med:.3f}** | {min(ratios):.3f} | {max(ratios):.3f} | "
                     f"{total[False] if total[False] is not None else float('nan'):.2f} | "
                     f"{total[True] if total[True] is not None else float('nan'):.2f} | "
                     f"{verdict} |")
        lines.append("")
        if per[False] and per[True]:
            diff = {k: per[True].get(k, 0) - per[False].get(k, 0) for k in per[True]}
            diff = {k: v / 2000 for k, v in diff.items() if abs(v) >= 100}
            lines.append("System calls the library adds per connect: " +
                         (", ".join(f"`{k}` {v:+.2f}" for k, v in sorted(diff.items()))
                          or "none") + ".")
            lines.append("")
        self.headline.append(f"event-loop connects (C epoll loop, nothing but connects): "
                             f"throughput {med:.3f} of plain, "
                             f"{f'{extra:+.2f}' if extra is not None else '?'} system call(s) "
                             "per connect (goal <= 1)")
        lines += self.nginx_proxy()
        self.sections.append("\n".join(lines))

    def nginx_proxy(self):
        nginx, ab = shutil.which("nginx") or "/usr/sbin/nginx", shutil.which("ab")
        if not os.path.exists(nginx) or ab is None:
            self.notes.append("nginx or ab is not installed: no reverse-proxy benchmark")
            return ["nginx or ab (apache2-utils) is not installed: no reverse-proxy benchmark.",
                    ""]
        tmp = tempfile.mkdtemp(prefix="nginx-", dir=self.data)
        ports = []
        for _ in range(3):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
            s.close()
        be, plain, lib = ports

        def conf(name, body):
            d = os.path.join(tmp, name)
            return d, nginx_conf.write_conf(d, body)

        procs = []

        def start(name, body, preload):
            d, path = conf(name, body)
            env = clean_env(**({"LD_PRELOAD": self.lib} if preload else {}))
            p = subprocess.Popen([nginx, "-p", d, "-e", f"{d}/error.log", "-c", path],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(p)
            return p

        proxy = ("upstream be {{ server 127.0.0.1:{be}; }}\n"
                 "server {{ listen 127.0.0.1:{port}; location / {{ proxy_pass http://be; }} }}")
        try:
            start("backend", f'server {{ listen 127.0.0.1:{be}; location / {{ return 200 "ok\\n"; }} }}',
                  False)
            pp = start("plain", proxy.format(be=be, port=plain), False)
            pl = start("lib", proxy.format(be=be, port=lib), True)
            for port in (be, plain, lib):
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    try:
                        socket.create_connection(("127.0.0.1", port), timeout=1).close()
                        break
                    except OSError:
                        time.sleep(0.05)
            n = 2000 if self.quick else 20000
            rounds = 1 if self.quick else 5

            def ab_run(port, count, out):
                r = subprocess.run([ab, "-q", "-n", str(count), "-c", "50",
                                    f"http://127.0.0.1:{port}/"], capture_output=True,
                                   text=True, check=False)
                m = re.search(r"Requests per second:\s+([\d.]+)", r.stdout)
                failed = re.search(r"Failed requests:\s+(\d+)", r.stdout)
                out.append((float(m.group(1)) if m else float("nan"),
                            int(failed.group(1)) if failed else -1))

            ab_run(plain, 1000, [])
            ab_run(lib, 1000, [])
            ratios, fails = [], 0
            for _ in range(rounds):
                a, b = [], []
                ta = threading.Thread(target=ab_run, args=(plain, n, a))
                tb = threading.Thread(target=ab_run, args=(lib, n, b))
                ta.start()
                tb.start()
                ta.join()
                tb.join()
                ratios.append(b[0][0] / a[0][0])
                fails += max(a[0][1], 0) + max(b[0][1], 0)

            def worker(master):
                r = subprocess.run(["pgrep", "-P", str(master.pid)], capture_output=True,
                                   text=True, check=False)
                return int(r.stdout.split()[0]) if r.stdout.split() else None

            calls = {}
            for name, master, port in (("plain", pp, plain), ("lib", pl, lib)):
                w = worker(master)
                res = self.strace_calls(None, None, pid=w,
                                        during=lambda port=port: ab_run(port, 2000, [])) \
                    if w else None
                calls[name] = res[0] / 2000 if res else None
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        med = median(ratios)
        verdict = self.judge(med >= 0.97, f"nginx reverse proxy: throughput with the library "
                             f"{med:.3f} of plain (goal >= 0.97)")
        extra = (calls["lib"] - calls["plain"]) if calls.get("lib") and calls.get("plain") \
            else None
        lines = ["nginx 1 worker as a reverse proxy (one new upstream connect per request, "
                 "no keepalive) to an nginx backend answering `ok`, loaded with `ab -c 50`: the "
                 "proxy with the library and the one without run side by side at the same time "
                 f"({rounds} round(s) of {n:,} requests each), so the host's speed swings hit "
                 "both alike; system calls per request counted in each worker by `strace -c` "
                 "over 2000 requests.", "",
                 "| proxy | throughput with / without, median | min | max | failed requests "
                 "| syscalls/request without | with | extra | |",
                 "|---|---:|---:|---:|---:|---:|---:|---:|---|",
                 f"| nginx `proxy_pass` | **{med:.3f}** | {min(ratios):.3f} | "
                 f"{max(ratios):.3f} | {fails} | {calls.get('plain') or float('nan'):.1f} | "
                 f"{calls.get('lib') or float('nan'):.1f} | "
                 f"{extra if extra is not None else float('nan'):+.1f} | {verdict} |", ""]
        self.headline.append(f"nginx reverse proxy: throughput {med:.3f} of plain (goal >= "
                             f"0.97), {extra if extra is not None else float('nan'):+.1f} "
                             "system calls per request")
        return lines

    # ------------------------------------------------------------------ 7. shared fate

    @staticmethod
    def shared_env(mode, d):
        """BACKOFF_SHARED for a run: off, or a state file of its own in D.  "on" makes it first
        (empty, 0600: the library lays it out), as the per-user file is there after its first
        use; "fresh" leaves it to the first failure to make."""
        if mode == "off":
            return "off"
        path = os.path.join(d, "state")
        if mode == "on":
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return path

    def shared_recovery_job(self, t_ms, family, mode, seed, tmp):
        d = tempfile.mkdtemp(prefix=f"rec-{t_ms}-{family}-{mode}-", dir=tmp)
        if family == "unix":
            path = os.path.join(d, "sock")
            srv = subprocess.Popen([self.listener, "--unix", path, "--after", str(t_ms),
                                    "--linger-ms", "100"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=clean_env())
            addr = f"unix:{path}"
        else:
            port_file = os.path.join(d, "port")
            srv = subprocess.Popen([self.listener, "--tcp", "127.0.0.1:0", "--port-file",
                                    port_file, "--after", str(t_ms), "--linger-ms", "100"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=clean_env())
            deadline = time.monotonic() + 5
            while not os.path.exists(port_file) and time.monotonic() < deadline:
                time.sleep(0.002)
            with open(port_file, encoding="ascii") as f:
                addr = f"127.0.0.1:{f.read().strip()}"
        env = clean_env(LD_PRELOAD=self.lib, BACKOFF_SEED=seed,
                        BACKOFF_SHARED=self.shared_env(mode, d))
        cli = subprocess.run([self.probe, addr], env=env, capture_output=True, text=True,
                             timeout=120, check=False)
        out, _ = srv.communicate(timeout=60)
        listening = [int(x) for x in re.findall(r"listening mono_ms=(\d+)", out)]
        accepted = [int(x) for x in re.findall(r"accepted mono_ms=(\d+)", out)]
        shutil.rmtree(d, ignore_errors=True)
        if cli.returncode != 0 or not listening or not accepted:
            return {"ok": False, "error": f"client rc={cli.returncode} "
                                          f"{cli.stdout.strip()} {cli.stderr.strip()[-200:]}"}
        return {"ok": True, "gap_ms": accepted[0] - listening[0]}

    def run_netns_herd(self, script, mode, clients, after_ms, tmp, probe_args=()):
        """herd under unshare -n with SCRIPT around it; its figures, the Tcp counters' delta."""
        d = tempfile.mkdtemp(prefix=f"herd-{mode}-{clients}-{after_ms}-", dir=tmp)
        env = clean_env(HERD_PRELOAD=self.lib, HERD_GATE=self.gate, BACKOFF_STATS="on",
                        BACKOFF_SHARED=self.shared_env(mode, d))
        r = subprocess.run(["unshare", "-n", "sh", "-c", script, "sh", self.herd, str(clients),
                            str(after_ms), self.probe, *probe_args], env=env,
                           capture_output=True, text=True, timeout=after_ms / 1000 + 150,
                           check=False)
        shutil.rmtree(d, ignore_errors=True)
        snmp = {}
        for when, head, values in re.findall(r"^snmp (\w+) ([^|\n]*)\|(.*)$", r.stdout, re.M):
            snmp[when] = dict(zip(head.split()[1:], (int(v) for v in values.split()[1:])))
        released = re.search(r"released mono_ms=(\d+)", r.stdout)
        listening = re.search(r"listening mono_ms=(\d+)", r.stdout)
        done = re.search(r"done clients=(\d+) ok=(\d+) accepted=(\d+) cpu_ms=(\d+) vcsw=(\d+)",
                         r.stdout)
        if r.returncode in (97, 98) or not (released and listening and done) or \
                len(snmp) != 2:
            return {"error": f"rc={r.returncode} {r.stderr.strip()[-300:]}"}
        lis = int(listening.group(1))
        after = sorted(int(x) - lis for x in re.findall(r"accepted mono_ms=(\d+)", r.stdout))
        stats = {k: sum(int(v) for v in re.findall(rf" {k}=(\d+)", r.stderr))
                 for k in ("probed", "waited")}
        opens = snmp["after"]["ActiveOpens"] - snmp["before"]["ActiveOpens"]
        ok = int(done.group(2))
        return {"mode": mode, "clients": clients, "after_ms": after_ms, "ok": ok,
                "accepted": int(done.group(3)), "cpu_ms": int(done.group(4)),
                "vcsw": int(done.group(5)), "opens": opens,
                "failed": opens - int(done.group(3)), "after": after,
                "p50": percentile(after, 50), "p99": percentile(after, 99),
                "max": max(after) if after else float("nan"),
                "peak": self.server_peak([lis + t for t in after], lis, 100), **stats}

    def netns_herds(self, specs, tmp, together):
        """run_netns_herd for each (script, mode, clients, after_ms): one after the other, or
        all at once (each has network namespaces of its own, so their counts stay apart)."""
        if not together:
            return [self.run_netns_herd(*spec, tmp) for spec in specs]
        out = [None] * len(specs)

        def work(i):
            try:
                out[i] = self.run_netns_herd(*specs[i], tmp)
            except Exception as e:  # noqa: BLE001 - reported as the run's error
                out[i] = {"error": repr(e)}

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(specs))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return out

    def part_shared(self):
        self.log("7/7 shared fate")
        lines = ["## 7. Shared fate", ""]
        lines.append(
            "Blocking connects to one destination share a state file; a planned retry is left "
            "out when another process found the destination down since the caller's own last "
            "attempt, and for a local destination one thread looks for a listener every 10 ms "
            "(`BACKOFF_LOCAL_PROBE`, no connection attempt) and wakes the others when it "
            "connects. Every run below is made with sharing on (`BACKOFF_SHARED` naming a "
            "state file of that run's own, in a temporary directory) and with "
            "`BACKOFF_SHARED=off`, the policy otherwise the default (base 100 ms, x2, cap "
            "10 s, full jitter).")
        lines.append("")
        self.shared_rec, self.shared_herd_rows, self.shared_remote_rows = {}, None, None
        tmp = tempfile.mkdtemp(prefix="bench-shared-")
        try:
            self.shared_recovery(lines, tmp)
            try:
                netns = subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"],
                                       capture_output=True, check=False).returncode == 0
            except OSError:
                netns = False
            if not netns:
                note = ("`unshare -n` and `ip` (iproute2) are needed, with root: no herd and "
                        "no remote rows")
                self.notes.append(f"shared fate: {note}")
                lines += [f"{note}.", ""]
            else:
                herd = (30, 1500) if self.quick else (100, 3000)
                remote = (10, 1500) if self.quick else (20, 3000)
                reps = 1 if self.quick else 3
                local = [(NETNS_LOCAL, mode, *herd) for mode in ("on", "fresh", "off")]
                # The remote runs sleep almost all the time: each repetition's three run
                # together.  A quick run runs everything together.
                triple = [(NETNS_REMOTE, "on", *remote), (NETNS_REMOTE, "off", *remote),
                          (NETNS_REMOTE, "off", 1, remote[1])]
                started = time.monotonic()
                if self.quick:
                    runs = self.netns_herds(local + triple, tmp, True)
                    local_runs, remote_runs = runs[:3], [runs[3:]]
                else:
                    local_runs = self.netns_herds(local, tmp, False)
                    remote_runs = [self.netns_herds(triple, tmp, True) for _ in range(reps)]
                self.log(f"  herds: {len(local) + reps * len(triple)} runs in "
                         f"{time.monotonic() - started:.0f} s")
                self.shared_herd(lines, tmp, herd, local_runs)
                self.shared_remote(lines, remote, remote_runs)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.mark_load("after shared-fate runs")
        lines += self.shared_findings()
        self.sections.append("\n".join(lines))

    def shared_findings(self):
        """The closing paragraph: what the runs show, from their own figures."""
        def goal(ok):
            return "not judged in a quick run" if self.quick else "met" if ok else "missed"

        said = []
        rec = self.shared_rec
        meds = {k: median(v) for k, v in rec.items() if v}
        on = [m for (t, fam, mode), m in meds.items() if mode == "on"]
        off = [m for (t, fam, mode), m in meds.items() if mode == "off"]
        if on and off:
            ok = max(on) <= 20
            said.append(
                f"Recovery: with sharing on the median gap was {min(on):.0f}-{max(on):.0f} ms "
                f"in every cell (goal <= 20 ms: {goal(ok)}), against "
                f"{min(off):,.0f}-{max(off):,.0f} ms off, where the gap is what was left of the "
                "policy's wait (full jitter, up to the 10 s cap) when the server came.")
        if self.shared_herd_rows:
            rows, cpu = self.shared_herd_rows
            h_on, h_fresh, h_off = rows["on"], rows["fresh"], rows["off"]
            n = h_on["clients"]

            def ratio(h):
                return fmt_ratio(h["failed"] / h_off["failed"] if h_off["failed"] else None)

            # Every client connected inside its retry loop, where each attempt counts as
            # probed: the failed attempts outside it are first attempts.
            first = {m: h["failed"] - max(0, h["probed"] - h["accepted"])
                     for m, h in (("on", h_on), ("fresh", h_fresh))}
            text = (f"Herd: sharing on cut the failed attempts from {h_off['failed']:,} to "
                    f"{h_on['failed']:,} (ratio {ratio(h_on)}; goal <= 0.1: "
                    f"{goal(h_on['failed'] * 10 <= h_off['failed'])}), and to "
                    f"{h_fresh['failed']:,} with no state file at start (ratio "
                    f"{ratio(h_fresh)}: {goal(h_fresh['failed'] * 10 <= h_off['failed'])}). "
                    f"The clients' planned retries were left to the prober ({h_on['waited']:,} "
                    f"and {h_fresh['waited']:,} *waited*; "
                    f"{h_on['failed'] - first['on']} and "
                    f"{h_fresh['failed'] - first['fresh']} failed retries made): what remains "
                    f"is first attempts, {first['on']} of the {n} with the file there at "
                    f"start and {first['fresh']} without it (a process maps the file at "
                    f"its first connect, before the attempt). Off, each client failed "
                    f"{h_off['failed'] / n:.1f} times, so one failed first attempt per client "
                    f"is a ratio of {n / h_off['failed']:.2f} by itself")
            text += (f". With sharing on the last client connected {h_on['max']:,.0f} ms "
                     f"after the listen (p99 {h_on['p99']:,.0f} ms; goal <= 1 s: "
                     f"{goal(h_on['p99'] <= 1000)}), against a p99 of {h_off['p99']:,.0f} ms "
                     f"off; the wake-up ramp (two more per success) let {h_on['peak']} of the "
                     f"{n} in within one 100 ms window, where independent backoff spread them "
                     f"(peak {h_off['peak']}).")
            c_on, c_off = cpu.get(("10 s outage", "on")), cpu.get(("10 s outage", "off"))
            r_on = cpu.get(("no outage (reference)", "on"))
            r_off = cpu.get(("no outage (reference)", "off"))
            if c_on and c_off:
                text += (f" CPU over a 10 s outage: {c_on['cpu_ms']:,} ms with sharing on, "
                         f"{c_off['cpu_ms']:,} ms off (goal on <= off: "
                         f"{goal(c_on['cpu_ms'] <= c_off['cpu_ms'])})")
                if r_on and r_off:
                    text += (f"; without the start-up and connect of the reference runs, the "
                             f"waiting itself cost {c_on['cpu_ms'] - r_on['cpu_ms']:,} ms on "
                             f"and {c_off['cpu_ms'] - r_off['cpu_ms']:,} ms off, and the "
                             f"clients were woken "
                             f"{(c_on['vcsw'] - r_on['vcsw']) / c_on['clients'] / 10:.0f} "
                             f"times a second each on against "
                             f"{(c_off['vcsw'] - r_off['vcsw']) / c_off['clients'] / 10:.1f} off")
                text += "."
            said.append(text)
        if self.shared_remote_rows:
            r_on, r_off, r_one = self.shared_remote_rows
            n = r_on["clients"]

            def times(r):
                return r["failed"] / r_one["failed"] if r_one["failed"] else float("nan")

            said.append(
                f"Remote: {n} clients made {r_on['failed']:g} failed attempts with sharing on "
                f"and {r_off['failed']:g} off (medians of {r_on['runs']} "
                f"run{'s' if r_on['runs'] != 1 else ''}); one client "
                f"alone made {r_one['failed']:g}, so sharing brought the herd to "
                f"{times(r_on):.1f}x one client's attempts, against {times(r_off):.1f}x off. "
                f"Beyond the {n} first attempts (made together) the herd failed "
                f"{r_on['failed'] - n:g} times, about as often as one client retried "
                f"({r_one['failed'] - 1:g}). With sharing on the clients connected together, "
                f"woken by the first success (median client {r_on['p50']:,.0f} ms after the "
                f"listen, peak {r_on['peak']} per 100 ms), against {r_off['p50']:,.0f} ms off, "
                f"where each found the server on its own schedule (peak {r_off['peak']}).")
        if said:
            return [" ".join(said), ""]
        return []

    def shared_recovery(self, lines, tmp):
        if self.quick:
            ts, reps, spacing = [500, 2000], 2, 0.05
        else:
            ts, reps, spacing = [500, 2000, 10000], 5, 0.1
        families = ["tcp", "unix"]
        jobs = [(t, fam, mode, 2000 + i) for t in ts for fam in families for mode in ("on", "off")
                for i in range(reps)]
        random.Random(7).shuffle(jobs)
        results = collections.defaultdict(list)
        failures = []
        lock = threading.Lock()

        def work(job):
            t, fam, mode, seed = job
            try:
                r = self.shared_recovery_job(t, fam, mode, seed, tmp)
            except Exception as e:  # noqa: BLE001 - recorded as a failed run
                r = {"ok": False, "error": repr(e)}
            with lock:
                if r["ok"]:
                    results[(t, fam, mode)].append(r["gap_ms"])
                else:
                    failures.append(f"T={t} {fam} {mode}: {r['error']}")

        self.log(f"  recovery: {len(jobs)} runs in {run_spaced(jobs, work, spacing):.0f} s")

        lines.append("### Recovery gap")
        lines.append("")
        lines.append(
            f"One C `probe` (a blocking connect) starts at 0; `late-listener` listens on "
            f"127.0.0.1 (bound at once: refused until T) or creates its unix socket (absent "
            f"until T: `ENOENT`) at T. "
            f"*gap* = accepted - listening, both from the server's CLOCK_MONOTONIC. {reps} runs "
            f"per cell (`BACKOFF_SEED` 2000..{2000 + reps - 1}), all cells overlapping, started "
            f"{spacing * 1000:.0f} ms apart in random order. Goal: median gap <= 20 ms with "
            "sharing on.")
        lines.append("")
        lines.append("| T | destination | on: median gap ms | on: max | off: median gap ms | "
                     "off: max | runs on/off | goal |")
        lines.append("|---:|---|---:|---:|---:|---:|---|---|")
        worst = None
        for t in ts:
            for fam in families:
                on, off = results[(t, fam, "on")], results[(t, fam, "off")]
                dest = "TCP 127.0.0.1" if fam == "tcp" else "unix socket"
                if not on or not off:
                    lines.append(f"| {t / 1000:g} s | {dest} | failed | | | | "
                                 f"{len(on)}/{len(off)} | |")
                    continue
                verdict = self.judge(median(on) <= 20, f"shared fate: recovery gap at T = "
                                     f"{t / 1000:g} s ({dest}), sharing on: median "
                                     f"{median(on):.0f} ms > 20 ms")
                if worst is None or median(on) > worst[0]:
                    worst = (median(on), max(on), t, dest)
                lines.append(f"| {t / 1000:g} s | {dest} | **{median(on):,.0f}** | "
                             f"{max(on):,.0f} | {median(off):,.0f} | {max(off):,.0f} | "
                             f"{len(on)}/{len(off)} | {verdict} |")
        lines.append("")
        if failures:
            lines.append(f"{len(failures)} run(s) failed: " + "; ".join(failures[:5]))
            lines.append("")
            self.failures.append(f"shared fate recovery: {len(failures)} run(s) failed")
        t_top = ts[-1]
        tcp_on, tcp_off = results[(t_top, "tcp", "on")], results[(t_top, "tcp", "off")]
        if tcp_on and tcp_off and worst:
            self.headline.append(
                f"shared fate, recovery (T = {t_top / 1000:g} s, TCP loopback): median gap "
                f"{median(tcp_on):.0f} ms with sharing on vs {median(tcp_off):.0f} ms off; worst "
                f"median with sharing on {worst[0]:.0f} ms ({worst[3]}, "
                f"T = {worst[2] / 1000:g} s; goal <= 20 ms)")
        self.shared_rec = results

    def shared_herd(self, lines, tmp, size, runs):
        clients, outage = size
        rows = {}
        for mode, h in zip(("on", "fresh", "off"), runs):
            if "error" in h:
                self.failures.append(f"shared fate herd ({mode}): {h['error']}")
                lines += [f"The herd with sharing {mode} did not run: {h['error']}.", ""]
                return
            rows[mode] = h
            if h["ok"] != clients or h["accepted"] != clients:
                self.failures.append(f"shared fate herd ({mode}): {h['ok']} of {clients} "
                                     f"clients exited 0, {h['accepted']} accepted")
            self.log(f"  herd {mode}: failed attempts {h['failed']}, p99 {h['p99']:.0f} ms "
                     f"after the listen, peak {h['peak']}/100 ms")
        cpu = {}
        if not self.quick:
            for label, after in (("10 s outage", 10000), ("no outage (reference)", 0)):
                for mode in ("on", "off"):
                    h = self.run_netns_herd(NETNS_LOCAL, mode, clients, after, tmp)
                    if "error" in h:
                        self.failures.append(f"shared fate CPU ({mode}, {label}): "
                                             f"{h['error']}")
                        continue
                    cpu[(label, mode)] = h
                    self.log(f"  CPU {label} {mode}: {h['cpu_ms']} ms")
        self.shared_herd_rows = rows, cpu

        on, fresh, off = rows["on"], rows["fresh"], rows["off"]
        names = {"on": "on", "fresh": "on, no state file at start", "off": "off"}
        lines.append("### The herd (loopback)")
        lines.append("")
        lines.append(
            f"{clients} `probe` processes (blocking, default policy) are started by `herd` as "
            f"in part 3 (parked in `gate.so`, released together), inside a network namespace "
            f"of their own (`unshare -n`), against a port bound on 127.0.0.1 that listens "
            f"{outage / 1000:g} s after the release. *attempts* = the namespace's `Tcp "
            f"ActiveOpens` (only these processes connect there); *failed* = attempts - "
            f"connections accepted. Connect times are the server's accept times after its "
            f"listen; *peak* = most accepts in one 100 ms window after the listen. *probed* / "
            f"*waited*: the sums of the clients' `BACKOFF_STATS` counts (attempts made while "
            f"others waited on them / planned attempts left to another). *on*: the state file "
            f"exists (empty, 0600) when the clients start, as the per-user file does after its "
            f"first use; *no state file at start*: the first client to connect makes it (each "
            f"client maps it at its first connect, before that attempt).")
        lines.append("")
        lines.append("| sharing | attempts | failed | failed per client | connected | "
                     "p50 ms after listen | p99 ms | max ms | peak / 100 ms | probed | waited |")
        lines.append("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
        for mode in ("on", "fresh", "off"):
            h = rows[mode]
            lines.append(
                f"| {names[mode]} | {h['opens']:,} | **{h['failed']:,}** | "
                f"{h['failed'] / clients:.2f} | {h['accepted']}/{clients} | {h['p50']:,.0f} | "
                f"{h['p99']:,.0f} | {h['max']:,.0f} | {h['peak']} | "
                f"{h['probed'] if mode != 'off' else ''} | "
                f"{h['waited'] if mode != 'off' else ''} |")
        lines.append("")
        lines.append("| goal | measured | |")
        lines.append("|---|---|---|")
        for mode in ("on", "fresh"):
            h = rows[mode]
            ratio = h["failed"] / off["failed"] if off["failed"] else float("nan")
            verdict = self.judge(h["failed"] * 10 <= off["failed"],
                                 f"shared fate herd: failed attempts with sharing "
                                 f"{names[mode]} {h['failed']} > 1/10 of off ({off['failed']})")
            lines.append(f"| failed attempts, {names[mode]} <= 1/10 of off | {h['failed']:,} vs "
                         f"{off['failed']:,} (ratio {fmt_ratio(ratio)}) | {verdict} |")
        v_p99 = self.judge(on["p99"] <= 1000, f"shared fate herd: p99 connect "
                           f"{on['p99']:.0f} ms after the listen > 1 s")
        lines.append(f"| p99 connect <= 1 s after the listen, on | {on['p99']:,.0f} ms | "
                     f"{v_p99} |")
        v_cpu = None
        if cpu:
            c_on, c_off = cpu.get(("10 s outage", "on")), cpu.get(("10 s outage", "off"))
            if c_on and c_off:
                v_cpu = self.judge(c_on["cpu_ms"] <= c_off["cpu_ms"],
                                   f"shared fate: CPU of {clients} clients over a 10 s outage "
                                   f"{c_on['cpu_ms']} ms with sharing on > {c_off['cpu_ms']} ms "
                                   "off")
                lines.append(f"| CPU over a 10 s outage, on <= off | {c_on['cpu_ms']:,} ms vs "
                             f"{c_off['cpu_ms']:,} ms | {v_cpu} |")
        lines.append("")
        if cpu:
            lines.append(
                f"CPU: user + system time of the {clients} client processes, summed by `herd` "
                "from `wait4` (so from exec to exit, start-up and the connect included), with "
                "their voluntary context switches (each a sleep that ended: a timed wait, a "
                "futex wake, a blocking connect); the reference runs listen at the release, so "
                "they hold only start-up and one connect. One run each.")
            lines.append("")
            lines.append("| run | sharing | CPU ms, all clients | per client ms | "
                         "voluntary context switches | per client | accepted |")
            lines.append("|---|---|---:|---:|---:|---:|---:|")
            for (label, mode), h in cpu.items():
                lines.append(f"| {label} | {mode} | {h['cpu_ms']:,} | "
                             f"{h['cpu_ms'] / clients:.2f} | {h['vcsw']:,} | "
                             f"{h['vcsw'] / clients:.0f} | {h['accepted']}/{clients} |")
            lines.append("")
        text = (f"shared fate, herd ({clients} clients, {outage / 1000:g} s loopback outage): "
                f"failed attempts {on['failed']} on ({fresh['failed']} with no state file at "
                f"start) vs {off['failed']} off (ratio "
                f"{fmt_ratio(on['failed'] / off['failed'] if off['failed'] else float('nan'))}, "
                f"goal <= 0.1); p99 connect {on['p99']:.0f} ms after the "
                f"listen on vs {off['p99']:.0f} ms off (goal <= 1 s); peak {on['peak']} vs "
                f"{off['peak']} connects / 100 ms")
        c_on, c_off = cpu.get(("10 s outage", "on")), cpu.get(("10 s outage", "off"))
        if c_on and c_off:
            text += (f"; CPU over a 10 s outage {c_on['cpu_ms']} ms on vs {c_off['cpu_ms']} ms "
                     "off (goal on <= off)")
        self.headline.append(text)

    def shared_remote(self, lines, size, reps):
        clients, outage = size
        configs = (("on", clients), ("off", clients), ("off", 1))
        runs = {c: [] for c in configs}
        for rep in reps:
            for (mode, n), h in zip(configs, rep):
                if "error" in h:
                    note = f"the veth pair could not be set up or the run failed ({h['error']})"
                    self.notes.append(f"shared fate, remote destination: {note}")
                    lines += ["### A remote destination (veth)", "", f"Skipped: {note}.", ""]
                    return
                if h["ok"] != n or h["accepted"] != n:
                    self.failures.append(f"shared fate remote ({mode}, {n}): {h['ok']} of {n} "
                                         f"clients exited 0, {h['accepted']} accepted")
                runs[(mode, n)].append(h)
                self.log(f"  remote {mode} x{n}: attempts {h['opens']}, p50 {h['p50']:.0f} ms "
                         f"after the listen, peak {h['peak']}/100 ms")
        rows = []
        for mode, n in configs:
            rs = runs[(mode, n)]
            rows.append({"mode": mode, "clients": n, "runs": len(rs),
                         "each": [h["failed"] for h in rs],
                         "failed": median([h["failed"] for h in rs]),
                         "connected": sum(h["accepted"] for h in rs),
                         "p50": median([h["p50"] for h in rs]),
                         "max": max(h["max"] for h in rs),
                         "peak": max(h["peak"] for h in rs),
                         "waited": median([h["waited"] for h in rs])})
        one = rows[2]["failed"]
        lines.append("### A remote destination (veth)")
        lines.append("")
        lines.append(
            f"The server's port is bound, not listening, on 10.9.0.2 in one network namespace; "
            f"the clients run in another (10.9.0.1), joined to it by a veth pair that the "
            f"benchmark makes and that goes with the namespaces. {clients} `probe` processes "
            f"(released together as above) wait through a {outage / 1000:g} s outage (every "
            "SYN answered by a reset). No listener is looked for here: a remote destination "
            "follows the policy, and sharing only leaves out a planned attempt when another "
            "process found the destination down since the caller's own last one. *failed* = "
            "the clients' namespace's `Tcp ActiveOpens` - connections accepted; *x one client* "
            f"= failed attempts / those of one client alone through the same outage. "
            f"{len(reps)} run{'s' if len(reps) != 1 else ''} of each (the three of a "
            "repetition at the same time, in "
            "namespaces of their own); medians of the runs, *max* and *peak* the largest.")
        lines.append("")
        lines.append("| clients | sharing | failed, each run | failed per client | x one client | "
                     "connected | p50 ms after listen | max ms | peak / 100 ms | waited |")
        lines.append("|---:|---|---|---:|---:|---|---:|---:|---:|---:|")
        for r in rows:
            waited = f"{r['waited']:g}" if r["mode"] == "on" else ""
            lines.append(
                f"| {r['clients']} | {r['mode']} | {', '.join(str(x) for x in r['each'])} | "
                f"{r['failed'] / r['clients']:.2f} | "
                f"{r['failed'] / one if one else float('nan'):.1f} | "
                f"{r['connected']}/{r['clients'] * r['runs']} | {r['p50']:,.0f} | "
                f"{r['max']:,.0f} | {r['peak']} | {waited} |")
        lines.append("")
        on, off = rows[0], rows[1]
        self.headline.append(
            f"shared fate, remote destination ({clients} clients, {outage / 1000:g} s outage, "
            f"veth): failed attempts {on['failed']:g} on vs {off['failed']:g} off "
            f"({one:g} for one client alone; medians of {len(reps)}); median client connected "
            f"{on['p50']:,.0f} ms after the listen on vs {off['p50']:,.0f} ms off")
        self.shared_remote_rows = rows

    # ------------------------------------------------------------------ report

    def write(self, started):
        m = self.machine
        elapsed = time.monotonic() - started
        busy = [f"{label}: {la}" for label, la in self.loads]
        first_load = float(self.loads[0][1].split()[0]) if self.loads else 0.0
        head = ["# libbackoff benchmarks" + (" (quick run: reduced set, not for numbers)"
                                               if self.quick else ""), ""]
        head.append(f"Generated by `make {'bench-quick' if self.quick else 'bench'}` "
                    f"(`tests/bench/run.py`) on {m['date']} in {elapsed:.0f} s, "
                    f"commit `{m['commit']}`.")
        head.append("")
        head.append(f"Machine: {m['nproc']} CPUs, {m['cpu']}, {m['mem']} RAM, Linux "
                    f"{m['kernel']}, Python {m['python']}. It is a shared virtual machine: "
                    "absolute times are noisy, so every comparison below is a ratio (or an "
                    "instruction count) from runs made in this same invocation.")
        head.append("")
        head.append("Load average (1, 5, 15 min): " + "; ".join(busy) + ".")
        if first_load > 0.5 * (m["nproc"] or 1):
            head.append(f"**The machine was busy when the run started (load {first_load:.2f} "
                        f"on {m['nproc']} CPUs): other work shared the cores, which widens the "
                        "min/max of the timing ratios.**")
        head.append("")
        head.append("## Headlines")
        head.append("")
        head += [f"- {h}" for h in self.headline]
        head.append("")
        tail = ["## Targets missed, and notes", ""]
        if self.missed:
            tail += [f"- {x}" for x in self.missed]
        else:
            tail.append("- No target missed in this run.")
        tail += [f"- {x}" for x in self.notes]
        tail += [f"- **failed:** {x}" for x in self.failures]
        tail.append("")
        tail.append("Reproduce: `make bench` (about "
                    f"{'a minute' if self.quick else f'{elapsed / 60:.0f} minutes'}); raw logs "
                    f"stay in `{os.path.relpath(self.data, ROOT)}/`.")
        tail.append("")
        report = "\n".join(head) + "\n" + "\n\n".join(self.sections) + "\n\n" + "\n".join(tail)
        path = os.path.join(self.out, "report.md")
        with open(path, "w", encoding="utf-8") as f:
            f.write(report)
        self.log(f"wrote {os.path.relpath(path, ROOT)} and "
                 f"{os.path.relpath(os.path.join(self.out, 'herd.svg'), ROOT)} "
                 f"in {elapsed:.0f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", help="comma list of parts to run (1-7), for development")
    args = ap.parse_args()
    b = Bench(args)
    started = time.monotonic()
    b.machine = machine.describe()
    b.mark_load("start")
    parts = {"1": b.part_fastpath, "2": b.part_recovery, "3": b.part_herd, "4": b.part_timing,
             "5": b.part_size, "6": b.part_scale, "7": b.part_shared}
    for key in (args.only.split(",") if args.only else sorted(parts)):
        parts[key]()
    b.write(started)
    for f in b.failures:
        print(f"bench: failed: {f}", file=sys.stderr)
    sys.exit(1 if b.failures else 0)


if __name__ == "__main__":
    main()
