"""`diagnose rules test`: run every rule example and every fixture; print the confusion matrix.

A fixture is a folder with real artifacts and an expected.yaml (see docs/writing-rules.md):
`first` must be ranked first, `absent` ids must not be reported, `healthy` gives no finding.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose.kb.compiled import KnowledgeBase
from diagnose.model import walk

HEALTHY = "(healthy)"
NOTHING = "(nothing)"


@dataclass
class Case:
    path: Path
    expected: dict[str, Any]

    @property
    def name(self) -> str:
        return self.path.name if self.path.parent.name != "healthy" else f"healthy/{self.path.name}"

    @property
    def truth(self) -> str:
        return HEALTHY if self.expected.get("healthy") else str(self.expected.get("first"))

    def artifacts(self) -> list[str]:
        return [str(p) for p in sorted(self.path.rglob("*")) if p.is_file() and p.name != "expected.yaml"]


@dataclass
class CaseResult:
    case: Case
    ranked: list[str]
    problems: list[str] = field(default_factory=list)
    confidence: float | None = None
    scored: list[tuple[str, float]] = field(default_factory=list)  # every top-level finding

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def predicted(self) -> str:
        return self.ranked[0] if self.ranked else NOTHING


def find_cases(root: Path) -> list[Case]:
    import yaml

    from diagnose.errors import DiagnoseError

    cases = []
    for expected in sorted(root.rglob("expected.yaml")):
        try:
            data = yaml.safe_load(expected.read_text(encoding="utf-8")) or {}
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{expected}:{mark.line + 1}" if mark is not None else str(expected)
            raise DiagnoseError(f"{where}: not valid YAML ({getattr(exc, 'problem', None) or exc}); "
                                f"quote a value that holds ': '") from None
        if not isinstance(data, dict):
            raise DiagnoseError(f"{expected}: expected a mapping (source, how, kind, first or healthy)")
        cases.append(Case(expected.parent, data))
    return cases


def run_case(case: Case, kb: KnowledgeBase) -> CaseResult:
    from diagnose import api

    diagnosis = api.diagnose(case.artifacts(), kb=kb)
    ranked = [f.rule_id for f in diagnosis.findings]
    every = {f.rule_id for f in walk(diagnosis.findings)}
    result = CaseResult(case, ranked, confidence=diagnosis.findings[0].confidence if diagnosis.findings else None)
    result.scored = [(f.rule_id, f.confidence) for f in diagnosis.findings]
    exp = case.expected
    if exp.get("healthy"):
        if ranked:
            result.problems.append(f"healthy case gave {', '.join(ranked)}")
    elif exp.get("first"):
        if not ranked or ranked[0] != exp["first"]:
            result.problems.append(f"expected {exp['first']} first, got {', '.join(ranked) or 'nothing'}")
    else:
        result.problems.append("expected.yaml has neither `first` nor `healthy: true`")
    if exp.get("symptoms") and diagnosis.findings:
        folded = {s.rule_id for s in walk(diagnosis.findings[0].symptoms)}
        missing = sorted(set(exp["symptoms"]) - folded)
        if missing:
            result.problems.append(f"expected {', '.join(missing)} folded under {ranked[0]}")
    for absent in exp.get("absent") or []:
        if absent in every:
            result.problems.append(f"{absent} must not be reported")
    return result



def example_problems(kb: KnowledgeBase) -> list[str]:
    from diagnose.kb.lint import _signal_matches

    problems = []
    for rule in kb.rules.values():
        for line in rule.examples["match"]:
            if not any(_signal_matches(s, line) for s in rule.signals):
                problems.append(f"{rule.id}: match example matches no signal: {line[:80]!r}")
        for line in rule.examples["no_match"]:
            if any(_signal_matches(s, line) for s in rule.signals):
                problems.append(f"{rule.id}: no_match example matches: {line[:80]!r}")
    return problems


def summary(results: list[CaseResult]) -> dict[str, Any]:
    labelled = [r for r in results if r.case.expected.get("first")]
    healthy = [r for r in results if r.case.expected.get("healthy")]
    top1 = sum(1 for r in labelled if r.predicted == r.case.truth)
    top3 = sum(1 for r in labelled if r.case.truth in r.ranked[:3])
    clean = sum(1 for r in healthy if not r.ranked)
    wrong = sum(1 for r in labelled if r.ranked and r.predicted != r.case.truth)
    # a collector's second acceptable id (`also:`) counted as right too: strict top-1 stays the headline figure
    accepted = sum(1 for r in labelled if r.ranked and r.predicted in {r.case.truth, *also_ids(r.case.expected)})
    return {
        "cases": len(results),
        "labelled": len(labelled),
        "top1": top1,
        "top3": top3,
        "healthy": len(healthy),
        "healthy_clean": clean,
        "passed": sum(1 for r in results if r.ok),
        "wrong_first": wrong,
        "first_or_also": accepted,
    }


def also_ids(expected: dict[str, Any]) -> list[str]:
    """The ids an expected.yaml's `also:` accepts beside `first` (a list, one id, or nothing)."""
    also = expected.get("also") or []
    return [also] if isinstance(also, str) else [str(a) for a in also if a]


