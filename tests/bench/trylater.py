#!/usr/bin/env python3
"""Try later: what the watch on a connection's first answer costs, and how soon a client
refused for now gets through once its server is ready.

usage: trylater.py --build DIR --out DIR [--quick] [--parts 1234]

1. The watch's cost: build/bench/fastpath's greet and request loops (connect,
   read the first answer, close; the server's side in raw system calls) and
   the same without the read, counted by valgrind --tool=callgrind without the
   library, with its default protocols, with BACKOFF_PROTOCOLS=+http and with
   every protocol off (the early-close watch alone); the loops' times and
   system calls per connection (strace -c) beside them.
2. nginx as a reverse proxy (a new upstream connect per request) to a local
   nginx backend, driven by ab: plain, preloaded with the default protocols,
   preloaded with +http; the three in rotated order each round, medians of
   the rounds' ratios.
3. For each "try later" case (vsftpd at max_clients, redis-server at maxclients
   and loading, a scripted 503 with Retry-After, nginx before a late backend,
   a scripted MQTT broker refusing CONNECTs), the time from the server's
   readiness to the client's success under the library, beside the policy's
   planned next attempt read from the JSON log.
4. Crowds at a full server: 60 python clients at redis-server --maxclients 10,
   60 curl behind nginx's limit_conn 5 (503), each holding what it gets 1 s:
   served, attempts per client the server counted, and the time against the
   server's pace, without and with the library.

Writes OUT/trylater.md; raw files go to BUILD/bench/trylater (or
BUILD/bench-quick/trylater).  Standard library only.  --quick runs a reduced
set in seconds, only to prove that every part still runs: it judges nothing.
A part whose programs are missing is skipped with a line in the report.
"""

