"""The incident as an SVG picture, drawn by hand (no plotting library): one lane per artifact and rank,
a marker per cited line (the root cause a red diamond, its symptoms orange circles, errors no rule
explains grey squares), gaps without a cited line bracketed and labelled, and a long gap drawn as a
break in the axis so that minutes of failure are not squeezed by months between two logs.

Without a shared clock the lines stand in input order, evenly spaced, and the picture says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from diagnose.render import incident, timeline
from diagnose.render.incident import Incident, Moment

WIDTH, LABEL_W, LANE_H, TOP, RIGHT = 1100, 260, 44, 64, 30
BREAK = 300.0  # seconds: a longer gap is drawn as a break in the axis
BREAK_W = 70
COLOURS = {"cause": "#d62728", "symptom": "#ff7f0e", "error": "#7f7f7f", "xid": "#9467bd"}
NAMES = {"cause": "root cause", "symptom": "symptom", "error": "error no rule explains", "xid": "Xid"}


@dataclass
class Segment:
    start: float  # seconds after T+0
    end: float
    x0: float
    x1: float

    def x(self, t: float) -> float:
        span = self.end - self.start
        return (self.x0 + self.x1) / 2 if span <= 0 else self.x0 + (t - self.start) / span * (self.x1 - self.x0)


def render(inc: Incident, title: str = "") -> str:
    inc = incident.picture(inc)
    row_of = {lane: i for i, lane in enumerate(inc.lanes)}
    height = TOP + LANE_H * max(1, len(inc.lanes)) + 92
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="incident-timeline" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12" role="img">',
           f"<title>{escape(title or 'Incident timeline')}</title>",
           f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>']
    out.append(f'<text x="12" y="22" font-size="15" font-weight="bold">{escape(title or "Incident timeline")}</text>')
    out.append(f'<text x="12" y="42" fill="#555">{escape(_subtitle(inc))}</text>')
    prefix = _common_dir(list(inc.lane_sources.values()))
    for i, lane in enumerate(inc.lanes):
        top = TOP + i * LANE_H
        mine = [m for m in inc.moments if m.lane == lane]
        out.append(f'<g class="lane" data-lane={quoteattr(lane)} data-source={quoteattr(inc.lane_sources[lane])}>')
        out.append(f'<rect x="0" y="{top}" width="{WIDTH}" height="{LANE_H}" fill="{"#f6f8fa" if i % 2 else "#ffffff"}"/>')
        out.append(f'<text x="12" y="{top + LANE_H / 2 + 4}">{escape(_short(lane[len(prefix):], 38))}</text>')
        if not mine:
            out.append(f'<text x="{LABEL_W + 10}" y="{top + LANE_H / 2 + 4}" fill="#999" font-style="italic">'
                       "no cited line: facts only</text>")
        out.append("</g>")
    place = _placer(inc)
    out += _axis(inc, height)
    labelled: set[tuple[str, str | None]] = set()
    taken: dict[tuple[str, int], list[float]] = {}  # (lane, above 0 / below 1) -> x of its labels
    for m in inc.moments:
        y = TOP + row_of[m.lane] * LANE_H + LANE_H / 2
        x = place(m)
        row = None
        if (m.lane, m.event.rule_id) not in labelled:
            row = next((r for r in (0, 1) if all(abs(x - x2) > 130 for x2 in taken.get((m.lane, r), []))), None)
            taken.setdefault((m.lane, row or 0), []).append(x)
        out.append(_marker(m, x, y, row))
        labelled.add((m.lane, m.event.rule_id))
    out += _legend(height)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _subtitle(inc: Incident) -> str:
    if not inc.moments:
        return "No line of the inputs was cited."
    if not inc.timed:
        return "Input order: the logs share no clock, so the lines are evenly spaced, artifact by artifact."
    first = next(m.event.stamp for m in inc.moments if m.event.stamp)
    window = f"; the cited lines span {timeline.span(inc.duration)}" if inc.duration is not None else ""
    left_out = f"; {inc.left_out}" if inc.left_out else ""
    return f"T+0 = {first.shown}, the first cited line{window}{left_out}." if first else ""


def _segments(inc: Incident) -> list[Segment]:
    times = sorted({m.offset for m in inc.moments if m.offset is not None})
    if not times:
        return []
    groups = [[times[0]]]
    for t in times[1:]:
        (groups.append([t]) if t - groups[-1][-1] > BREAK else groups[-1].append(t))
    plot = WIDTH - LABEL_W - RIGHT - BREAK_W * (len(groups) - 1)
    spans = [g[-1] - g[0] for g in groups]
    floor = max(sum(spans), 1.0) * 0.15  # a group of lines at one instant still gets room
    weights = [s + floor for s in spans]
    out, x = [], float(LABEL_W + 20)
    for g, w in zip(groups, weights):
        width = (plot - 20) * w / sum(weights)
        out.append(Segment(g[0], g[-1], x + 8, x + width - 8))
        x += width + BREAK_W
    return out


def _placer(inc: Incident):  # type: ignore[no-untyped-def]
    if inc.timed:
        segments = _segments(inc)

        def at(m: Moment) -> float:
            t = m.offset or 0.0
            return next(s for s in segments if s.start <= t <= s.end).x(t)
        return at
    step = (WIDTH - LABEL_W - RIGHT - 40) / max(1, len(inc.moments) - 1)
    index = {id(m): i for i, m in enumerate(inc.moments)}
    return lambda m: LABEL_W + 20 + step * index[id(m)] if len(inc.moments) > 1 else (LABEL_W + WIDTH) / 2


def _axis(inc: Incident, height: float) -> list[str]:
    base = TOP + LANE_H * max(1, len(inc.lanes))
    out = [f'<line x1="{LABEL_W}" y1="{base}" x2="{WIDTH - RIGHT + 10}" y2="{base}" stroke="#333"/>']
    if not inc.timed:
        return out
    segments = _segments(inc)
    clock = {m.offset: f" ({m.event.stamp.shown.rpartition('T')[2]})" for m in inc.moments
             if m.event.stamp and m.offset is not None and m.event.stamp.clock == "wall"}
    for s in segments:
        for t in sorted({s.start, s.end}):
            x, when = s.x(t), clock.get(t, "")
            anchor = "start" if t == s.start and s.end > s.start else ("end" if s.end > s.start else "middle")
            out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{base + 4}" stroke="#ccc" stroke-dasharray="2,3"/>')
            out.append(f'<text x="{x:.1f}" y="{base + 16}" text-anchor="{anchor}" fill="#333">'
                       f"{escape(timeline.relative(t))}{escape(when)}</text>")
    for a, b in zip(segments, segments[1:]):
        x = (a.x1 + b.x0) / 2
        out.append(f'<g class="break"><path d="M{x - 6:.1f},{TOP} l12,8 l-12,8" fill="none" stroke="#999"/>'
                   f'<rect x="{x - 10:.1f}" y="{TOP + 18}" width="20" height="{base - TOP - 18}" fill="#eee" opacity="0.8"/>'
                   f'<text x="{x:.1f}" y="{base + 32}" text-anchor="middle" fill="#b00">'
                   f'⋯ {escape(timeline.span(b.start - a.end))} ⋯</text></g>')
    for g in inc.gaps:
        t0 = inc.moments[g.after].offset or 0.0
        t1 = t0 + g.seconds
        within = next((s for s in segments if s.start <= t0 and t1 <= s.end), None)
        if within is None:
            continue  # drawn as a break
        x0, x1 = within.x(t0), within.x(t1)
        out.append(f'<g class="gap"><path d="M{x0:.1f},{base + 40} v-5 H{x1:.1f} v5" fill="none" stroke="#b00"/>'
                   f'<text x="{(x0 + x1) / 2:.1f}" y="{base + 52}" text-anchor="middle" fill="#b00">'
                   f"{escape(g.text)}</text></g>")
    return out


def _marker(m: Moment, x: float, y: float, row: int | None) -> str:
    """A cited line's marker; `row` 0 puts its label above it, 1 below, None none (the tooltip has it)."""
    e, colour = m.event, COLOURS.get(m.event.role, "#7f7f7f")
    if e.role == "cause":
        shape = f'<path d="M{x:.1f},{y - 9} l9,9 l-9,9 l-9,-9 z" fill="{colour}" stroke="#000" stroke-width="0.8"/>'
    elif e.role == "symptom":
        shape = f'<circle cx="{x:.1f}" cy="{y}" r="6" fill="{colour}" stroke="#000" stroke-width="0.6"/>'
    else:
        shape = f'<rect x="{x - 5:.1f}" y="{y - 5}" width="10" height="10" fill="{colour}"/>'
    when = e.stamp.shown if e.stamp else "no time"
    tip = f"{e.source}:{e.line} · {when} {m.relative} · {NAMES.get(e.role, e.role)} {e.rule_id or ''}\n{e.text[:300]}"
    left = x > WIDTH - 160  # near the right edge the label goes to the marker's left
    text = (f'<text x="{x - 10 if left else x + 10:.1f}" y="{y + (19 if row else -10)}" font-size="11" fill="{colour}" '
            f'text-anchor="{"end" if left else "start"}">{escape(e.rule_id or NAMES[e.role])}</text>'
            if row is not None else "")
    return (f'<g class="marker {e.role}" data-rule={quoteattr(e.rule_id or "")} data-line="{e.line}">'
            f"<title>{escape(tip)}</title>{shape}{text}</g>")


def _legend(height: float) -> list[str]:
    out, x, y = [], 12.0, height - 12
    for role in ("cause", "symptom", "error"):
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{COLOURS[role]}"/>'
                   f'<text x="{x + 14}" y="{y}">{NAMES[role]}</text>')
        x += 30 + 7 * len(NAMES[role])
    return out


def _common_dir(sources: list[str]) -> str:
    """The folder all inputs share (`/tmp/incident/`), left out of the lane labels."""
    first = sources[0] if sources else ""
    cut = first.rfind("/") + 1
    while cut and not all(s.startswith(first[:cut]) for s in sources):
        cut = first.rfind("/", 0, cut - 1) + 1
    return first[:cut]


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else "…" + text[-(n - 1):]
