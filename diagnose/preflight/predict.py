"""Predictions: a KB rule expected to fire at launch, with the facts that predict it as evidence.

Each check adds what it compared to `Predictions`; several checks naming the same rule add up
(independent evidence, as in ranking). `findings()` turns them into the same Findings a crash
diagnosis gives: the rule's own conditions are asked of the facts (a fact the rule says
contradicts it lowers the confidence and says why, a required fact that does not hold rejects
it), its fixed-in versions demote it, and `explains` folds symptoms under their cause.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from diagnose.model import Evidence, Facts, Finding, RuleVerdict, Skipped

KIND = "preflight"
CONTRADICT = 0.6
FIXED_IN_KEEPS = 0.35


@dataclass
class Prediction:
    rule_id: str
    confidence: float
    evidence: list[Evidence] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)


@dataclass
class Predictions:
    items: dict[str, Prediction] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    known_rules: frozenset[str] = frozenset()

    def add(self, rule_id: str, confidence: float, text: str, source: str, check: str, line: int = 0,
            reasons: tuple[str, ...] = (), values: dict[str, str] | None = None,
            groups: dict[str, str] | None = None) -> None:
        """Predict `rule_id` because of `text` (what was compared), read from `source`."""
        if rule_id not in self.known_rules:
            self.skipped.append(Skipped(f"preflight:{check}", f"predicts {rule_id}, which this knowledge base "
                                                                f"has no rule for: {text}"))
            return
        from diagnose.engine.rank import combine

        item = self.items.get(rule_id)
        if item is None:
            item = self.items[rule_id] = Prediction(rule_id, 0.0)
        item.confidence = combine([item.confidence, confidence])
        evidence = Evidence(source, line, text, check, KIND)
        if all((e.source, e.line, e.text) != (source, line, text) for e in item.evidence):
            item.evidence.append(evidence)
        item.reasons.extend(r for r in reasons if r not in item.reasons)
        item.values.update(values or {})
        item.groups.update(groups or {})

    def skip(self, check: str, reason: str) -> None:
        self.skipped.append(Skipped(f"preflight:{check}", reason))


def findings(predictions: Predictions, facts: Facts, kb) -> tuple[list[Finding], list[RuleVerdict]]:  # type: ignore[no-untyped-def]
    from diagnose.engine import rank

    candidates = []
    rejected: list[RuleVerdict] = []
    for item in predictions.items.values():
        outcome = _judge(item, facts, kb)
        if isinstance(outcome, RuleVerdict):
            rejected.append(outcome)
        else:
            candidates.append(outcome)
    rejected.extend(rank.verdicts_below(candidates))
    return rank.rank(candidates, facts, kb), rejected


def _judge(item: Prediction, facts: Facts, kb):  # type: ignore[no-untyped-def]
    """The rule's own conditions and fixed-in versions, asked of the facts, as the engine does."""
    from diagnose.engine import conditions
    from diagnose.engine.rank import Candidate

    rule = kb.rules[item.rule_id]
    confidence = item.confidence
    reasons = list(item.reasons)
    values = dict(item.values)
    for cond in rule.conditions:
        holds, detail, found = conditions.evaluate(cond, facts, kb.compat, item.groups)
        if "compat" in cond:
            values.update({f"compat.{cond['compat']}.{k}": v for k, v in found.items()})
        note = cond.get("note") or detail
        effect = cond["effect"]
        if effect == "require" and holds is False or effect == "require-if-known" and holds is False:
            return RuleVerdict(rule.id, round(confidence, 3), f"predicted, but a fact the rule requires does not "
                                                              f"hold: {detail}", [e.signal for e in item.evidence])
        if effect == "contradict" and holds:
            confidence *= 1 - (cond.get("weight") or CONTRADICT)
            reasons.append(f"- {note} ({detail})" if cond.get("note") else f"- {detail}")
        elif effect in ("corroborate", "evidence") and holds:
            line = f"+ {note} ({detail})" if cond.get("note") else f"+ {detail}"
            if line not in reasons:
                reasons.append(line)
    for package, fixed in rule.fixed_in.items():
        installed = facts.packages.get(package)
        if installed and conditions.satisfies(installed, f">={fixed}"):
            confidence *= FIXED_IN_KEEPS
            reasons.append(f"- {package} {installed} already has the fix (fixed in {fixed})")
    values.update({f"groups.{k}": v for k, v in item.groups.items()})
    return Candidate(rule, confidence, item.evidence, reasons, values)
