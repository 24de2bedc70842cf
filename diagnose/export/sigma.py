"""One Sigma rule per KB rule, from its line signals; and what a query cannot express, per rule."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from diagnose.export.dialect import Untranslatable, rewrite
from diagnose.kb.compiled import CompiledRule, KnowledgeBase

NAMESPACE = uuid.UUID("6f1c2d4e-8a3b-4c5d-9e6f-7a8b9c0d1e2f")  # rule id -> a stable Sigma id
MIN_WEIGHT = 0.5  # weaker signals are context, never a cause alone: no alert on them
LEVELS = {"critical": "critical", "high": "high", "medium": "medium", "low": "low"}


@dataclass
class Exported:
    rule_id: str
    sigma: dict[str, Any] | None  # None: no signal of the rule can be a query
    signals: list[str] = field(default_factory=list)  # the ids of the signals in the query
    lucene: list[str] = field(default_factory=list)  # the same signals in Lucene's regexp dialect
    left_out: list[str] = field(default_factory=list)  # what the query cannot express, in words


def export_rule(rule: CompiledRule) -> Exported:
    out = Exported(rule.id, None)
    re2: list[str] = []
    for s in rule.signals:
        if not s.regex:
            out.left_out.append(f"signal {s.id}: fuzzy text, not a pattern")
            continue
        if s.weight < MIN_WEIGHT:
            out.left_out.append(f"signal {s.id}: weight {s.weight} (context only, never a cause alone)")
            continue
        try:
            pattern, notes = rewrite(s.regex, "re2")
            re2.append(pattern)
            out.signals.append(s.id)
        except Untranslatable as e:
            out.left_out.append(f"signal {s.id}: {e} (RE2 has none)")
            continue
        try:
            lucene, notes = rewrite(s.regex, "lucene")
            out.lucene.append(lucene)
            out.left_out.extend(f"signal {s.id}: {n}" for n in notes)
        except Untranslatable as e:
            out.left_out.append(f"signal {s.id}: {e} (Lucene has none; LogQL only)")
        if s.kinds:
            out.left_out.append(f"signal {s.id}: only in {', '.join(sorted(s.kinds))} sources (the query reads every line)")
    for c in rule.conditions:
        subject = next((k for k in c if k not in ("effect", "weight", "note") and c[k] is not None), "?")
        out.left_out.append(f"condition on {subject} ({c.get('effect')}): a fact of the node, not a line")
    if rule.generic:
        out.left_out.append("a generic symptom: its lines alone never name a specific cause")
    if re2:
        out.sigma = _sigma(rule, re2)
    return out


def _sigma(rule: CompiledRule, patterns: list[str]) -> dict[str, Any]:
    return {
        "title": rule.title[:250],
        "id": str(uuid.uuid5(NAMESPACE, rule.id)),
        "name": rule.id.replace("-", "_"),
        "status": "experimental",
        "description": " ".join(rule.summary.split()),
        "references": list(rule.references) or None,
        "author": "diagnose knowledge base",
        "logsource": {"product": "linux", "service": "gpu-inference"},
        "detection": {"keywords": {"|re": patterns}, "condition": "keywords"},
        "falsepositives": ["Confirm with `diagnose` on the node or `diagnose fleet`: the full rule also weighs "
                           "the node's facts"],
        "level": LEVELS.get(rule.severity, "medium"),
    }


def export_all(kb: KnowledgeBase, ids: list[str] | None = None) -> list[Exported]:
    """Every rule (or those named), in id order; an unknown id is a ValueError naming it."""
    unknown = [i for i in ids or [] if i not in kb.rules]
    if unknown:
        raise ValueError(f"no such rule: {', '.join(unknown)}")
    return [export_rule(kb.rules[i]) for i in sorted(ids or kb.rules)]
