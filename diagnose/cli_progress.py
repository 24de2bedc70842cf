"""Progress of a long read on a terminal: bytes, rate and time left on one stderr line, redrawn at most
ten times a second and cleared when the read ends or is interrupted. Only on a terminal that can redraw
a line (stderr a TTY, TERM not dumb), and never with --quiet.

>>> Progress(clock=lambda: 10.0, started=0.0).line("logs/server.log", 1536 << 20, 6 << 30)
'diagnose: reading 1.5 GiB / 6.0 GiB (25%), 153.6 MiB/s, 30 s left: logs/server.log'
>>> Progress(clock=lambda: 4.0, started=0.0).line("<stdin>", 300 << 20, None)
'diagnose: reading 300.0 MiB, 75.0 MiB/s: <stdin>'
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

CLEAR = "\r\x1b[K"
EVERY = 0.1  # seconds between redraws


def _bytes(n: float) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{int(n)} B"


def _duration(seconds: float) -> str:
    s = int(seconds + 0.5)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


class Progress:
    """The `progress(name, bytes read, size or None)` callback of api.diagnose, drawing on `stream`."""

    def __init__(self, stream: TextIO = sys.stderr, clock: Callable[[], float] = time.monotonic,
                 started: float | None = None) -> None:
        self.stream, self.clock = stream, clock
        self.started = clock() if started is None else started
        self.last = float("-inf")
        self.shown = False
        self.width = 0

    def line(self, name: str, done: int, size: int | None) -> str:
        elapsed = max(self.clock() - self.started, 1e-6)
        rate = done / elapsed
        numbers = _bytes(done)
        if size and done <= size:  # a compressed input reads past its own size: no total, no time left then
            numbers += f" / {_bytes(size)} ({100 * done // size}%)"
        numbers += f", {_bytes(rate)}/s"
        if size and done <= size and rate > 0:
            numbers += f", {_duration((size - done) / rate)} left"
        return f"diagnose: reading {numbers}: {name if len(name) <= 40 else '...' + name[-37:]}"  # a narrow
        # terminal cuts the name, not the numbers

    def __call__(self, name: str, done: int, size: int | None) -> None:
        now = self.clock()
        if now - self.last < EVERY:
            return
        self.last = now
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns or 100  # 0: a terminal that does not say
        except (OSError, ValueError, AttributeError):
            columns = 100
        self.shown = True  # before the write: a Ctrl-C in the middle of it must still clear the line
        self.stream.write(CLEAR + self.line(name, done, size)[: max(columns - 1, 20)])
        self.stream.flush()

    def clear(self) -> None:
        """Take the line away (the read ended, or Ctrl-C): nothing of it stays on the terminal."""
        if self.shown:
            self.stream.write(CLEAR)
            self.stream.flush()
            self.shown = False


def for_terminal(quiet: bool, stream: TextIO | None = None) -> Progress | None:
    """A Progress when `stream` (stderr) is a terminal that can redraw a line, and not --quiet; else None."""
    stream = stream or sys.stderr
    if quiet or os.environ.get("TERM") == "dumb":
        return None
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return Progress(stream) if tty else None
