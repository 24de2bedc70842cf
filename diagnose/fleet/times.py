"""When a log line happened, as far as the line (or the lines before it) says: ISO, vLLM, glog, kernel."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

YEAR = dt.datetime.now(dt.timezone.utc).year  # vLLM and glog stamps carry no year
PATTERNS = [
    (re.compile(r"\b(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)"), "ymdHMS"),
    (re.compile(r"\[\w{3} (\w{3}) +(\d+) (\d\d):(\d\d):(\d\d) (\d{4})\]"), "kernel"),
    (re.compile(r"\b(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b"), "mdHMS"),
    (re.compile(r"(?:^|[\[:])[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\."), "mdHMS"),  # glog, c10d
]
MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}


def parse(line: str, year: int = YEAR) -> str | None:
    """The line's own timestamp as 'YYYY-MM-DDTHH:MM:SS', or None.

    >>> parse("(EngineCore pid=4) INFO 11-24 11:43:54 [gpu_model_runner.py:3341] ok", 2026)
    '2026-11-24T11:43:54'
    >>> parse("[Sun Nov 29 19:41:37 2026] NVRM: Xid 79"), parse("no time here")
    ('2026-11-29T19:41:37', None)
    >>> parse("[rank1]:[E1201 08:59:51.734947651 socket.cpp:1028] [c10d] timed out", 2026)
    '2026-12-01T08:59:51'
    """
    for pattern, form in PATTERNS:
        m = pattern.search(line)
        if not m:
            continue
        g = m.groups()
        try:
            if form == "ymdHMS":
                n = [int(x) for x in g]
                t = dt.datetime(n[0], n[1], n[2], n[3], n[4], n[5])
            elif form == "kernel":
                t = dt.datetime(int(g[5]), MONTHS[g[0]], int(g[1]), int(g[2]), int(g[3]), int(g[4]))
            else:
                n = [int(x) for x in g]
                t = dt.datetime(year, n[0], n[1], n[2], n[3], n[4])
        except (ValueError, KeyError):
            continue
        return t.isoformat()
    return None


def at_lines(lines: Iterable[str], wanted: set[int]) -> dict[int, str]:
    """For each wanted line number (1-based): its timestamp, else the last one seen before it."""
    out: dict[int, str] = {}
    last: str | None = None
    top = max(wanted, default=0)
    for number, line in enumerate(lines, 1):
        if number > top:
            break
        if number in wanted or len(line) < 400:
            last = parse(line) or last
        if number in wanted and last:
            out[number] = last
    return out
