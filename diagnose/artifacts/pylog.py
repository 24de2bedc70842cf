"""Server logs and Python tracebacks: group each traceback with its exception line.

Log prefixes are kept apart from the text: in `[2025-02-19 04:01:02 TP3] Traceback (most recent
call last):` the prefix `[2025-02-19 04:01:02 TP3] ` is repeated on every line of that traceback,
and the tracker strips it to see the frames and the exception.
"""

from __future__ import annotations

import re as regex  # stdlib re: faster to compile at import; these are our own patterns
from dataclasses import dataclass, field

ANSI = regex.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
TRACEBACK = "Traceback (most recent call last):"
CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
EXCEPTION = regex.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning|Fault)\b(?::|$)")
ERRORISH_PATTERN = (
    r"(?i)\b(?:error|fatal|failed|failure|exception|assert(?:ion)?|killed|abort(?:ed)?|critical|"
    r"cannot|unable|not found|segmentation fault|core dumped|timed? ?out)\b"
)


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text) if "\x1b" in text else text


@dataclass
class Traceback:
    start: int
    prefix: str
    exception_line: int | None = None
    exception: str | None = None
    chained: list[int] = field(default_factory=list)


class TracebackTracker:
    """Feed lines in order; `kind_of` tells whether a line belongs to a traceback."""

    def __init__(self) -> None:
        self.tracebacks: list[Traceback] = []
        self.current: Traceback | None = None

    def feed(self, lineno: int, text: str) -> str:
        """The kind of this line: 'traceback' inside one, else 'server-log'."""
        at = text.find(TRACEBACK)
        if at >= 0:
            self.current = Traceback(start=lineno, prefix=text[:at])
            self.tracebacks.append(self.current)
            return "traceback"
        tb = self.current
        if tb is None:
            return "server-log"
        body = text[len(tb.prefix):] if tb.prefix and text.startswith(tb.prefix) else text
        if tb.exception_line is None:
            if body.startswith((" ", "\t")) or not body.strip():
                return "traceback"
            if body.startswith(("^", "~")):
                return "traceback"
            tb.exception_line = lineno
            tb.exception = body.strip()
            return "traceback"
        # after the exception: continuation lines of a multi-line message, or a chain marker
        if body.startswith(CHAIN):
            tb.chained.append(lineno)
            return "traceback"
        self.current = None
        return "server-log"


def is_exception_line(text: str) -> bool:
    return bool(EXCEPTION.match(text.strip()))

