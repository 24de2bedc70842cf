"""Readable byte streams that transform what they read: decompression that survives damage, and
UTF-16 recoded to UTF-8. Both are plain io.RawIOBase, so a BufferedReader wraps them like a file."""

from __future__ import annotations

import io
import zlib
from typing import BinaryIO


class Decompressing(io.RawIOBase):
    """gzip / bzip2 / xz decompressed block by block, so that a truncated or corrupt stream still
    gives everything before the damage (and says so in `error`) instead of a traceback."""

    def __init__(self, raw: BinaryIO, kind: str, block: int) -> None:
        self.raw_in, self.kind, self.block = raw, kind, block
        self.error: str | None = None
        self.pending = b""
        self.done = False
        self.errors: tuple[type[BaseException], ...] = (zlib.error, OSError, EOFError, ValueError)
        self.decoder = self._new_decoder()

    def _new_decoder(self):  # type: ignore[no-untyped-def]
        if self.kind == "gzip":
            return zlib.decompressobj(wbits=31)
        if self.kind == "bzip2":
            import bz2

            return bz2.BZ2Decompressor()
        import lzma

        self.errors = (*self.errors, lzma.LZMAError)
        return lzma.LZMADecompressor()

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        while not self.pending and not self.done:
            chunk = self.raw_in.read(self.block)
            try:
                if not chunk:
                    self.done = True
                    if not self.decoder.eof:
                        self.error = f"{self.kind} stream is truncated; read up to the cut"
                    return
                data = self.decoder.decompress(chunk)
                while self.decoder.eof and self.decoder.unused_data:  # concatenated members
                    rest = self.decoder.unused_data
                    self.decoder = self._new_decoder()
                    data += self.decoder.decompress(rest)
            except self.errors as exc:
                self.error = f"{self.kind} stream is corrupt ({exc}); read up to the damage"
                self.done = True
                return
            self.pending = data

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        self._fill()
        n = min(len(buffer), len(self.pending))
        buffer[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n


class Recoded(io.RawIOBase):
    """UTF-16 (PowerShell redirects) recoded to UTF-8 as it is read."""

    def __init__(self, inner: BinaryIO, encoding: str, block: int) -> None:
        import codecs

        self.reader = codecs.getreader(encoding)(inner, "replace")
        self.rest = b""
        self.block = block

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        while len(self.rest) < len(buffer):
            chunk = self.reader.read(self.block)
            if not chunk:
                break
            self.rest += chunk.encode("utf-8")
        n = min(len(buffer), len(self.rest))
        buffer[:n] = self.rest[:n]
        self.rest = self.rest[n:]
        return n
