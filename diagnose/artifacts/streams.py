"""Readable byte streams that transform what they read: decompression that survives damage and
cannot be made to inflate without bound, and UTF-16 recoded to UTF-8. Both are plain
io.RawIOBase, so a BufferedReader wraps them like a file.

Decompression is bounded two ways: each output step is at most OUT bytes (memory), and an
`InflateBudget` counts the inflated bytes of one input and of the whole run (time: a 1.5 KB
bzip2 bomb inflates to gigabytes). Over a bound, `TooMuchInflated` (exit 2, 413 in the service).

>>> import gzip, io
>>> budget = InflateBudget(per_input=1000, total=10_000)
>>> io.BufferedReader(Decompressing(io.BytesIO(gzip.compress(b"ok" * 10)), "gzip", budget=budget)).read()
b'okokokokokokokokokok'
>>> io.BufferedReader(Decompressing(io.BytesIO(gzip.compress(bytes(5000))), "gzip", "x.gz", budget)).read()
Traceback (most recent call last):
...
diagnose.artifacts.streams.TooMuchInflated: x.gz: gzip data inflates past 1000 bytes (the limit for one input): a decompression bomb, or unpack it first
"""

from __future__ import annotations

import io
import zlib
from typing import Any, BinaryIO

from diagnose.errors import InputError
from diagnose.record import record

IN = 16 * 1024  # compressed bytes fed at a time: a concatenated member costs at most this much copying
OUT = 1 << 20  # inflated bytes produced at a time
PER_INPUT = 16 << 30  # bytes one compressed input (or tar member) may inflate to
TOTAL = 64 << 30  # bytes all the compressed inputs of one run may inflate to together
RATIO = 1000  # past RATIO_FLOOR inflated bytes, more than this many per compressed byte is a bomb
RATIO_FLOOR = 64 << 20


class TooMuchInflated(InputError):
    """Compressed input that inflates past its bound: one line, exit code 2 (413 in the service)."""


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


@record
class InflateBudget:
    """How many inflated bytes one input, and all inputs together, may produce."""

    per_input: int = PER_INPUT
    total: int = TOTAL
    spent: int = 0

    def spend(self, name: str, kind: str, inflated: int, n: int, consumed: int) -> None:
        """`inflated`: this stream's bytes so far, `n` of them new, from `consumed` compressed bytes."""
        self.spent += n
        if inflated > RATIO_FLOOR and inflated > RATIO * consumed:
            raise TooMuchInflated(f"{name}: {kind} data inflates more than {RATIO} times ({consumed} bytes to over "
                                  f"{_size(RATIO_FLOOR)}): a decompression bomb, or unpack it first")
        if inflated > self.per_input:
            raise TooMuchInflated(f"{name}: {kind} data inflates past {_size(self.per_input)} (the limit for one "
                                  "input): a decompression bomb, or unpack it first")
        if self.spent > self.total:
            raise TooMuchInflated(f"{name}: the compressed inputs inflate past {_size(self.total)} together "
                                  "(the limit for one run): a decompression bomb, or unpack them first")


class Inflating(io.RawIOBase):
    """A stream that inflates into `pending` in `_fill` and hands it out as read (gzip / bzip2 / xz here,
    zstd in archives.py)."""

    pending: memoryview

    def _fill(self) -> None:
        raise NotImplementedError

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._fill()
        n = min(len(buffer), len(self.pending))
        buffer[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n


class Decompressing(Inflating):
    """gzip / bzip2 / xz decompressed step by step, so that a truncated or corrupt stream still
    gives everything before the damage (and says so in `error`) instead of a traceback."""

    def __init__(self, raw: BinaryIO, kind: str, name: str = "input", budget: InflateBudget | None = None) -> None:
        self.raw_in, self.kind, self.name = raw, kind, name
        self.budget = budget if budget is not None else InflateBudget()
        self.error: str | None = None
        self.pending: memoryview = memoryview(b"")
        self.inbuf = b""
        self.done = False
        self.inflated = 0
        self.consumed = 0
        self.errors: tuple[type[BaseException], ...] = (zlib.error, OSError, EOFError, ValueError)
        self.decoder = self._new_decoder()

    def _new_decoder(self) -> Any:
        if self.kind == "gzip":
            return zlib.decompressobj(wbits=31)
        if self.kind == "bzip2":
            import bz2

            return bz2.BZ2Decompressor()
        import lzma

        self.errors = (*self.errors, lzma.LZMAError)
        return lzma.LZMADecompressor()

    def _step(self) -> tuple[bytes, bool]:
        """Inflate at most OUT bytes from what is buffered; (output, needs more input)."""
        d = self.decoder
        if self.kind == "gzip":
            out = d.decompress(self.inbuf, OUT)
            self.inbuf = d.unused_data if d.eof else d.unconsumed_tail
            return out, not out and not self.inbuf and not d.eof
        data = b""
        if d.needs_input:
            data, self.inbuf = self.inbuf, b""
        out = d.decompress(data, OUT)
        if d.eof:
            self.inbuf = d.unused_data
        return out, not out and d.needs_input and not self.inbuf and not d.eof

    def _fill(self) -> None:
        while not self.pending and not self.done:
            try:
                if self.decoder.eof:  # concatenated members (cat a.gz b.gz), or the end
                    if not self.inbuf:
                        self.inbuf = self.raw_in.read(IN)
                        self.consumed += len(self.inbuf)
                    if not self.inbuf:
                        self.done = True
                        return
                    self.decoder = self._new_decoder()
                out, starving = self._step()
                if starving:
                    self.inbuf = self.raw_in.read(IN)
                    self.consumed += len(self.inbuf)
                    if not self.inbuf:
                        self.done = True
                        self.error = f"{self.kind} stream is truncated; read up to the cut"
                        return
            except self.errors as exc:
                self.error = f"{self.kind} stream is corrupt ({exc}); read up to the damage"
                self.done = True
                return
            if out:
                self.inflated += len(out)
                self.budget.spend(self.name, self.kind, self.inflated, len(out), self.consumed)
                self.pending = memoryview(out)


class Recoded(io.RawIOBase):
    """UTF-16 (PowerShell redirects) recoded to UTF-8 as it is read."""

    def __init__(self, inner: BinaryIO, encoding: str, block: int) -> None:
        import codecs

        self.reader = codecs.getreader(encoding)(inner, "replace")
        self.rest: memoryview = memoryview(b"")
        self.block = block

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self.rest:
            chunk = self.reader.read(self.block)
            self.rest = memoryview(chunk.encode("utf-8", "replace"))
        n = min(len(buffer), len(self.rest))
        buffer[:n] = self.rest[:n]
        self.rest = self.rest[n:]
        return n
