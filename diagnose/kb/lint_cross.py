"""Lint checks across rules: what one rule's examples and fixtures say about the others.

With many rules, two failure modes appear that no single rule shows:
- a `no_match` example (a near-miss this rule must not name) that another rule matches, yet that
  rule does not list the line among its own `examples.match`: nobody has said whose case it is;
- two rules reported side by side on one fixture, neither explaining the other: the fixture's
  reader sees two rival causes and the KB has not said how they relate (an `explains` edge, or the
  fixture's `absent:` list saying the second one was reviewed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from diagnose.kb.lint import Issue, _signal_matches


def unowned_near_misses(rules: dict[str, tuple[Any, Any]]) -> list[Issue]:
    """`no_match` lines another rule matches without claiming them in its own examples."""
    from diagnose.kb import loader

    issues = []
    for rule_id, (rule, rule_file) in sorted(rules.items()):
        for i, line in enumerate(rule.examples.no_match):
            for other_id, (other, _) in sorted(rules.items()):
                if other_id == rule_id or line in other.examples.match:
                    continue
                # a contradicting or supporting signal is no claim on the line: alone it names nothing
                signal = next((s.id for s in other.signals
                               if getattr(s, "effect", None) is None and _signal_matches(s, line)), None)
                if signal:
                    where = f"{rule_file.path}:{loader.line_of(rule_file.root, ['examples', 'no_match', i])}"
                    issues.append(Issue(
                        where,
                        f"no_match example is matched by rule {other_id} (signal {signal}) but is not among "
                        f"{other_id}'s examples.match: add it there if it is {other_id}'s case, or tighten "
                        f"{other_id}: {line[:80]!r}",
                        "warning",
                    ))
                    break
    return issues


def related(a: str, b: str, kb: Any) -> bool:
    """Does an `explains` path run from a to b or from b to a?"""
    from diagnose.engine.rank import _explained

    return b in _explained(a, kb, set()) or a in _explained(b, kb, set())


def rival_findings(fixtures: Path, kb: Any) -> list[Issue]:
    """Fixtures on which two top-level findings neither explains the other, unless the fixture
    names the second one in `also` (reviewed)."""
    from diagnose import api
    from diagnose.kb.selftest import also_ids, find_cases

    issues = []
    for case in find_cases(fixtures):
        try:
            diagnosis = api.diagnose(case.artifacts(), kb=kb)
        except Exception as exc:  # a broken fixture is reported by `rules test`; here it is skipped
            issues.append(Issue(str(case.path), f"fixture could not be diagnosed: {exc}", "warning"))
            continue
        reviewed = set(also_ids(case.expected))
        ids = [f.rule_id for f in diagnosis.findings]
        for i, a in enumerate(ids):
            for b in ids[i + 1:]:
                if b in reviewed or a in reviewed or related(a, b, kb):
                    continue
                issues.append(Issue(
                    str(case.path / "expected.yaml"),
                    f"{a} and {b} are both reported and neither explains the other: add an `explains` edge "
                    f"if one causes the other, or list the second under `also:` in expected.yaml once reviewed",
                    "warning",
                ))
    return issues