def confusion_lines(results: list[CaseResult], rule_ids: list[str] | None = None) -> list[str]:
    """Rows: the true cause; columns: what was ranked first, as `predicted xN`, and the near-misses
    (cases naming the id under `absent`) that it kept away from. With `rule_ids`, every rule gets a
    row, also one without a case (so a missing fixture shows)."""
    rows: dict[str, Counter[str]] = {rid: Counter() for rid in rule_ids or []}
    near: dict[str, list[bool]] = {}
    for r in results:
        rows.setdefault(r.case.truth, Counter())[r.predicted] += 1
        for absent in r.case.expected.get("absent") or []:
            near.setdefault(absent, []).append(not any(f"{absent} must not be reported" in p for p in r.problems))
    width = max((len(t) for t in rows), default=10)
    out = [f"{'true cause':<{width}}  n  top-1  near-miss  ranked first as"]
    for truth in sorted(rows):
        counts = rows[truth]
        n = sum(counts.values())
        right = counts.get(truth, 0) if truth != HEALTHY else counts.get(NOTHING, 0)
        held = near.get(truth, [])
        nm = f"{sum(held)}/{len(held)}" if held else "-"
        cells = ", ".join(f"{p} x{c}" for p, c in counts.most_common()) or "(no case)"
        out.append(f"{truth:<{width}}  {n:>2} {right:>3}/{n:<2} {nm:>9}  {cells}")
    return out


BINS = [(0.3, 0.5), (0.5, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01)]


@dataclass
class Calibration:
    """How often a finding reported at a given confidence was the true cause."""

    rows: list[tuple[str, int, float, float]]  # (bin, count, mean confidence, share correct)
    brier: float
    predictions: int


def calibration(results: list[CaseResult]) -> Calibration:
    """Every top-level finding of every labelled or healthy case is one prediction: it is right
    when its rule is the case's true cause (a healthy case has none)."""
    pairs: list[tuple[float, int]] = []
    for r in results:
        truth = r.case.expected.get("first")
        for rule_id, confidence in r.scored:
            pairs.append((confidence, int(rule_id == truth)))
    rows = []
    for lo, hi in BINS:
        inside = [(c, o) for c, o in pairs if lo <= c < hi]
        if inside:
            rows.append((f"{lo:.1f}-{min(hi, 1.0):.1f}", len(inside), sum(c for c, _ in inside) / len(inside),
                         sum(o for _, o in inside) / len(inside)))
    brier = sum((c - o) ** 2 for c, o in pairs) / len(pairs) if pairs else 0.0
    return Calibration(rows, brier, len(pairs))
