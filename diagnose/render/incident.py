"""The incident a post-mortem tells, from one diagnosis: the cited lines on one time line with their
lanes (artifact, rank), the gaps between them, the impact window and the GPU the Xids name.

This is the context every post-mortem output shares: the Markdown, its Mermaid picture, the SVG,
the HTML page and a team's own Jinja2 template (`--template`) all read an `Incident`.

>>> pci_key("0000:00:07"), pci_key("00000000:00:07.0"), pci_key("PCI:0000:3B:00")
((0, 0, 7), (0, 0, 7), (0, 59, 0))
"""

from __future__ import annotations

from dataclasses import dataclass, field

from diagnose import lazy_re
from diagnose.model import GPU, Diagnosis
from diagnose.render import timeline
from diagnose.render.md_text import code

GAP = 10.0  # seconds without a cited line that the timeline calls a gap
MAX_DRAWN = timeline.MAX_EVENTS  # cited lines a picture draws: the timeline table's
MAX_LANES = 16  # past this many, a picture draws only the lanes with a line it draws
PCI = lazy_re.compile(r"\b(?:PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?\b")


@dataclass
class Moment:
    """A cited line on the incident's time line."""

    event: timeline.Event
    lane: str
    offset: float | None  # seconds after the first timed line (None: the logs share no clock)
    relative: str  # `T+0`, `+25 s`, or "" without a shared clock


@dataclass
class Gap:
    after: int  # index in `moments` of the last line before the gap
    seconds: float
    text: str


@dataclass
class AffectedGPU:
    pci: str
    xids: list[int]
    gpu: GPU | None  # the GPU of the nvidia-smi given whose bus id it is
    note: str  # one sentence for people


@dataclass
class Incident:
    moments: list[Moment]
    how: str  # how the time line was ordered
    timed: bool  # ordered by one shared clock
    lanes: list[str]  # one per artifact, or per rank where a log names ranks; inputs without a cited line too
    lane_sources: dict[str, str]
    gaps: list[Gap] = field(default_factory=list)
    window: str = ""  # the impact window, one sentence
    start: str | None = None
    end: str | None = None
    duration: float | None = None
    affected: list[AffectedGPU] = field(default_factory=list)
    left_out: str = ""  # what a picture of it does not draw


def picture(inc: Incident) -> Incident:
    """What a picture draws: the first MAX_DRAWN cited lines, and every lane unless there are many."""
    if len(inc.moments) <= MAX_DRAWN and len(inc.lanes) <= MAX_LANES:
        return inc
    moments = inc.moments[:MAX_DRAWN]
    drawn = {m.lane for m in moments}
    lanes = inc.lanes if len(inc.lanes) <= MAX_LANES else [lane for lane in inc.lanes if lane in drawn]
    said = [f"{len(inc.moments) - len(moments)} later cited line(s)"] if len(moments) < len(inc.moments) else []
    said += [f"{len(inc.lanes) - len(lanes)} lane(s) without one of the first {len(moments)}"] if len(lanes) < len(inc.lanes) else []
    return Incident(moments, inc.how, inc.timed, lanes, {lane: inc.lane_sources[lane] for lane in lanes},
                    [g for g in inc.gaps if g.after + 1 < len(moments)], inc.window, inc.start, inc.end,
                    inc.duration, inc.affected, "not drawn: " + " and ".join(said))


def build(d: Diagnosis) -> Incident:
    events, how = timeline.ordered(timeline.events(d))
    timed = how.startswith("Ordered by the times")
    moments = _moments(events, timed)
    lanes, sources = _lanes(d, moments)
    incident = Incident(moments, how, timed, lanes, sources)
    incident.gaps = [Gap(i, b.offset - a.offset, f"{timeline.span(b.offset - a.offset)} without a cited line")
                     for i, (a, b) in enumerate(zip(moments, moments[1:]))
                     if a.offset is not None and b.offset is not None and b.offset - a.offset >= GAP]
    _window(incident)
    incident.affected = affected_gpus(d)
    return incident


def _moments(events: list[timeline.Event], timed: bool) -> list[Moment]:
    out: list[Moment] = []
    if not timed:
        return [Moment(e, lane_name(e), None, "") for e in events]
    year = next((e.stamp.year for e in events if e.stamp and e.stamp.year), None)
    first = next(e.stamp.seconds(year) for e in events if e.stamp)
    last: dict[str, float] = {}
    for e in events:
        if e.stamp:
            last[e.source] = e.stamp.seconds(year) - first
        offset = last.get(e.source)
        shown = timeline.relative(offset) if offset is not None and e.stamp else ""
        out.append(Moment(e, lane_name(e), offset, shown))
    return out


