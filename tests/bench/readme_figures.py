#!/usr/bin/env python3
"""The figures libbackoff(7)'s PERFORMANCE section states, checked against `make bench`'s reports.

`make bench` rewrites tests/bench/report.md, supervise.md, startup.md, earlyclose.md and
trylater.md in place and they are committed: the reports next to this file are the last ones measured.
Each figure the page states that a report also holds must be the report's, rounded as
the page writes it.  Prints one line per figure; exits 1 if any differs or cannot be
found (a sentence reworded, a table renamed: the check is re-pointed with the text).
The page's roff source is read as text: its font changes and escapes taken out, so that
the patterns below read as the page does (a name in bold is a plain word).

usage: readme_figures.py [MAN_PAGE] [REPORT_DIR]
"""
import re
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


FIGURE = r"([0-9][0-9,]*(?:\.[0-9]+)?(?:–[0-9]+(?:\.[0-9]+)?)?)"


def number(text):
    """A figure as written (1,234 or **0.974**), exact: rounded as a person rounds it."""
    return Decimal(text.replace(",", "").replace("*", ""))


def cells(report, row_start):
    """The cells of the first table row of @report that begins with @row_start."""
    for line in report.splitlines():
        if line.startswith("| " + row_start) or line.startswith("|" + row_start):
            return [c.strip() for c in line.strip().strip("|").split("|")]
    raise LookupError("no row " + repr(row_start))


def cell(report, row_start, index):
    return number(cells(report, row_start)[index])


def found(report, regex):
    m = re.search(regex, report, re.S)
    if not m:
        raise LookupError("no match for " + repr(regex))
    return number(m.group(1))


def shown(value, like):
    """@value rounded as the page's @like is written (its decimals)."""
    decimals = len(like.split(".")[1]) if "." in like else 0
    value = Decimal(value).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return f"{value:,}" if "," in like else f"{value}"


def after_planned(report):
    """The latest success after its planned attempt (ms) over the try-later cases' rows."""
    rows = re.findall(r"^\| [^|\n]+ \| [^|\n]+ \| [\d.]+ \| -?[\d.]+ \| \*\*[\d.]+\*\* \| "
                      r"([+-]\d+) \|", report, re.M)
    if not rows:
        raise LookupError("no try-later rows")
    return max(number(v) for v in rows)


# The roff escapes the section writes, as the characters they print.
ESCAPES = {r"\-": "-", r"\(en": "–", r"\(em": "—", r"\(mu": "×", r"\(mc": "µ",
           r"\(aq": "'", r"\(dq": '"', r"\&": "", r"\fB": "", r"\fI": "", r"\fR": "",
           r"\fP": ""}


def section_text(page, name):
    """The text of the .SH @name section of a man page's roff source, on one line."""
    words, inside = [], False
    for line in page.splitlines():
        if line.startswith(".SH"):
            inside = line[3:].strip().strip('"') == name
            continue
        if not inside or line.startswith('.\\"'):
            continue
        if line.startswith("."):
            # A font macro's arguments are text; any other macro is layout.
            macro, _, args = line.partition(" ")
            if macro not in (".B", ".I", ".BR", ".RB", ".IR", ".RI", ".BI", ".IB"):
                continue
            line = "".join(a or b for a, b in re.findall(r'"([^"]*)"|(\S+)', args))
        words.append(line)
    text = " ".join(words)
    for escape, char in ESCAPES.items():
        text = text.replace(escape, char)
    return text.replace("\\e", "\\")


