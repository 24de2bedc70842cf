"""A Slack message in Block Kit: the top cause with its evidence, fix and verify; the other
candidates in brief; a context line with the confidence and the KB version.

Within Slack's limits: at most 50 blocks, 3000 characters in a section's text, 150 in the
header. Long evidence and long fixes are cut, and the cut says so. `&`, `<` and `>` are escaped
everywhere (Slack would read `<ip-1>` as a link).
"""

from __future__ import annotations

import json
from typing import Any

from diagnose import __version__
from diagnose.model import Diagnosis, Evidence, Finding, is_guess
from diagnose.render import environment

MAX_BLOCKS = 50
MAX_TEXT = 3000
MAX_HEADER = 150
MAX_OTHERS = 5  # other candidate causes shown in brief
MAX_LINE = 400  # characters of one quoted log line
CUT_NOTE = "_… {n} more {what} cut; `diagnose --format markdown` shows all of them._"


def render(diagnosis: Diagnosis, **_: object) -> str:
    return json.dumps(message(diagnosis), indent=2, ensure_ascii=False) + "\n"


def message(diagnosis: Diagnosis) -> dict[str, Any]:
    """`{"text": fallback, "blocks": [...]}`, ready for chat.postMessage or a slash-command answer."""
    blocks: list[dict[str, Any]] = []
    if diagnosis.findings:
        top = diagnosis.findings[0]
        lead = "Nearest known cause (a guess)" if is_guess(top) else "Root cause"
        blocks.append(header(f"{lead}: {top.title}"))
        if diagnosis.plan:
            blocks.append(section("*Plan* (one set of versions for every finding)",
                                  [f"`{escape(step['run'])}`" for step in diagnosis.plan.steps[:3]]
                                  + [f"conflict: {escape(c)}" for c in diagnosis.plan.conflicts[:2]]))
        blocks += _cause(top)
        others = diagnosis.findings[1:]
        if others:
            blocks.append({"type": "divider"})
            blocks += _others(others)
        fallback = f"{lead}: {top.title} ({top.rule_id}, confidence {top.confidence:.2f})"
    else:
        blocks.append(header("No known failure found"))
        fallback = "diagnose: no known failure found"
    if diagnosis.unmatched_errors:
        title = "Errors no rule explains" if not diagnosis.findings else "Other exceptions no rule explains"
        blocks.append(quote_section(f"*{title}*", diagnosis.unmatched_errors))
        notes = [f"`{escape(_where(e))}`: {escape(n.summary)}" for e in diagnosis.unmatched_errors for n in e.catalog or []]
        if notes:
            blocks.append(section("*What the catalogues say*", notes[:MAX_OTHERS]))
    blocks.append(_context(diagnosis))
    if len(blocks) > MAX_BLOCKS:  # cannot happen with the caps above; kept as the limit's guard
        blocks = blocks[: MAX_BLOCKS - 1] + blocks[-1:]
    return {"text": escape(fallback), "blocks": blocks}


def _cause(f: Finding) -> list[dict[str, Any]]:
    blocks = [mrkdwn_section(f"*{escape(f.rule_id)}* · severity *{f.severity}* · confidence *{f.confidence:.2f}*\n"
                             + escape(f.summary))]
    blocks.append(quote_section("*Evidence*", f.evidence))
    if f.symptoms:
        explained = ", ".join(f"`{escape(s.rule_id)}`" + (f" ({escape(_where(s.evidence[0]))})" if s.evidence else "")
                              for s in f.symptoms)
        blocks.append(mrkdwn_section(f"*It also explains:* {explained}"))
    steps = []
    for i, step in enumerate(f.fix, 1):
        text = f"{i}. {escape(step['step'])}"
        if step.get("run"):
            text += "\n" + code_block([step["run"]])
        if step.get("caution"):
            text += f"\n:warning: {escape(step['caution'])}"
        steps.append(text)
    if steps:
        blocks.append(section("*Fix*", steps))
    checks = [v["run"] + (f"   # expect {_expect(v)}" if v.get("expect") else "") for v in f.verify]
    if checks:
        blocks.append(section("*Verify* (read-only)", [code_block(checks)]))
    if f.references:
        links = " · ".join(f"<{escape(r)}>" if r.startswith("http") else escape(r) for r in f.references[:5])
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _fit(f"References: {links}")}]})
    return blocks


