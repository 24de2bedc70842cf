"""Find the few lines worth reading in a big input with one multi-pattern pass over blocks.

Every signal regex of the KB, plus the patterns that start a structured artifact (a traceback,
an nvidia-smi table, a pip freeze line, a kernel-log line ...), are compiled into one Hyperscan
database (cached on disk beside the compiled KB). Hyperscan scans megabyte blocks at hundreds
of MB/s; only the lines it reports, and the lines that follow a structure start, are decoded and
given to the per-line logic. Hyperscan's prefilter mode may report a line that the exact regex
then rejects, never the reverse, so the findings are the same as reading every line.

Without Hyperscan (not installable on this platform) the same patterns run through `regex`
over each block: the same lines come out, about a hundred times slower.
"""

from __future__ import annotations

import contextlib
import operator
import os
from bisect import bisect_right
from itertools import accumulate, compress
from pathlib import Path
from typing import Any

import regex

from diagnose import lazy_re
from diagnose.artifacts import host, pylog
from diagnose.kb import cache
from diagnose.record import record

ANSI_PATTERN = r"\x1b"
TRACEBACK_START = r"Traceback \(most recent call last\)"
FRAME_START = r'File "[^"\n]+", line \d+'  # a traceback's frame line
JSON_DOC_START = r"^\{\s*$"  # sniff's json-doc block: a line that is only "{"
# (pattern, lines of context after a hit): what the per-line logic needs to see besides the
# signal lines. Context covers the body of a traceback or a table that follows its first line.
# pip's summary line and uv's " + name==version" / " - name==version" rows
INSTALL_ROW = r"^Successfully installed |^\s*[+-] [A-Za-z0-9._-]+=="
STRUCTURE: list[tuple[str, int]] = [
    (TRACEBACK_START, 2000),  # ends earlier, where the traceback does (TracebackEnd)
    # a frame, and the lines after it in which pylog decides whether an excerpt ends inside frames
    (FRAME_START, 2 * pylog.TAIL_AFTER_FRAME + 2),
    # IPython's frame (`File ~/.conda/envs/x/lib/python3.9/site-packages/torch/nn/modules/module.py:1532, in f()`): the
    # package it ran from is evidence (engine/match.py, seen_packages) as a quoted frame's is
    (r"^\s*File [^\"\n]*-packages[/\\]", 0),
    (r"NVIDIA-SMI \S+\s+Driver Version", 300),
    (r"NVSMI LOG", 6000),
    (r"<nvidia_smi_log", 20000),
    # `nvidia-smi topo -m` / `-p2p r` header, underlined on a terminal (`\t\x1b[4mGPU0\tGPU1`) as a capture keeps it
    (r"^\s*(?:\x1b\[[\d;]*m)?GPU0\s+(?:GPU1|CPU Affinity|NIC0)", 80),
    (r"^GPU \d+: .{0,200}\(UUID: GPU-", 40),
    (r"^Package\s+Version", 3000),
    (r"^\[\{\"name\"", 1),
    (JSON_DOC_START, 20000),  # a JSON document (a bundle's nvml.json, a config.json): to its closing brace
    # a `pip list` row without its header (pip.HEADERLESS_ROW / NEXT_ROW, possessive there): name and version alone
    (r"^[A-Za-z0-9][A-Za-z0-9._-]* +\d+\.\d[\w.+!-]*\s*$", 0),
    (r"^(?:Collecting environment information|PyTorch version\s*:|Python: \d)", 300),
    (r"^[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]\n]*\])?\s*===?\s*\S+$", 0),
    (r"^[A-Za-z0-9][A-Za-z0-9._-]* @ \S+$", 0),
    (r"^-e \S+", 0),
    (r"^\[(?:pip3?|conda)\]", 0),
    (INSTALL_ROW, 0),
    # every line host.line_facts reads a fact from (an Xid, the driver, the GPU a report names, the model path ...),
    # by line_facts' own patterns: a large log gives the facts a small one does
    *((p, 0) for p in host.fact_line_patterns()),
    (pylog.ERRORISH_PATTERN, 0),
    (ANSI_PATTERN, 0),  # a coloured line: the signals see it with its ANSI codes stripped, so read it whole
    (r"^\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning|Fault)\b", 0),
]
FORM = 9  # how _hs_form writes a pattern for Hyperscan: part of the database cache's key
MAX_HINTS = 4096  # distinct pattern sets whose line hints are kept (the cache starts over past it)
REPEATS = 4  # a chunk is scanned with its repeats left out when at least 1 line in REPEATS repeats the one before
_DIGITS = frozenset(range(48, 58))
lazy_re.remember(pylog.ERRORISH_PATTERN, module=regex)  # LineFilter's fallback for a line Hyperscan is not asked about
LEADING_FLAGS = lazy_re.compile(r"^\(\?([aiLmsux]+)\)", module=regex)


