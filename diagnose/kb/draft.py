"""`diagnose rules draft`: turn an unknown failure into a draft rule and fixture for a person to finish.

The draft's signal matches the failing line's template (numbers, paths, addresses masked), so
the rule already recognises the same failure in other runs; what only a person can write (the
cause, the fix that was confirmed, the source of the log) is marked TODO and fails `rules lint`
until it is filled in.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import regex
import yaml

from diagnose.engine import fingerprint
from diagnose.errors import DiagnoseError
from diagnose.model import Diagnosis


def draft(diagnosis: Diagnosis, inputs: list[str], out_dir: Path) -> list[Path]:
    if not diagnosis.unmatched_errors:
        raise DiagnoseError("no unmatched error line to draft a rule from")
    error = diagnosis.unmatched_errors[0]
    tpl = error.template or fingerprint.template(error.text)
    fp = error.fingerprint or fingerprint.fingerprint(error.text)
    head = regex.match(r"\s*(?:[\w.]+\.)?(\w+?)(?:Error|Exception)?\b", error.text)
    slug = regex.sub(r"[^a-z0-9]+", "-", (head[1] if head else "unknown").lower()).strip("-") or "unknown"
    rule_id = f"draft-{slug}-{fp[:6]}"
    rule = {
        "id": rule_id,
        "title": f"TODO: name the cause of `{error.text[:60]}`",
        "category": "server",
        "severity": "medium",
        "summary": "TODO: one sentence a person reads first.",
        "description": f"TODO: what it means and why it happens.\nDrafted from {error.source}:{error.line} (fingerprint {fp}).",
        "signals": [{"id": "failing-line", "regex": fingerprint.regex_of(tpl), "weight": 0.8}],
        "fix": [{"step": "TODO: the fix that was confirmed to work", "run": "TODO"}],
        "verify": [{"run": "TODO: a read-only command that proves the fix took", "expect": {"exit_code": 0}}],
        "verified_by": [{"url": "https://TODO", "note": "TODO: where the fix was confirmed"}],
        "references": [],
        "examples": {"match": [error.text], "no_match": ["TODO: a near-miss line this rule must not match"]},
    }
    rule_path = out_dir / "rules" / "server" / f"{rule_id}.yaml"
    rule_path.parent.mkdir(parents=True, exist_ok=True)
    rule_path.write_text(
        "# Draft made by `diagnose rules draft`: finish every TODO, choose the category folder, then\n"
        "# move this file to rules/<category>/ and the fixture folder to fixtures/.\n"
        + yaml.safe_dump(rule, sort_keys=False, allow_unicode=True, width=100),
        encoding="utf-8",
    )
    case = out_dir / "fixtures" / f"{rule_id}--TODO-source"
    case.mkdir(parents=True, exist_ok=True)
    written = [rule_path]
    for raw in inputs:
        path = Path(raw)
        if path.is_file():
            shutil.copy(path, case / path.name)
            written.append(case / path.name)
    expected = {
        "source": "TODO: the issue thread URL, or 'reproduction'",
        "how": "TODO: how the log was obtained; it must be real and verbatim",
        "first": rule_id,
    }
    (case / "expected.yaml").write_text(yaml.safe_dump(expected, sort_keys=False), encoding="utf-8")
    written.append(case / "expected.yaml")
    return written