def checks(r):
    """(what, the page's regex with one group per figure, the report's figures) in the page's order."""
    rep, sup, early, up, tl = (r[n] for n in ("report.md", "supervise.md", "earlyclose.md",
                                               "startup.md", "trylater.md"))
    fast = lambda name: cell(rep, name, 5)  # noqa: E731 (the fast-path table's median ratio)
    instr = lambda name: cell(rep, name, 3)  # noqa: E731 (instructions added per call)
    herd_none, herd_full = cell(rep, "`none`", 4), cell(rep, "`full`", 4)
    shared = [cell(rep, f"{t} | {d}", 2) for t in ("0.5 s", "2 s", "10 s")
              for d in ("TCP 127.0.0.1", "unix socket")]
    return [
        ("instructions per poll, send, write, close, unix connect",
         r"hooks add (\S+) instructions per `poll`/`epoll_wait`, (\S+) per `send`, (\S+) per "
         r"`write`, (\S+) per `close` and (\S+) per unix `connect`",
         [instr("`poll` |"), instr("`send` |"), instr("`write`"), instr("`dup`+`close`"),
          found(rep, r"`connect` alone \(unix\)[^*]*\*\*([\d.]+)\*\*")]),
        ("whole-process ratios of send, poll, epoll_wait",
         r"whole-process time ratios (\S+)–(\S+)\.",
         [min(fast("`send`"), fast("`poll`"), fast("`epoll_wait`")),
          max(fast("`send`"), fast("`poll`"), fast("`epoll_wait`"))]),
        ("instructions per TCP connect",
         r"TCP `connect` costs (\S+) instructions",
         [found(rep, r"`connect` alone \(tcp\)[^*]*\*\*([\d.]+)\*\*")]),
        ("whole-process ratio of TCP connects",
         r"Its whole process runs (\S+) times as long",
         [fast("`connect`+`close` TCP")]),
        ("nginx throughput", r"kept (\S+) of its throughput",
         [cell(rep, "nginx `proxy_pass`", 1)]),
        ("poll with 1000 connects in flight", r"1000 connects in flight costs (\S+)×",
         [cell(rep, "1,000", 3)]),
        ("the herd's peak without and with full jitter",
         r"sent it (\S+) attempts in one 100 ms window without jitter, (\S+) with full "
         r"jitter \((\S+)× fewer\)",
         [herd_none, herd_full, herd_none / herd_full]),
        ("curl --retry and wait-for-it against the default policy",
         r"`curl --retry` reconnects (\S+)× later than the default policy, a 1 s "
         r"wait-for-it loop (\S+)×",
         [found(rep, r"curl --retry ([\d.]+)"), found(rep, r"wait-for-it ([\d.]+)")]),
        ("shared fate's recovery, on (worst median) and off at 10 s",
         r"found within (\S+) ms after it listens .*?; (\S+) ms at 10 s with "
         r"`BACKOFF_SHARED=off`",
         [max(shared), cell(rep, "10 s | TCP 127.0.0.1", 4)]),
        ("shared fate's herd: failed attempts on and off, p99",
         r"fail (\S+) attempts between them instead of (\S+), 99 % connected within (\S+) ms",
         [cell(rep, "on |", 2), cell(rep, "off |", 2), cell(rep, "on |", 6)]),
        ("shared fate's CPU over a 10 s outage, on and off",
         r"use (\S+) ms of CPU against (\S+) ms without sharing",
         [cell(rep, "10 s outage | on", 2), cell(rep, "10 s outage | off", 2)]),
        ("early close: connections without and with the library",
         r"made (\S+) connections in 3 s without the library and (\S+) with it",
         [cell(early, "accept-then-close front", 1), cell(early, "accept-then-close front", 2)]),
        ("early close: a healthy server's rate", r"the loop keeps (\S+) of its rate",
         [cell(early, "healthy", 3)]),
        ("try later: instructions at a first read and per connection, default and +http",
         r"costs (\S+) instructions at the first read of a server's greeting with the default "
         r"protocols \((\S+) per connection, the connect's hooks included\), and (\S+) at the "
         r"first read of an HTTP answer with `\+http` \((\S+) per connection\)",
         [cell(tl, "default protocols |", 2), cell(tl, "default protocols |", 1),
          cell(tl, "+http |", 4), cell(tl, "+http |", 3)]),
        ("try later: nginx's throughput, default protocols and +http",
         r"keeps (\S+) of plain's throughput with the default protocols (?:\([^)]*\) )?and (\S+) "
         r"with `\+http`",
         [found(tl, r"\| default protocols \| [\d,]+ \| \*\*([\d.]+)\*\*"),
          found(tl, r"\| \+http \| [\d,]+ \| \*\*([\d.]+)\*\*")]),
        ("try later: the nginx worker's CPU per request, +http and plain",
         r"spends (\S+) µs of CPU per request against (\S+) µs plain",
         [found(tl, r"\| \+http \| [\d,]+ \| \*\*[\d.]+\*\* \| [\d.]+ \| [\d.]+ \| ([\d.]+) \|"),
          found(tl, r"\| plain \| [\d,]+ \| \| \| \| ([\d.]+) \|")]),
        ("try later: success after the planned attempt, the latest case",
         r"at its next planned attempt, within (\S+) ms of it", [after_planned(tl)]),
        ("supervisor: a static program's connect, bare, supervised, extra",
         r"costs (\S+) µs bare and (\S+) µs supervised \(\+(\S+) µs",
         [cell(sup, "static, successful loopback connect (us) | bare", 2),
          cell(sup, "static, successful loopback connect (us) | supervise", 2),
          cell(sup, "static, successful loopback connect (us) | supervise", 4)]),
        ("supervisor: an unrelated system call, extra, bare, any filter's extra",
         r"costs \+(\S+) ns over a (\S+) ns bare one, .*?\(\+(\S+) ns\)",
         [cell(sup, "static, unrelated system call (ns) | supervise", 4),
          cell(sup, "static, unrelated system call (ns) | bare", 2),
          cell(sup, "static, unrelated system call (ns) | any filter", 4)]),
        ("supervisor: a preloaded program's connect under auto, preload, bare",
         r"\((\S+) µs, against (\S+) µs under the preload alone and (\S+) µs bare\)",
         [cell(sup, "dynamic, successful loopback connect (us) | auto", 2),
          cell(sup, "dynamic, successful loopback connect (us) | preload", 2),
          cell(sup, "dynamic, successful loopback connect (us) | bare", 2)]),
        ("start-up: a shell starting /bin/true, the empty library, and its peers",
         r"runs at (\S+) of its time without the library \(an empty preloaded library, built by "
         r"the benchmark as the floor of any preload, (\S+) in the same run; libeatmydata (\S+), "
         r"libtorsocks (\S+), libfaketime (\S+)\)",
         [cell(up, "libbackoff |", 1), cell(up, "empty library |", 1),
          cell(up, "libeatmydata", 1), cell(up, "libtorsocks", 1), cell(up, "libfaketime", 1)]),
        ("start-up: the launcher over env, and a static program through it",
         r"`backoff -- /bin/true` takes (\S+) of the time of `env /bin/true` \(goal: at most "
         r"1.15\), a static program through it (\S+) of the same",
         [cell(up, "backoff -- /bin/true", 2), cell(up, "backoff -- STATIC", 2)]),
        # The page gives a range where it quotes two runs: the last report's is in it.
        ("start-up: short nc exchanges, preloaded and under the launcher",
         r"keeps (\S+) of its rate preloaded and (\S+) under the launcher",
         [cell(up, "preload |", 1), cell(up, "launcher |", 1)]),
    ]