@record(eq=False)
class Pattern:
    """A block-start pattern: its regex text, how many context lines it pulls, and what those lines must start with."""

    text: str
    context: int
    more: tuple[bytes, ...] | None = None  # context lines must start with one of these (after indent)


# a structure whose context ends early, where its own parser would stop: an nvidia-smi table
# goes on while its lines start with '|' or '+' (or are blank)
CONTEXT_PREFIXES: dict[str, tuple[bytes, ...]] = {
    r"NVIDIA-SMI \S+\s+Driver Version": (b"|", b"+"),
    JSON_DOC_START: (b'"', b"}", b"]", b"{", b"[", b"t", b"f", b"n", b"-", *(str(d).encode() for d in range(10))),
}
TAIL = 2  # lines after a traceback's exception line that are still read (a message's continuation)


class TracebackEnd:
    """Where a Python traceback's context ends: past its frames (indented under the prefix its
    `Traceback` line has, or any line naming a `File "..."`), its exception line and TAIL more
    lines that are not frames. Ambiguous lines (coloured ones) keep it going; the context's line
    count still bounds it. pylog's tracker reads no further than this."""

    __slots__ = ("prefix", "tail")

    def __init__(self, first: bytes) -> None:
        at = first.find(b"Traceback")
        self.prefix = first[:at] if at > 0 else b""
        self.tail = -1  # lines since the exception line; -1 while frames go on

    def ends(self, raw: bytes) -> bool:
        """True when `raw` is past the traceback (it is not read as part of it)."""
        body = raw[len(self.prefix):] if self.prefix and raw.startswith(self.prefix) else raw
        if not body.strip() or body[:1] in b" \t^~" or b'File "' in raw or b"\x1b" in raw or b"Traceback" in raw:
            if self.tail >= 0 and b'File "' in raw:
                self.tail = -1  # frames again: another rank's traceback interleaved with this one
            return False
        self.tail += 1
        return self.tail > TAIL


