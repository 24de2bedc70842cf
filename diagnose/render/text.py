"""Text for a terminal: the root causes first, each with its evidence, then the plan, fix and verify commands.

Prose is wrapped to the terminal's width; commands never are (a `$` line is one line, copyable with a
triple-click), nor log lines. Where the fix was confirmed is counted, and listed under --explain (and in
JSON). Colour only when writing to a terminal and NO_COLOR is unset.
"""

from __future__ import annotations

import shutil
import textwrap

from diagnose.model import Diagnosis, Finding, Plan, is_guess

FULL = 3  # findings shown with evidence, fix and verify; the rest get one line each
SEVERITY_COLOUR = {"critical": "31;1", "high": "31", "medium": "33", "low": "36", "info": "37"}


class Style:
    def __init__(self, colour: bool, width: int | None = None) -> None:
        self.colour = colour
        self.width = width or shutil.get_terminal_size((100, 24)).columns

    def wrap(self, text: str, indent: str, hang: str = "", bullet: str = "") -> list[str]:
        """Prose wrapped to the width, the first line after `indent` (and `bullet`), the rest under it by
        `hang` more (and under the bullet's text, not a second bullet)."""
        return textwrap.wrap(text, max(self.width, 40), initial_indent=indent + bullet,
                             subsequent_indent=indent + " " * len(bullet) + hang,
                             break_long_words=False, break_on_hyphens=False) or [indent + bullet]

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text


def render(diagnosis: Diagnosis, colour: bool = False, explain: bool = False, top: int | None = None,
           predicted: bool = False, width: int | None = None) -> str:
    """`predicted`: a preflight, whose findings are failures to come, not causes of one that happened.
    `width`: the columns prose is wrapped to (the terminal's when None)."""
    s = Style(colour, width)
    out: list[str] = []
    findings = diagnosis.findings[:top] if top else diagnosis.findings
    full = max(FULL, top or 0)  # --top N asks for N findings in full
    n_inputs = len({i.source for i in diagnosis.inputs})
    n = len(diagnosis.findings)
    if predicted:
        what = f"{n} predicted failure{'s' if n != 1 else ''}" if findings else "no known failure predicted"
    elif findings and is_guess(findings[0]):
        what = "no known signature matched; the nearest known cause by wording, a guess (below)"
    elif findings:
        what = "1 root cause" if n == 1 else f"{n} candidate root causes"
    elif diagnosis.unmatched_errors:
        what = "no known failure found, but errors no rule explains (below)"
    else:
        what = "no known failure found"
    if predicted and not findings and any(sk.source.startswith(("preflight:", "model ")) for sk in diagnosis.skipped):
        what += ", but some checks could not run (see Skipped)"
    out.extend(s.wrap(s(f"diagnose: {what}", "1") + f" (from {n_inputs} input(s), kb {diagnosis.kb_version})", "", "  "))
    for i, finding in enumerate(findings[:full]):
        out.append("")
        out.extend(_finding(finding, s, explain=explain))
        planned = i == 0 and diagnosis.plan is not None
        if planned:  # the cause and its evidence, then the one plan, then this finding's own steps
            out.append("")
            out.extend(_plan(diagnosis.plan, s))  # type: ignore[arg-type]
            out.append("")
        out.extend(_remedy(finding, s, explain=explain, after_plan=planned))
    if not findings[:full] and diagnosis.plan:
        out.append("")
        out.extend(_plan(diagnosis.plan, s))
    if len(findings) > full:
        out.append("")
        out.append(s(f"Less likely ({len(findings) - full} more; --top N or --format json for all of them in full):", "1"))
        for f in findings[full:]:
            first = f.evidence[0] if f.evidence else None
            where = f"  {s(f'{first.source}:{first.line}', '2')}" if first and first.line else ""
            out.append(f"  {f.rank}. {f.rule_id}  [{f.severity}]  confidence {f.confidence:.2f}  {f.title}{where}")
    if diagnosis.unmatched_errors:
        out.append("")
        label = "Other errors no rule explains" if findings else "Errors no rule explains (most likely failing line first)"
        out.append(s(label + ":", "1"))
        for e in diagnosis.unmatched_errors:
            fp = f"  {s(f'[fingerprint {e.fingerprint}]', '2')}" if e.fingerprint else ""
            out.append(f"  {s(f'{e.source}:{e.line}', '2')}  {e.text}{fp}")
            out.extend(f"      {s('catalogue:', '2')} {note.summary}" for note in e.catalog or [])
    if diagnosis.set_aside:
        out.append("")
        out.append(s("Set aside (strong evidence that a fact ruled out; check the fact):", "1"))
        for v in diagnosis.set_aside:
            out.append(f"  {v.rule_id} (its lines alone: {v.confidence:.2f}): {v.reason}")
    if explain and diagnosis.rejected:
        out.append("")
        out.append(s("Rules with some evidence that were not reported:", "1"))
        for v in sorted(diagnosis.rejected, key=lambda v: -v.confidence):
            out.append(f"  {v.rule_id} ({v.confidence:.2f}; signals {', '.join(v.matched) or 'none'}): {v.reason}")
    if diagnosis.skipped:
        out.append("")
        out.append(s("Skipped:", "1"))
        for sk in diagnosis.skipped:
            out.append(f"  {sk.source}: {sk.reason}")
    notes = sorted({f"{i.source}: {n}" for i in diagnosis.inputs for n in i.notes})
    if notes:
        out.append("")
        out.append(s("Notes on the inputs:", "1"))
        out.extend(f"  {n}" for n in notes)
    return "\n".join(out) + "\n"