def agrees(said, value):
    """Whether the page's @said (a figure, or a range LOW–HIGH) states @value."""
    if "–" in said:
        low, high = said.split("–")
        return number(low) <= number(shown(value, low)) <= number(high)
    return said.replace(",", "") == shown(value, said).replace(",", "")


def main(argv):
    page = Path(argv[1]) if len(argv) > 1 else ROOT / "scripts" / "libbackoff.7"
    reports = Path(argv[2]) if len(argv) > 2 else ROOT / "tests" / "bench"
    section = " ".join(section_text(page.read_text(encoding="utf-8"), "PERFORMANCE").split())
    r = {name: (reports / name).read_text(encoding="utf-8")
         for name in ("report.md", "supervise.md", "earlyclose.md", "startup.md",
                      "trylater.md")}
    bad = 0
    for what, regex, want in checks(r):
        # (\S+) in a pattern is a figure: digits, a decimal point, thousands, a range.
        # The page sets names in bold where the patterns quote them as code.
        m = re.search(regex.replace(r"(\S+)", FIGURE).replace("`", ""), section)
        if not m:
            print(f"NOT FOUND  {what}: /{regex}/ in the page's PERFORMANCE section")
            bad += 1
            continue
        said = [g.rstrip(".,;:") for g in m.groups()]
        measured = [shown(v, s.split("–")[0]) for v, s in zip(want, said)]
        same = [agrees(s, v) for s, v in zip(said, want)]
        print(f"{'ok' if all(same) else 'DIFFERS':<10} {what}: page {', '.join(said)}; "
              f"report {', '.join(measured)}")
        bad += not all(same)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