class Prefilter:
    """`hits(block)` -> sorted (line_start, line_end, context_after) spans of lines to read."""

    def __init__(self, signal_patterns: list[str], cache_dir: Path | None = None) -> None:
        self.patterns = [Pattern(p, 0) for p in sorted(set(signal_patterns))]
        self.signal_count = len(self.patterns)
        self.patterns += [Pattern(p, n, CONTEXT_PREFIXES.get(p)) for p, n in STRUCTURE]
        structure = [p for p, _ in STRUCTURE]
        self.error_id = self.signal_count + structure.index(pylog.ERRORISH_PATTERN)
        self.ansi_id = self.signal_count + structure.index(ANSI_PATTERN)
        self.traceback_id = self.signal_count + structure.index(TRACEBACK_START)
        self.frame_only = frozenset({self.signal_count + structure.index(FRAME_START)})  # a frame line that hit nothing else
        self._hints: dict[frozenset[int], tuple[set[str], bool]] = {}  # line_hint by the set of patterns hit
        self._contexts = [p.context for p in self.patterns]  # context lines after a hit, by pattern id
        self._hs: Any = None
        self._cache_dir = cache_dir
        self._digit_ids: frozenset[int] | None = None
        self._digits: Prefilter | None = None  # the digit-sensitive patterns alone, built when a run needs them
        self._slow: list[tuple[int, Any]] = []
        self._re2: Any = None  # (RE2 set, [(pattern id, RE2 pattern)]) where Hyperscan is absent
        if hyperscan_module() is None:
            from diagnose.artifacts import prefilter_re2  # RE2 multi-pattern sets, or nothing

            built = prefilter_re2.build([p.text for p in self.patterns])
            if built is None:
                self._build_regex(range(len(self.patterns)))
                return
            self._re2, leftover = built
            self._re2_hits = prefilter_re2.hits  # imported once, not per block
            self._build_regex(leftover)
            return
        self._build_hyperscan(cache_dir)

    # --- building ---------------------------------------------------------------------
    def _build_regex(self, indexes: Any) -> None:
        for i in indexes:
            self._slow.append((i, lazy_re.regex_compile(self.patterns[i].text, regex.MULTILINE)))

    def _build_hyperscan(self, cache_dir: Path | None) -> None:
        import hyperscan

        base = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_ALLOWEMPTY
        self._hs, slow = compile_database([(p.text, i) for i, p in enumerate(self.patterns)], base, cache_dir, "hs")
        self._build_regex(slow)

    @staticmethod
    def _hs_form(pattern: str, flags: int, hyperscan: Any) -> tuple[bytes, int]:
        """The pattern as Hyperscan takes it: leading flags as Hyperscan flags, `^` as a newline
        (every scan starts with one, so the first line has it too) and no `$`. Dropping an
        assertion only widens what matches, so the prefilter still reports every line the exact
        regex matches; a literal newline keeps what `^` selects (a line that *starts* with a
        package name, not every line with `==` in it) without Hyperscan's multi-line anchors,
        several of which in one database were seen to hide each other's matches (Hyperscan 5.4
        via hyperscan 0.9.1)."""
        m = LEADING_FLAGS.match(pattern)
        if m:
            pattern = pattern[m.end():]
            if "i" in m[1]:
                flags |= hyperscan.HS_FLAG_CASELESS
            if "s" in m[1]:
                flags |= hyperscan.HS_FLAG_DOTALL
        pattern = trim_tail(strip_anchors(pattern, start=r"\n"))
        if any(ord(c) > 127 for c in pattern):
            flags |= hyperscan.HS_FLAG_UTF8  # its `.` and classes already match whole characters
        else:
            pattern = widen_for_bytes(pattern)
        return pattern.encode("utf-8"), flags

    # --- scanning ---------------------------------------------------------------------
    def context_rule(self, pid: int, first: bytes) -> tuple[bytes, ...] | TracebackEnd | None:
        """What ends the context of a hit of `pid` on the line `first` before its line count does."""
        if pid == self.traceback_id:
            return TracebackEnd(first)
        return self.patterns[pid].more

    def hits(self, block: bytes) -> list[tuple[int, int, int]]:
        """(match end offset, context lines after, pattern id) for every hit in `block`."""
        found: list[tuple[int, int, int]] = []
        patterns = self.patterns
        if self._hs is not None:
            contexts, add = self._contexts, found.append

            def on_match(pid: int, start: int, end: int, flags: int, context: Any) -> None:
                add((end - 1, contexts[pid], pid))  # less the newline put in front

            self._hs.scan(b"\n" + block, match_event_handler=on_match)
        if self._re2 is not None:
            for end, pid in self._re2_hits(self._re2, block):
                found.append((end, patterns[pid].context, pid))
        if self._slow:
            text = None
            for i, compiled in self._slow:
                gate = SLOW_GATES.get(patterns[i].text)
                if gate and not any(g in block for g in gate):
                    continue  # a literal every match holds is not in the block: nothing to scan
                if text is None:
                    text = block.decode("latin-1")  # one character per byte, so match offsets are byte offsets
                for m in compiled.finditer(text, timeout=5.0):
                    found.append((m.end(), patterns[i].context, i))
        return found

    # --- a burst of lines that differ in numbers only, scanned once ------------------------
    @property
    def digit_ids(self) -> frozenset[int]:
        """The patterns whose verdict on a line can change with the line's digits (a literal digit, a class
        holding some digits but not all, a backreference): every other pattern matches a line exactly
        where it matches the line with each digit made 0, so one line of a run of such lines speaks for
        all of them."""
        if self._digit_ids is None:
            texts = "\n".join(p.text for p in self.patterns)
            path = self._cache_dir / f"digits-{cache.key(texts.encode())}.txt" if self._cache_dir else None
            with contextlib.suppress(OSError, ValueError):  # no cached list, or a damaged one: worked out below
                self._digit_ids = frozenset(int(x) for x in path.read_text().split()) if path else None
            if self._digit_ids is None:  # about 0.1 s for the KB's patterns: kept beside its databases
                self._digit_ids = frozenset(i for i, p in enumerate(self.patterns) if digit_sensitive(p.text))
                if path:
                    try:
                        path.parent.mkdir(parents=True, exist_ok=True)
                        path.write_text(" ".join(map(str, sorted(self._digit_ids))))
                    except OSError:
                        pass  # a read-only cache: work it out again next time
        return self._digit_ids

    def _digit_hits(self, block: bytes) -> list[tuple[int, int, int]]:
        """hits(block) of the digit-sensitive patterns only (their own database or subset)."""
        if self._digits is None:
            ids = sorted(self.digit_ids)
            self._digits = Prefilter.__new__(Prefilter)
            d = self._digits
            d.patterns, d._contexts, d._hs, d._slow, d._re2 = self.patterns, self._contexts, None, [], None
            if self._hs is not None:
                import hyperscan

                base = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_ALLOWEMPTY
                d._hs, slow = compile_database([(self.patterns[i].text, i) for i in ids], base,
                                               self._cache_dir, "hs-digits")
                compiled = dict(self._slow)  # the same patterns Hyperscan refused in the full database
                d._slow = [(i, compiled.get(i) or lazy_re.regex_compile(self.patterns[i].text, regex.MULTILINE)) for i in slow]
            else:
                if self._re2 is not None:
                    rset, programs = self._re2
                    kept = [(pid, prog) for pid, prog in programs if pid in self.digit_ids]
                    if kept:
                        from diagnose.artifacts import prefilter_re2

                        built = prefilter_re2.build([self.patterns[pid].text for pid, _ in kept])
                        if built is not None:  # the subset's own set; its indexes mapped back to pattern ids
                            (sub_set, sub_programs), refused = built
                            d._re2 = (sub_set, [(kept[i][0], prog) for i, prog in sub_programs])
                            d._re2_hits = self._re2_hits
                            d._slow += [(kept[i][0], lazy_re.regex_compile(self.patterns[kept[i][0]].text, regex.MULTILINE))
                                        for i in refused]
                d._slow += [(i, c) for i, c in self._slow if i in self.digit_ids]
        return self._digits.hits(block)

    def repeat_hits(self, chunk: bytes) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]], list[int]] | None:
        """hits(chunk) with each run of lines that repeat the line before them but for digits (a device-side
        assert burst, a retry loop) scanned through its first line: (hits, runs, line starts). `runs` are
        (first, last) line indexes: the lines after `first` were not scanned by the patterns that ignore
        digits and hit wherever `first` is hit; the digit-sensitive patterns were run over every line. A run
        whose first line starts a structure (a pattern with context) is scanned in full. None when fewer
        than 1 line in REPEATS repeats: the plain scan is cheaper then."""
        masked = chunk.translate(pylog.BYTES_TEMPLATE).split(b"\n")
        count = len(masked) - (1 if chunk.endswith(b"\n") else 0)  # lines (the last may lack its newline)
        if count < 3:
            return None
        differs = list(map(operator.ne, masked[1:count], masked[: count - 1]))  # [i]: line i+1 is not line i
        if (count - 1 - sum(differs)) * REPEATS < count:
            return None
        starts = [0, *accumulate(map((1).__add__, map(len, masked[:count])))]  # line i starts at starts[i]
        kept = [0, *compress(range(1, count), differs)]
        lines = chunk.split(b"\n")
        kept_lines = [lines[i] for i in kept]
        reduced = b"\n".join(kept_lines) + (b"\n" if chunk.endswith(b"\n") else b"")
        reduced_starts = [0, *accumulate(map((1).__add__, map(len, kept_lines)))]
        hits: list[tuple[int, int, int]] = []
        context_lines = set()
        contexts = self._contexts
        for end, context, pid in self.hits(reduced):
            k = bisect_right(reduced_starts, max(end - 1, 0)) - 1
            line = kept[k]
            hits.append((starts[line] + end - reduced_starts[k], context, pid))
            if context:
                context_lines.add(line)
        runs: list[tuple[int, int]] = []
        for first, after in zip(kept, kept[1:] + [count]):
            if after - first < 2:
                continue
            if first in context_lines:  # each repeat starts a structure of its own: every line scanned
                shift = starts[first + 1]
                hits += [(shift + end, contexts[pid], pid) for end, _, pid in self.hits(chunk[shift:starts[after]])]
                continue
            runs.append((first, after - 1))
        if self.digit_ids:
            hits += self._digit_hits(chunk)
        return hits, runs, starts

    def line_hint(self, pids: set[int]) -> tuple[set[str], bool] | None:
        """What the hits on one line say, in LineFilter.classify's terms; None for a coloured
        line, whose text the signals see only after its ANSI codes are stripped."""
        if self.ansi_id in pids:
            return None
        key = frozenset(pids)
        hint = self._hints.get(key)
        if hint is None:  # lines of one shape hit the same patterns: one hint (read-only) serves them all
            if len(self._hints) >= MAX_HINTS:
                self._hints.clear()
            hint = self._hints[key] = ({self.patterns[i].text for i in pids if i < self.signal_count}, self.error_id in pids)
        return hint


