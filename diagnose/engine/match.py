"""Match every signal of the KB against the lines as they stream past.

One combined pattern finds the few lines any signal may match; only those run each signal's
own regex (with a time limit). Fuzzy signals run only on lines that look like errors, and each
distinct such line is scored once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import regex

from diagnose.artifacts import pylog
from diagnose.kb.compiled import CompiledSignal, KnowledgeBase
from diagnose.model import Evidence

REGEX_TIMEOUT = 0.25  # seconds for one search of one line; lint keeps regexes far below it
FUZZY_MAX_LINE = 600
MAX_HITS_PER_SIGNAL = 20
MAX_ERROR_LINES = 200
LEADING_FLAGS = regex.compile(r"^\(\?([aiLmsux]+)\)")


@dataclass
class Hit:
    signal: CompiledSignal
    evidence: Evidence
    groups: dict[str, str]
    position: tuple[int, int]


@dataclass
class ErrorLine:
    evidence: Evidence
    position: tuple[int, int]
    exception: bool


def scoped(pattern: str) -> str:
    """`(?i)foo` -> `(?i:foo)` so that patterns can be joined into one alternation."""
    m = LEADING_FLAGS.match(pattern)
    return f"(?{m[1]}:{pattern[m.end():]})" if m else f"(?:{pattern})"


class Matcher:
    """Feed it lines with `feed`; read `hits` (rule id -> hits) and `error_lines` after."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.regex_signals: list[tuple[str, CompiledSignal]] = []
        self.fuzzy_signals: list[tuple[str, CompiledSignal]] = []
        self.compiled: dict[str, Any] = {}  # each signal's own regex, compiled on its first candidate line
        for rule, sig in kb.signals():
            if sig.regex is not None:
                self.regex_signals.append((rule.id, sig))
            else:
                self.fuzzy_signals.append((rule.id, sig))
        joined = "|".join(scoped(s.regex) for _, s in self.regex_signals if s.regex)
        self.prefilter = regex.compile(joined) if joined else None
        self.hits: dict[str, list[Hit]] = defaultdict(list)
        self.error_lines: list[ErrorLine] = []
        self.fuzzy_seen: dict[str, list[tuple[str, CompiledSignal]]] = {}
        self.timeouts: list[str] = []
        self.source_index = 0
        self.source = ""

    def start_source(self, name: str) -> None:
        self.source = name
        self.source_index += 1

    def feed(self, lineno: int, kind: str, text: str) -> None:
        if not text:
            return
        position = (self.source_index, lineno)
        if self.prefilter is not None and self._search(self.prefilter, text, "prefilter"):
            self._match_regexes(lineno, kind, text, position)
        if self.fuzzy_signals or len(self.error_lines) < MAX_ERROR_LINES:
            exception = kind == "traceback" and pylog.is_exception_line(text)
            if exception or pylog.looks_like_error(text):
                self._error_line(lineno, kind, text, position, exception)

    def _search(self, pattern: Any, text: str, what: str) -> Any:
        try:
            return pattern.search(text, timeout=REGEX_TIMEOUT)
        except TimeoutError:
            self.timeouts.append(f"{what} timed out on {self.source}")
            return None

    def _match_regexes(self, lineno: int, kind: str, text: str, position: tuple[int, int]) -> None:
        for rule_id, sig in self.regex_signals:
            if sig.kinds is not None and kind not in sig.kinds:
                continue
            assert sig.regex is not None
            pattern = self.compiled.get(sig.regex)
            if pattern is None:
                pattern = self.compiled[sig.regex] = regex.compile(sig.regex)
            hits = self.hits[rule_id]
            if sum(1 for h in hits if h.signal is sig) >= MAX_HITS_PER_SIGNAL:
                continue
            m = self._search(pattern, text, f"{rule_id}/{sig.id}")
            if m:
                evidence = Evidence(self.source, lineno, text.strip(), sig.id, kind)
                groups = {k: v for k, v in m.groupdict().items() if v}
                hits.append(Hit(sig, evidence, groups, position))

    def _error_line(
        self, lineno: int, kind: str, text: str, position: tuple[int, int], exception: bool
    ) -> None:
        evidence = Evidence(self.source, lineno, text.strip(), "error-line", kind)
        if len(self.error_lines) < MAX_ERROR_LINES:
            self.error_lines.append(ErrorLine(evidence, position, exception))
        if not self.fuzzy_signals:
            return
        key = text.strip()[:FUZZY_MAX_LINE]
        if key not in self.fuzzy_seen:
            self.fuzzy_seen[key] = self._fuzzy(key, kind)
        for rule_id, sig in self.fuzzy_seen[key]:
            hits = self.hits[rule_id]
            if any(h.position == position for h in hits):
                continue  # this line is already evidence for the rule through a regex
            if sum(1 for h in hits if h.signal is sig) < MAX_HITS_PER_SIGNAL:
                hits.append(Hit(sig, Evidence(self.source, lineno, key, sig.id, kind), {}, position))

    def _fuzzy(self, line: str, kind: str) -> list[tuple[str, CompiledSignal]]:
        from rapidfuzz import fuzz

        found = []
        for rule_id, sig in self.fuzzy_signals:
            if sig.kinds is not None and kind not in sig.kinds:
                continue
            assert sig.fuzzy is not None
            if len(line) < len(sig.fuzzy) * 0.5:
                continue
            score = fuzz.partial_ratio(sig.fuzzy, line, score_cutoff=sig.threshold)
            if score:
                found.append((rule_id, sig))
        return found
