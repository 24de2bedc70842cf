"""From matched signals and facts to ranked findings, with symptoms folded under their causes.

Confidence: independent evidence adds up, 1 - prod(1 - w) over the distinct signals (and
`evidence` conditions) that held; a corroborating fact raises it the same way, a contradicting
fact or an installed release that already has the fix lowers it, and the finding says why.
"""

from __future__ import annotations

import re
from typing import Any

from diagnose import lazy_re
from diagnose.engine import conditions
from diagnose.engine.match import Hit
from diagnose.kb.compiled import PLACEHOLDER, CompiledRule, KnowledgeBase
from diagnose.model import Evidence, Facts, Finding, RuleVerdict
from diagnose.record import field, record
from diagnose.remedy import values as remedy_values

REPORT_AT = 0.3  # below this a candidate is a near-miss, shown only by --explain
CORROBORATE = 0.5
CONTRADICT = 0.6
FIXED_IN_KEEPS = 0.35
SYMPTOM_SUPPORT = 0.3
SPECIFIC_LINE = 0.7  # a line matched at this weight names its cause by itself
OUTWEIGHS = 1.8  # ... or at this many times the generic symptom's weight on it
UNSUPPORTED_CAUSE = 0.8  # a cause seen only on its symptom's line stays below the symptom
MAX_EVIDENCE = 8
FOREIGN_CONTRADICT = 0.4  # a contradiction from another environment's package list
SET_ASIDE_AT = 0.6  # evidence this strong, set aside by a fact, is shown without --explain
MAX_CONFIDENCE = 0.99  # evidence is never certainty; and 0.999 would print as 1.00


@record(eq=False)
class Candidate:
    """A rule the evidence points at, with its confidence and the lines behind it, before ranking."""

    rule: CompiledRule
    confidence: float
    evidence: list[Evidence]
    reasons: list[str] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)
    first: tuple[int, int] = (1 << 30, 0)
    checks: list[str] = field(default_factory=list)
    scale: float = 1.0  # factors applied for where the evidence came from (prose): not the evidence's strength
    doubted: bool = False  # a line argues against it (a contradicting signal matched): it folds no symptom under it
    basis: str = "log"  # where its line evidence came from: log, prose, cut (frames of a cut traceback), guess
    lines_alone: float = 0.0  # what its line signals alone gave, before any fact lowered it
    contradicted: list[str] = field(default_factory=list)  # the facts that lowered it, as the rule words them


def combine(weights: list[float]) -> float:
    remaining = 1.0
    for w in weights:
        remaining *= 1 - w
    return 1 - remaining