class LineFilter:
    """Per line: does any signal regex possibly match, and does the line look like an error?

    One Hyperscan database (cached) answers both for a line in about a microsecond; without
    Hyperscan, one `regex` alternation of every signal does, about a hundred times slower.
    """

    ERROR_ID = 1 << 20

    def __init__(self, signal_patterns: list[str], error_pattern: str, cache_dir: Path | None = None) -> None:
        self.signal_patterns = sorted(set(signal_patterns))
        self.error_pattern = error_pattern
        self._hs: Any = None
        self._fallback_signal: Any = None
        self._fallback_error = lazy_re.regex_compile(error_pattern)
        self._leftover: list[Any] = []  # signals Hyperscan cannot take, checked one by one
        if hyperscan_module() is None:
            joined = alternation(self.signal_patterns)
            self._fallback_signal = lazy_re.regex_compile(joined) if joined else None
            return
        self._build(cache_dir)

    def _build(self, cache_dir: Path | None) -> None:
        import hyperscan

        base = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_ALLOWEMPTY
        entries = [(p, i) for i, p in enumerate(self.signal_patterns)] + [(self.error_pattern, self.ERROR_ID)]
        self._hs, leftover = compile_database(entries, base, cache_dir, "hs-lines")
        self._leftover = [lazy_re.regex_compile(self.signal_patterns[i]) for i in leftover if i != self.ERROR_ID]

    def classify(self, text: str) -> tuple[set[str] | None, bool]:
        """(the signal patterns that may match: a set, or None for "any may"; looks like an error)."""
        if self._hs is None:
            try:
                signal = bool(self._fallback_signal and self._fallback_signal.search(text, timeout=0.25))
            except TimeoutError:
                signal = True  # let each signal's own regex, with its own time limit, decide
            return (None if signal else set()), bool(self._fallback_error.search(text))
        found: set[str] = set()
        error = [False]
        patterns = self.signal_patterns

        def on_match(pid: int, start: int, end: int, flags: int, context: Any) -> None:
            if pid == self.ERROR_ID:
                error[0] = True
            else:
                found.add(patterns[pid])

        self._hs.scan(b"\n" + text.encode("utf-8", errors="replace"), match_event_handler=on_match)
        for pattern in self._leftover:
            if pattern.search(text, timeout=0.25):
                found.add(pattern.pattern)
        return found, error[0]


