"""The incident as a Mermaid diagram for the Markdown post-mortem (GitHub, GitLab and most wikis draw it).

On one shared clock it is a `gantt`: a section per lane (artifact, rank), a milestone per cited line
(the root cause's `crit`), and a `Gaps` section whose bars span the stretches without a cited line.
The dates are the logs' own wall times, written for Mermaid to read as local time and drawn by an
axis without a year, so that the axis shows the times the logs give; a log that gives no year is
placed in 2000 (a leap year) and the axis never shows it. Without a shared clock it is a `timeline`
of the lines in input order, per lane.

>>> safe("[rank0]: Watchdog: caught #3; done")
'rank0 Watchdog caught 3 done'
"""

from __future__ import annotations

import datetime as dt
import re

from diagnose import lazy_re
from diagnose.render.incident import Incident, Moment, picture

UNSAFE = lazy_re.compile(r"[^\w .,()+/='-]+")  # Mermaid reads `:` `;` `#` `%` and brackets as syntax
MAX_LABEL = 60
BASE_YEAR = 2000


def safe(text: str) -> str:
    return " ".join(UNSAFE.sub(" ", text).split())[:MAX_LABEL].strip()


def gantt(inc: Incident) -> str:
    inc = picture(inc)
    if not inc.timed:
        return _timeline(inc)
    first = inc.moments[0].event.stamp
    boot = first is not None and first.clock == "boot"
    start = _origin(inc)
    axis = "%H:%M:%S" if (inc.duration or 0) < 86400 else "%m-%d %H:%M"
    t0 = f"T+0 = {first.shown}" if first else "T+0"
    title = "Cited lines by lane, " + t0 + (" (seconds since boot)" if boot else "") + (f"; {inc.left_out}" if inc.left_out else "")
    out = ["gantt", f"    title {' '.join(re.sub(r'[#;%{}]+', ' ', title).split())}",  # a title may hold `:`
           "    dateFormat YYYY-MM-DD HH:mm:ss.SSS", f"    axisFormat {axis}", "    todayMarker off"]
    n = 0
    for lane in inc.lanes:
        mine = [m for m in inc.moments if m.lane == lane and m.offset is not None]
        if not mine:
            continue
        out.append(f"    section {safe(lane) or 'input'}")
        for m in mine:
            n += 1
            tags = "crit, milestone" if m.event.role == "cause" else "milestone"
            out.append(f"    {_label(m)} :{tags}, m{n}, {_at(start, m.offset or 0.0)}, 0s")
    if inc.gaps:
        out.append("    section Gaps")
        for i, g in enumerate(inc.gaps, 1):
            a = inc.moments[g.after].offset or 0.0
            out.append(f"    {safe(g.text)} :done, g{i}, {_at(start, a)}, {_at(start, a + g.seconds)}")
    return "\n".join(out)


def _origin(inc: Incident) -> dt.datetime:
    """The wall time of T+0, in the year the logs give (else BASE_YEAR); midnight for a boot clock."""
    first = next(m.event.stamp for m in inc.moments if m.event.stamp)
    if first.clock == "boot":
        return dt.datetime(BASE_YEAR, 1, 1) + dt.timedelta(seconds=first.key[0])
    month, day, secs = first.key
    year = first.year or next((m.event.stamp.year for m in inc.moments if m.event.stamp and m.event.stamp.year),
                              BASE_YEAR)
    return dt.datetime(year, int(month), int(day)) + dt.timedelta(seconds=secs)


def _at(start: dt.datetime, offset: float) -> str:
    return (start + dt.timedelta(seconds=offset)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _label(m: Moment) -> str:
    e = m.event
    what = {"cause": "cause", "symptom": "symptom", "xid": "Xid"}.get(e.role, "error")
    return safe(f"{what} {e.rule_id or ''} line {e.line} {m.relative}")


def _timeline(inc: Incident) -> str:
    why = "the logs share no clock" if any(m.event.stamp for m in inc.moments) else "the lines carry no times"
    out = ["timeline", f"    title Cited lines in input order ({why})"]
    for lane in inc.lanes:
        mine = [m for m in inc.moments if m.lane == lane]
        if not mine:
            continue
        out.append(f"    section {safe(lane) or 'input'}")
        for m in mine:
            when = safe(m.event.stamp.shown if m.event.stamp else f"line {m.event.line}") or "line"
            out.append(f"        {when} : {_label(m)}")
    return "\n".join(out)
