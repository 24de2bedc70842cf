"""Signals that count only in a context: an entity the KB knows, or a traceback cut short.

- `known_in`: a line such as `KeyError: 'qwen3_next'` is weak in general (any dict lookup fails
  that way) and strong when the key is a model_type the model-type table knows: the hit is kept
  only when the named group is a key of the table.
- prose: a signal matches an error message quoted inside a sentence too (an issue title, a chat
  message, other languages around it); a cause named only from prose is a little less sure and says so.
- negation: a report that lists what it did NOT see ("* No `GPU has fallen off the bus`", "we did not see
  `Xid 79`", "there is no `NCCL WARN`") names an error to rule it out; such a hit is dropped.
- `scope: cut-traceback`: when a pasted log ends inside a traceback, before its exception line,
  the frames it does show still point somewhere (a DeepGEMM call in the FP8 path, a scheduler
  frame at KV-cache initialisation). Such frame signals count only there, and the finding says
  that the decisive line is missing, at a confidence that says so.
"""

from __future__ import annotations

from typing import Any

import regex

from diagnose import lazy_re
from diagnose.engine.match import Hit
from diagnose.kb.compat import table_keys
from diagnose.kb.compiled import KnowledgeBase

CUT_CONFIDENCE = 0.55  # at most, for a cause named only from the frames of a cut traceback
PROSE_FACTOR = 0.85  # a cause named only from sentences that quote the error
CJK = lazy_re.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]", module=regex)
WORD = lazy_re.compile(r"[A-Za-z][A-Za-z']*", module=regex)
FUNCTION_WORDS = frozenset(
    ["i", "i'm", "i've", "we", "my", "our", "you", "your", "when", "after", "while", "the", "it", "it's", "is", "are", "was", "but", "and", "so", "get", "gets", "getting", "got", "trying", "tried", "try", "anyone", "how", "why", "what", "does", "doesn't", "don't", "can't", "cannot", "please", "this", "that", "with", "if", "any"]
)
LOG_START = lazy_re.compile(
    r"^\s*(?:\[\s*(?:\d|rank|TP|PP|DP|GPU|pid|\w+ pid=)|\(\w+[^)]{0,40}\bpid=|\d{2,4}[-/:]\d\d|[IWEF]\d{4} |"
    r"(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\b|time=|level=|File \"|Traceback|"
    # Python's warnings module: "/path/torchvision/io/image.py:13: UserWarning: Failed to load image ..."
    r"(?:[A-Za-z]:)?[\w./\\~+-]+\.py:\d+: (?:[A-Za-z_]\w*\.)*[A-Z]\w*Warning:|"
    r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning)\b|\w+\[\d+\]:|[A-Z][a-z]{2} [ \d]\d \d\d:)"
, module=regex)


# a negation right before the matched error, in the words of a report: always (a verb that says it was not seen) ...
NEGATED_ALWAYS = lazy_re.compile(
    # (not "could not find" / "did not find": a program's own words for something missing)
    r"(?i)(?:\b(?:never|not) (?:saw|seen|see|seeing|got|get|getting|had|observed?|observing|show(?:ing|s|n)?|hit|encounter(?:ed)?)"
    r"|\b(?:did|do|does|have|has|had|was|were|is|are)(?: not|n't) (?:see|seen|get|got|observe|observed|show|shown|hit|encounter|encountered)"
    r"|\bno (?:sign|trace|mention|occurrences?|instances?) of|\babsence of)"
    r"(?: any| an?| the)?\s*(?:[`'\"\u201c\u2018]\s*(?:[^\s`'\"\u201d\u2019]+\s+){0,4}|(?:[\w.:-]+\s+){0,2})$", module=regex)
# ... or a bare "no" / "without" / "nor" when the error is quoted after it, or the line is a list item
NEGATED_QUOTED = lazy_re.compile(
    r"(?i)(?:^|[\s*>(,;:-])(?:no|without(?: any)?|nor)\s*[`'\"\u201c\u2018]\s*(?:[^\s`'\"\u201d\u2019]+\s+){0,4}$", module=regex)