def strip_anchors(pattern: str, start: str = "") -> str:
    """`^foo\\s*$` -> `foo\\s*`: remove `$`, and replace `^` by `start`, outside character classes
    and escapes.

    >>> strip_anchors(r"^\\s*[+-] [^=]+==(?:$|\\s)")
    '\\\\s*[+-] [^=]+==(?:|\\\\s)'
    >>> strip_anchors(r"(?:^|\\])Killed\\s*$", start=r"\\n")
    '(?:\\\\n|\\\\])Killed\\\\s*'
    >>> strip_anchors(r"^\\s*GPU0", start=r"\\n")
    '\\\\n[ \\\\t]*GPU0'
    """
    out = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "]" and not (pattern[i - 1] == "[" or pattern[i - 2 : i] == "[^"):
                in_class = False
        elif c == "[":
            in_class = True
        elif c in "^$":
            out.append(start if c == "^" else "")
            i += 1
            # `^\s*` as `\n\s*` in two patterns of one database hid each other's matches (Hyperscan 5.4 via
            # hyperscan 0.9.1: of uv's five " + pip==26.3" lines beside `(?:RuntimeError: |^\s*)Numpy is not
            # available`, one was reported; `[ \t\r]` hides them too, `[ \t]` does not). A line's indentation is
            # spaces and tabs: `\s` right after `^` is written as those (`\W` as the other non-word characters)
            if c == "^" and start and pattern[i:i + 2] in ("\\s", "\\W"):
                out.append("[ \\t]" if pattern[i + 1] == "s" else "[^\\w\\n]")
                i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


