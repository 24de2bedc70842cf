"""Match every signal of the KB against the lines as they stream past.

One combined pattern finds the few lines any signal may match; only those run each signal's
own regex (with a time limit). Fuzzy signals run only on lines that look like errors, and each
distinct such line is scored once.
"""

from __future__ import annotations

import functools
import math
import sys
from collections import defaultdict
from typing import Any

import regex

from diagnose import lazy_re
from diagnose.artifacts import host, pylog
from diagnose.artifacts.prefilter import LineFilter
from diagnose.kb.compiled import CompiledSignal, KnowledgeBase, cache_dir
from diagnose.model import Evidence
from diagnose.record import record

REGEX_TIMEOUT = 0.25  # seconds for one search of one line; lint keeps regexes far below it
FRAME_PACKAGE = lazy_re.compile(r"[/\\](?:site|dist)-packages[/\\]([A-Za-z_][A-Za-z0-9_]*)[/\\]", module=regex)
# "No module named 'transformers.models.qwen2'": the parent package imported, so it is installed where the program ran
SUBMODULE_MISSING = lazy_re.compile(r"No module named ['\"`]([A-Za-z_][A-Za-z0-9_]*)\.[A-Za-z_]", module=regex)
MAX_SEEN_PACKAGES = 200
SEPARATORS = ("/", "\\")
LISTING_START = frozenset(" -0123456789\t")
# A source line IPython / Jupyter prints around a traceback's frame (`    289     "Cannot re-initialize CUDA in
# forked subprocess..."`, `--> 293     raise AssertionError("Torch not compiled with CUDA enabled")`): code that
# the program holds, not a message it printed; torch's _lazy_init shows every CUDA error string it can raise.
SOURCE_LISTING = lazy_re.compile(
    r"""^\s{0,12}(?:-+>\s{0,4})?\d{1,5}\s{1,12}(?:raise\b|return\b|if\b|elif\b|assert\b|f?["']|\w{1,40}\s*[+]?=[^=])"""
)
FUZZY_MAX_LINE = 600
GRAM = 3  # the q-gram bound that keeps rapidfuzz unimported on lines no fuzzy signal can reach
BOUNDED_LINES = 64  # error-line shapes checked by that bound (in Python) before rapidfuzz is imported anyway
MAX_HITS_PER_SIGNAL = 20
MAX_ERROR_LINES = 200
BEFORE = 200  # characters before a regex hit kept with it (what a negation of it would be written in)
MAX_FUZZY_CACHE = 4096  # line templates whose fuzzy verdicts are kept (the cache starts over past it)


NO_HITS: tuple[set[str], bool] = (set(), False)
# Han, kana and Hangul are word characters to a Unicode \b, so `报错CUDA out of memory` or `xformers版本冲突` has no
# boundary where the English starts or ends; a space there (for matching only: evidence keeps the line as it was)
# gives the signals the boundaries they have in English text, and that Hyperscan's ASCII \b sees in the bytes
# (the edges are where a run of such characters meets [A-Za-z0-9_]: found per run, not tested at every position,
# which `regex` does at about 45 us a line - most non-ASCII lines of a Chinese-locale syslog have a `11月`)
CJK_RUN = lazy_re.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]+", module=regex)
ASCII_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def cjk_spaced(text: str) -> str:
    parts: list[str] = []
    at = 0
    for m in CJK_RUN.finditer(text):
        start, end = m.span()
        if start and text[start - 1] in ASCII_WORD:
            parts += (text[at:start], " ")
            at = start
        if end < len(text) and text[end] in ASCII_WORD:
            parts += (text[at:end], " ")
            at = end
    if not parts:
        return text
    parts.append(text[at:])
    return "".join(parts)


@record(eq=False)
class Hit:
    """One signal matching one line: the signal, the line as evidence, its named groups and its position."""

    signal: CompiledSignal
    evidence: Evidence
    groups: dict[str, str]
    position: tuple[int, int]
    before: str = ""  # up to BEFORE characters of the line before the match (a report's negation: engine/scope.py)


@record(eq=False)
class ErrorLine:
    """An error-looking line kept for the report (its evidence record, where it is, whether it is an exception)."""

    evidence: Evidence
    position: tuple[int, int]
    exception: bool