import argparse
import collections
import http.server
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import callgrind
import machine
import nginx as nginx_conf

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Every protocol off: the watch for an early close stays (it is not a protocol's).
PROTOCOLS_OFF = "-postgresql,-mysql,-redis,-memcached,-nats,-smtp,-ftp,-mqtt"
CONFIGS = [("default protocols", {}), ("+http", {"BACKOFF_PROTOCOLS": "+http"}),
           ("protocols off", {"BACKOFF_PROTOCOLS": PROTOCOLS_OFF})]
GOAL_NGINX = 0.97
GOAL_LOCAL_MS = 20
PERF_HZ = 4000
MARGIN_MS = 20
# The kernel's entry points shown in part 2: system calls and the page fault.
KERNEL_ENTRIES = {"__x64_sys_connect": "connect", "__x64_sys_close": "close",
                  "__x64_sys_mmap": "mmap", "__x64_sys_munmap": "munmap",
                  "asm_exc_page_fault": "page faults", "__x64_sys_recvfrom": "recvfrom",
                  "__x64_sys_newfstatat": "fstat", "__x64_sys_writev": "writev",
                  "__x64_sys_epoll_wait": "epoll_wait"}


def clean_env(**extra):
    """The driver's environment without any BACKOFF_* or LD_PRELOAD, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BACKOFF") and k != "LD_PRELOAD"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


TICKS = os.sysconf("SC_CLK_TCK")


def self_calls_http(calls):
    """The system calls per request the +http proxy makes beyond plain's, as text."""
    if "+http" not in calls or "plain" not in calls:
        return "not counted"
    d = {k: calls["+http"].get(k, 0) - calls["plain"].get(k, 0)
         for k in set(calls["+http"]) | set(calls["plain"])}
    return ", ".join(f"`{k}` {v:+.1f}" for k, v in sorted(d.items()) if abs(v) >= 0.5) or "none"


def cpu_ticks(pid):
    """A process's user and system time so far, in clock ticks; None if it cannot be read."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def verdict(quick, ok):
    return "not judged (quick run)" if quick else ("met" if ok else "**missed**")


class Bench:
    def __init__(self, a):
        self.quick = a.quick
        self.build = os.path.abspath(a.build)
        self.out = os.path.abspath(a.out)
        self.lib = os.path.join(self.build, "libbackoff.so")
        self.fastpath = os.path.join(self.build, "bench", "fastpath")
        for f in (self.lib, self.fastpath):
            if not os.path.exists(f):
                sys.exit(f"trylater: {f} is missing: build with make bench")
        self.data = os.path.join(self.build, "bench-quick" if self.quick else "bench",
                                 "trylater")
        shutil.rmtree(self.data, ignore_errors=True)
        os.makedirs(self.data)
        self.sections = []
        self.summary = []

    def log(self, msg):
        print(f"trylater: {msg}", flush=True)

    def lib_env(self, extra, state):
        """The library's environment: its own state file, so no other user of the machine's
        shared state meets these runs."""
        return clean_env(LD_PRELOAD=self.lib, BACKOFF_SHARED=state, **extra)

    # ------------------------------------------------------------ 1. the watch's cost

    def callgrind_total(self, mode, n, env, tag):
        out = os.path.join(self.data, f"cg-{mode}-{n}-{tag}.out")
        return callgrind.total(self.fastpath, mode, n, env, out)

    def strace_counts(self, mode, n, env):
        """System calls of the loop by name (strace -c -f), start-up included."""
        out = os.path.join(self.data, "strace.txt")
        r = subprocess.run(["strace", "-c", "-f", "-o", out, self.fastpath, mode, str(n)],
                           env=env, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"strace {mode}: {r.stderr[-500:]}")
        counts = collections.Counter()
        with open(out, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?([a-z_0-9]+)\s*$",
                             line)
                if m and m.group(2) != "total":
                    counts[m.group(2)] += int(m.group(1))
        return counts

    def part_watch(self):
        self.log("1/4 the watch's cost per connection and per first read")
        lines = ["## 1. The watch on a healthy connection", ""]
        if shutil.which("valgrind") is None:
            lines += ["valgrind is not installed: part skipped.", ""]
            self.sections.append("\n".join(lines))
            return
        n = 200 if self.quick else 2000
        state = os.path.join(self.data, "state-watch")
        envs = [("without", clean_env())] + [(name, self.lib_env(extra, state))
                                             for name, extra in CONFIGS]
        modes = ["greet", "greet-noread", "request", "request-noread"]
        total, funcs = {}, {}
        for name, env in envs:
            tag = name.replace(" ", "_").replace("+", "")
            total[(name, 0)], funcs[(name, 0)] = self.callgrind_total("greet", 0, env, tag)
            for mode in modes:
                total[(name, mode)], funcs[(name, mode)] = self.callgrind_total(mode, n, env,
                                                                                tag)

        def extra(name, mode):
            return ((total[(name, mode)] - total[(name, 0)]) -
                    (total[("without", mode)] - total[("without", 0)])) / n

        def where(name, mode, than):
            """The functions that make @name's @mode cost more than @than's, per connection."""
            a = {k: funcs[(name, mode)][k] - funcs[(name, 0)][k]
                 for k in set(funcs[(name, mode)]) | set(funcs[(name, 0)])}
            b = {k: funcs[than][k] - funcs[(than[0], 0)][k]
                 for k in set(funcs[than]) | set(funcs[(than[0], 0)])}
            d = collections.Counter({k: (a.get(k, 0) - b.get(k, 0)) / n
                                     for k in set(a) | set(b)})
            return ", ".join(f"`{k}` {v:+.0f}" for k, v in d.most_common(4) if v >= 1)

        base = {m: (total[("without", m)] - total[("without", 0)]) / n for m in modes}
        lines += [
            "User-space instructions counted by `valgrind --tool=callgrind` on "
            f"`build/bench/fastpath` ({n:,} connections a run): *greet* connects, reads the "
            "server's first answer (`220 ready`, as an FTP or SMTP greeting) and closes; "
            "*request* writes an HTTP `GET` first and reads a `200` answer; the server's side "
            "is made with raw system calls, so only the client's calls meet the hooks. Extra "
            "per connection = ((with, N) - (with, 0) - (without, N) + (without, 0)) / N; "
            "extra per first read = the loop's extra less the extra of the same loop that "
            "closes without reading (`-noread`): what looking at the answer costs. "
            f"*protocols off* is `BACKOFF_PROTOCOLS={PROTOCOLS_OFF}` (the early-close watch "
            "alone: a list cannot be empty).", "",
            f"Without the library: {base['greet']:,.0f} instructions per greet connection, "
            f"{base['request']:,.0f} per request connection.", "",
            "| library | greet: extra per connection | extra per first read | "
            "request: extra per connection | extra per first read | start-up extra |",
            "|---|---:|---:|---:|---:|---:|"]
        per = {}
        for name, _ in CONFIGS:
            g, gr = extra(name, "greet"), extra(name, "greet") - extra(name, "greet-noread")
            q, qr = extra(name, "request"), extra(name, "request") - extra(name,
                                                                          "request-noread")
            per[name] = (g, gr, q, qr)
            lines.append(f"| {name} | **{g:.0f}** | {gr:.0f} | **{q:.0f}** | {qr:.0f} | "
                         f"{total[(name, 0)] - total[('without', 0)]:,} |")
            self.log(f"  {name}: greet +{g:.0f} per connection (+{gr:.0f} per first read), "
                     f"request +{q:.0f} (+{qr:.0f})")
        lines += ["", "Where the extra goes, per connection (callgrind's functions; *first read*: "
                  "the loop against the same loop without its read, same library):", "",
                  "| library, loop | whole connection, against no library | first read |",
                  "|---|---|---|"]
        for name, _ in CONFIGS:
            for mode in ("greet", "request"):
                lines.append(f"| {name}, {mode} | {where(name, mode, ('without', mode))} | "
                             f"{where(name, mode, (name, mode + '-noread'))} |")
        lines.append("")
        d, h = per["default protocols"], per["+http"]
        self.summary.append(
            f"watch: +{d[0]:.0f} instructions per greeted connection (+{d[1]:.0f} at its first "
            f"read) with the default protocols, +{h[2]:.0f} per HTTP request connection with "
            f"+http (+{h[3]:.0f} at its first read; {d[2]:.0f} with the default)")

        # Time and system calls: what instructions do not show.
        reps = 1 if self.quick else 7
        tn = 1000 if self.quick else 20000
        cpu = max(os.sched_getaffinity(0))
        times = collections.defaultdict(list)
        for r in range(reps):
            order = envs if r % 2 == 0 else envs[::-1]
            for mode in ("greet", "request"):
                for name, env in order:
                    p = subprocess.run([self.fastpath, mode, str(tn)], env=env,
                                       capture_output=True, text=True, check=False,
                                       preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
                    if p.returncode != 0:
                        raise RuntimeError(f"fastpath {mode}: {p.stderr.strip()}")
                    ns = int(re.search(r"loop_ns=(\d+)", p.stdout).group(1))
                    times[(name, mode)].append(ns / tn)
        calls = {}
        if shutil.which("strace"):
            sn = 200 if self.quick else 1000
            for name, env in envs:
                for mode in ("greet", "request"):
                    a, b = self.strace_counts(mode, sn, env), self.strace_counts(mode, 0, env)
                    calls[(name, mode)] = {k: (a[k] - b[k]) / sn for k in set(a) | set(b)}
        lines += [
            f"The same loops timed ({tn:,} connections, pinned to one CPU, the four in "
            f"alternation, median of {reps} run(s)), and their system calls per connection "
            "counted by `strace -c -f` (runs of 0 subtracted): instructions miss the kernel's "
            "share.", "",
            "| library | greet: us per connection | ratio | extra system calls | "
            "request: us per connection | ratio | extra system calls |",
            "|---|---:|---:|---|---:|---:|---|"]
        med = {k: statistics.median(v) for k, v in times.items()}

        def diff(name, mode):
            if (name, mode) not in calls:
                return "n/a"
            mine, plain = calls[(name, mode)], calls[("without", mode)]
            d = {k: mine.get(k, 0) - plain.get(k, 0) for k in set(mine) | set(plain)}
            d = {k: v for k, v in d.items() if abs(v) >= 0.5}
            return ", ".join(f"`{k}` {v:+.0f}" for k, v in sorted(d.items())) or "none"

        for name, _ in [("without", None)] + CONFIGS:
            row = f"| {name} |"
            for mode in ("greet", "request"):
                r = med[(name, mode)] / med[("without", mode)]
                row += (f" {med[(name, mode)] / 1000:.1f} | "
                        f"{'' if name == 'without' else f'{r:.3f}'} | "
                        f"{'' if name == 'without' else diff(name, mode)} |")
            lines.append(row)
        lines.append("")
        lines += [
            "Every connection pays the bounded first attempt (`setsockopt` twice, as any "
            "connect under the library) whatever the protocols. With `+http` a request's "
            "connection also has its request recorded, in a buffer of its own mapped at the "
            "first write and unmapped at close (`mmap`, a page fault, `munmap`), and its answer "
            "peeked at once more when the read holds less than the head's 1 KiB "
            "(`recvfrom` with `MSG_PEEK`): the kernel's share, which callgrind does not count, "
            "is most of what the request loop's time shows.", ""]
        self.watch_time = {name: med[(name, "request")] / med[("without", "request")]
                           for name, _ in CONFIGS}
        self.sections.append("\n".join(lines))

    # ------------------------------------------------------------ 2. nginx

    def part_nginx(self):
        self.log("2/4 nginx reverse proxy")
        lines = ["## 2. nginx as a reverse proxy", ""]
        nginx, ab = shutil.which("nginx") or "/usr/sbin/nginx", shutil.which("ab")
        if not os.path.exists(nginx) or ab is None:
            lines += ["nginx or ab (apache2-utils) is not installed: part skipped.", ""]
            self.sections.append("\n".join(lines))
            return
        tmp = os.path.join(self.data, "nginx")
        be = free_port()
        proxies = [("plain", None), ("default protocols", {}),
                   ("+http", {"BACKOFF_PROTOCOLS": "+http"})]
        ports = {name: free_port() for name, _ in proxies}
        procs = []

        def start(name, body, env):
            d = os.path.join(tmp, name.replace(" ", "-").replace("+", ""))
            path = nginx_conf.write_conf(d, body)
            p = subprocess.Popen([nginx, "-p", d, "-e", f"{d}/error.log", "-c", path],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append((name, p))
            return p

        def ab_run(port, count):
            r = subprocess.run([ab, "-q", "-n", str(count), "-c", "8",
                                f"http://127.0.0.1:{port}/"], capture_output=True, text=True,
                               check=False)
            m = re.search(r"Requests per second:\s+([\d.]+)", r.stdout)
            failed = re.search(r"Failed requests:\s+(\d+)", r.stdout)
            non2xx = re.search(r"Non-2xx responses:\s+(\d+)", r.stdout)
            bad = (int(failed.group(1)) if failed else 1) + (int(non2xx.group(1))
                                                             if non2xx else 0)
            return (float(m.group(1)) if m else float("nan")), bad

        # No upstream keepalive (nginx's default: HTTP/1.0 to the upstream, closed after each
        # answer): every request makes a new upstream connect, watched for its first answer.
        proxy = ("server {{ listen 127.0.0.1:{port}; location / {{ proxy_pass "
                 "http://127.0.0.1:{be}; }} }}")
        n = 500 if self.quick else 20000
        rounds = 1 if self.quick else 15
        rps = collections.defaultdict(list)
        cpu = collections.defaultdict(list)  # the worker's CPU time per request, us
        together = collections.defaultdict(list)  # requests/s, the three loaded at once
        crounds = 1 if self.quick else 5
        bad = 0
        calls, cpu_split, kernel_split = {}, {}, {}
        try:
            start("backend", f'server {{ listen 127.0.0.1:{be}; location / {{ return 200 '
                  f'"ok\\n"; }} }}', clean_env())
            state = os.path.join(tmp, "state")
            for name, extra in proxies:
                start(name, proxy.format(port=ports[name], be=be),
                      clean_env() if extra is None else self.lib_env(extra, state))
            for port in [be] + list(ports.values()):
                if not wait_port(port):
                    raise RuntimeError(f"nginx does not listen on {port}")
            workers = {}
            for name, p in procs[1:]:
                w = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True,
                                   text=True, check=False).stdout.split()
                if w:
                    workers[name] = w[0]
            for name, _ in proxies:
                ab_run(ports[name], min(n, 1000))  # warm up
            for r in range(rounds):
                order = proxies[r % 3:] + proxies[:r % 3]
                if r % 2:
                    order = order[::-1]
                for name, _ in order:
                    c0 = cpu_ticks(workers.get(name))
                    v, b = ab_run(ports[name], n)
                    c1 = cpu_ticks(workers.get(name))
                    rps[name].append(v)
                    if c0 is not None and c1 is not None:
                        cpu[name].append((c1 - c0) / TICKS / n * 1e6)
                    bad += b
            # The three at the same time: the machine's swings hit them alike.
            for r in range(crounds):
                got = {}

                def load(name):
                    got[name] = ab_run(ports[name], n)

                threads = [threading.Thread(target=load, args=(name,)) for name, _ in proxies]
                for th in threads:
                    th.start()
                for th in threads:
                    th.join()
                for name, _ in proxies:
                    together[name].append(got[name][0])
                    bad += got[name][1]
            # Where each worker's time goes: CPU time per request by object (perf's
            # cpu-clock samples at a known rate; kernel, nginx, libc, libbackoff).
            if shutil.which("perf"):
                pn = 1000 if self.quick else 5000
                for name, w in workers.items():
                    data = os.path.join(tmp, f"perf-{name.replace(' ', '-')}.data")
                    pr = subprocess.Popen(["perf", "record", "-q", "-g", "-e", "cpu-clock",
                                           "-F", str(PERF_HZ), "-p", w, "-o", data],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    time.sleep(0.5)
                    ab_run(ports[name], pn)
                    pr.send_signal(2)
                    pr.wait(timeout=30)
                    r = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                                        "--sort", "dso", "-n"], capture_output=True, text=True,
                                       check=False)
                    split = {}
                    for line in r.stdout.splitlines():
                        m = re.match(r"^\s*[\d.]+%\s+(\d+)\s+(\S+)", line)
                        if m:
                            split[m.group(2)] = int(m.group(1)) / PERF_HZ / pn * 1e6
                    if not split:
                        continue
                    cpu_split[name] = split
                    # The kernel's entry points, each with what it calls (--children).
                    r = subprocess.run(["perf", "report", "-i", data, "--stdio", "--children",
                                        "--sort", "sym"], capture_output=True, text=True,
                                       check=False)
                    us = sum(split.values())
                    entries = {}
                    for line in r.stdout.splitlines():
                        m = re.match(r"^\s*([\d.]+)%\s+[\d.]+%\s+\[k\] (\S+)\s*$", line)
                        if m and m.group(2) in KERNEL_ENTRIES:
                            entries[m.group(2)] = float(m.group(1)) / 100 * us
                    kernel_split[name] = entries
            if shutil.which("strace"):
                for name, w in workers.items():
                    out = os.path.join(tmp, f"strace-{name.replace(' ', '-')}.txt")
                    tr = subprocess.Popen(["strace", "-c", "-f", "-o", out, "-p", w],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    time.sleep(0.5)
                    sn = 500 if self.quick else 2000
                    ab_run(ports[name], sn)
                    tr.terminate()
                    tr.wait(timeout=10)
                    counts = collections.Counter()
                    with open(out, encoding="utf-8") as f:
                        for line in f:
                            m = re.match(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?"
                                         r"([a-z_0-9]+)\s*$", line)
                            if m and m.group(2) != "total":
                                counts[m.group(2)] += int(m.group(1))
                    calls[name] = {k: v / sn for k, v in counts.items()}
        finally:
            for _, p in procs:
                p.terminate()
            for _, p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        ratios = {name: [w / o for w, o in zip(rps[name], rps["plain"])]
                  for name, _ in proxies[1:]}
        lines += [
            "nginx, one worker, as a reverse proxy (`proxy_pass`, no upstream keepalive: one "
            "new upstream connect per request, its answer watched) to a second nginx "
            "answering `ok`, loaded with `ab -c 8` (a new client connection per request too). "
            "Three proxies run side by side, plain and preloaded (`LD_PRELOAD` in the "
            "master's environment, inherited by its worker) with the default protocols and "
            f"with `+http`; {rounds} round(s) of {n:,} requests each, the three in rotated "
            "order; the ratio is each round's with / plain, median of the rounds. *Worker CPU "
            "per request* is the worker's user and system time over each run (from "
            "`/proc/PID/stat`) per request, median of the rounds; *plain / with* is the "
            "throughput at equal CPU, less sensitive than requests/s to the machine's other "
            "work. *At once*: the three loaded at the same time by three `ab`, "
            f"{crounds} round(s), median of the rounds' with / plain. System "
            "calls per request counted in each worker by `strace -c` over a separate run. "
            f"Goal: at least {GOAL_NGINX} of plain.", "",
            "| proxy | requests/s (median) | with / plain, median | min | max | "
            "worker CPU per request (us) | plain / with | at once, with / plain | "
            "system calls per request | extra over plain | goal |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
        ok_all = True
        self.nginx_cpu = {}
        self.nginx_together = {}

        def extra_calls(name):
            if name not in calls or "plain" not in calls:
                return "n/a"
            mine, plain = calls[name], calls["plain"]
            d = {k: mine.get(k, 0) - plain.get(k, 0) for k in set(mine) | set(plain)}
            d = {k: v for k, v in d.items() if abs(v) >= 0.5}
            return ", ".join(f"`{k}` {v:+.1f}" for k, v in sorted(d.items())) or "none"

        for name, _ in proxies:
            tot = f"{sum(calls[name].values()):.1f}" if name in calls else "n/a"
            cpu_us = statistics.median(cpu[name]) if cpu[name] else float("nan")
            if name == "plain":
                lines.append(f"| plain | {statistics.median(rps[name]):,.0f} | | | | "
                             f"{cpu_us:.1f} | | | {tot} | | |")
                continue
            cpu_ratios = [o / w for w, o in zip(cpu[name], cpu["plain"]) if w]
            cpu_ratio = statistics.median(cpu_ratios) if cpu_ratios else float("nan")
            self.nginx_cpu[name] = cpu_ratio
            at_once = statistics.median(w / o for w, o in zip(together[name], together["plain"]))
            self.nginx_together[name] = at_once
            med = statistics.median(ratios[name])
            ok = med >= GOAL_NGINX
            ok_all = ok_all and ok
            lines.append(f"| {name} | {statistics.median(rps[name]):,.0f} | **{med:.3f}** | "
                         f"{min(ratios[name]):.3f} | {max(ratios[name]):.3f} | {cpu_us:.1f} | "
                         f"{cpu_ratio:.3f} | {at_once:.3f} | {tot} | "
                         f"{extra_calls(name)} | {verdict(self.quick, ok)} |")
            self.log(f"  {name}: {med:.3f} of plain")
        lines += ["", f"Failed or non-2xx answers over all runs: {bad}.", ""]
        if cpu_split:
            objs = ["[kernel.kallsyms]", "nginx", "libc.so.6", "libbackoff.so"]
            lines += [
                "Where each worker's time goes: CPU time per request (us) by object, from "
                f"`perf record -e cpu-clock -F {PERF_HZ}` on the worker over one more run of "
                f"{1000 if self.quick else 5000:,} requests (samples / rate / requests).", "",
                "| proxy | " + " | ".join(o.strip("[]").replace(".kallsyms", "")
                                         for o in objs) + " | other | all |",
                "|---|" + "---:|" * (len(objs) + 2)]
            for name, split in cpu_split.items():
                other = sum(v for k, v in split.items() if k not in objs)
                lines.append(f"| {name} | " + " | ".join(f"{split.get(o, 0):.1f}" for o in objs) +
                             f" | {other:.1f} | {sum(split.values()):.1f} |")
            lines.append("")
        if any(kernel_split.values()):
            names = [k for k in KERNEL_ENTRIES if any(k in v for v in kernel_split.values())]
            lines += [
                "The kernel's share by entry point, with all it calls (`perf report "
                "--children`; call graphs recorded with `-g`), us per request:", "",
                "| proxy | " + " | ".join(KERNEL_ENTRIES[k] for k in names) + " |",
                "|---|" + "---:|" * len(names)]
            for name, entries in kernel_split.items():
                lines.append(f"| {name} | " + " | ".join(f"{entries.get(k, 0):.1f}"
                                                         for k in names) + " |")
            lines.append("")
        if "+http" in kernel_split and "plain" in kernel_split and "+http" in cpu_split:
            k = {n: cpu_split[n].get("[kernel.kallsyms]", 0) for n in ("plain", "+http")}
            e = kernel_split["+http"]
            more = sum(cpu_split["+http"].values()) - sum(cpu_split["plain"].values())
            lines += [
                f"Where `+http`'s cost goes: {more:+.1f} us of CPU per request over plain, of "
                f"which {k['+http'] - k['plain']:+.1f} us in the kernel: `munmap` "
                f"{e.get('__x64_sys_munmap', 0):.1f} us and page faults "
                f"{e.get('asm_exc_page_fault', 0):.1f} us directly (the recorded request's "
                "buffer, mapped per upstream connection and unmapped at its close), the rest "
                "spread over the worker's other system calls and its own code. The system calls `+http` adds per request: "
                f"{self_calls_http(calls)}.", ""]
        self.cpu_split = cpu_split
        self.kernel_split = kernel_split
        self.nginx = {name: statistics.median(v) for name, v in ratios.items()}
        self.nginx_calls = {name: extra_calls(name) for name, _ in proxies[1:]}
        self.nginx_ok = ok_all
        self.summary.append("nginx reverse proxy: " + ", ".join(
            f"{name} {v:.3f} of plain" for name, v in self.nginx.items()) +
            f" (goal >= {GOAL_NGINX})")
        self.sections.append("\n".join(lines))

    # ------------------------------------------------------------ 3. readiness to success

    def part_ready(self):
        self.log("3/4 from readiness to success")
        lines = ["## 3. From the server's readiness to the client's success", ""]
        rounds = 1 if self.quick else 5
        cases = [FtpCase, RedisMaxclientsCase, RedisLoadingCase, Http503Case, Nginx502Case,
                 MqttCase]
        rows = []
        skipped = []
        for cls in cases:
            missing = [p for p in cls.needs if shutil.which(p) is None and
                       not os.path.exists(f"/usr/sbin/{p}")]
            if missing:
                skipped.append(f"{cls.name}: {', '.join(missing)} not installed: skipped.")
                continue
            results = []
            for r in range(rounds):
                d = tempfile.mkdtemp(prefix=f"{cls.key}-{r}-", dir=self.data)
                case = cls(self, d)
                try:
                    results.append(case.run())
                except Exception as e:  # noqa: BLE001 (one case's failure is a row)
                    results.append({"error": str(e)})
                finally:
                    case.stop()
            rows.append((cls, results))
            with open(os.path.join(self.data, f"{cls.key}.json"), "w", encoding="utf-8") as f:
                json.dump(results, f, indent=1)
            good = [x for x in results if "error" not in x]
            if good:
                self.log(f"  {cls.name}: ready to success "
                         f"{statistics.median(x['success'] for x in good):.0f} ms, planned "
                         f"attempt {statistics.median(x['planned'] for x in good):.0f} ms")
            else:
                self.log(f"  {cls.name}: {results[0]['error']}")
        lines += [
            "Each case puts a local server in a state where it answers \"try later\", starts "
            "the client under the library (`BACKOFF_LOG=info BACKOFF_LOG_FORMAT=json`), makes "
            "the server ready as soon as the log shows a refusal (`not-ready`, which names the "
            f"delay before the next connect) whose next attempt is at least {MARGIN_MS} ms away "
            "(a server takes a moment to be ready: vsftpd's session process exits), and times the client's exit with "
            "success. *planned* is the next attempt in force at readiness (the last refusal's "
            "time plus its delay), from readiness; *ready to success* is from readiness to the "
            "client's exit; *after planned* is the difference (*worst round*: its largest); "
            "*client alone* is the same "
            "client's whole run (process start to exit, without the library) against the ready "
            "server, the floor of any *after planned*; *refusals after ready* counts refusals "
            f"met after readiness (0: the next planned attempt got through). Medians of {rounds} "
            f"round(s). Goals: success at the next planned attempt; within {GOAL_LOCAL_MS} ms of "
            "readiness for a local server whose readiness the prober can see.", "",
            "| case | client | planned delay (ms) | planned, from ready (ms) | ready to success "
            "(ms) | after planned (ms) | worst round | client alone (ms) | refusals after "
            "ready | next attempt |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        within = []
        for cls, results in rows:
            good = [x for x in results if "error" not in x]
            if not good:
                lines.append(f"| {cls.name} | {cls.client} | failed: "
                             f"{results[0]['error'][:120]} | | | | | | | |")
                within.append(False)
                continue
            m = {k: statistics.median(x[k] for x in good)
                 for k in ("delay", "planned", "success", "alone")}
            after = statistics.median(x["success"] - x["planned"] for x in good)
            worst = max(x["success"] - x["planned"] for x in good)
            late = max(x["refusals_after"] for x in good)
            # The next planned attempt: no refusal after readiness, and the success within the
            # client's own run (plus 20 ms of slack) after that attempt's time.
            ok = late == 0 and len(good) == len(results) and \
                all(x["success"] - max(x["planned"], 0) <= x["alone"] + 20 for x in good)
            within.append(ok)
            lines.append(f"| {cls.name} | {cls.client} | {m['delay']:.0f} | {m['planned']:.0f} | "
                         f"**{m['success']:.0f}** | {after:+.0f} | {worst:+.0f} | "
                         f"{m['alone']:.0f} | {late} | "
                         f"{verdict(self.quick, ok)} |")
        lines.append("")
        lines += [s + "  " for s in skipped]
        if skipped:
            lines.append("")
        lines += [
            "In every case the server listens throughout (it refuses by what it answers, not "
            "by not listening), so the local prober, which looks for a listener, sees nothing "
            "change: the client's next connection waits for its planned delay (the policy's "
            "draw, or the server's `Retry-After`), and the "
            f"{GOAL_LOCAL_MS} ms goal for a readiness the prober can see has no case here. "
            "*after planned* is the rest of the exchange once connected again (curl logs in "
            "to the FTP server and asks the file's size), and is below *client alone*, which "
            "also pays the process's start.", ""]
        self.ready_rows = rows
        self.ready_ok = all(within)
        self.summary.append("ready to success: " + ", ".join(
            f"{cls.key} {statistics.median(x['success'] for x in res if 'error' not in x):.0f} "
            f"ms (planned {statistics.median(x['planned'] for x in res if 'error' not in x):.0f})"
            for cls, res in rows if any("error" not in x for x in res)))
        self.sections.append("\n".join(lines))

    # ------------------------------------------------------------ 4. a crowd at a full server

    CROWD_CLIENT = """
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"*1\\r\\n$4\\r\\nPING\\r\\n")
if not s.recv(100).startswith(b"+PONG"):
    sys.exit(1)