TAIL_ATOM = lazy_re.compile(r"(?:\\[dDwWsS]|\.|\[(?:\\.|[^\]\\])+\])(?:[*+?]|\{\d*(?:,\d*)?\})\Z", module=regex)


# one non-ASCII character as UTF-8 bytes: what a lone `.`, `\S` or `\W` stands for in `regex`, where Hyperscan, scanning
# bytes, would see two to four characters
MULTIBYTE = r"[\xc2-\xf4][\x80-\xbf]{1,3}"
WIDENED_ESCAPES = frozenset("SW")


def widen_for_bytes(pattern: str) -> str:
    r"""Let a lone single-character construct that `regex` would match against one non-ASCII character (the curly
    apostrophe of "doesn’t", "couldn‘t", "model’s") match its UTF-8 bytes too: an unquantified `.`, `\S` or `\W`
    becomes `(?:<multibyte>|<the construct>)`. A quantified one (`.{0,80}`, `\S+`) already runs over the bytes of
    such a character, so it is left alone (widening those made Hyperscan's compile run for minutes), as are
    lookarounds (its prefilter mode drops them). Only widens: the prefilter still reports every line `regex` matches.

    >>> widen_for_bytes(r"doesn.t")
    'doesn(?:[\\xc2-\\xf4][\\x80-\\xbf]{1,3}|.)t'
    >>> widen_for_bytes(r"a.{0,9}\.b\W?x\S+[^)]")
    'a.{0,9}\\.b\\W?x\\S+[^)]'
    >>> widen_for_bytes(r"(?<![-\w.])x\S(?=y.)")
    '(?<![-\\w.])x(?:[\\xc2-\\xf4][\\x80-\\xbf]{1,3}|\\S)(?=y.)'
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    groups: list[bool] = []  # per open group: is it a lookaround

    def lone(at: int) -> bool:  # no quantifier follows the atom that ends before `at`
        return not any(groups) and (at >= n or pattern[at] not in "*+?{")

    while i < n:
        c = pattern[i]
        if c == "\\":
            atom = pattern[i:i + 2]
            out.append(f"(?:{MULTIBYTE}|{atom})" if atom[1:] in WIDENED_ESCAPES and lone(i + 2) else atom)
            i += 2
            continue
        if c == "[":  # a class: copied whole (a `.` in it is a literal dot)
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            out.append(pattern[i:j + 1])
            i = j + 1
            continue
        if c == "(":
            groups.append(pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i))
        elif c == ")" and groups:
            groups.pop()
        elif c == "." and lone(i + 1):
            out.append(f"(?:{MULTIBYTE}|.)")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def trim_tail(pattern: str) -> str:
    """Drop a trailing repeated atom (`\\d+`, `\\S*`, `[^)]{0,80}`), keeping one of it where at
    least one is needed: the line still matches (a prefix of the match), and Hyperscan, which
    reports every end offset, reports one per line instead of one per character.

    >>> trim_tail(r'File "[^"\\n]+", line \\d+')
    'File "[^"\\\\n]+", line \\\\d'
    >>> trim_tail(r"Killed\\s*")
    'Killed'
    >>> trim_tail(r"(?:a|b\\d+)")
    '(?:a|b\\\\d+)'
    """
    for _ in range(4):
        m = TAIL_ATOM.search(pattern)
        if not m or m.start() == 0 or pattern[m.start() - 1] == "\\":
            return pattern
        atom = regex.sub(r"(?:[*+?]|\{\d*(?:,\d*)?\})\Z", "", m[0])
        quantifier = m[0][len(atom):]
        at_least_one = quantifier == "+" or (quantifier.startswith("{") and not quantifier.startswith(("{0", "{,")))
        if at_least_one:
            return pattern[: m.start()] + atom
        if pattern[: m.start()].endswith(("|", "(", ":")):  # the alternative would match the empty string
            return pattern
        pattern = pattern[: m.start()]
    return pattern


def derived_patterns(signal_patterns: list[str]) -> list[tuple[str, Any, int]]:
    """What the paths without Hyperscan compile from the signals, for the KB cache to keep compiled: LineFilter's
    alternation of every signal (about a second to compile, on every small log) and the block prefilter's
    MULTILINE forms of the signals and the structure patterns."""
    ordered = sorted(set(signal_patterns))
    multiline = int(regex.MULTILINE)
    return [("regex", alternation(ordered), 0), *(("regex", p, multiline) for p in ordered),
            *(("regex", p, multiline) for p, _ in STRUCTURE)]


def alternation(ordered: list[str]) -> str:
    """LineFilter's one pattern for "any signal may match" without Hyperscan (the KB cache stores it compiled)."""
    return "|".join(_scoped(p) for p in ordered)


