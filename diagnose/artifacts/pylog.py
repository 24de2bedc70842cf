"""Server logs and Python tracebacks: group each traceback with its exception line.

Log prefixes are kept apart from the text: in `[2025-02-19 04:01:02 TP3] Traceback (most recent
call last):` the prefix `[2025-02-19 04:01:02 TP3] ` is repeated on every line of that traceback,
and the tracker strips it to see the frames and the exception.
"""

from __future__ import annotations

import re as regex  # stdlib re: faster to compile at import; these are our own patterns

from diagnose import lazy_re
from diagnose.record import field, record

# an OSC sequence ends at BEL or ESC \; one left open ends at the next ESC, so stripping stays linear
ANSI = lazy_re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)", module=regex)
TRACEBACK = "Traceback (most recent call last):"
PER_TEMPLATE = 64  # tracebacks kept whose exception has one template (unexplained errors are reported once per fingerprint)
TRACEBACK_TEMPLATES = 4096  # exception templates whose tracebacks are kept
CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
EXCEPTION = lazy_re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning|Fault)\b(?::|$)", module=regex)
ERRORISH_PATTERN = (
    r"(?i)\b(?:error|fatal|failed|failure|exception|assert(?:ion)?|killed|abort(?:ed)?|critical|"
    r"cannot|unable|not found|segmentation fault|core dumped|timed? ?out)\b"
)


# a line's template: its digits masked, so that lines that differ only in numbers (thread ids, times,
# request ids) share the decisions taken on the first of them (sniff, engine/match.py)
TEMPLATE = str.maketrans("123456789", "000000000")
BYTES_TEMPLATE = bytes.maketrans(b"123456789", b"000000000")  # the same on bytes (the block reader)


# a hexadecimal number written with 0x (a register, an address, a GPU id: `[GPU ID 0x0c000bec]`, `[mem 0x0d00c000-...]`)
# has its letters masked too, keeping its length: kernel and driver logs print them on most lines, and with only the
# digits masked nearly every such line was a template of its own
HEX = regex.compile(rb"0x[0-9a-fA-F]+")
HEX_LETTERS = bytes.maketrans(b"abcdefABCDEF", b"000000000000")


def hex_masked(m: regex.Match[bytes]) -> bytes:
    return m[0].translate(HEX_LETTERS)


def template(text: str) -> str:
    """The line with every digit 0 and every 0x number's hex letters 0 (lines that differ in numbers only share
    it; the length is kept), through the line's bytes (six times faster than str.translate, which looks each
    character up in a dict)."""
    # UTF-8 never puts an ASCII byte inside a multi-byte character, so the bytes path masks the same characters for
    # any line (a Chinese-locale syslog's every line is non-ASCII: str.translate cost 60 us a line there)
    return template_bytes(text).decode("utf-8", "surrogatepass")


def template_bytes(text: str) -> bytes:
    """`template` as bytes (what sniff keys its line decisions by; the block reader has these bytes already)."""
    return mask_hex(text.encode("utf-8", "surrogatepass").translate(BYTES_TEMPLATE))


def mask_hex(masked: bytes) -> bytes:
    """A line's bytes with digits masked (BYTES_TEMPLATE) -> `template_bytes` of it: 0x numbers' letters masked too."""
    return HEX.sub(hex_masked, masked) if b"0x" in masked else masked


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text) if "\x1b" in text else text


@record(eq=False)
class Traceback:
    """A Python traceback found in a log: where it starts, its line prefix and (once seen) its exception line."""

    start: int
    prefix: str
    exception_line: int | None = None
    exception: str | None = None
    chained: list[int] = field(default_factory=list)
    frame_indent: int | None = None  # the least indentation of its `File "..."` lines, once one is seen


FRAME = lazy_re.compile(r'File "[^"]+", line \d+', module=regex)
TAIL_AFTER_FRAME = 2  # nonblank lines after the last frame that still leave the traceback cut
BLANK, FRAME_LINE, EXCEPTION_LINE, OTHER_LINE = range(4)  # a line's shape, as the frame follower sees it
SHAPES = 4096  # line templates whose shape is remembered (the dict starts over past it)


