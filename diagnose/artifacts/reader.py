"""Read what the user gave: files, directories, compressed files, tar bundles, stdin.

Everything is read as a stream of bytes in blocks, so memory stays bounded whatever the size:
a line longer than MAX_LINE is cut (and the cut is reported), invalid UTF-8 is replaced (and
reported), binary data and unsupported compression are skipped with their reason.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from diagnose.artifacts.streams import Decompressing, Recoded
from diagnose.model import Skipped

BLOCK = 1 << 20
MAX_LINE = 64 * 1024  # characters of one line that are matched; the rest is reported as cut
SMALL_INPUT = 4 << 20  # inputs up to this size are read line by line; larger ones through the prefilter
SNIFF = 8192

MAGIC = {
    b"\x1f\x8b": "gzip",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"PK\x03\x04": "zip",
    b"7z\xbc\xaf\x27\x1c": "7z",
}


@dataclass
class TextSource:
    """One readable text: its name as shown in evidence, and its lines."""

    name: str
    stream: BinaryIO
    notes: list[str] = field(default_factory=list)
    encoding: str = "utf-8"

    total_lines: int = 0
    selected_lines: int | None = None
    # block mode: what the prefilter saw on each line it hit (line number -> (signal patterns
    # that may match, looks like an error), or None to classify the line again); lines it did
    # not hit hold nothing. None outside block mode.
    line_hints: dict[int, Any] | None = None
    size: int | None = None  # bytes, when known (a regular file)
    progress: Callable[[str, int, int | None], None] | None = None  # (name, bytes read, size)

    def lines(self, prefilter: Callable[[], Any] | None = None) -> Iterator[tuple[int, str]]:
        """(1-based line number, text without the newline), decoded, long lines cut.

        Given a prefilter factory and an input over SMALL_INPUT bytes, only the lines the
        prefilter selects (and their context) are decoded and yielded; line numbers stay true.
        """
        head = self.stream.read(SMALL_INPUT)
        more = self.stream.read(1) if len(head) == SMALL_INPUT else b""
        blocks = _blocks(head + more, self.stream)
        if prefilter is None or not more:
            yield from self._all_lines(blocks)
        else:
            yield from self._selected_lines(blocks, prefilter())
        self._finish_notes()

    def _decode(self, raw: bytes) -> str:
        try:
            text = raw.decode(self.encoding)
        except UnicodeDecodeError:
            text = raw.decode(self.encoding, errors="replace")
            self._replaced += 1
        return text.rstrip("\r")

    def _split(self, blocks: Iterator[bytes]) -> Iterator[bytes]:
        """Chunks that end at a line end (the last may not); a line over MAX_LINE*4 bytes is cut
        there, and the rest of it dropped. The consumer keeps `_lines_done` up to date, so that a
        cut line is reported with its number without counting newlines twice."""
        pending = b""
        dropping = False
        for block in blocks:
            if dropping:
                nl = block.find(b"\n")
                if nl < 0:
                    continue
                block, dropping = block[nl:], False
            data = pending + block
            cut = data.rfind(b"\n")
            if cut < 0:
                if len(data) > MAX_LINE * 4:
                    pending, dropping = data[: MAX_LINE * 4], True
                    if self._lines_done + 1 not in self._cut_lines:
                        self._cut_lines.append(self._lines_done + 1)
                else:
                    pending = data
                continue
            yield data[: cut + 1]
            pending = data[cut + 1 :]
        if pending:
            yield pending

    def _all_lines(self, blocks: Iterator[bytes]) -> Iterator[tuple[int, str]]:
        lineno = 0
        for chunk in self._split(blocks):
            parts = chunk.split(b"\n")
            if chunk.endswith(b"\n"):
                parts.pop()
            for raw in parts:
                lineno += 1
                yield lineno, self._cut(lineno, self._decode(raw))
            self._lines_done = lineno
        self.total_lines = lineno

    def _cut(self, lineno: int, text: str) -> str:
        if len(text) > MAX_LINE:
            if lineno not in self._cut_lines:
                self._cut_lines.append(lineno)
            return text[:MAX_LINE]
        return text

    def _selected_lines(self, blocks: Iterator[bytes], prefilter: Any) -> Iterator[tuple[int, str]]:
        base = 0  # lines before this chunk
        carry, carry_more = 0, None  # context lines still owed from the previous chunk, and their prefixes
        done = 0
        selected = 0
        for chunk in self._split(blocks):
            ranges: list[tuple[int, int, int, Any]] = [(0, 0, carry - 1, carry_more)] if carry else []
            last_offset, last_index = 0, 0
            pids_by_line: dict[int, set[int]] = {}
            for end, context, pid in sorted(prefilter.hits(chunk)):
                at = max(end - 1, 0)
                last_index += chunk.count(b"\n", last_offset, at)
                last_offset = at
                start = chunk.rfind(b"\n", 0, at) + 1
                ranges.append((start, last_index, last_index + context, prefilter.context_prefixes(pid)))
                pids_by_line.setdefault(last_index, set()).add(pid)
            self.line_hints = {base + i + 1: prefilter.line_hint(p) for i, p in pids_by_line.items()}
            # one pass over the chunk counts its lines: up to the last hit above, the rest here
            n_lines = last_index + chunk.count(b"\n", last_offset) + (0 if chunk.endswith(b"\n") else 1)
            carry, carry_more = 0, None
            covered, next_offset = -1, 0  # the last line index yielded, and where the next one starts
            for start, first, last, more in sorted(ranges, key=lambda r: r[1]):
                if last <= covered:
                    continue
                offset, index = (start, first) if first > covered else (next_offset, covered + 1)
                while index <= last and index < n_lines:
                    nl = chunk.find(b"\n", offset)
                    raw = chunk[offset:] if nl < 0 else chunk[offset:nl]
                    if more and index > first and raw.strip() and not raw.lstrip().startswith(more):
                        last = index - 1  # the structure ended here, as its parser will see
                        break
                    selected += 1
                    yield base + index + 1, self._cut(base + index + 1, self._decode(raw))
                    offset, index = nl + 1, index + 1
                covered, next_offset = index - 1, offset
                if last >= n_lines:
                    carry, carry_more = max(carry, last - n_lines + 1), more
            base += n_lines
            self._lines_done = base
            if self.progress is not None:
                done += len(chunk)
                self.progress(self.name, done, self.size)
        self.total_lines = base
        self.selected_lines = selected

    def _finish_notes(self) -> None:
        error = getattr(getattr(self.stream, "raw", None), "error", None)
        if error:
            self.notes.append(error)
        if self._replaced:
            self.notes.append(f"{self._replaced} line(s) held invalid {self.encoding} bytes, replaced by U+FFFD")
        if self._cut_lines:
            cut = self._cut_lines
            shown = ", ".join(str(n) for n in cut[:5]) + (" ..." if len(cut) > 5 else "")
            self.notes.append(
                f"{len(cut)} line(s) longer than {MAX_LINE} characters were cut to that length "
                f"for matching (line {shown})"
            )
        if self.selected_lines is not None:
            self.notes.append(
                f"large input: {self.total_lines} lines scanned, {self.selected_lines} selected by the prefilter"
            )

    def __post_init__(self) -> None:
        self._replaced = 0
        self._cut_lines: list[int] = []
        self._lines_done = 0  # lines of the chunks already handed out (for the numbers of cut lines)


def _blocks(first: bytes, stream: BinaryIO) -> Iterator[bytes]:
    if first:
        yield first
    while True:
        block = stream.read(BLOCK)
        if not block:
            return
        yield block


@dataclass
class ReadResult:
    sources: list[TextSource] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def open_inputs(paths: list[str], stdin: BinaryIO | None = None) -> ReadResult:
    """Every readable text among `paths` ('-' is stdin); what cannot be read goes to skipped."""
    result = ReadResult()
    for raw in paths:
        if raw == "-":
            stream = stdin if stdin is not None else sys.stdin.buffer
            add_stream(result, "<stdin>", stream)
            continue
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file())
            if not files:
                result.skipped.append(Skipped(raw, "empty directory"))
            for file in files:
                _add_file(result, file)
        elif path.exists():
            _add_file(result, path)
        else:
            result.skipped.append(Skipped(raw, "no such file or directory"))
    return result


def _add_file(result: ReadResult, path: Path) -> None:
    name = str(path)
    if path.is_fifo() or path.is_char_device():
        add_stream(result, name, open(path, "rb"))  # noqa: SIM115 - closed with the process
        return
    if not path.is_file():
        result.skipped.append(Skipped(name, "not a regular file"))
        return
    if not os.access(path, os.R_OK):
        result.skipped.append(Skipped(name, "permission denied"))
        return
    try:
        stream: BinaryIO = open(path, "rb")  # noqa: SIM115 - kept open while its lines are read
    except OSError as exc:
        result.skipped.append(Skipped(name, exc.strerror or str(exc)))
        return
    size = os.fstat(stream.fileno()).st_size
    add_stream(result, name, stream)
    if result.sources and result.sources[-1].name == name:
        result.sources[-1].size = size


def add_stream(result: ReadResult, name: str, stream: Any, depth: int = 0) -> None:
    """`stream`: any readable binary file object (a file, stdin, BytesIO, a decompressor)."""
    buffered = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream)
    try:
        head = buffered.peek(SNIFF)[:SNIFF]
    except (OSError, EOFError, ValueError) as exc:
        result.skipped.append(Skipped(name, f"cannot read: {exc}"))
        return
    if not head:
        result.skipped.append(Skipped(name, "empty"))
        return
    kind = next((k for magic, k in MAGIC.items() if head.startswith(magic)), None)
    if kind in ("gzip", "bzip2", "xz"):
        if depth > 2:
            result.skipped.append(Skipped(name, f"{kind} nested too deep"))
            return
        add_stream(result, name, Decompressing(buffered, kind, BLOCK), depth + 1)
        return
    if kind is not None:
        result.skipped.append(
            Skipped(name, f"{kind}-compressed data: unpack it first (gzip, bzip2, xz and tar are read)")
        )
        return
    if _is_tar(head):
        _add_tar(result, name, buffered)
        return
    encoding = _bom_encoding(head)
    if encoding is None and _looks_binary(head):
        result.skipped.append(Skipped(name, "binary data, not text"))
        return
    if encoding and encoding != "utf-8":
        buffered = Recoded(buffered, encoding, BLOCK)  # type: ignore[assignment]
    result.sources.append(TextSource(name, buffered))


def _is_tar(head: bytes) -> bool:
    return len(head) > 262 and head[257:262] == b"ustar"


def _add_tar(result: ReadResult, name: str, stream: BinaryIO) -> None:
    import tarfile

    try:
        import tarfile  # imported here: most runs read no bundle

        archive = tarfile.open(fileobj=stream, mode="r|*")
        for member in archive:
            member_name = f"{name}:{member.name}"
            if not member.isfile():
                continue
            data = archive.extractfile(member)
            if data is None:
                continue
            # stream mode: a member must be consumed before the next; members are small texts
            # in practice (bundles), so read each fully but bounded.
            blob = data.read(256 * BLOCK)
            if data.read(1):
                result.skipped.append(Skipped(member_name, "bundle member over 256 MB, not read"))
                continue
            add_stream(result, member_name, io.BytesIO(blob), depth=1)
    except (tarfile.TarError, OSError, EOFError) as exc:
        result.skipped.append(Skipped(name, f"truncated or corrupt tar archive ({exc}); members before it were read"))


def _bom_encoding(head: bytes) -> str | None:
    if head.startswith(b"\xef\xbb\xbf"):
        return "utf-8"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    return None


def _looks_binary(head: bytes) -> bool:
    if b"\x00" in head:
        return True
    control = sum(1 for b in head if b < 9 or 13 < b < 32 and b != 27)
    return control > len(head) * 0.1