def _scoped(pattern: str) -> str:
    m = LEADING_FLAGS.match(pattern)
    return f"(?{m[1]}:{pattern[m.end():]})" if m else f"(?:{pattern})"


# constructs Hyperscan does not parse: back-references, conditionals, atomic groups, possessive quantifiers, \\K,
# \\u / \\U escapes (a pattern with one is tried alone; missing one here only costs the one-by-one fallback)
HS_UNSUPPORTED = lazy_re.compile(r"\\[1-9]|\(\?P=|\(\?\(|\(\?>|[*+?}]\+|\\[KGuUN]")
# patterns Hyperscan 5.4 takes but, in some mixes of the KB's patterns, stops reporting: checked with `regex` instead.
# The pip / uv install-row pattern lost uv's " - nvidia-cudnn-cu13==9.26.0.51" beside the signals of 2026-12-07 (its
# `\n[ \t]*` form had fixed the first such loss); tests/test_fast_path.py checks every pattern on every fixture line
HS_UNRELIABLE = frozenset({INSTALL_ROW})
# literals every match of a pattern checked with `regex` holds: a block with none of them is not scanned for it (the
# install-row pattern's regex scan alone took 0.36 s of a 20 MB server log that has no "==" in it)
SLOW_GATES = {INSTALL_ROW: (b"==", b"Successfully installed ")}


def _probe(hyperscan: Any, forms: list[tuple[bytes, int, int, str]]) -> tuple[list[tuple[bytes, int, int, str]], list[int]]:
    """The forms Hyperscan compiles on their own, and the ids of those it refuses."""
    usable, left = [], []
    for form in forms:
        try:
            probe = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            probe.compile(expressions=[form[0]], ids=[form[2]], elements=1, flags=[form[1]])
            usable.append(form)
        except Exception:
            left.append(form[2])
    return usable, left


