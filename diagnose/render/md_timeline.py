"""The post-mortem's Impact and Timeline sections, from the incident (diagnose/render/incident.py):
the window and the affected GPU, then the cited lines as a Mermaid picture and line by line, with
their ISO times, `T+` offsets and the gaps between them.
"""

from __future__ import annotations

from diagnose.render import incident, mermaid
from diagnose.render import timeline as lines
from diagnose.render.md_text import MAX_CELL, _cut, cell, code, fence, prose


def impact(inc: incident.Incident) -> list[str]:
    out = ["## Impact", "", f"- **Window**: {inc.window}"]
    out += [f"- **Affected GPU**: {prose(a.note)}" for a in inc.affected]
    return [*out, "- **Who and what was affected, and how it was noticed**: TODO.", ""]


def timeline(inc: incident.Incident) -> list[str]:
    out = ["## Timeline", ""]
    if not inc.moments:
        return [*out, "No line of the inputs was cited as evidence or error.", ""]
    note = " Times are ISO 8601; `--MM-DD` where the log gives no year." if inc.start else ""
    out += [inc.how + note, ""]
    if len(inc.moments) > 1:
        out += ["The cited lines as a picture, one lane per artifact and rank (GitHub and most wikis draw it), "
                "then line by line:", "", *fence(mermaid.gantt(inc).split("\n"), "mermaid"), ""]
    out += ["| Time | Where | What | Line |", "| --- | --- | --- | --- |"]
    gaps = {g.after: g for g in inc.gaps}
    for i, m in enumerate(inc.moments[: lines.MAX_EVENTS]):
        e = m.event
        when = code(e.stamp.shown, cell=True) if e.stamp else (code(e.shown_time, cell=True) if e.shown_time else "—")
        when += f" ({m.relative})" if m.relative else ""
        out.append(f"| {when} | {code(f'{e.source}:{e.line}', cell=True)} | {cell(e.what)} | "
                   f"{code(_cut(e.text, MAX_CELL), cell=True)} |")
        if i in gaps and i + 1 < lines.MAX_EVENTS:
            out.append(f"| ⋯ | | _{cell(gaps[i].text)}_ | |")
    if len(inc.moments) > lines.MAX_EVENTS:
        out += ["", f"{len(inc.moments) - lines.MAX_EVENTS} more line(s) are cited below."]
    return [*out, ""]
