"""Signals that count only in a context: an entity the KB knows, or a traceback cut short.

- `known_in`: a line such as `KeyError: 'qwen3_next'` is weak in general (any dict lookup fails
  that way) and strong when the key is a model_type the model-type table knows: the hit is kept
  only when the named group is a key of the table.
- `scope: cut-traceback`: when a pasted log ends inside a traceback, before its exception line,
  the frames it does show still point somewhere (a DeepGEMM call in the FP8 path, a scheduler
  frame at KV-cache initialisation). Such frame signals count only there, and the finding says
  that the decisive line is missing, at a confidence that says so.
"""

from __future__ import annotations

from typing import Any

from diagnose.engine.match import Hit
from diagnose.kb.compiled import KnowledgeBase

CUT_CONFIDENCE = 0.55  # at most, for a cause named only from the frames of a cut traceback


def admit(hits: dict[str, list[Hit]], kb: KnowledgeBase, cut: dict[int, int]) -> dict[str, list[Hit]]:
    """The hits whose context holds; the others are dropped before any rule is assessed."""
    keys: dict[tuple[str, str], set[str]] = {}
    out: dict[str, list[Hit]] = {}
    for rule_id, rule_hits in hits.items():
        kept = [h for h in rule_hits if _holds(h, kb, cut, keys)]
        if kept:
            out[rule_id] = kept
    return out


def _holds(hit: Hit, kb: KnowledgeBase, cut: dict[int, int], keys: dict[tuple[str, str], set[str]]) -> bool:
    sig = hit.signal
    if sig.scope == "cut-traceback":
        source, line = hit.position
        if source not in cut or line < cut[source]:
            return False
    if sig.known_in:
        table, column = sig.known_in["table"], sig.known_in.get("column", "model_type")
        if (table, column) not in keys:
            rows = kb.compat.get(table, {}).get("rows", [])
            keys[(table, column)] = {str(r.get(column)) for r in rows if isinstance(r, dict) and r.get(column)}
        value = hit.groups.get(sig.known_in["group"])
        if not value or value not in keys[(table, column)]:
            return False
    return True


def note_cut_evidence(candidates: list[Any]) -> None:
    """A candidate whose only line evidence is frames of a cut traceback: capped, and it says why."""
    for c in candidates:
        signals = {s.id: s for s in c.rule.signals}
        lines = [e for e in c.evidence if e.kind != "facts"]
        if lines and all(getattr(signals.get(e.signal), "scope", None) == "cut-traceback" for e in lines):
            c.confidence = min(c.confidence, CUT_CONFIDENCE)
            c.reasons.append(
                "· the log ends inside a traceback, before its exception line: named from the frames it "
                "shows; paste the rest of the traceback to confirm"
            )
