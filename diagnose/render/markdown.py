"""A post-mortem draft in GitHub-flavoured Markdown: summary, timeline, environment, each root
cause with its evidence quoted as `source:line`, its symptoms, fix, verify and references.

Whatever came from the inputs (log lines, file names, facts) is shown in code spans or code
blocks, never as Markdown, so a log line cannot inject a link or break a table. Code blocks stand
at the top level, never inside a list item, and no list item starts with a list marker, so that
GitHub, pandoc and MkDocs' Python-Markdown render the same document.
"""

from __future__ import annotations

from diagnose import __version__
from diagnose.model import Diagnosis, is_guess
from diagnose.render import environment, incident
from diagnose.render.md_finding import finding as _finding
from diagnose.render.md_text import MAX_CELL, MAX_QUOTE, _cut, _where, cell, code, fence, prose
from diagnose.render.md_timeline import impact as _impact
from diagnose.render.md_timeline import timeline as _timeline

__all__ = ["MAX_CELL", "MAX_QUOTE", "cell", "code", "fence", "prose", "render"]


def render(diagnosis: Diagnosis, **_: object) -> str:
    inc = incident.build(diagnosis)
    top = diagnosis.findings[0] if diagnosis.findings else None
    title = top.title if top else "a failure with no known root cause"
    out = [f"# Post-mortem: {prose(title)}", ""]
    out += [
        f"_Draft written by diagnose {__version__} (knowledge base `{diagnosis.kb_version}`) from "
        f"{len({i.source for i in diagnosis.inputs})} input(s). Evidence is quoted from the inputs as "
        "`source:line`; the sections marked TODO are for the people who were there._",
        "",
    ]
    out += _summary(diagnosis)
    out += _plan(diagnosis)
    out += _impact(inc)
    out += _timeline(inc)
    out += _environment(diagnosis)
    out += ["## Root cause" if len(diagnosis.findings) == 1 else "## Root causes", ""]
    if not diagnosis.findings:
        out += ["No rule of the knowledge base matched these inputs.", ""]
    for finding in diagnosis.findings:
        out += _finding(finding)
    out += _unmatched(diagnosis)
    out += _set_aside(diagnosis)
    out += _near_misses(diagnosis)
    out += ["## What we did", "", "TODO: what was done, by whom and when, and what it changed (the fix steps above "
            "are the knowledge base's: say which were run and what their verify commands printed).", ""]
    out += _action_items(diagnosis)
    out += _inputs(diagnosis)
    return "\n".join(_single_blank_lines(out)).rstrip("\n") + "\n"


def _single_blank_lines(lines: list[str]) -> list[str]:
    """No two blank lines in a row outside code blocks (the sections each end with one)."""
    out: list[str] = []
    fenced = ""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("```"):
            ticks = stripped[: len(stripped) - len(stripped.lstrip("`"))]
            fenced = "" if fenced and ticks == fenced and stripped == ticks else (fenced or ticks)
        if not fenced and not stripped and out and not out[-1].strip():
            continue
        out.append(line)
    return out


def _summary(d: Diagnosis) -> list[str]:
    out = ["## Summary", ""]
    if d.findings:
        top = d.findings[0]
        symptoms = ", ".join(code(s.rule_id) for s in top.symptoms)
        guess = is_guess(top)
        out.append(
            f"{'No known signature matched. The nearest known cause by wording (a guess) is' if guess else 'The root cause is'} **{prose(top.title)}** ({code(top.rule_id)}, severity {top.severity}, "
            f"confidence {top.confidence:.2f})" + (f"; it also explains {symptoms}." if symptoms else ".")
        )
        out += ["", prose(top.summary)]
        if len(d.findings) > 1:
            others = ", ".join(f"{code(f.rule_id)} ({f.confidence:.2f})" for f in d.findings[1:])
            out += ["", f"Other candidate causes, less likely: {others}."]
    else:
        out.append("No known failure was recognised. The lines most likely to be the failure are under "
                   "[Errors no rule explains](#errors-no-rule-explains)." if d.unmatched_errors else
                   "No known failure was recognised, and no line looked like an error.")
    return [*out, ""]


def _environment(d: Diagnosis) -> list[str]:
    rows = environment.rows(d.facts)
    out = ["## Environment", ""]
    if rows:
        out += ["| Component | Version |", "| --- | --- |"]
        out += [f"| {cell(label)} | {code(value, cell=True)} |" for label, value in rows]
    else:
        out.append("The inputs state no GPU, driver or package facts; add `nvidia-smi` output and `pip freeze` "
                   "to the inputs for this table.")
    if d.facts.env:
        out += ["", "| Variable | Value |", "| --- | --- |"]
        out += [f"| {code(k, cell=True)} | {code(_cut(v, MAX_CELL), cell=True)} |" for k, v in sorted(d.facts.env.items())]
    return [*out, ""]