def assess(rule: CompiledRule, hits: list[Hit], facts: Facts, kb: KnowledgeBase) -> Candidate | RuleVerdict | None:
    """A candidate finding for `rule`, a verdict saying why it was rejected, or None (no evidence)."""
    against = [h for h in hits if h.signal.effect == "contradict"]
    support = [h for h in hits if h.signal.effect == "support"]
    hits = [h for h in hits if h.signal.effect is None]
    if hits:  # a supporting line (a command, a setting) adds to a finding another line makes; it makes none
        hits += support
    groups: dict[str, str] = {}
    for hit in hits:
        for key, value in hit.groups.items():
            groups.setdefault(key, value)
    best: dict[str, float] = {}
    for hit in hits:
        best[hit.signal.id] = max(best.get(hit.signal.id, 0.0), hit.signal.weight)
    weights = list(best.values())
    reasons: list[str] = []
    values: dict[str, str] = {f"groups.{k}": v for k, v in groups.items()}
    fact_evidence: list[Evidence] = []
    outcomes = []
    for cond in rule.conditions:
        holds, detail, found = conditions.evaluate(cond, facts, kb.compat, groups)
        subject = "compat." + cond["compat"] if "compat" in cond else None
        if subject:
            values.update({f"{subject}.{k}": v for k, v in found.items()})
        outcomes.append((cond, holds, detail))
        if cond["effect"] == "evidence" and holds:
            weights.append(cond["weight"])
            fact_evidence.append(Evidence("facts", 0, detail, "fact", "facts"))
            reasons.append(f"+ {cond['note']} ({detail})" if cond.get("note") else f"+ {detail}")
    matched = sorted(best)
    if not weights:
        if against:  # only lines that argue against it: no finding, and no guess by similarity either (nearest)
            e = against[0].evidence
            return RuleVerdict(rule.id, 0.0, f"only argued against: line {e.line} of {e.source} "
                               f"({against[0].signal.id}): {e.text[:160]}", [])
        return None
    softened = []
    contradicted: list[str] = []
    for cond, holds, detail in outcomes:
        effect = cond["effect"]
        if effect == "require" and holds is not True:
            why = "unknown" if holds is None else "does not hold"
            return RuleVerdict(rule.id, round(combine(weights), 3), f"required fact {why}: {detail}", matched)
        if effect == "require-if-known" and holds is False:
            foreign = conditions.foreign_source(cond, facts)
            if foreign is None:
                return RuleVerdict(rule.id, round(combine(weights), 3), f"contradicted by a fact: {detail}", matched)
            softened.append(f"- {detail} per {foreign}, a package list of another environment than the server's: "
                            "it lowers the confidence instead of ruling this out")
    confidence = combine(weights) * (1 - FOREIGN_CONTRADICT) ** len(softened)
    reasons.extend(softened)
    for cond, holds, detail in outcomes:
        note = cond.get("note") or detail
        if cond["effect"] == "corroborate" and holds:
            confidence = combine([confidence, cond.get("weight") or CORROBORATE])
            reasons.append(f"+ {note} ({detail})" if cond.get("note") else f"+ {detail}")
        elif cond["effect"] == "contradict" and holds:
            confidence *= 1 - (cond.get("weight") or CONTRADICT)
            reasons.append(f"- {note} ({detail})" if cond.get("note") else f"- {detail}")
            contradicted.append(f"{note} ({detail})" if cond.get("note") else detail)
        elif cond["effect"] in ("require", "require-if-known") and holds and not any(detail in r for r in reasons):
            reasons.append(f"+ {detail}")
    for signal_id, hit in {h.signal.id: h for h in reversed(against)}.items():
        confidence *= 1 - hit.signal.weight
        e = hit.evidence
        reasons.append(f"- line {e.line} of {e.source} argues against it ({signal_id}): {e.text[:160]}")
    for package, fixed in rule.fixed_in.items():
        installed = facts.packages.get(package)
        if installed and conditions.satisfies(installed, f">={fixed}"):
            confidence *= FIXED_IN_KEEPS
            reasons.append(f"- {package} {installed} already has the fix (fixed in {fixed})")
    evidence = sorted((h.evidence for h in hits), key=lambda e: (e.source, e.line))
    first = min((h.position for h in hits), default=(1 << 30, 0))
    checks = _checks(rule, best, outcomes)
    for name, value in remedy_values.from_tables(facts, values, kb.compat).items():
        values.setdefault(name, value)
    return Candidate(rule, confidence, _dedupe(evidence)[:MAX_EVIDENCE] + fact_evidence, reasons, values, first, checks,
                     doubted=bool(against), lines_alone=combine(list(best.values())), contradicted=contradicted)


def _checks(rule: CompiledRule, matched: dict[str, float], outcomes: list[tuple[dict[str, Any], bool | None, str]]) -> list[str]:
    """For --explain: every signal and condition of the rule, and whether it held."""
    out = [
        f"signal {s.id} (weight {s.weight}): {'matched' if s.id in matched else 'not seen'}" for s in rule.signals
    ]
    for cond, holds, detail in outcomes:
        state = {True: "holds", False: "does not hold", None: "unknown"}[holds]
        out.append(f"{cond['effect']} {cond.get('note') or next(iter(cond))}: {state} ({detail})")
    return out