def lane_name(e: timeline.Event) -> str:
    return f"{e.source} · rank {e.rank}" if e.rank is not None else e.source


def _lanes(d: Diagnosis, moments: list[Moment]) -> tuple[list[str], dict[str, str]]:
    """Lanes in the order of the inputs, each log's rank lanes together; an input nothing cites gets one too."""
    order = list(dict.fromkeys(i.source for i in d.inputs))
    order += [m.event.source for m in moments if m.event.source not in order]
    by_source: dict[str, set[str]] = {}
    for m in moments:
        by_source.setdefault(m.event.source, set()).add(m.lane)
    lanes: dict[str, str] = {}
    for source in order:
        for name in sorted(by_source.get(source, ()), key=_rank_order) or [source]:
            lanes[name] = source
    return list(lanes), lanes


def _rank_order(name: str) -> tuple[int, int]:
    rank = name.rpartition(" · rank ")[2]
    return (1, int(rank)) if rank.isdigit() else (0, 0)


def _window(incident: Incident) -> None:
    stamped = [m for m in incident.moments if m.event.stamp]
    if not incident.moments:
        incident.window = "No line of the inputs was cited, so the inputs do not say when it happened."
        return
    first, last = incident.moments[0].event, incident.moments[-1].event
    where = (f"first cited line {code(f'{first.source}:{first.line}')}, last {code(f'{last.source}:{last.line}')}"
             if first is not last else f"the one cited line, {code(f'{first.source}:{first.line}')}")
    if not incident.timed or not stamped:
        why = "share no clock" if stamped else "carry no times"
        incident.window = f"The cited lines {why}, so they give no window ({where})."
        return
    a, b = stamped[0], stamped[-1]
    incident.start, incident.end = a.event.stamp.shown, b.event.stamp.shown  # type: ignore[union-attr]
    incident.duration = (b.offset or 0.0) - (a.offset or 0.0)
    incident.window = (f"From {code(incident.start)} to {code(incident.end)} ({timeline.span(incident.duration)}): "
                       f"{where}.")


def pci_key(address: str) -> tuple[int, int, int] | None:
    """(domain, bus, device) of `0000:3b:00` (NVRM's Xid form) or `00000000:3B:00.0` (nvidia-smi's)."""
    m = PCI.search(address)
    if not m:
        return None
    domain, bus, device = m[1].split(":")
    return int(domain, 16), int(bus, 16), int(device, 16)


def affected_gpus(d: Diagnosis) -> list[AffectedGPU]:
    """The PCI addresses the Xids name, each mapped to its GPU through the nvidia-smi given."""
    by_pci: dict[str, list[int]] = {}
    for x in d.facts.xids:
        if x.pci:
            by_pci.setdefault(x.pci, []).append(x.xid)
    if not by_pci and d.findings:  # NVRM's multi-line form names the GPU without an Xid number
        for e in d.findings[0].evidence:
            m = PCI.search(e.text) if "NVRM" in e.text else None
            if m:
                by_pci.setdefault(m[1], [])
    gpus = {pci_key(g.bus_id): g for g in d.facts.gpus if g.bus_id}
    listed = ", ".join(g.bus_id or "" for g in d.facts.gpus if g.bus_id)
    out = []
    for pci, xids in by_pci.items():
        gpu = gpus.get(pci_key(pci))
        said = f"Xid {', '.join(str(x) for x in sorted(set(xids)))} names" if xids else "The kernel log names"
        if gpu is not None:
            note = f"{said} PCI {pci}: GPU {gpu.index} ({gpu.name or 'unknown'}, bus id {gpu.bus_id})"
            note += f" in {code(gpu.source)}." if gpu.source else "."
        elif listed:
            note = (f"{said} PCI {pci}, which is none of the GPUs the inputs list ({listed}): "
                    "the kernel log may come from another host than the nvidia-smi.")
        else:
            note = f"{said} PCI {pci}; add `nvidia-smi` output of that host to map it to a GPU index."
        out.append(AffectedGPU(pci, sorted(set(xids)), gpu, note))
    return out
