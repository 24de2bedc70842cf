"""Output of `diagnose verify`: each command, what it printed, and pass / fail / not run, per rule."""

from __future__ import annotations

import json
import os

from diagnose.preflight.verify import StepResult, VerifyReport

STATUS_COLOUR = {"pass": "32", "fail": "31;1", "not-run": "33"}
LABEL = {"pass": "PASS", "fail": "FAIL", "not-run": "NOT RUN"}


def render_json(report: VerifyReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"


def render_text(report: VerifyReport, colour: bool = False) -> str:
    def s(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if colour else text

    counts = {k: sum(1 for r in report.results if r.status == k) for k in LABEL}
    head = "diagnose verify: " + (
        "every check passed" if report.passed else
        f"{counts['pass']} passed, {counts['fail']} failed, {counts['not-run']} not run")
    out = [s(head, "1") + f" ({len(report.results)} command(s) of {len(report.rules)} rule(s), kb {report.kb_version})"]
    if report.python:
        out.append(f"python: {report.python} ({report.python_how}); PATH starts {os.environ.get('PATH', '').split(':')[0]}")
    out.extend(s(f"warning: {w}", "33") for w in report.warnings)
    for rule_id in report.rules:
        out.append("")
        out.append(s(rule_id, "1"))
        for result in (r for r in report.results if r.rule_id == rule_id):
            out.extend(_step(result, s))
    if report.skipped:
        out.append("")
        out.append(s("Skipped:", "1"))
        out.extend(f"  {sk.source}: {sk.reason}" for sk in report.skipped)
    return "\n".join(out) + "\n"


def _step(r: StepResult, s) -> list[str]:  # type: ignore[no-untyped-def]
    label = s(f"{LABEL[r.status]:<7}", STATUS_COLOUR[r.status])
    want = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r.expect.items())
    lines = [f"  {label}  $ {r.command}"]
    if want:
        lines.append(f"           expect: {want}")
    if r.note:
        lines.append(f"           note: {r.note}")
    if r.status == "not-run":
        lines.append(f"           not run: {r.reason}")
        return lines
    took = f"exit code {r.exit_code}, {r.seconds:g}s" if r.exit_code is not None else f"{r.seconds:g}s"
    lines.append(f"           {took}" + (f": {r.reason}" if r.reason else ""))
    for stream, text in (("stdout", r.stdout), ("stderr", r.stderr)):
        if text:
            lines.append(f"           {stream}:")
            lines.extend(f"           | {line}" for line in text.splitlines())
    return lines