class Matcher:
    """Feed it lines with `feed`; read `hits` (rule id -> hits) and `error_lines` after."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.regex_signals: list[tuple[str, CompiledSignal]] = []
        self.fuzzy_signals: list[tuple[str, CompiledSignal]] = []
        self._gram_bounds: dict[int, GramBound] | None = None
        self._bounded = 0  # error-line shapes scored so far
        self.compiled: dict[str, Any] = {}  # each signal's own regex, compiled on its first candidate line
        self.by_pattern: dict[str, list[tuple[str, CompiledSignal]]] = defaultdict(list)
        self.order: dict[str, int] = {}  # a pattern's place among the KB's signals (its first signal's)
        for rule, sig in kb.signals():
            if sig.regex is not None:
                self.regex_signals.append((rule.id, sig))
                self.by_pattern[sig.regex].append((rule.id, sig))
                self.order.setdefault(sig.regex, len(self.order))
            else:
                self.fuzzy_signals.append((rule.id, sig))
        self.filter = LineFilter(
            [s.regex for _, s in self.regex_signals if s.regex], pylog.ERRORISH_PATTERN, cache_dir()
        )
        self.hits: dict[str, list[Hit]] = defaultdict(list)
        self.counts: dict[int, int] = defaultdict(int)  # hits per signal, bounded by MAX_HITS_PER_SIGNAL
        self.saturated: set[str] = set()  # patterns all of whose signals have MAX_HITS_PER_SIGNAL hits
        self.error_lines: list[ErrorLine] = []
        self.fuzzy_seen: dict[tuple[str, str], list[tuple[str, CompiledSignal]]] = {}  # by (kind, template)
        self.timeouts: list[str] = []
        self.source_index = 0
        self.source = ""
        self.seen_packages: dict[str, str] = {}  # import name -> where a traceback frame ran from it

    def start_source(self, name: str) -> None:
        self.source = name
        self.source_index += 1

    def feed(self, lineno: int, kind: str, text: str, hints: Any = None) -> bool:
        """One line. `hints`: the block prefilter's verdicts by line number (reader.LineHints). True when it
        recorded nothing and a line of its shape (digits aside, the same patterns hit) would record nothing
        either: every pattern it hit feeds only signals that have all their hits, and no error line or fuzzy
        verdict is kept for it."""
        if not text:
            return False
        position = (self.source_index, lineno)
        hint = NO_HITS if hints is not None else None
        if hints is not None and lineno in hints:
            hint = hints[lineno]
        subject = text if text.isascii() else cjk_spaced(text)  # what the signals are matched against
        candidates, errorish = hint if hint is not None else self.filter.classify(subject)
        if (candidates is None or candidates or errorish) and text[:1] in LISTING_START and SOURCE_LISTING.match(text):
            return True  # a notebook traceback's source context: code, not output (tested only where a signal could count)
        unchanged = True
        if candidates is None or candidates:
            unchanged = candidates is not None and candidates <= self.saturated
            self._match_regexes(lineno, kind, text, position, candidates, subject)
        if (("-packages/" in text or "-packages\\" in text) and (kind == "traceback" or text.lstrip().startswith("File "))
                or "No module named" in text):
            if self._frame_package(lineno, text):  # also IPython's `File ~\...\site-packages\torch\cuda\__init__.py:293, in f()`
                unchanged = False
        exception = kind == "traceback" and pylog.is_exception_line(text)
        if exception or errorish:
            unchanged = self._error_line(lineno, kind, text, position, exception) and unchanged
        return unchanged

    def frame_known(self, text: str) -> bool:
        """Would `feed` record nothing for this frame line, given that no signal pattern hit it? Its package (if it
        names one) is seen already. sniff counts such lines without handing them to `feed`."""
        return not self._frame_package(0, text, record=False)

    def _frame_package(self, lineno: int, text: str, record: bool = True) -> bool:
        """A frame `File ".../site-packages/torchvision/ops.py"` shows torchvision is installed where
        the failing process ran: direct evidence, whatever a package list from elsewhere says. True when it
        recorded a package not seen before."""
        if "pip-build-env-" in text or "builds-v0" in text or len(self.seen_packages) >= MAX_SEEN_PACKAGES:
            return False  # pip's / uv's isolated build environment: the package is there, not where the program runs
        at = text.find("-packages")  # a match starts 5 characters before it (`/site`, `\dist`): search from there
        if at >= 5 and text[at - 4:at] in ("site", "dist") and text[at - 5] in SEPARATORS \
                and text[at + 9:at + 10] in SEPARATORS:
            # the first `-packages` starts FRAME_PACKAGE's match: a package seen already is known without the search
            # (the name is the rest up to the next separator, when that is an identifier)
            rest = text[at + 10:]
            name = rest.split("/", 1)[0].split("\\", 1)[0]
            if len(name) < len(rest) and name in self.seen_packages:
                return False
        m = FRAME_PACKAGE.search(text, max(at - 5, 0)) if at >= 0 else None
        if m is None and "No module named" in text:
            m = SUBMODULE_MISSING.search(text)
        if m is None or m[1] in self.seen_packages:
            return False
        if not record:
            return True
        self.seen_packages[m[1]] = f"line {lineno} of {self.source}: {text.strip()[:160]}"
        return True

    def _search(self, pattern: Any, text: str, what: str) -> Any:
        try:
            return pattern.search(text, timeout=REGEX_TIMEOUT)
        except TimeoutError:
            self.timeouts.append(f"{what} timed out on {self.source}")
            return None

    def _match_regexes(
        self, lineno: int, kind: str, text: str, position: tuple[int, int], candidates: set[str] | None, subject: str
    ) -> None:
        # the prefilter names the patterns that may match; without it, every signal is tried
        # candidates in the KB's order, as without the prefilter: the prefilter's set has no stable order (string
        # hashes differ per process), and the first of two signals matching one line is the one its evidence names
        if candidates is not None and candidates <= self.saturated:
            return  # every signal these patterns feed has all the hits it keeps (a burst of one line shape)
        signals = self.regex_signals if candidates is None else [
            pair for pattern in (sorted(candidates, key=lambda p: self.order.get(p, 1 << 30)) if len(candidates) > 1 else candidates)
            for pair in self.by_pattern.get(pattern, ())
        ]
        for rule_id, sig in signals:
            assert sig.regex is not None
            if sig.kinds is not None and kind not in sig.kinds:
                continue
            if self.counts[id(sig)] >= MAX_HITS_PER_SIGNAL:
                continue
            pattern = self.compiled.get(sig.regex)
            if pattern is None:
                pattern = self.compiled[sig.regex] = lazy_re.regex_compile(sig.regex)
            hits = self.hits[rule_id]
            m = self._search(pattern, subject, f"{rule_id}/{sig.id}")
            if m:
                evidence = Evidence(self.source, lineno, text.strip(), sig.id, kind, host.log_time(text))
                groups = {k: v for k, v in m.groupdict().items() if v}
                hits.append(Hit(sig, evidence, groups, position, subject[max(m.start() - BEFORE, 0):m.start()]))
                self.counts[id(sig)] += 1
                if self.counts[id(sig)] >= MAX_HITS_PER_SIGNAL and all(
                        self.counts[id(other)] >= MAX_HITS_PER_SIGNAL for _, other in self.by_pattern[sig.regex]):
                    self.saturated.add(sig.regex)

    def _error_line(
        self, lineno: int, kind: str, text: str, position: tuple[int, int], exception: bool
    ) -> bool:
        """Keep the line (while there is room) and its fuzzy hits; True when it kept nothing and could not."""
        unchanged = len(self.error_lines) >= MAX_ERROR_LINES
        if not unchanged:  # an evidence record only for a line that can be reported
            evidence = Evidence(self.source, lineno, text.strip(), "error-line", kind, host.log_time(text))
            self.error_lines.append(ErrorLine(evidence, position, exception))
        if not self.fuzzy_signals:
            return unchanged
        key = text.strip()[:FUZZY_MAX_LINE]
        template = (kind, pylog.template(key))  # lines that differ in numbers only: scored once
        verdict = self.fuzzy_seen.get(template)
        if verdict is None:
            if len(self.fuzzy_seen) >= MAX_FUZZY_CACHE:
                self.fuzzy_seen.clear()
            verdict = self.fuzzy_seen[template] = self._fuzzy(key, kind)
        for rule_id, sig in verdict:
            if self.counts[id(sig)] >= MAX_HITS_PER_SIGNAL:
                continue
            unchanged = False
            hits = self.hits[rule_id]
            if any(h.position == position for h in hits):
                continue  # this line is already evidence for the rule through a regex
            hits.append(Hit(sig, Evidence(self.source, lineno, key, sig.id, kind), {}, position))
            self.counts[id(sig)] += 1
        return unchanged

    def _fuzzy(self, line: str, kind: str) -> list[tuple[str, CompiledSignal]]:
        fuzz = sys.modules.get("rapidfuzz.fuzz")
        grams = None
        self._bounded += 1
        if fuzz is None and self._bounded > BOUNDED_LINES:  # a log with many error shapes: rapidfuzz pays for itself
            from rapidfuzz import fuzz
        if fuzz is None:  # until a line needs it, rapidfuzz (about 15 ms to import) is kept out by a bound
            if self._gram_bounds is None:
                self._gram_bounds = {id(sig): gram_bound(sig.fuzzy or "", sig.threshold) for _, sig in self.fuzzy_signals}
            grams = line_grams(line)
        found = []
        for rule_id, sig in self.fuzzy_signals:
            if sig.kinds is not None and kind not in sig.kinds:
                continue
            assert sig.fuzzy is not None
            if len(line) < len(sig.fuzzy) * 0.5:
                continue
            if grams is not None and self._gram_bounds is not None:
                if not may_reach(self._gram_bounds[id(sig)], line, grams):
                    continue  # too few shared 3-grams for partial_ratio to reach the threshold
                if fuzz is None:
                    from rapidfuzz import fuzz
            assert fuzz is not None
            score = fuzz.partial_ratio(sig.fuzzy, line, score_cutoff=sig.threshold)
            if score:
                found.append((rule_id, sig))
        return found


@functools.lru_cache(maxsize=4096)
def gram_least(m: int, threshold: float) -> int:
    """gram_bound's count for a string of m characters."""
    t = threshold / 100
    worst = 0
    for length in range(1, m + 1):
        lcs = math.ceil(t * (m + length) / 2 - 1e-9)
        if lcs > length:
            continue  # a window this short cannot reach the threshold
        worst = max(worst, GRAM * (m - lcs) + (GRAM - 1) * (length - lcs))
    return max(0, m - GRAM + 1 - worst)


