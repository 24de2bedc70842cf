"""`.zip` and `.zst` (`.tar.zst`) bundles, read like `.tar.gz`: through the same inflate budget
(streams.InflateBudget), every member named `bundle.zip:path`, what cannot be read a skipped entry.

reader.add_stream hands zip and zstd data here (`add_archive`). zstd is inflated a little input at a
time (ZSTD_IN bytes), so that one step stays within a few MiB whatever the ratio; a zip is spooled to
a temporary file first (its index is at its end) and refused before inflating anything when its members
declare more than the budget allows.

>>> import io, zstandard
>>> from diagnose.artifacts.streams import InflateBudget
>>> data = zstandard.ZstdCompressor().compress(b"RuntimeError: CUDA error: out of memory\\n")
>>> io.BufferedReader(ZstdDecompressing(io.BytesIO(data), "x.zst", InflateBudget())).read()
b'RuntimeError: CUDA error: out of memory\\n'
"""

from __future__ import annotations

import io
import stat
import tempfile
import zipfile
import zlib
from typing import Any, BinaryIO

from diagnose.artifacts.streams import (
    IN,
    RATIO,
    RATIO_FLOOR,
    InflateBudget,
    Inflating,
    TooMuchInflated,
    _size,
)
from diagnose.model import Skipped

ZSTD_IN = 256  # compressed bytes fed at a time: an all-zeros frame gives ~8 MiB per step, a log ~2 KiB
MAX_DEPTH = 2
NOT_READ = "zstd-compressed data: the zstandard package is needed to read it (pip install zstandard), or unpack it first"


class ZstdDecompressing(Inflating):
    """zstd frames (one after another, as `cat a.zst b.zst` gives) inflated step by step; a truncated
    or corrupt stream gives everything before the damage and says so in `error`."""

    def __init__(self, raw: BinaryIO, name: str, budget: InflateBudget) -> None:
        import zstandard

        self.raw_in, self.name, self.budget = raw, name, budget
        self.zstd_error = zstandard.ZstdError
        self.decompressor = zstandard.ZstdDecompressor()
        self.decoder = self.decompressor.decompressobj()
        self.error: str | None = None
        self.inbuf = b""
        self.pending: memoryview = memoryview(b"")
        self.inflated = self.consumed = 0
        self.done = self.started = False


    def _fill(self) -> None:
        while not self.pending and not self.done:
            if not self.inbuf:
                self.inbuf = self.raw_in.read(IN)
                self.consumed += len(self.inbuf)
                if not self.inbuf:
                    self.done = True
                    if self.started and not self.decoder.eof:
                        self.error = "zstd stream is truncated; read up to the cut"
                    return
            if self.decoder.eof:  # the next frame
                self.decoder = self.decompressor.decompressobj()
            piece, self.inbuf = self.inbuf[:ZSTD_IN], self.inbuf[ZSTD_IN:]
            try:
                out = self.decoder.decompress(piece)
            except self.zstd_error as exc:
                self.error, self.done = f"zstd stream is corrupt ({exc}); read up to the damage", True
                return
            self.started = True
            if self.decoder.eof and self.decoder.unused_data:
                self.inbuf = self.decoder.unused_data + self.inbuf
            if out:
                self.inflated += len(out)
                self.budget.spend(self.name, "zstd", self.inflated, len(out), self.consumed)
                self.pending = memoryview(out)


def add_archive(result: Any, name: str, stream: BinaryIO, kind: str, depth: int = 0) -> None:
    """Read zip or zstd data `stream` (named `name`) into `result` (a reader.ReadResult)."""
    from diagnose.artifacts import reader

    if depth > MAX_DEPTH:
        result.skipped.append(Skipped(name, f"{kind} nested too deep"))
        return
    if kind == "zip":
        _add_zip(result, name, stream, depth)
        return
    try:
        inflating = ZstdDecompressing(stream, name, result.budget)
    except ImportError:
        result.skipped.append(Skipped(name, NOT_READ))
        return
    reader.add_stream(result, name, inflating, depth + 1)