import time
time.sleep(float(sys.argv[2]))
s.sendall(b"*1\\r\\n$4\\r\\nQUIT\\r\\n")
s.recv(100)
s.close()
"""

    @staticmethod
    def crowd_run(argv, env, clients, ok):
        """@clients runs of @argv started in turn without waiting: how many @ok(rc, out) says
        were served, and the time from the first start to the last end."""
        t0 = time.monotonic()
        procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True) for _ in range(clients)]
        served = 0
        for p in procs:
            out, _ = p.communicate(timeout=180)
            served += ok(p.returncode, out)
        return served, time.monotonic() - t0

    def crowd_redis(self, clients, limit, hold, env):
        """A crowd against a fresh redis-server: served, attempts the server counted, time."""
        port = free_port()
        redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                  "--maxclients", str(limit), "--save", "", "--appendonly",
                                  "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if not wait_port(port):
                raise RuntimeError("redis-server does not listen")

            def counted():
                r = subprocess.run(["redis-cli", "-p", str(port), "info", "stats"],
                                   capture_output=True, text=True, check=True)
                return sum(int(line.split(":")[1]) for line in r.stdout.splitlines()
                           if line.startswith(("total_connections_received:",
                                               "rejected_connections:")))
            base = counted()
            served, elapsed = self.crowd_run(
                [sys.executable, "-c", self.CROWD_CLIENT, str(port), str(hold)], env, clients,
                lambda rc, out: rc == 0)
            # The counting connection is one of them.
            return served, counted() - base - 1, elapsed
        finally:
            redis.terminate()
            redis.wait()

    def crowd_nginx(self, clients, limit, hold, env, r):
        """A crowd of curl against nginx's limit_conn (503) before a backend that holds each
        request: served, requests nginx logged, time."""
        class Slow(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                time.sleep(hold)
                self.send_response(200)
                self.send_header("Content-Length", "3")
                self.end_headers()
                self.wfile.write(b"ok\n")

            def log_message(self, *args):
                pass
        backend = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
        backend.daemon_threads = True
        threading.Thread(target=backend.serve_forever, daemon=True).start()
        d = os.path.join(self.data, f"crowd-nginx-{r}-{'with' if 'LD_PRELOAD' in env else 'without'}")
        port = free_port()
        conf = nginx_conf.write_conf(
            d, f"limit_conn_zone $binary_remote_addr zone=crowd:1m;\n"
               f"server {{ listen 127.0.0.1:{port}; access_log {d}/access.log; "
               f"location / {{ limit_conn crowd {limit}; limit_conn_status 503; "
               f"proxy_pass http://127.0.0.1:{backend.server_address[1]}; }} }}")
        nginx = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-p", d, "-e",
                                  f"{d}/error.log", "-c", conf], env=clean_env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if not wait_port(port):
                raise RuntimeError("nginx does not listen")
            served, elapsed = self.crowd_run(["curl", "-s", f"http://127.0.0.1:{port}/"], env,
                                             clients, lambda rc, out: rc == 0 and out == "ok\n")
            time.sleep(0.2)  # nginx writes its log line after the answer
            with open(f"{d}/access.log", encoding="utf-8") as f:
                requests = sum(1 for _ in f)
            return served, requests, elapsed
        finally:
            nginx.terminate()
            nginx.wait()
            backend.shutdown()
            backend.server_close()

    def part_crowd(self):
        self.log("4/4 crowds at a full server")
        lines = ["## 4. Crowds at a full server", "",
                 "Clients started in turn without waiting (as a job's workers are), each "
                 "holding what the server gives it for 1 s once served: python clients "
                 "(blocking sockets) sending Redis `PING` to redis-server `--maxclients 10`, "
                 "and curl (`BACKOFF_PROTOCOLS=+http` under the library) behind nginx's "
                 "`limit_conn 5` answering 503, whose backend holds each request 1 s. The "
                 "server's pace is clients / places x 1 s. *Attempts* are what the server "
                 "counted: Redis's connections accepted and refused, nginx's requests logged. "
                 "The time runs from the first start to the last end, start-ups included (the "
                 "crowd without the library, whose clients end at once when refused, shows "
                 "what start-up alone costs).", ""]
        cases = [("redis", 60, 10, ("redis-server", "redis-cli")),
                 ("nginx", 60, 5, ("nginx", "curl"))]
        rounds = 1 if self.quick else 3
        lines += ["| crowd | library | served (median) | attempts per client | time (s) | "
                  "time / pace | goal |", "|---|---|---:|---:|---:|---:|---|"]
        for key, clients, limit, needs in cases:
            pace = clients / limit
            if not all(shutil.which(n) for n in needs):
                lines.append(f"| {key} | not run: {', '.join(needs)} not installed | | | | | |")
                continue
            res = {"without": [], "with": []}
            for r in range(rounds):
                for name in ("without", "with"):
                    extra = {"BACKOFF_PROTOCOLS": "+http"} if key == "nginx" else {}
                    env = (clean_env() if name == "without" else
                           self.lib_env(extra, os.path.join(self.data, f"state-{key}-{r}")))
                    res[name].append(self.crowd_redis(clients, limit, 1.0, env) if key == "redis"
                                     else self.crowd_nginx(clients, limit, 1.0, env, r))
            for name in ("without", "with"):
                served = statistics.median(x[0] for x in res[name])
                per = statistics.median(x[1] / clients for x in res[name])
                t = statistics.median(x[2] for x in res[name])
                goal = ("" if name == "without" else "met" if served == clients and per <= 1.3
                        and t <= 1.5 * pace else "missed")
                lines.append(f"| {key}: {clients} clients, {limit} places | {name} | "
                             f"{served:.0f} | {per:.2f} | {t:.1f} | {t / pace:.2f} | {goal} |")
            w = res["with"]
            self.summary.append(
                f"crowd {key}: {statistics.median(x[0] for x in w):.0f} of {clients} served, "
                f"{statistics.median(x[1] / clients for x in w):.2f} attempts per client, "
                f"{statistics.median(x[2] for x in w) / pace:.2f} of the pace")
        lines += ["", f"Goal: all served, at most 1.3 attempts per client, within 1.5 times the "
                  f"pace. Rounds: {rounds}, medians."]
        self.sections.append("\n".join(lines))

    def write(self, started):
        text = ["# Try later: the watch's cost and the time to success", "",
                "What recognizing \"try later\" answers costs a program whose servers are "
                "healthy (every connection's first answer is looked at), and how soon a "
                "client refused for now gets through once its server is ready. Generated by "
                "tests/bench/trylater.py (`make bench`); comparisons are made within one run.",
                "", f"Machine: {machine.line()}; load average at the end "
                f"{' '.join(open('/proc/loadavg', encoding='ascii').read().split()[:3])}; "
                f"run time {time.monotonic() - started:.0f} s.", ""]
        text += self.sections
        path = os.path.join(self.out, "trylater.md")
        os.makedirs(self.out, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(text).rstrip("\n") + "\n")
        self.log(f"wrote {path}")
        for s in self.summary:
            self.log("  " + s)


# ---------------------------------------------------------------- part 3's cases

class Case:
    """A server made to answer "try later", a client under the library, and the release."""
    name = key = client = ""
    needs = ()
    protocols = None  # BACKOFF_PROTOCOLS for the client, if not the default

    def __init__(self, bench, d):
        self.bench = bench
        self.d = d
        self.procs = []
        self.threads_stop = threading.Event()
        self.log = os.path.join(d, "log.json")

    def popen(self, argv, name, **kw):
        out = open(os.path.join(self.d, f"{name}.out"), "w", encoding="utf-8")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, **kw)
        out.close()
        self.procs.append(p)
        return p

    def stop(self):
        self.threads_stop.set()
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()

    # What each case gives.
    def start(self):
        raise NotImplementedError

    def argv(self):
        raise NotImplementedError

    def release(self):
        """Make the server ready; its time (time.monotonic()), or None: ready_time() says."""
        raise NotImplementedError

    def ready_time(self):
        return None

    def succeeded(self, rc, out):
        return rc == 0

    def events(self):
        ev = []
        if os.path.exists(self.log):
            with open(self.log, encoding="utf-8") as f:
                for line in f:
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    if e.get("event") == "not-ready":
                        ev.append(e)
        return ev

    def run(self):
        self.start()
        extra = {"BACKOFF_LOG": "info", "BACKOFF_LOG_FORMAT": "json",
                 "BACKOFF_LOG_FILE": self.log}
        if self.protocols:
            extra["BACKOFF_PROTOCOLS"] = self.protocols
        env = self.bench.lib_env(extra, os.path.join(self.d, "state"))
        outpath = os.path.join(self.d, "client.out")
        with open(outpath, "w", encoding="utf-8") as out:
            client = subprocess.Popen(self.argv(), env=env, stdout=out,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.procs.append(client)
        done = {}

        def waiter():
            done["rc"] = client.wait()
            done["t"] = time.monotonic()

        th = threading.Thread(target=waiter)
        th.start()
        deadline = time.monotonic() + 20
        t_ready = None
        # Ready once a refusal's planned next attempt is at least MARGIN_MS away: a server
        # takes a moment to be ready (vsftpd's session process exits), and an attempt
        # planned before it would be refused, rightly, before readiness.
        released = False
        while time.monotonic() < deadline and "rc" not in done and not released:
            ev = self.events()
            if ev and ev[-1]["mono_ms"] + ev[-1]["delay_ms"] - time.monotonic() * 1000 >= \
                    MARGIN_MS:
                t_ready = self.release()
                released = True
            time.sleep(0.001)
        th.join(timeout=30)
        if "rc" not in done:
            raise RuntimeError("the client did not end")
        with open(outpath, encoding="utf-8", errors="replace") as f:
            out = f.read()
        if not self.succeeded(done["rc"], out):
            raise RuntimeError(f"the client failed ({done['rc']}): {out.strip()[:200]}")
        ev = self.events()
        if not ev:
            raise RuntimeError("no refusal met (the server was ready at once)")
        if t_ready is None:
            t_ready = self.ready_time()
        if t_ready is None:
            raise RuntimeError("readiness not seen")
        ready_ms = t_ready * 1000
        before = [e for e in ev if e["mono_ms"] <= ready_ms]
        last = before[-1] if before else ev[0]
        planned = last["mono_ms"] + last["delay_ms"] - ready_ms
        alone = self.alone()
        return {"delay": last["delay_ms"], "planned": planned,
                "success": done["t"] * 1000 - ready_ms,
                "refusals_after": sum(1 for e in ev if e["mono_ms"] > ready_ms),
                "alone": alone}

    def alone(self):
        """The client's whole run without the library against the ready server (ms)."""
        t0 = time.monotonic()
        r = subprocess.run(self.argv(), env=clean_env(), capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, check=False)
        ms = (time.monotonic() - t0) * 1000
        if not self.succeeded(r.returncode, r.stdout + r.stderr):
            raise RuntimeError(f"the client alone failed: {(r.stdout + r.stderr)[:200]}")
        return ms