def _others(others: list[Finding]) -> list[dict[str, Any]]:
    blocks = []
    for f in others[:MAX_OTHERS]:
        first = code_block([_line(f.evidence[0])]) if f.evidence else ""
        blocks.append(mrkdwn_section(
            f"*{f.rank}. {escape(f.title)}* (`{escape(f.rule_id)}`, confidence {f.confidence:.2f})\n{first}"))
    if len(others) > MAX_OTHERS:
        blocks.append(mrkdwn_section(f"_{len(others) - MAX_OTHERS} more candidate cause(s) not shown._"))
    return blocks


def _context(d: Diagnosis) -> dict[str, Any]:
    parts = []
    if d.findings:
        parts.append(f"confidence {d.findings[0].confidence:.2f}")
    parts += [f"kb {escape(d.kb_version)}", f"diagnose {__version__}", f"{len({i.source for i in d.inputs})} input(s)"]
    env = environment.one_line(d.facts)
    elements = [{"type": "mrkdwn", "text": _fit(" · ".join(parts))}]
    if env:
        elements.append({"type": "mrkdwn", "text": _fit(escape(env))})
    if d.skipped:
        skipped = "; ".join(f"{s.source}: {s.reason}" for s in d.skipped)
        elements.append({"type": "mrkdwn", "text": _fit("Skipped: " + escape(skipped))})
    return {"type": "context", "elements": elements}


# --- Block Kit pieces, each within Slack's limits ---------------------------------------------

def header(text: str) -> dict[str, Any]:
    text = " ".join(text.split())
    if len(text) > MAX_HEADER:
        text = text[: MAX_HEADER - 1] + "…"
    return {"type": "header", "text": {"type": "plain_text", "text": text, "emoji": True}}


def mrkdwn_section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _fit(text)}}


def section(title: str, parts: list[str], joiner: str = "\n") -> dict[str, Any]:
    """A titled section of steps; the steps that do not fit in 3000 characters are cut whole (a first
    step longer than that is cut short), and a note says how many."""
    text = title
    for n, part in enumerate(parts):
        room = MAX_TEXT - (len(CUT_NOTE) + 16 if n < len(parts) - 1 else 0)
        if len(text) + len(joiner) + len(part) > room:
            if n == 0:
                text += joiner + part[: max(room - len(text) - len(joiner) - 1, 0)] + "…"
                n += 1
            if n < len(parts):
                text += "\n" + CUT_NOTE.format(n=len(parts) - n, what="step(s)")
            return mrkdwn_section(text)
        text += joiner + part
    return mrkdwn_section(text)


def quote_section(title: str, evidence: list[Evidence]) -> dict[str, Any]:
    """Evidence as one code block of `source:line  text`; lines that do not fit are cut whole, with a note."""
    lines = [_line(e) for e in evidence]
    budget = MAX_TEXT - len(title) - len(CUT_NOTE) - 16
    kept: list[str] = []
    for line in lines:
        if sum(len(escape(k)) + 1 for k in kept) + len(escape(line)) > budget:
            break
        kept.append(line)
    text = f"{title}\n{code_block(kept)}"
    if len(kept) < len(lines):
        text += "\n" + CUT_NOTE.format(n=len(lines) - len(kept), what="line(s)")
    return mrkdwn_section(text)


def code_block(lines: list[str]) -> str:
    body = "\n".join(escape(line).replace("```", "`\u200b``") for line in lines)
    return f"```{body}```"


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _line(e: Evidence) -> str:
    text = e.text if len(e.text) <= MAX_LINE else e.text[: MAX_LINE - 1] + "…"
    return f"{_where(e)}  {text}"


def _where(e: Evidence) -> str:
    return f"{e.source}:{e.line}" if e.line else e.source


def _expect(v: dict[str, Any]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {val}" for k, val in (v.get("expect") or {}).items())


def _fit(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"