NEGATED_BARE = lazy_re.compile(r"(?i)(?:^|[\s*>(,;:-])(?:no|without(?: any)?|nor)\s+$", module=regex)
LIST_ITEM = lazy_re.compile(r"^\s*(?:[*\u2022-]|\d+[.)])\s+\S", module=regex)


def negated(before: str, line: str) -> bool:
    """Does `line` name the error that follows `before` (the line's text up to the match) to say it was not seen
    ("* No `GPU has fallen off the bus`")?"""
    if not before:
        return False
    if NEGATED_ALWAYS.search(before) or NEGATED_QUOTED.search(before):
        return True
    # unquoted, only in a list of what was checked ("* no AER errors"): "there is no NVIDIA driver" is a program's error
    return bool(NEGATED_BARE.search(before)) and bool(LIST_ITEM.match(line))


def admit(hits: dict[str, list[Hit]], kb: KnowledgeBase, cut: dict[int, int],
          last_frames: dict[int, int] | None = None) -> dict[str, list[Hit]]:
    """The hits whose context holds; the others are dropped before any rule is assessed. `cut`: where the frames
    of a traceback an input ends inside begin; `last_frames`: the line of its last frame."""
    keys: dict[tuple[str, str], set[str]] = {}
    out: dict[str, list[Hit]] = {}
    for rule_id, rule_hits in hits.items():
        kept = [h for h in rule_hits if _holds(h, kb, cut, keys, last_frames or {})]
        if kept:
            out[rule_id] = kept
    return out


def _holds(hit: Hit, kb: KnowledgeBase, cut: dict[int, int], keys: dict[tuple[str, str], set[str]],
           last_frames: dict[int, int]) -> bool:
    sig = hit.signal
    if negated(hit.before, hit.evidence.text):
        return False
    if sig.scope in ("cut-traceback", "cut-last-frame"):
        source, line = hit.position
        if source not in cut or line < cut[source] - 1:
            return False  # a frame of the cut traceback, or the line that announces it (logging.exception's message)
        if sig.scope == "cut-last-frame" and line < last_frames.get(source, line):
            return False  # the traceback goes on into deeper frames: the failure was further in
    if sig.known_in:
        table, column = sig.known_in["table"], sig.known_in.get("column", "model_type")
        if (table, column) not in keys:
            keys[(table, column)] = table_keys(kb.compat.get(table, {}), column)
        value = (hit.groups.get(sig.known_in["group"]) or "").lower()  # a class name's prefix (Qwen2Config) too
        if not value or value not in keys[(table, column)]:
            return False
    return True


def note_cut_evidence(candidates: list[Any]) -> None:
    """A candidate whose only line evidence is frames of a cut traceback: capped, and it says why."""
    for c in candidates:
        signals = {s.id: s for s in c.rule.signals}
        lines = [e for e in c.evidence if e.kind != "facts"]
        if lines and all(getattr(signals.get(e.signal), "scope", None) in ("cut-traceback", "cut-last-frame")
                         for e in lines):
            c.confidence = min(c.confidence, CUT_CONFIDENCE)
            c.basis = "cut"
            c.reasons.append(
                "· the log ends inside a traceback, before its exception line: named from the frames it "
                "shows; paste the rest of the traceback to confirm"
            )


def looks_like_prose(text: str) -> bool:
    """A sentence (an issue title, a chat message) rather than a line a program printed."""
    if len(CJK.findall(text)) >= 3:
        return True
    if LOG_START.match(text):
        return False
    words = [w.lower() for w in WORD.findall(text)]
    return len(words) >= 8 and sum(w in FUNCTION_WORDS for w in words) >= 2


def note_prose_evidence(candidates: list[Any]) -> None:
    """A candidate whose every evidence line is prose: a little less sure, and it says so."""
    for c in candidates:
        lines = [e for e in c.evidence if e.kind != "facts"]
        if lines and all(looks_like_prose(e.text) for e in lines):
            c.confidence *= PROSE_FACTOR
            c.basis = "prose"
            c.scale *= PROSE_FACTOR
            c.reasons.append("· the error is quoted in prose (a title or a sentence), not in a log line: "
                             "a log of the failure would confirm it")