class Holder:
    """One of a server's connections, held: connected until the first answer (to @send)
    begins with @want."""

    def __init__(self, port, want, send=None):
        deadline = time.monotonic() + 10
        while True:
            s = socket.create_connection(("127.0.0.1", port))
            if send:
                s.sendall(send)
            if s.recv(100).startswith(want):
                break
            s.close()
            if time.monotonic() > deadline:
                raise RuntimeError("the holder never got its connection")
            time.sleep(0.02)
        self.sock = s

    def close(self):
        self.sock.close()
        return time.monotonic()


class FtpCase(Case):
    name, key, client, needs = ("FTP 421: vsftpd at max_clients=1, the other client leaves",
                                "ftp", "curl -I", ("vsftpd", "curl"))

    def start(self):
        root = os.path.join(self.d, "root")
        os.makedirs(os.path.join(self.d, "chroot"))
        os.makedirs(root)
        with open(os.path.join(root, "hello.txt"), "w", encoding="ascii") as f:
            f.write("hello\n")
        os.chmod(root, 0o755)
        self.port = free_port()
        conf = os.path.join(self.d, "vsftpd.conf")
        with open(conf, "w", encoding="ascii") as f:
            f.write(f"listen=YES\nlisten_ipv6=NO\nlisten_address=127.0.0.1\n"
                    f"listen_port={self.port}\nbackground=NO\nrun_as_launching_user=YES\n"
                    f"anonymous_enable=YES\nno_anon_password=YES\nanon_root={root}\n"
                    "local_enable=NO\nwrite_enable=NO\npasv_enable=YES\n"
                    "pasv_address=127.0.0.1\nconnect_from_port_20=NO\nseccomp_sandbox=NO\n"
                    f"secure_chroot_dir={self.d}/chroot\nxferlog_enable=NO\nmax_clients=1\n")
        vsftpd = shutil.which("vsftpd") or "/usr/sbin/vsftpd"
        self.popen([vsftpd, conf], "vsftpd", env=clean_env())
        if not wait_port(self.port):
            raise RuntimeError("vsftpd does not listen")
        time.sleep(0.05)  # the probe connection's session ends
        self.holder = Holder(self.port, b"220")

    def argv(self):
        # -I: the file's size and date over the control connection, the one retried (a
        # fetch's data connection sometimes waits 200 ms for curl's resolver thread, with
        # or without the library, which would hide what is measured).
        return ["curl", "-sSI", f"ftp://127.0.0.1:{self.port}/hello.txt"]

    def succeeded(self, rc, out):
        return rc == 0 and "Content-Length: 6" in out

    def release(self):
        return self.holder.close()