def _bomb(name: str, inflated: int, size: int) -> TooMuchInflated:
    return TooMuchInflated(f"{name}: zip data inflates more than {RATIO} times ({size} bytes to over "
                           f"{_size(max(inflated, RATIO_FLOOR))}): a decompression bomb, or unpack it first")


def _add_zip(result: Any, name: str, stream: BinaryIO, depth: int) -> None:
    from diagnose.artifacts import reader

    spool = _seekable(stream, result.budget.per_input)
    if spool is None:
        result.skipped.append(Skipped(name, f"zip archive of over {_size(result.budget.per_input)} from a stream: "
                                            "not read (give it as a file)"))
        return
    size = spool.seek(0, 2)
    spool.seek(0)
    try:
        archive = zipfile.ZipFile(spool)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        result.skipped.append(Skipped(name, f"truncated or corrupt zip archive ({exc}); nothing in it was read"))
        return
    members = [m for m in archive.infolist() if not m.is_dir()]
    declared = sum(m.file_size for m in members)
    if declared > RATIO_FLOOR and declared > RATIO * size:
        raise _bomb(name, declared, size)
    inflated = 0
    for member in members:
        member_name = f"{name}:{member.filename}"
        why = _not_read(member, result.budget)
        if why:
            result.skipped.append(Skipped(member_name, why))
            continue
        held, n, damage = _extract(archive, member, member_name, result.budget)
        inflated += n
        if inflated > RATIO_FLOOR and inflated > RATIO * size:  # members that share their data
            raise _bomb(name, inflated, size)
        if damage:
            result.skipped.append(Skipped(member_name, f"{damage}; read up to the damage"))
        reader.add_stream(result, member_name, held, depth=depth + 1)  # a zip in a zip in a zip (42.zip) ends


def _seekable(stream: BinaryIO, limit: int) -> BinaryIO | None:
    """The zip as a seekable file (its index is at its end): a regular file opened again by its path, else a
    copy (in memory up to MEMBER_IN_MEMORY, then on disk), or None past `limit` bytes."""
    from diagnose.artifacts import reader

    path = getattr(getattr(stream, "raw", None), "path", None)  # reader.LazyFile: a regular file
    if path is not None:
        return open(path, "rb")
    spool: Any = tempfile.SpooledTemporaryFile(max_size=reader.MEMBER_IN_MEMORY)
    while chunk := stream.read(reader.BLOCK):
        spool.write(chunk)
        if spool.tell() > limit:
            return None
    return spool  # type: ignore[no-any-return]


def _not_read(member: zipfile.ZipInfo, budget: InflateBudget) -> str | None:
    kind = stat.S_IFMT(member.external_attr >> 16) if member.create_system == 3 else 0  # Unix mode, where given
    if kind == stat.S_IFLNK:
        return "a symlink in the bundle: not read"
    if kind and kind != stat.S_IFREG:
        return f"a member of file type {oct(kind)} in the bundle: not read"
    if member.flag_bits & 0x1:
        return "an encrypted zip member: not read"
    if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        return f"zip compression method {member.compress_type} is not supported: unpack it first"
    if member.file_size > budget.per_input:
        return f"bundle member of {member.file_size} bytes, over the limit of {budget.per_input}: not read"
    return None


def _extract(archive: zipfile.ZipFile, member: zipfile.ZipInfo, name: str,
             budget: InflateBudget) -> tuple[BinaryIO, int, str | None]:
    """The member's bytes (in memory, or a temporary file past MEMBER_IN_MEMORY), how many, and the damage."""
    from diagnose.artifacts import reader

    held: Any = io.BytesIO()
    n, damage = 0, None
    try:
        with archive.open(member) as data:
            while chunk := data.read(reader.BLOCK):
                n += len(chunk)
                budget.spend(name, "zip", n, len(chunk), max(member.compress_size, 1))
                if n > reader.MEMBER_IN_MEMORY and isinstance(held, io.BytesIO):
                    spilled = tempfile.TemporaryFile()  # read later, closed with the process
                    spilled.write(held.getbuffer())
                    held = spilled
                held.write(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
        damage = f"corrupt zip member ({exc})"
    held.seek(0)
    return held, n, damage