def _plan(plan: Plan, s: Style) -> list[str]:
    """The one remediation for every finding it serves."""
    served = sorted({r for ids in plan.serves.values() for r in ids})
    lines = s.wrap(s("Plan", "1") + f" (one set of versions for {', '.join(served)}):", "")
    for name, version in plan.pins.items():
        lines += s.wrap(f"{name} {version}: {plan.why.get(name, '')} [{', '.join(plan.serves.get(name, []))}]", "  ", "  ")
    for note in plan.notes:
        lines += s.wrap(note, "  ", "  ")
    for step in plan.steps:
        lines.append(f"  $ {step['run']}")
    for conflict in plan.conflicts:
        lines += s.wrap(f"{s('conflict:', '33')} {conflict}", "  ", "  ")
    return lines


def _finding(f: Finding, s: Style, indent: str = "", explain: bool = False) -> list[str]:
    """The cause: what failed, the lines that show it, why this confidence, the symptoms it explains."""
    head = f"{indent}{f.rank}. " if f.rank else f"{indent}- "
    sev = s(f.severity, SEVERITY_COLOUR.get(f.severity, "0"))
    lines = [f"{head}{s(f.rule_id, '1')}  [{sev}]  confidence {f.confidence:.2f}"]
    lines += s.wrap(f.title, f"{indent}   ")
    lines += s.wrap(f.summary, f"{indent}   ")
    lines.append(f"{indent}   {s('evidence:', '1')}")
    for e in f.evidence:  # log lines as they are: never wrapped
        where = f"{e.source}:{e.line}" if e.line else e.source
        lines.append(f"{indent}     {s(where, '2')}  {e.text}")
    for reason in f.reasons:
        lines += s.wrap(reason, f"{indent}     ", "  ")
    if explain and f.checks:
        lines.append(f"{indent}   {s('checked:', '1')}")
        for check in f.checks:
            lines += s.wrap(check, f"{indent}     ", "  ")
    if f.symptoms:
        lines.append(f"{indent}   {s('symptoms it explains:', '1')}")
        for sym in f.symptoms:
            first = sym.evidence[0] if sym.evidence else None
            where = f" ({first.source}:{first.line}: {first.text})" if first else ""
            lines.append(f"{indent}     -> {sym.rule_id}{where}")
            for nested in sym.symptoms:
                lines.append(f"{indent}        -> {nested.rule_id}")
    return lines


def _remedy(f: Finding, s: Style, explain: bool = False, after_plan: bool = False) -> list[str]:
    """The fix and verify steps, commands each on a line of their own; where the fix was confirmed."""
    label = f"fix, step by step ({f.rule_id}; the plan above comes first):" if after_plan else "fix:"
    lines = s.wrap(s(label, "1"), "   ", "  ")
    for i, step in enumerate(f.fix, 1):
        lines += s.wrap(f"{i}. {step['step']}", "     ", "   ")
        if step.get("run"):
            lines.append(f"        $ {step['run']}")
        if step.get("look_up"):
            lines += s.wrap(f"{s('fill in:', '33')} {step['look_up']}", "        ", "  ")
        if step.get("caution"):
            lines += s.wrap(f"{s('caution:', '33')} {step['caution']}", "        ", "  ")
    lines.append(f"   {s('verify:', '1')}")
    for v in f.verify:
        expect = v.get("expect") or {}
        want = ", ".join(f"{k.replace('_', ' ')} {val}" for k, val in expect.items())
        lines.append(f"     $ {v['run']}")
        if want:  # on its own line: a triple-click on the command copies the command alone
            lines.append(f"       expect: {want}")
        if v.get("look_up"):
            lines += s.wrap(f"{s('fill in:', '33')} {v['look_up']}", "       ", "  ")
    if f.verified_by and explain:
        lines.append(f"   {s('verified by:', '1')}")
        for source in f.verified_by:
            lines += s.wrap(readable_source(source), "     ", bullet="- ")
    elif f.verified_by:
        lines += s.wrap(f"{s('verified by:', '1')} {len(f.verified_by)} source(s) where this fix worked "
                        "(--explain lists them)", "   ", "  ")
    if f.references:
        lines.append(f"   {s('references:', '1')}")
        lines.extend(f"     {ref}" for ref in f.references)  # one URL a line, never broken
    return lines


def readable_source(source: str) -> str:
    """Where a fix was confirmed, for a reader: a seed document's internal file name says nothing to
    them, so a seed is named by what it is, with its note; URLs and reproductions stay as they are."""
    if source.startswith("seed "):
        _, _, note = source.partition(" (")
        return "the deployment report this rule was written from" + (f": {note.removesuffix(')')}" if note else "")
    return source