class RedisMaxclientsCase(Case):
    name, key, client, needs = ("Redis maxclients: redis-server --maxclients 1, the other "
                                "client leaves", "redis-max", "redis-cli PING",
                                ("redis-server", "redis-cli"))

    def start(self):
        self.port = free_port()
        self.popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                    "--maxclients", "1", "--save", "", "--appendonly", "no"], "redis",
                   env=clean_env())
        if not wait_port(self.port):
            raise RuntimeError("redis-server does not listen")
        self.holder = Holder(self.port, b"+PONG", b"PING\r\n")

    def argv(self):
        return ["redis-cli", "-p", str(self.port), "PING"]

    def succeeded(self, rc, out):
        return rc == 0 and out.strip() == "PONG"

    def release(self):
        return self.holder.close()


class RedisLoadingCase(Case):
    name, key, client, needs = ("Redis LOADING: redis-server loading its data set, the "
                                "loading ends", "redis-loading", "redis-cli GET",
                                ("redis-server", "redis-cli"))

    def start(self):
        self.port = free_port()
        keys = 3000 if self.bench.quick else 5000
        common = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
                  self.d, "--save", "", "--appendonly", "no"]
        seed = self.popen(common + ["--enable-debug-command", "yes"], "seed", env=clean_env())
        if not wait_port(self.port):
            raise RuntimeError("redis-server does not listen")
        cli = ["redis-cli", "-p", str(self.port)]
        subprocess.run(cli + ["DEBUG", "POPULATE", str(keys)], capture_output=True, check=True)
        subprocess.run(cli + ["SAVE"], capture_output=True, check=True)
        subprocess.run(cli + ["SHUTDOWN", "NOSAVE"], capture_output=True, check=False)
        seed.wait(timeout=10)
        # About 0.3-0.5 s of loading (100 us a key), answering LOADING meanwhile.
        self.redis_log = os.path.join(self.d, "redis.log")
        self.popen(common + ["--key-load-delay", "100",
                             "--loading-process-events-interval-bytes", "1024",
                             "--logfile", self.redis_log], "redis", env=clean_env())
        deadline = time.monotonic() + 10
        while True:
            r = subprocess.run(cli + ["GET", "key:1"], capture_output=True, text=True,
                               check=False)
            if r.stdout.startswith("LOADING"):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server never answered LOADING")

    def argv(self):
        return ["redis-cli", "-p", str(self.port), "GET", "key:1"]

    def succeeded(self, rc, out):
        return rc == 0 and out.strip() == "value:1"

    def release(self):
        return None  # the loading ends by itself: its log says when

    def ready_time(self):
        """The end of the loading, from redis-server's log (local wall time, ms)."""
        with open(self.redis_log, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.search(r"(\d+ \w+ \d{4} \d\d:\d\d:\d\d)\.(\d{3}) . (?:DB loaded from "
                              r"disk|Done loading RDB)", line)
                if m:
                    wall = time.mktime(time.strptime(m.group(1), "%d %b %Y %H:%M:%S")) + \
                        int(m.group(2)) / 1000
                    return wall - (time.time() - time.monotonic())
        return None


class ScriptedServer:
    """A loopback server in a thread: @answer(conn, ready) serves one connection."""

    def __init__(self, answer, stop, port=None, listen_now=True):
        self.answer = answer
        self.stop = stop
        self.ready = False
        self.port = port or free_port()
        self.srv = None
        if listen_now:
            self.listen()

    def listen(self):
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", self.port))
        self.srv.listen(64)
        self.srv.settimeout(0.1)
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while not self.stop.is_set():
            try:
                c, _ = self.srv.accept()
            except socket.timeout:
                continue
            c.settimeout(5)
            try:
                self.answer(c, self.ready)
            except OSError:
                pass
            c.close()
        self.srv.close()


def read_head(c):
    req = b""
    while b"\r\n\r\n" not in req:
        b = c.recv(4096)
        if not b:
            break
        req += b
    return req


class Http503Case(Case):
    name, key, client, needs = ("HTTP 503 with `Retry-After: 1` (a scripted server), then "
                                "200", "http503", "curl, +http", ("curl",))
    protocols = "+http"

    def start(self):
        def answer(c, ready):
            if not read_head(c):
                return
            if ready:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n"
                          b"\r\nok\n")
            else:
                c.sendall(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"
                          b"Content-Length: 4\r\nConnection: close\r\n\r\nbusy")

        self.server = ScriptedServer(answer, self.threads_stop)

    def argv(self):
        return ["curl", "-sS", f"http://127.0.0.1:{self.server.port}/"]

    def succeeded(self, rc, out):
        return rc == 0 and out.strip() == "ok"

    def release(self):
        self.server.ready = True
        return time.monotonic()