def _dedupe(evidence: list[Evidence]) -> list[Evidence]:
    seen: set[tuple[str, int]] = set()
    out = []
    for e in evidence:
        if (e.source, e.line) not in seen:
            seen.add((e.source, e.line))
            out.append(e)
    return out


def render_template(text: str, values: dict[str, str]) -> str:
    """Fill `{packages.torch}`-style placeholders; unknown ones render as `<torch>`.

    Other braces (`awk '{print $1}'`) are left as they are.
    """
    return PLACEHOLDER.sub(lambda m: values.get(m[1]) or f"<{m[1].rsplit('.', 1)[-1]}>", text)


def _placeholders(candidate: Candidate, facts: Facts) -> dict[str, str]:
    values = {f"packages.{k}": v for k, v in facts.packages.items()}
    for attr in ("driver_version", "cuda_driver_version", "kernel_release", "torch_cuda"):
        if getattr(facts, attr):
            values[f"facts.{attr}"] = getattr(facts, attr)
    if ccs := facts.compute_capabilities():
        values["facts.compute_capability"] = ccs[0]
    values.update(candidate.values)
    for name, value in remedy_values.from_facts(facts, candidate.evidence, candidate.values).items():
        values.setdefault(name, value)
    return values


def _render_step(step: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    """A fix or verify step with its placeholders filled; what stayed unknown is named, with where
    to look it up, so that no one pastes a `<placeholder>`."""
    # a command gets only values that are plain shell words: a log is untrusted text, and a person pastes the
    # command (a model path `x; curl ... | sh` stays a blank to fill in); prose may quote anything
    words = {k: v for k, v in values.items() if remedy_values.SHELL_WORD.fullmatch(v)}
    out: dict[str, Any] = {k: render_template(v, words if k == "run" else values) if isinstance(v, str) else v
                           for k, v in step.items()}
    # what keeps the command from being pasted as it is (a blank in the prose is only read)
    missing = sorted({n for k, v in step.items() if k == "run" and isinstance(v, str)
                      for n in remedy_values.unresolved(v, out[k], PLACEHOLDER)})
    run = out.get("run")
    if isinstance(run, str):  # a rule's own `<package>`-style blank is a value to fill in as well
        shell_defaults = re.sub(r"\$\{[^}]*\}", "", run)  # ${CUDA_VISIBLE_DEVICES-<unset>} is no blank
        missing += [b for b in remedy_values.ANGLE.findall(shell_defaults) if b not in missing
                    and f"<{b.strip('<>')}>" not in {f"<{n.rsplit('.', 1)[-1]}>" for n in missing}]
    if missing:
        out["unresolved"] = missing
        hints = [remedy_values.LOOK_UP[n] for n in missing if n in remedy_values.LOOK_UP]
        out["look_up"] = "; ".join(hints) if hints else ", ".join(
            n if n.startswith(("<", "/")) else f"<{n.rsplit('.', 1)[-1]}>" for n in missing) + ": not in the inputs"
    return out


RANK = lazy_re.compile(r"\[rank(\d{1,6})\]|\[Rank (\d{1,6})\]|\bTP(\d{1,6})\b|\brank (\d{1,6})\b|\brank=(\d{1,6})\b")


def lead_rank(evidence: list[Evidence]) -> str | None:
    """In a multi-rank log, the ranks the evidence comes from and the earliest of them (by printed
    time when every line has one, else by position). Whether the earliest is the culprit depends on
    the failure: a crashed rank leads, but in a collective timeout the late rank is the one missing."""
    ranked = []
    for i, e in enumerate(evidence):
        m = RANK.search(e.text)
        if m:
            ranked.append((e.time or "", i, next(g for g in m.groups() if g), e))
    if len({r[2] for r in ranked}) < 2:
        return None
    timed = [r for r in ranked if r[0]]
    first = min(timed) if len(timed) == len(ranked) else min(ranked, key=lambda r: r[1])
    ranks = ", ".join(sorted({r[2] for r in ranked}, key=int))
    return f"ranks in the evidence: {ranks}; the earliest is rank {first[2]} (line {first[3].line} of {first[3].source})"


def to_finding(candidate: Candidate, facts: Facts) -> Finding:
    rule = candidate.rule
    values = _placeholders(candidate, facts)
    if lead := lead_rank(candidate.evidence):
        candidate.reasons.append(f"· {lead}")
    fix = [_render_step(step, values) for step in rule.fix]
    return Finding(
        rule_id=rule.id,
        title=rule.title,
        category=rule.category,
        severity=rule.severity,
        confidence=round(min(candidate.confidence, MAX_CONFIDENCE), 3),
        summary=rule.summary,
        evidence=candidate.evidence,
        reasons=candidate.reasons,
        checks=candidate.checks,
        fix=fix,
        verify=[_render_step(v, values) for v in rule.verify],
        verified_by=list(rule.verified_by),
        references=list(rule.references),
        first_position=candidate.first,
        basis=candidate.basis,
    )


def rank(candidates: list[Candidate], facts: Facts, kb: KnowledgeBase) -> list[Finding]:
    """Findings best first; each symptom folded under the cause that explains it."""
    reported = {c.rule.id: c for c in candidates if c.confidence >= REPORT_AT}
    closure = {rid: set(_explained(rid, kb, set())) - {rid} for rid in reported}
    explained_by: dict[str, str] = {}
    for symptom_id in reported:
        # a cause a line argues against is not established enough to absorb what else was seen: both stand
        causes = [c for c in reported if symptom_id in closure[c] and not reported[c].doubted]
        # the closest cause: no other cause of this symptom lies between it and the symptom
        closest = [c for c in causes if not any(o != c and o in closure[c] for o in causes)] or causes
        if closest:
            best = max(closest, key=lambda c: (reported[c].confidence, c))
            explained_by[symptom_id] = best
    # break cycles: a rule never folds under its own symptom
    for symptom_id, cause_id in list(explained_by.items()):
        if explained_by.get(cause_id) == symptom_id:
            weaker = symptom_id if reported[symptom_id].confidence <= reported[cause_id].confidence else cause_id
            explained_by.pop(weaker, None)
    unsupported = {s: c for s, c in explained_by.items()
                   if _is_generic(s, kb) and not _stands_apart(reported[c], reported[s])}
    for symptom_id, cause_id in unsupported.items():
        # the cause's only evidence is the generic symptom's own line: it is a possible cause, not an
        # established one, and the symptom leads
        del explained_by[symptom_id]
        weak, generic = reported[cause_id], reported[symptom_id]
        weak.confidence = min(weak.confidence, UNSUPPORTED_CAUSE * generic.confidence)
        weak.reasons.append(
            f"- its only evidence is the line that shows the generic {symptom_id}; nothing else (no other line, "
            f"no fact) points at this cause"
        )
    findings = {rid: to_finding(c, facts) for rid, c in reported.items()}
    for symptom_id, cause_id in explained_by.items():
        cause = reported[cause_id]
        symptom = findings[symptom_id]
        if _own_lines(reported[symptom_id]) - _own_lines(cause):
            # a symptom line the cause did not match itself is independent support; the same line is not
            cause.confidence = combine([cause.confidence, SYMPTOM_SUPPORT * symptom.confidence])
            findings[cause_id].confidence = round(min(cause.confidence, MAX_CONFIDENCE), 3)
        findings[cause_id].reasons.append(f"+ its symptom {symptom_id} was seen")
    for symptom_id, cause_id in sorted(explained_by.items(), key=lambda kv: findings[kv[0]].first_position):
        findings[cause_id].symptoms.append(findings[symptom_id])
    top = [f for rid, f in findings.items() if rid not in explained_by]
    top.sort(key=lambda f: (-f.confidence, f.first_position, f.rule_id))
    for i, finding in enumerate(top, 1):
        finding.rank = i
    return top


def _is_generic(rule_id: str, kb: KnowledgeBase) -> bool:
    rule = kb.rules.get(rule_id)
    return bool(rule and getattr(rule, "generic", False))


def _own_lines(candidate: Candidate) -> set[tuple[str, int]]:
    return {(e.source, e.line) for e in candidate.evidence if e.kind != "facts"}


def _stands_apart(cause: Candidate, symptom: Candidate) -> bool:
    """Has the cause evidence of its own beyond the symptom's lines (another line, a fact), or is the
    shared line itself specific to the cause (a weight for lines only this cause prints)?"""
    if cause.confidence >= SPECIFIC_LINE * cause.scale or _own_lines(cause) - _own_lines(symptom):
        return True
    if cause.confidence >= OUTWEIGHS * symptom.confidence:
        # the generic rule took the line only with a catch-all ("NCCL WARN ..."), the cause with the words that
        # name it ("NCCL WARN Cuda failure 'operation failed due to a previous error during capture'")
        return True
    return any(r.startswith("+ ") for r in cause.reasons) or any(e.kind == "facts" for e in cause.evidence)


def _explained(rule_id: str, kb: KnowledgeBase, seen: set[str]) -> list[str]:
    """Every rule id `rule_id` explains, directly or through its symptoms (cycle-safe)."""
    out: list[str] = []
    rule = kb.rules.get(rule_id)
    for sid in rule.explains if rule else []:
        if sid not in seen:
            seen.add(sid)
            out.append(sid)
            out.extend(_explained(sid, kb, seen))
    return out


def verdicts_below(candidates: list[Candidate]) -> list[RuleVerdict]:
    """The candidates too weak to report. One whose lines alone were strong and that a contradicting fact took
    below the line is worded as contradicted, with its lines' confidence, so that it is shown as set aside
    (gpu-operator#206: "Unable to load the kernel module 'nvidia.ko'" beside an nvidia-smi taken after the fix
    went from 0.80 to 0.24 and nothing said so)."""
    out = []
    for c in candidates:
        if c.confidence >= REPORT_AT:
            continue
        signals = sorted({e.signal for e in c.evidence})
        if c.contradicted and c.lines_alone >= SET_ASIDE_AT:
            out.append(RuleVerdict(c.rule.id, round(c.lines_alone, 3),
                                   f"contradicted by a fact: {'; '.join(c.contradicted)} - it took the confidence "
                                   f"to {c.confidence:.2f}, below {REPORT_AT}", signals))
        else:
            out.append(RuleVerdict(c.rule.id, round(c.confidence, 3), f"confidence {c.confidence:.2f} below {REPORT_AT}",
                                   signals))
    return out


def assess_all(hits: dict[str, list[Hit]], facts: Facts, kb: KnowledgeBase) -> tuple[list[Candidate], list[RuleVerdict]]:
    candidates: list[Candidate] = []
    rejected: list[RuleVerdict] = []
    for rule in kb.rules.values():
        outcome: Any = assess(rule, hits.get(rule.id, []), facts, kb)
        if isinstance(outcome, Candidate):
            candidates.append(outcome)
        elif isinstance(outcome, RuleVerdict):
            rejected.append(outcome)
    rejected.extend(verdicts_below(candidates))
    return candidates, rejected


def set_aside(rejected: list[RuleVerdict], findings: list[Finding]) -> list[RuleVerdict]:
    """Rules whose line evidence alone was strong but that a fact ruled out: the user should see
    that, and why, without --explain (a wrong fact must not silently hide the right cause)."""
    reported = {f.rule_id for f in findings}
    return sorted(
        (v for v in rejected if v.confidence >= SET_ASIDE_AT and v.rule_id not in reported
         and v.reason.startswith(("contradicted by a fact", "required fact does not hold"))),
        key=lambda v: -v.confidence,
    )