class TracebackTracker:
    """Feed lines in order; `kind_of` tells whether a line belongs to a traceback.

    It also follows the trailing run of frame lines (`File "...", line N, in f` and the code line
    under each): when the input ends there, with no exception line, the excerpt was cut before the
    decisive line, and `cut_at` says where the frames it does show begin."""

    def __init__(self) -> None:
        self.tracebacks: list[Traceback] = []
        # tracebacks kept per exception template (its digits and 0x letters masked): a crash loop's thousandth
        # traceback of one kind is never reported (unexplained errors are reported once per fingerprint), and
        # keeping every one let memory grow with the log
        self._per_template: dict[str, int] = {}
        self.current: Traceback | None = None
        self._run_start: int | None = None  # first frame of the current run of frames
        self._after_frame = 0  # nonblank lines since the last frame line
        self._run_broken = False
        self.last_frame: int | None = None  # the line of the last `File "...", line N` frame seen
        self._shapes: dict[bytes, int] = {}  # a line template's shape (see _shape)

    @property
    def cut_at(self) -> int | None:
        """The first line of the frames the input ends inside, or None when it is not cut."""
        if self.tracebacks and self.tracebacks[-1].exception_line is None and self.current is self.tracebacks[-1]:
            return self.tracebacks[-1].start
        if self._run_start is not None and not self._run_broken and self._after_frame <= TAIL_AFTER_FRAME:
            return self._run_start
        return None

    def idle(self) -> bool:
        """Outside any traceback and any run of frames still open: a plain line changes nothing here."""
        return self.current is None and (self._run_start is None or self._run_broken)

    @staticmethod
    def _shape(text: str) -> int:
        """What _follow_frames asks of a line: blank, a frame, an exception line (after any `[...] ` prefix), other."""
        if not text.strip():
            return BLANK
        if FRAME.search(text):
            return FRAME_LINE
        return EXCEPTION_LINE if is_exception_line(text.split("] ", 1)[-1]) else OTHER_LINE

    def _follow_frames(self, lineno: int, text: str, key: bytes | None = None) -> None:
        # the line's template, where known: lines that differ in digits only have one shape, worked out once
        shape = self._shape(text) if key is None else self.shape(key, text)
        if shape == BLANK:
            return
        if shape == FRAME_LINE:
            self.frame_line(lineno, text)
            return
        self._after_frame += 1
        if shape == EXCEPTION_LINE or self._after_frame > TAIL_AFTER_FRAME:
            self._run_broken = True

    def frame_line(self, lineno: int, line: str | bytes) -> None:
        """What `feed` does with a frame line (`File "...", line N, in f`) inside a traceback (see sniff's filler).
        Its indentation is kept: an indented exception line is told from the frames by it (_dedented_exception)."""
        self.last_frame = lineno
        tb = self.current
        if tb is not None and tb.exception_line is None:
            indent = _indent(line)
            tb.frame_indent = indent if tb.frame_indent is None else min(indent, tb.frame_indent)
        if self._run_start is None or self._run_broken or self._after_frame > 1:
            self._run_start, self._run_broken = lineno, False
        self._after_frame = 0

    def shape(self, key: bytes, text: str) -> int:
        """The shape of a line of template `key` (see _shape), remembered."""
        shape = self._shapes.get(key, -1)
        if shape < 0:
            if len(self._shapes) >= SHAPES:
                self._shapes.clear()
            shape = self._shapes[key] = self._shape(text)
        return shape

    def body_line(self) -> None:
        """What `feed` does with a nonblank line inside a traceback that is neither a frame nor an exception line:
        one more line since the last frame (the reader hands such lines to sniff's `filler`, not to `feed`)."""
        self._after_frame += 1
        if self._after_frame > TAIL_AFTER_FRAME:
            self._run_broken = True

    def _keep_bounded(self, tb: Traceback) -> None:
        """Keeps a traceback whose exception has a template seen fewer than PER_TEMPLATE times, among at most
        TRACEBACK_TEMPLATES templates; the others are dropped (the same failure again)."""
        key = template(tb.exception or "")
        seen = self._per_template.get(key)
        if seen is None and len(self._per_template) >= TRACEBACK_TEMPLATES or seen is not None and seen >= PER_TEMPLATE:
            if self.tracebacks and self.tracebacks[-1] is tb:
                self.tracebacks.pop()
            return
        self._per_template[key] = (seen or 0) + 1

    @staticmethod
    def _prefixed(tb: Traceback, text: str) -> bool:
        return text.startswith(tb.prefix) or _same_shape(tb.prefix, text)

    def feed(self, lineno: int, text: str, key: bytes | None = None) -> str:
        """The kind of this line: 'traceback' inside one, else 'server-log'. `key`: its template, when known."""
        self._follow_frames(lineno, text, key)
        return self._kind(lineno, text)

    def _kind(self, lineno: int, text: str) -> str:
        at = text.find(TRACEBACK)
        if at >= 0:
            last = self.tracebacks[-1] if self.tracebacks else None
            if last is not None and last.exception_line is None:
                self.tracebacks.pop()  # superseded before its exception line: it can give none now
            self.current = Traceback(start=lineno, prefix=text[:at])
            self.tracebacks.append(self.current)
            return "traceback"
        tb = self.current
        if tb is None:
            return "server-log"
        body = text[len(tb.prefix):] if tb.prefix and self._prefixed(tb, text) else text
        if tb.exception_line is None:
            if (body.startswith((" ", "\t")) and not _dedented_exception(tb, body)) or not body.strip():
                return "traceback"
            if body.startswith(("^", "~")):
                return "traceback"
            tb.exception_line = lineno
            tb.exception = body.strip()
            self._keep_bounded(tb)
            return "traceback"
        # after the exception: continuation lines of a multi-line message, or a chain marker
        if body.startswith(CHAIN):
            tb.chained.append(lineno)
            return "traceback"
        self.current = None
        return "server-log"


def _dedented_exception(tb: Traceback, body: str) -> bool:
    """An indented line that is the traceback's exception line all the same: a traceback printed inside another
    tool's output (pip's "× python setup.py egg_info did not run successfully" indents a build's traceback as a whole)
    keeps its shape, so its exception line is indented less than its frames."""
    return tb.frame_indent is not None and _indent(body) < tb.frame_indent and is_exception_line(body)


def _indent(line: str | bytes) -> int:
    return len(line) - len(line.lstrip())


def _same_shape(prefix: str, text: str) -> bool:
    """`text` starts with `prefix` but for its digits: the prefix docker / kubectl `--timestamps` or a logger puts
    on every line carries that line's own time (`2024-06-28T06:11:52.685304690Z (LLMRayActor pid=20770) ERROR ...`)."""
    return len(text) >= len(prefix) and template(text[: len(prefix)]) == template(prefix)


def is_exception_line(text: str) -> bool:
    return bool(EXCEPTION.match(text.strip()))