class Nginx502Case(Case):
    name, key, client, needs = ("nginx 502: its backend starts late", "nginx502",
                                "curl, +http", ("nginx", "curl"))
    protocols = "+http"

    def start(self):
        def answer(c, ready):
            if read_head(c):
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n"
                          b"\r\nok\n")

        self.backend = ScriptedServer(answer, self.threads_stop, listen_now=False)
        self.port = free_port()
        d = self.d
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w", encoding="utf-8") as f:
            f.write(f"daemon off; worker_processes 1; pid {d}/nginx.pid; error_log "
                    f"{d}/error.log crit;\nevents {{ worker_connections 256; }}\n"
                    f"http {{ access_log off; client_body_temp_path {d}; proxy_temp_path {d}; "
                    f"fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n"
                    f"server {{ listen 127.0.0.1:{self.port}; location / {{ proxy_pass "
                    f"http://127.0.0.1:{self.backend.port}; }} }} }}\n")
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.popen([nginx, "-p", d, "-e", f"{d}/error.log", "-c", conf], "nginx",
                   env=clean_env())
        if not wait_port(self.port):
            raise RuntimeError("nginx does not listen")

    def argv(self):
        return ["curl", "-sS", f"http://127.0.0.1:{self.port}/"]

    def succeeded(self, rc, out):
        return rc == 0 and out.strip() == "ok"

    def release(self):
        self.backend.listen()
        return time.monotonic()


