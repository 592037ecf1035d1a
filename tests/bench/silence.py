#!/usr/bin/env python3
"""Silence: clients cut off together by a black hole, then released.

usage: silence.py --build DIR --out DIR [--quick]

A loopback server's accept queue is kept full for OUTAGE seconds (listen(0)
and one connection never accepted: every SYN is dropped, as a hung or
overloaded server's), with N blocking clients (BUILD/helpers/probe) started
together at the beginning.  At the release the server raises its backlog,
accepts everything and records when each connection arrived.  Run without
the library (the kernel's SYN retransmissions: no jitter, the clients stay in
lockstep) and with it (its attempts and looks), in the same invocation.
Writes OUT/silence.md: connections per 100 ms after the release (peak), and
the p50/p99 of the time from the release to each client's connect, and how
many clients connected within the run.  Standard library only.
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def one_run(build, n, outage_s, preload, state):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    port = srv.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKOFF") and k != "LD_PRELOAD"}
    if preload:
        env.update(LD_PRELOAD=os.path.join(build, "libbackoff.so"), BACKOFF_TIMEOUT="60s",
                   BACKOFF_SHARED=state)
    probe = os.path.join(build, "helpers", "probe")
    start = time.monotonic()
    procs = [subprocess.Popen([probe, f"127.0.0.1:{port}"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for _ in range(n)]
    time.sleep(max(0.0, outage_s - (time.monotonic() - start)))
    # The release: room for everyone, and everything accepted as it comes.
    srv.listen(4096)
    released = time.monotonic()
    srv.accept()[0].close()  # the filler's
    arrivals = []
    srv.settimeout(0.5)
    deadline = released + 40
    while len(arrivals) < n and time.monotonic() < deadline:
        try:
            c, _ = srv.accept()
        except socket.timeout:
            if all(p.poll() is not None for p in procs):
                break
            continue
        arrivals.append(time.monotonic() - released)
        c.close()
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    filler.close()
    srv.close()
    return arrivals


def summary(arrivals, n):
    if not arrivals:
        return {"connected": 0, "peak": 0, "p50": float("nan"), "p99": float("nan")}
    buckets = {}
    for a in arrivals:
        buckets[int(a * 10)] = buckets.get(int(a * 10), 0) + 1
    s = sorted(arrivals)
    return {"connected": len(s), "peak": max(buckets.values()),
            "p50": s[len(s) // 2], "p99": s[min(len(s) - 1, int(len(s) * 0.99))]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    n, outage = (20, 2.0) if a.quick else (100, 10.0)
    state = os.path.join(a.build, "bench-silence-state")
    rows = []
    for name, preload in (("without the library", False), ("with the library", True)):
        if os.path.exists(state):
            os.unlink(state)
        s = summary(one_run(a.build, n, outage, preload, state), n)
        rows.append((name, s))
        print(f"silence: {name}: connected {s['connected']}/{n}, peak {s['peak']}/100 ms, "
              f"p50 {s['p50']:.3f} s, p99 {s['p99']:.3f} s after the release", flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "silence.md"), "w", encoding="utf-8") as f:
        f.write(f"# Silence: {n} clients cut off by a black hole of {outage:.0f} s, then released\n\n")
        f.write("A loopback server with a full accept queue (every SYN dropped) for the outage, "
                f"{n} blocking clients started together; at the release it accepts everything. "
                "Times are from the release to the server's accept.\n\n")
        f.write("| run | connected | peak per 100 ms | p50 | p99 |\n|---|---|---|---|---|\n")
        for name, s in rows:
            f.write(f"| {name} | {s['connected']}/{n} | {s['peak']} | {s['p50']:.3f} s | "
                    f"{s['p99']:.3f} s |\n")
        f.write("\nWithout the library the kernel's SYN retransmissions have no jitter: the clients "
                "retry in lockstep and arrive together at their next retransmission after the "
                "release. With it, a loopback attempt is cut after 20 ms, the prober looks for "
                "room every 10 ms, and the waiters follow its success.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
