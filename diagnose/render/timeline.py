"""The lines that matter, in the order they happened, across every artifact.

A line's time is its evidence's `time` or the timestamp the line starts with (ISO, glog, vLLM,
syslog, `dmesg -T`, `dmesg` seconds since boot). Lines are merged by time only when every log in
the timeline gives times on one comparable clock; otherwise they stay in input order and the note
says so. Nothing is guessed: a time is shown in ISO 8601 as the log gives it, never shifted; with its
year only where the line gives one (`--MM-DD`, ISO's form without a year, where it does not), in UTC
(`Z`) where the line gives its offset, else on the log's own clock.

>>> parse_time("[rank0]:[E1129 19:50:56.183415218 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught")
Stamp(shown='--11-29T19:50:56.183', clock='wall', key=(11, 29, 71456.183415218), year=None)
>>> parse_time("2026-11-29T21:50:56.5+02:00 ERROR worker died").shown
'2026-11-29T19:50:56.500Z'
>>> parse_time("[ 1843.439669] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.").shown
'1843.440 s after boot'
>>> relative(0.0), relative(25.2), relative(3725), relative(214 * 86400 + 60)
('T+0', '+25 s', '+1 h 2 min 5 s', '+214 d 00:01:00')
>>> parse_time("Traceback (most recent call last):") is None
True
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from diagnose import lazy_re
from diagnose.model import Diagnosis, Finding

MONTHS = {m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)}
HEAD = 90  # a timestamp is looked for in the first characters of a line only
MAX_EVENTS = 40
CLOCKS = [
    re.compile(r"(?P<Y>\d{4})-(?P<M>\d\d)-(?P<D>\d\d)[T ](?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)(?:[.,](?P<f>\d+))?"
               r"(?P<z>Z|[+-]\d\d:?\d\d)?"),
    re.compile(r"(?<![\w])[IWEF](?P<M>[01]\d)(?P<D>[0-3]\d) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)(?:\.(?P<f>\d+))?"),
    re.compile(r"\b(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?P<M>[01]\d)-(?P<D>[0-3]\d) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)"),
    re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<Mon>[A-Z][a-z]{2}) +(?P<D>\d{1,2}) "
               r"(?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d) (?P<Y>\d{4})"),
    re.compile(r"^(?P<Mon>[A-Z][a-z]{2}) +(?P<D>\d{1,2}) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d)\b"),
]
UPTIME = lazy_re.compile(r"^\[\s*(?P<up>\d{1,10}\.\d{1,9})\]")  # 5,000 digits would be float inf
BARE_SECONDS = lazy_re.compile(r"^\s*\d+\.\d+\s*$")  # an Xid's time from plain `dmesg`
RANK = lazy_re.compile(r"^\[rank(\d+)\]:|\[Rank (\d+)\]|\brank=(\d+)\b")  # torch's prefix, its glog text, vLLM workers


@dataclass(frozen=True)
class Stamp:
    shown: str
    clock: str  # "wall" (month, day, time of day) or "boot" (seconds since boot)
    key: tuple[float, ...]
    year: int | None = None

    def seconds(self, year: int | None = None) -> float:
        """Seconds on its own clock: since boot, or since 1 Jan 1 of its year (`year` when it gives none)."""
        if self.clock == "boot":
            return self.key[0]
        month, day, secs = self.key
        return dt.date(self.year or year or 2000, int(month), int(day)).toordinal() * 86400.0 + secs


@dataclass
class Event:
    source: str
    line: int
    text: str
    what: str
    stamp: Stamp | None
    shown_time: str | None  # the evidence's own `time` when it is not a timestamp we can read
    role: str = "error"  # "cause" | "symptom" | "error" (no rule explains it) | "xid"
    rule_id: str | None = None
    rank: int | None = None  # the distributed rank the line names, where it names one


def parse_time(text: str) -> Stamp | None:
    head = text[:HEAD]
    for pattern in CLOCKS:
        m = pattern.search(head)
        g = m.groupdict() if m else {}
        if m and (month := int(g["M"]) if g.get("M") else MONTHS.get(g.get("Mon") or "", 0)):
            h, mi, s, day = int(m["h"]), int(m["m"]), int(m["s"]), int(m["D"])
            frac = g.get("f") or ""
            year = int(g["Y"]) if g.get("Y") else None
            if not (1 <= month <= 12 and 1 <= day <= 31 and h < 24 and mi < 60 and s < 62):
                continue  # digits in a date's shape, not a date
            if g.get("z") and year:
                try:
                    return _utc(year, month, day, h, mi, s, frac, g["z"])
                except (ValueError, OverflowError):  # 30 February, or an offset past the calendar
                    continue
            seconds = h * 3600 + mi * 60 + s + (float("0." + frac) if frac else 0.0)
            shown = f"{month:02d}-{day:02d}T{h:02d}:{mi:02d}:{s:02d}" + (f".{frac[:3]}" if frac else "")
            return Stamp(f"{year}-{shown}" if year else f"--{shown}", "wall", (month, day, seconds), year)
    m = UPTIME.match(text)
    if m:
        return Stamp(f"{float(m['up']):.3f} s after boot", "boot", (float(m["up"]),))
    return None


def _utc(year: int, month: int, day: int, h: int, mi: int, s: int, frac: str, zone: str) -> Stamp:
    """A time the line gives with its offset, in UTC."""
    offset = 0 if zone == "Z" else (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 60 + int(zone[-2:]))
    t = dt.datetime(year, month, day, h, mi, s) - dt.timedelta(minutes=offset)
    part = float("0." + frac) if frac else 0.0
    shown = t.strftime("%Y-%m-%dT%H:%M:%S") + f".{round(part * 1000):03d}Z"
    return Stamp(shown, "wall", (t.month, t.day, t.hour * 3600 + t.minute * 60 + t.second + part), t.year)


def relative(seconds: float) -> str:
    """`T+0`, `+25 s`, `+4 min 5 s`, `+214 d 00:26:45`: how long after the first timed line."""
    if seconds < 0.05:
        return "T+0"
    if seconds < 10:
        return f"+{seconds:.1f} s"
    return "+" + span(seconds)


def span(seconds: float) -> str:
    """A duration to the second: `25 s`, `4 min 5 s`, `2 h 3 min 4 s`, `214 d 00:26:45`."""
    s = round(seconds)
    if s < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{s} s"
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60} s" if s % 60 else "")
    if s < 86400:
        return f"{s // 3600} h" + (f" {s % 3600 // 60} min" if s % 3600 // 60 else "") + (f" {s % 60} s" if s % 60 else "")
    return f"{s // 86400} d {s % 86400 // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def events(diagnosis: Diagnosis) -> list[Event]:
    """Evidence of every finding and symptom, unmatched errors and Xids: one event per line."""
    seen: set[tuple[str, int]] = set()
    out: list[Event] = []

    def add(source: str, line: int, text: str, what: str, time: str | None, role: str, rule: str | None) -> None:
        if not line or (source, line) in seen:
            return
        seen.add((source, line))
        stamp = parse_time(f"[{time}]" if time and BARE_SECONDS.match(time) else time) if time else None
        stamp = stamp or parse_time(text)
        m = RANK.search(text[:HEAD])
        rank = int(next(g for g in m.groups() if g is not None)) if m else None
        out.append(Event(source, line, text, what, stamp, time if time and stamp is None else None, role, rule, rank))

    def add_finding(f: Finding, what: str, role: str) -> None:
        for e in f.evidence:
            add(e.source, e.line, e.text, what, e.time, role, f.rule_id)
        for s in f.symptoms:
            add_finding(s, f"symptom `{s.rule_id}` (of `{f.rule_id}`)", "symptom")

    for f in diagnosis.findings:
        add_finding(f, f"root cause {f.rank}: `{f.rule_id}`" if f.rank else f"`{f.rule_id}`", "cause")
    for e in diagnosis.unmatched_errors:
        add(e.source, e.line, e.text, "error no rule explains", e.time, "error", None)
    for x in diagnosis.facts.xids:
        if x.source and x.line:
            pci = f" (PCI:{x.pci})" if x.pci else ""
            add(x.source, x.line, f"NVRM: Xid{pci}: {x.xid}, {x.text}", f"Xid {x.xid}", x.time, "xid", None)
    return out


def ordered(evs: list[Event]) -> tuple[list[Event], str]:
    """The events in time order where the logs allow it, else input order; and how they were ordered."""
    order: dict[str, int] = {}
    for e in evs:
        order.setdefault(e.source, len(order))
    by_input = sorted(evs, key=lambda e: (order[e.source], e.line))
    stamped = [e.stamp for e in evs if e.stamp]
    if not stamped:
        return by_input, "The lines carry no timestamps: this is input order (artifact by artifact, line by line)."
    clocks = {s.clock for s in stamped}
    years = {s.year for s in stamped if s.year}
    sources_without = {e.source for e in evs} - {e.source for e in evs if e.stamp}
    if len(clocks) > 1 or len(years) > 1 or (sources_without and len(order) > 1):
        return by_input, (
            "The logs do not share one clock (or some give no time): this is input order, artifact by "
            "artifact; times are shown as each log gives them."
        )
    effective: dict[int, tuple[float, ...]] = {}
    for source in order:
        lines = [e for e in by_input if e.source == source]
        last = next(e.stamp.key for e in lines if e.stamp)
        for e in lines:
            last = e.stamp.key if e.stamp else last
            effective[id(e)] = last
    merged = sorted(by_input, key=lambda e: (effective[id(e)], order[e.source], e.line))
    how = "Ordered by the times the logs give"
    if len(order) > 1:
        how += ", merged across artifacts"
    if any(not e.stamp for e in evs):
        how += "; a line without a time stays after the last timed line of its log"
    if stamped[0].clock == "wall" and not years:
        how += " (the logs give no year)"
    return merged, how + "."