class MqttCase(Case):
    name, key, client, needs = ("MQTT CONNACK 3 \"server unavailable\" (a scripted broker), "
                                "then accepted", "mqtt", "mosquitto_pub", ("mosquitto_pub",))

    def start(self):
        def packet(c):
            h = c.recv(1)
            if not h:
                return None, b""
            n, mul = 0, 1
            while True:
                b = c.recv(1)[0]
                n += (b & 0x7F) * mul
                mul *= 128
                if not b & 0x80:
                    break
            body = b""
            while len(body) < n:
                more = c.recv(n - len(body))
                if not more:
                    return None, b""
                body += more
            return h[0], body

        def answer(c, ready):
            kind, _ = packet(c)
            if kind != 0x10:
                return
            if not ready:
                c.sendall(b"\x20\x02\x00\x03")
                return
            c.sendall(b"\x20\x02\x00\x00")
            while True:
                kind, _ = packet(c)
                if kind is None or kind & 0xF0 == 0xE0:
                    break

        self.server = ScriptedServer(answer, self.threads_stop)

    def argv(self):
        return ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(self.server.port), "-t", "t",
                "-m", "hello", "-V", "mqttv311"]

    def release(self):
        self.server.ready = True
        return time.monotonic()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--parts", default="1234", help="the parts to run (a report of them alone)")
    a = ap.parse_args()
    started = time.monotonic()
    b = Bench(a)
    for key, part in (("1", b.part_watch), ("2", b.part_nginx), ("3", b.part_ready),
                      ("4", b.part_crowd)):
        if key not in a.parts:
            continue
        t0 = time.monotonic()
        part()
        b.log(f"  ({time.monotonic() - t0:.0f} s)")
    b.write(started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