def _unmatched(d: Diagnosis) -> list[str]:
    if not d.unmatched_errors:
        return []
    intro = ("Lines that look like errors and that no finding cites, the most likely failing line first:"
             if not d.findings else "Other exceptions that no finding cites:")
    notes = [f"- {code(_where(e))}: {prose(n.summary)}" for e in d.unmatched_errors for n in e.catalog or []]
    return ["## Errors no rule explains", "", intro, "",
            *fence([_where(e) + "  " + _cut(e.text, MAX_QUOTE) for e in d.unmatched_errors], "text"), "",
            *(["What the catalogues say about them:", "", *notes, ""] if notes else [])]


def _plan(d: Diagnosis) -> list[str]:
    """One remediation for several findings, with the finding each pin serves."""
    plan = d.plan
    if not plan:
        return []
    out = ["## Remediation plan", "", "| Package | Version | Why | Serves |", "| --- | --- | --- | --- |"]
    for name, version in plan.pins.items():
        serves = ", ".join(code(r, cell=True) for r in plan.serves.get(name, []))
        out.append(f"| {code(name, cell=True)} | {code(version, cell=True)} | {cell(plan.why.get(name, ''))} | {serves} |")
    out.append("")
    out += [f"- {prose(n)}" for n in plan.notes + [f"Conflict: {c}" for c in plan.conflicts]]
    out += ["", *fence([step["run"] for step in plan.steps], "sh"), ""]
    return out


def _set_aside(d: Diagnosis) -> list[str]:
    """Strong evidence that a fact ruled out: shown always, so a wrong fact cannot hide the cause."""
    if not d.set_aside:
        return []
    out = ["## Set aside by a fact", "", "| Rule | Its lines alone | Ruled out because |", "| --- | --- | --- |"]
    for v in d.set_aside:
        out.append(f"| {code(v.rule_id, cell=True)} | {v.confidence:.2f} | {cell(v.reason)} |")
    return [*out, ""]


def _near_misses(d: Diagnosis) -> list[str]:
    """With --explain: the rules that saw some evidence and why they were not reported."""
    if not d.rejected:
        return []
    out = ["## Rules considered and not reported", "", "| Rule | Confidence | Why not |", "| --- | --- | --- |"]
    for v in sorted(d.rejected, key=lambda v: -v.confidence):
        out.append(f"| {code(v.rule_id, cell=True)} | {v.confidence:.2f} | {cell(v.reason)} |")
    return [*out, ""]


def _action_items(d: Diagnosis) -> list[str]:
    out = ["## Action items", ""]
    for f in d.findings[:1]:
        out.append(f"- [ ] Apply the fix for {code(f.rule_id)} (root cause 1) and run its verify commands.")
    out += ["- [ ] TODO: what keeps this from happening again (a pin, a preflight check, an alert).", ""]
    return out


def _inputs(d: Diagnosis) -> list[str]:
    """One row per input: the artifacts one file holds (a paste, a header line) are its parts, not rows."""
    out = ["## Inputs", "", "| Input | Kind | Lines |", "| --- | --- | --- |"]
    parts: dict[str, list[tuple[str, int, int]]] = {}
    for i in d.inputs:
        parts.setdefault(i.source, []).append((i.kind, i.first_line, i.first_line + i.lines - 1))
    for source, kinds in parts.items():
        kinds.sort(key=lambda k: k[1] - k[2])  # the artifact with the most lines names the input
        kind = kinds[0][0] + "".join(f"; {_lines(a, b)} read as {k}" for k, a, b in kinds[1:])
        span = f"{min(k[1] for k in kinds)}–{max(k[2] for k in kinds)}"
        out.append(f"| {code(source, cell=True)} | {cell(kind)} | {span} |")
    notes = sorted({f"{i.source}: {n}" for i in d.inputs for n in i.notes})
    if notes:
        out += ["", "Notes on the inputs:", ""] + [f"- {code(n)}" for n in notes]
    if d.skipped:
        out += ["", "### Skipped inputs", "", "| Input | Why |", "| --- | --- |"]
        out += [f"| {code(s.source, cell=True)} | {cell(s.reason)} |" for s in d.skipped]
    return [*out, ""]


def _lines(a: int, b: int) -> str:
    return f"line {a}" if a == b else f"lines {a}–{b}"
