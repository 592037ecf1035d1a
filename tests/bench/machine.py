"""The machine a benchmark ran on, as its report says it."""

import datetime
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def describe():
    cpu = "unknown"
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = ""
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    try:
        commit = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                                capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        commit = "unknown"
    return {
        "nproc": os.cpu_count(),
        "kernel": os.uname().release,
        "cpu": cpu,
        "mem": mem,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit or "unknown",
        "python": sys.version.split()[0],
    }


def line():
    """describe() in one line: CPUs, CPU, kernel; date; commit."""
    m = describe()
    return (f"{m['nproc']} CPU(s), {m['cpu']}, Linux {m['kernel']}; {m['date']}; "
            f"commit {m['commit']}")