def compile_database(
    entries: list[tuple[str, int]], base_flags: int, cache_dir: Path | None, name: str
) -> tuple[Any, list[int]]:
    """One Hyperscan block-mode database of (pattern, id) entries, from the cache when it is there.

    Returns the database and the ids Hyperscan cannot take (checked with `regex` instead)."""
    import hyperscan

    # the ids are part of the key: a subset's ids (the digit-sensitive patterns') are positions in the full list,
    # which move when a pattern is added before them while the subset's texts stay the same
    key = cache.key(f"{FORM}\n{base_flags}\n".encode() + "\n".join(f"{i}\t{p}" for p, i in entries).encode())
    db_path = cache_dir / f"{name}-{key}.db" if cache_dir else None
    left_path = cache_dir / f"{name}-{key}.slow" if cache_dir else None
    if db_path and left_path and db_path.exists() and left_path.exists():
        try:
            loaded = _load(hyperscan, db_path.read_bytes()), [int(x) for x in left_path.read_text().split()]
            os.utime(db_path)  # the newest use counts: the databases of the KBs in use are the ones kept
            return loaded
        except Exception:  # a stale or foreign cache: rebuild it
            pass
    forms = [(*Prefilter._hs_form(pattern, base_flags, hyperscan), pid, pattern) for pattern, pid in entries]
    # a pattern Hyperscan refuses must not sink the others. Compiling each one alone to find out took two thirds of a
    # cold start (1,187 line patterns: 23 s, then 10 s for the database); instead the few written with a construct it
    # lacks are tried alone, and the rest are compiled at once, one by one only if that fails
    suspect: list[tuple[bytes, int, int, str]] = []
    rest: list[tuple[bytes, int, int, str]] = []
    unreliable = [form[2] for form in forms if form[3] in HS_UNRELIABLE]
    for form in forms:
        if form[3] not in HS_UNRELIABLE:
            (suspect if HS_UNSUPPORTED.search(form[3]) else rest).append(form)
    usable, left = _probe(hyperscan, suspect)
    left = unreliable + left
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        db.compile(expressions=[f[0] for f in usable + rest], ids=[f[2] for f in usable + rest],
                   elements=len(usable) + len(rest), flags=[f[1] for f in usable + rest])
    except Exception:
        more, more_left = _probe(hyperscan, rest)
        usable, left = usable + more, left + more_left
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[f[0] for f in usable], ids=[f[2] for f in usable], elements=len(usable),
                   flags=[f[1] for f in usable])
    if db_path and left_path:
        try:
            db_path.parent.mkdir(parents=True, exist_ok=True)
            db_path.write_bytes(hyperscan.dumpb(db))
            left_path.write_text(" ".join(map(str, left)))
            prune_databases(db_path.parent, name, db_path)
        except OSError:
            pass  # a read-only cache: compile again next time
    return db, left


def prune_databases(folder: Path, name: str, current: Path | None = None) -> None:
    """Keep the most recently used `name` databases (one per KB, 1 to 5 MB each) as the KB cache keeps its KBs:
    every rule change used to leave its databases behind for good. The key's 24 hex digits keep another kind's
    files (`hs-lines-...` beside `hs-...`) out of the pattern."""
    cache.prune(folder, f"{name}-{'[0-9a-f]' * 24}.db", cache.KEEP, current, companions=(".slow",))


def hyperscan_module() -> Any:
    """The hyperscan module, or None where it is not installed or DIAGNOSE_NO_HYPERSCAN is set."""
    if os.environ.get("DIAGNOSE_NO_HYPERSCAN"):
        return None
    try:
        import hyperscan
    except ImportError:
        return None
    return hyperscan


def _load(hyperscan: Any, data: bytes) -> Any:
    """A serialized database, ready to scan (a loaded database needs its own scratch space)."""
    db = hyperscan.loadb(data, mode=hyperscan.HS_MODE_BLOCK)
    db.scratch = hyperscan.Scratch(db)
    return db


def digit_sensitive(pattern: str) -> bool:
    """Can a line's digits change whether (or where) `pattern` matches it? True for a literal digit, a class
    with some digits but not all, a backreference, or a pattern the stdlib parser does not read."""
    try:
        from re import _constants as sre  # type: ignore[attr-defined]
        from re import _parser as sre_parse  # type: ignore[attr-defined]
    except ImportError:  # Python 3.10
        import sre_constants as sre  # type: ignore[no-redef]
        import sre_parse  # type: ignore[no-redef]
    repeats = tuple(getattr(sre, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(sre, name))
    atomic = getattr(sre, "ATOMIC_GROUP", None)  # 3.11+

    try:
        tree = sre_parse.parse(pattern)
    except Exception:  # noqa: BLE001 - `regex`-only syntax: assume the worst
        return True

    def walk(items: Any) -> bool:
        for op, arg in items:
            if op in (sre.LITERAL, sre.NOT_LITERAL):
                if arg in _DIGITS:
                    return True
            elif op is sre.IN:
                for inner, value in arg:
                    if inner is sre.LITERAL and value in _DIGITS:
                        return True
                    if inner is sre.RANGE and value[0] <= 57 and value[1] >= 48 and not (value[0] <= 48 and value[1] >= 57):
                        return True
            elif op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
                return True
            elif op is sre.SUBPATTERN:
                if walk(arg[-1]):
                    return True
            elif op in repeats:
                if walk(arg[2]):
                    return True
            elif op is sre.BRANCH:
                if any(walk(branch) for branch in arg[1]):
                    return True
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                if walk(arg[1]):
                    return True
            elif atomic is not None and op is atomic:
                if walk(arg):
                    return True
        return False

    return walk(tree)
