"""A post-mortem draft in GitHub-flavoured Markdown: summary, timeline, environment, each root
cause with its evidence quoted as `source:line`, its symptoms, fix, verify and references.

Whatever came from the inputs (log lines, file names, facts) is shown in code spans or code
blocks, never as Markdown, so a log line cannot inject a link or break a table.
"""

from __future__ import annotations

import re

from diagnose import __version__
from diagnose.model import Diagnosis, Evidence, Finding
from diagnose.render import environment, timeline

MAX_QUOTE = 1000  # characters of one quoted line
MAX_CELL = 200  # characters of a log line in a table cell
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def render(diagnosis: Diagnosis, **_: object) -> str:
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
    out += ["## Impact", "", "TODO: who and what was affected, from when to when, and how it was noticed.", ""]
    out += _timeline(diagnosis)
    out += _environment(diagnosis)
    out += ["## Root cause" if len(diagnosis.findings) == 1 else "## Root causes", ""]
    if not diagnosis.findings:
        out += ["No rule of the knowledge base matched these inputs.", ""]
    for finding in diagnosis.findings:
        out += _finding(finding)
    out += _unmatched(diagnosis)
    out += _set_aside(diagnosis)
    out += _near_misses(diagnosis)
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
        out.append(
            f"The root cause is **{prose(top.title)}** ({code(top.rule_id)}, severity {top.severity}, "
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


def _timeline(d: Diagnosis) -> list[str]:
    events, how = timeline.ordered(timeline.events(d))
    out = ["## Timeline", ""]
    if not events:
        return [*out, "No line of the inputs was cited as evidence or error.", ""]
    out += [how, "", "| Time | Where | What | Line |", "| --- | --- | --- | --- |"]
    for e in events[: timeline.MAX_EVENTS]:
        when = e.stamp.shown if e.stamp else (code(e.shown_time, cell=True) if e.shown_time else "—")
        out.append(f"| {when} | {code(f'{e.source}:{e.line}', cell=True)} | {cell(e.what)} | "
                   f"{code(_cut(e.text, MAX_CELL), cell=True)} |")
    if len(events) > timeline.MAX_EVENTS:
        out += ["", f"{len(events) - timeline.MAX_EVENTS} more line(s) are cited below."]
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


def _finding(f: Finding) -> list[str]:
    out = [f"### {f.rank}. {prose(f.title)}", ""]
    out += [f"{code(f.rule_id)} · category {f.category} · severity **{f.severity}** · confidence **{f.confidence:.2f}**",
            "", prose(f.summary), "", "**Evidence**", ""]
    out += fence([_where(e) + "  " + _cut(e.text, MAX_QUOTE) for e in f.evidence], "text")
    if f.reasons:
        out += ["", "Why this confidence:", ""] + [f"- {prose(r)}" for r in f.reasons]
    if f.symptoms:
        out += ["", "**Symptoms it explains**", ""]
        for s in f.symptoms:
            out += _symptom(s, "")
    out += ["", "**Fix**", ""]
    for i, step in enumerate(f.fix, 1):
        out.append(f"{i}. {prose(step['step'])}")
        if step.get("run"):
            out += ["", *("   " + line for line in fence([step["run"]], "sh")), ""]
        if step.get("caution"):
            out += [f"   > **Caution:** {prose(step['caution'])}", ""]
    out += ["", "**Verify** (read-only; run them where the failure happened)", ""]
    for v in f.verify:
        expect = v.get("expect") or {}
        want = ", ".join(f"{k.replace('_', ' ')} {code(str(val))}" for k, val in expect.items())
        out += [f"- expect {want}:" if want else "-", "", *("  " + line for line in fence([v["run"]], "sh")), ""]
    if f.verified_by:
        out += ["**Where this fix was confirmed**", ""] + [f"- {prose(v)}" for v in f.verified_by] + [""]
    if f.references:
        out += ["**References**", ""] + [f"- <{r}>" if r.startswith("http") else f"- {prose(r)}" for r in f.references]
    return [*out, ""]


def _symptom(s: Finding, indent: str) -> list[str]:
    out = [f"{indent}- {code(s.rule_id)}: {prose(s.title)} (confidence {s.confidence:.2f})"]
    if s.evidence:
        out += ["", *(indent + "  " + line for line in fence([_where(e) + "  " + _cut(e.text, MAX_QUOTE) for e in s.evidence[:3]], "text")), ""]
    for nested in s.symptoms:
        out += _symptom(nested, indent + "  ")
    return out


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
    out = ["## Inputs", "", "| Input | Kind | Lines |", "| --- | --- | --- |"]
    for i in d.inputs:
        span = f"{i.first_line}–{i.first_line + i.lines - 1}"
        out.append(f"| {code(i.source, cell=True)} | {i.kind} | {span} |")
    notes = sorted({f"{i.source}: {n}" for i in d.inputs for n in i.notes})
    if notes:
        out += ["", "Notes on the inputs:", ""] + [f"- {code(n)}" for n in notes]
    if d.skipped:
        out += ["", "### Skipped inputs", "", "| Input | Why |", "| --- | --- |"]
        out += [f"| {code(s.source, cell=True)} | {cell(s.reason)} |" for s in d.skipped]
    return [*out, ""]


# --- Markdown quoting -----------------------------------------------------------------------

def code(text: str, cell: bool = False) -> str:
    """An inline code span that holds any text (backticks included); `cell` escapes pipes for a table."""
    text = " ".join(text.split())
    ticks = "`" * (max((len(t) for t in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    span = f"{ticks}{pad}{text}{pad}{ticks}"
    return span.replace("|", "\\|") if cell else span


def fence(lines: list[str], lang: str = "") -> list[str]:
    body = "\n".join(lines)
    longest = max((len(t) for t in re.findall(r"`{3,}", body)), default=2)
    ticks = "`" * (longest + 1)
    return [ticks + lang, *body.split("\n"), ticks]


def prose(text: str) -> str:
    """KB text as Markdown: its code spans kept, `<`, `>` and `&` outside them escaped (GitHub would
    take `<built_torch>` for an HTML tag and drop it)."""
    out, pos = [], 0
    for m in CODE_SPAN.finditer(text):
        out.append(_html_escape(text[pos : m.start()]))
        out.append(m[0])
        pos = m.end()
    out.append(_html_escape(text[pos:]))
    return "".join(out)


def cell(text: str) -> str:
    return prose(" ".join(text.split())).replace("|", "\\|")


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _where(e: Evidence) -> str:
    return f"{e.source}:{e.line}" if e.line else e.source


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + f"… ({len(text) - limit + 1} characters cut)"