GramBound = tuple[list[str], set[str], int, int, float]  # a message's 3-grams (list, set), least, length, threshold


def gram_bound(needle: str, threshold: float) -> GramBound:
    """What `may_reach` needs of a fuzzy message: its 3-grams by position (and as a set), the fewest of them a
    line at least as long must contain for `rapidfuzz.fuzz.partial_ratio(needle, line) >= threshold`, its
    length and the threshold.

    partial_ratio is the best normalized Indel similarity 2*LCS / (m + l) of the needle (m characters) and a
    window of the line (l <= m characters, shorter ones at the line's ends). Reaching `threshold` takes
    LCS >= threshold/100 * (m + l) / 2, so at most m - LCS deletions from the needle and l - LCS insertions;
    a deletion breaks at most GRAM of the needle's 3-grams and an insertion at most GRAM - 1, and every 3-gram
    left whole occurs in the window, hence in the line. The fewest left whole over every window length is
    the bound (0: no line can be turned away)."""
    grams = [needle[i:i + GRAM] for i in range(len(needle) - GRAM + 1)]
    return grams, set(grams), gram_least(len(needle), threshold), len(needle), threshold


def line_grams(line: str) -> set[str]:
    return {line[i:i + GRAM] for i in range(len(line) - GRAM + 1)}


def may_reach(bound: GramBound, line: str, grams: set[str]) -> bool:
    """False when partial_ratio of the message and `line` (whose 3-grams are `grams`) cannot reach the threshold."""
    needle_grams, known, least, length, threshold = bound
    if len(line) >= length:
        return sum(g in grams for g in needle_grams) >= least
    # partial_ratio aligns the shorter string, the line, inside the message: the same bound turned round
    return sum(line[i:i + GRAM] in known for i in range(len(line) - GRAM + 1)) >= gram_least(len(line), threshold)
