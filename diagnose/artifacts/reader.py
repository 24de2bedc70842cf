"""Read what the user gave: files, directories, compressed files, tar bundles, stdin.

Everything is read as a stream of bytes in blocks, so memory stays bounded whatever the size:
a line longer than MAX_LINE is cut (and the cut is reported), invalid UTF-8 is replaced (and
reported), binary data and unsupported compression are skipped with their reason.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import sys
from bisect import bisect_right
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from diagnose.artifacts import pylog
from diagnose.artifacts.streams import Decompressing, InflateBudget, Recoded
from diagnose.model import Skipped
from diagnose.record import field, record

BLOCK = 1 << 20
MAX_LINE = 64 * 1024  # characters of one line that are matched; the rest is reported as cut
# inputs up to this size are read line by line (the prefilter's set-up costs more than it saves there); larger
# ones through the prefilter
SMALL_INPUT = 64 << 10
# a chunk is looked at for runs of repeated lines (Prefilter.repeat_hits) after a chunk a quarter of whose lines
# were hit; with this set, every chunk is (the tests: the same findings either way)
REPEATS_ALWAYS = False
SNIFF = 8192
INERT_TEMPLATES = 4096  # templates of lines that changed nothing, remembered per input (the dict starts over past it)
PARALLEL_MIN = 32 << 20  # a regular file of at least this many bytes has its chunks scanned by a second process
INERT_LINE = 1024  # ... of lines up to this many bytes: 4 MiB at most, whatever the lines (a 64 KiB line is not kept)

MAGIC = {
    b"\x1f\x8b": "gzip",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"PK\x03\x04": "zip",
    b"7z\xbc\xaf\x27\x1c": "7z",
}


class LineHints:
    """A chunk's prefilter verdicts by line number, each worked out when asked for (most lines of a burst
    are never handed out): `lineno in hints`, `hints[lineno]`."""

    __slots__ = ("first", "pids", "hint")

    def __init__(self, first: int, pids: dict[int, set[int]], hint: Callable[[set[int]], Any]) -> None:
        self.first, self.pids, self.hint = first, pids, hint  # line number of index 0; index -> pattern ids

    def __contains__(self, lineno: int) -> bool:
        return self.pids.get(lineno - self.first) is not None

    def __getitem__(self, lineno: int) -> Any:
        pids = self.pids.get(lineno - self.first)
        return self.hint(pids if pids is not None else set())  # never None: `in` is asked first


class RunPids:
    """The pattern ids by line index of a chunk scanned with its repeats left out (Prefilter.repeat_hits):
    a line of a run has the hits of the run's first line that ignore digits, and its own (digit-sensitive)
    ones. `get(index)` as on a dict; `repeats_after(i, last)`: the last line up to `last` that has the
    pattern ids line `i` has, through a run."""

    __slots__ = ("own", "runs", "firsts", "marked")

    def __init__(self, own: dict[int, set[int]], runs: list[tuple[int, int]], digit_ids: frozenset[int]) -> None:
        self.own = own
        self.runs: list[tuple[int, int, set[int]]] = []
        for first, last in runs:
            shared = own.get(first, set()) - digit_ids
            if shared:
                self.runs.append((first, last, shared))
        self.firsts = [r[0] for r in self.runs]
        self.marked: list[int] = []  # repeats with hits of their own
        for index, pids in own.items():
            run = self._run(index)
            if run is not None:
                own[index] = pids | run[2]
                self.marked.append(index)
        self.marked.sort()

    def _run(self, index: int) -> tuple[int, int, set[int]] | None:
        i = bisect_right(self.firsts, index) - 1
        if i >= 0 and self.runs[i][0] < index <= self.runs[i][1]:
            return self.runs[i]
        return None

    def get(self, index: int, default: Any = None) -> Any:
        pids = self.own.get(index)
        if pids is not None:
            return pids
        run = self._run(index)
        return run[2] if run is not None else default

    def ranges(self, starts: list[int]) -> list[tuple[int, int, int, None]]:
        """The lines the runs with hits select (each run's first line was selected by its own hits)."""
        return [(starts[first], first, last, None) for first, last, _ in self.runs]

    def repeats_after(self, i: int, last: int) -> int:
        if i in self.own:
            return i
        run = self._run(i)
        if run is None:
            return i
        stop = min(run[1], last)
        k = bisect_right(self.marked, i)
        if k < len(self.marked) and self.marked[k] <= stop:
            stop = self.marked[k] - 1
        return stop


@record
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
    line_hints: LineHints | None = None
    size: int | None = None  # bytes, when known (a regular file)
    # block mode: asked before a line that repeats the last one handed out (same bytes but digits, same patterns
    # hit, right after it): True when handing that line out would change nothing, so it is counted and skipped
    # (a device-side-assert burst, a request loop). Lines skipped so far and not yet counted: `folded`.
    fold: Callable[[], bool] | None = None
    # ... and the kind of segment a line would be counted in now, or None while a structure is open: a line whose
    # template (and patterns hit) `fold` said yes to before, anywhere in the input, is skipped while this is the kind
    # that line had (a kernel log's or a server's lines recur between other lines, not only in runs)
    quiet: Callable[[], str | None] | None = None
    # ... and asked about a context line the prefilter hit nothing on (line number, bytes, bytes with digits masked):
    # True when it counted the line itself (a traceback's code and marker lines), so it is not handed out
    filler: Callable[[int, bytes, bytes], bool] | None = None
    folded: int = 0
    # block mode: the bytes of the line just handed out with digits masked (pylog.BYTES_TEMPLATE), when the reader
    # worked them out (an ASCII line up to MAX_LINE); None otherwise
    template: bytes | None = None
    progress: Callable[[str, int, int | None], None] | None = None  # (name, bytes read, size)

    def lines(self, prefilter: Callable[[], Any] | None = None) -> Generator[tuple[int, str], None, None]:
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
                    if self._chunks_done < self._chunks_split:  # chunks read ahead: numbered once they are done
                        self._cut_after.append(self._chunks_split)
                    elif self._lines_done + 1 not in self._cut_lines:
                        self._cut_lines.append(self._lines_done + 1)
                else:
                    pending = data
                continue
            self._chunks_split += 1
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
            self._chunk_done(lineno)
        self.total_lines = lineno

    def _cut(self, lineno: int, text: str) -> str:
        if len(text) > MAX_LINE:
            if lineno not in self._cut_lines:
                self._cut_lines.append(lineno)
            return text[:MAX_LINE]
        return text

    def _selected_lines(self, blocks: Iterator[bytes], prefilter: Any) -> Iterator[tuple[int, str]]:
        helper = _ScanHelper.start(self, prefilter)
        try:
            yield from self._selected(blocks, prefilter, helper)
        finally:
            if helper is not None:
                helper.close()

    def _selected(self, blocks: Iterator[bytes], prefilter: Any, helper: _ScanHelper | None) -> Iterator[tuple[int, str]]:
        base = 0  # lines before this chunk
        owed: list[tuple[int, Any]] = []  # context lines still owed from the previous chunk, each with its rule
        done = 0
        selected = 0
        stage = _Stage(prefilter)
        frame_only = getattr(prefilter, "frame_only", None)  # a frame line with no other hit: sniff may count it
        inert: dict[bytes, tuple[Any, str]] = {}  # template -> (patterns hit, segment kind) of lines that changed nothing
        chunks = self._split(blocks)
        staged = helper.staged(chunks, stage) if helper is not None else ((chunk, stage(chunk)) for chunk in chunks)
        for chunk, (pids_by_line, ranges, n_lines, runs, starts) in staged:
            if owed:
                ranges[:0] = [(0, 0, n - 1, rule) for n, rule in _owed(owed)]
            run_pids = RunPids(pids_by_line, runs, prefilter.digit_ids) if runs and starts is not None else None
            if run_pids is not None:
                ranges += run_pids.ranges(starts)
            lookup: Any = run_pids or pids_by_line
            self.line_hints = LineHints(base + 1, lookup, prefilter.line_hint)
            owed = []
            covered, next_offset = -1, 0  # the last line index yielded, and where the next one starts
            fold, quiet, filler = self.fold, self.quiet, self.filler
            shape, shape_at, shape_pids = None, -2, None  # the last line handed out: its template, index, patterns
            folding = False  # fold() said yes since that line: nothing was handed out since, so it still holds
            for start, first, last, more in sorted(ranges, key=lambda r: r[1]):
                if last <= covered:
                    continue
                offset, index = (start, first) if first > covered else (next_offset, covered + 1)
                while index <= last and index < n_lines:
                    nl = chunk.find(b"\n", offset)
                    raw = chunk[offset:] if nl < 0 else chunk[offset:nl]
                    if more is not None and index > first and _ends(more, raw):
                        last = index - 1  # the structure ended here, as its parser will see
                        break
                    selected += 1
                    template = None
                    if fold is not None and len(raw) <= MAX_LINE and raw.isascii():
                        # ASCII and short: decoding and cutting it would add no note that the last one did not
                        template = raw.translate(pylog.BYTES_TEMPLATE)
                        pids = lookup.get(index)
                        if (pids is None or pids == frame_only) and filler is not None \
                                and filler(base + index + 1, raw, template):
                            folding, shape, shape_at = False, None, -2
                            offset, index = nl + 1, index + 1
                            continue
                        if index == shape_at + 1 and template == shape and pids == shape_pids and (folding or fold()) or (
                                (known := inert.get(template)) is not None and known[0] == pids and quiet is not None
                                and quiet() == known[1]):  # or a template seen inert before, elsewhere in the input
                            self.folded += 1
                            folding, shape, shape_pids = True, template, pids
                            shape_at, offset, index = index, nl + 1, index + 1
                            if run_pids is not None and more is None:
                                # the rest of its run is the same line but digits, with the same hits: folded too
                                stop = min(run_pids.repeats_after(shape_at, last), n_lines - 1)
                                if stop > shape_at:
                                    self.folded += stop - shape_at
                                    selected += stop - shape_at
                                    shape_at, index, offset = stop, stop + 1, starts[stop + 1]
                            continue
                        folding, shape, shape_at, shape_pids = False, template, index, pids
                    self.template = template
                    yield base + index + 1, self._cut(base + index + 1, self._decode(raw))
                    if template is not None and fold is not None and quiet is not None and len(raw) <= INERT_LINE \
                            and raw.strip() and fold():
                        kind = quiet()
                        if kind is not None:
                            if len(inert) >= INERT_TEMPLATES:
                                inert.clear()
                            inert[template] = (pids, kind)
                    offset, index = nl + 1, index + 1
                covered, next_offset = index - 1, offset
                if last >= n_lines:
                    owed.append((last - n_lines + 1, more.rule if type(more) is _Walked else more))
            base += n_lines
            self.consumed += len(chunk)
            self._chunk_done(base)
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
        self.consumed = 0  # bytes of the chunks already handed out, the lines the prefilter skipped included
        self._chunks_split = self._chunks_done = 0  # chunks _split has yielded; chunks handed out
        self._cut_after: list[int] = []  # cut lines found past chunks read ahead: the count of chunks before each

    def _chunk_done(self, lines: int) -> None:
        """A chunk's lines are handed out: `lines` so far."""
        self._lines_done = lines
        self._chunks_done += 1
        while self._cut_after and self._cut_after[0] == self._chunks_done:
            self._cut_after.pop(0)
            if lines + 1 not in self._cut_lines:
                self._cut_lines.append(lines + 1)


class _Stage:
    """A chunk's prefilter work, which needs nothing but the chunk (and the chunks before it, through `dense`):
    the pattern ids by line index, the ranges of lines to read (start offset, first and last index, what ends
    the structure), the chunk's line count and, where its repeats were left out, their runs and the line starts."""

    __slots__ = ("prefilter", "repeats", "dense", "wait")

    def __init__(self, prefilter: Any) -> None:
        self.prefilter = prefilter
        self.repeats = getattr(prefilter, "repeat_hits", None)
        self.dense, self.wait = False, 0  # the last chunk hit many of its lines; chunks before the next look for repeats

    def __call__(self, chunk: bytes) -> tuple[dict[int, set[int]], list[tuple[int, int, int, Any]], int, Any, Any]:
        prefilter = self.prefilter
        ranges: list[tuple[int, int, int, Any]] = []
        last_offset, last_index = 0, 0
        pids_by_line: dict[int, set[int]] = {}
        # hits come in offset order; those on the line of the previous hit (a line that an error
        # pattern and a signal or two all match) share its index, start and pid set: the newline
        # counting is done once per line, and a second context-free range of one line is not added
        line_end, line_pids, start = -1, set(), 0
        ruled = False  # some range has a rule that ends its context (see _resolve)
        dense = self.dense
        reduced = self.repeats(chunk) if self.repeats is not None and (dense or REPEATS_ALWAYS) and self.wait <= 0 \
            else None
        if reduced is None:
            hits, runs, starts = prefilter.hits(chunk), None, None
            if dense and not REPEATS_ALWAYS:
                self.wait = 4  # too few repeats for leaving them out to pay: look again in a few chunks
        else:
            hits, runs, starts = reduced
        self.wait -= 1
        for end, context, pid in sorted(hits):
            at = max(end - 1, 0)
            if at > line_end:
                last_index += chunk.count(b"\n", last_offset, at)
                last_offset = at
                start = chunk.rfind(b"\n", 0, at) + 1
                line_end = chunk.find(b"\n", at)
                if line_end < 0:
                    line_end = len(chunk)
                line_pids = pids_by_line[last_index] = {pid}
                if not context:
                    ranges.append((start, last_index, last_index, None))
                    continue
            else:
                line_pids.add(pid)
                if not context:
                    continue
            rule = prefilter.context_rule(pid, chunk[start:at + 1])
            ranges.append((start, last_index, last_index + context, rule))
            ruled = ruled or rule is not None
        # one pass over the chunk counts its lines: up to the last hit above, the rest here
        n_lines = last_index + chunk.count(b"\n", last_offset) + (0 if chunk.endswith(b"\n") else 1)
        self.dense = reduced is not None or len(pids_by_line) * 4 >= n_lines
        if not ruled:  # no structure with a rule (most chunks of a busy server's log): nothing to read ahead
            return pids_by_line, ranges, n_lines, runs, starts
        # the runs' ranges (which the reader adds) hand lines out too: a structure that starts inside one reads on after it
        runs_ranges = [(starts[first], first, last, None) for first, last in runs
                       if pids_by_line.get(first, set()) - prefilter.digit_ids] if runs and starts is not None else []
        return pids_by_line, _resolve(chunk, ranges, n_lines, runs_ranges), n_lines, runs, starts


class _ScanHelper:
    """A second process that shares the chunks' prefilter work (_Stage) of a large regular file with this one.

    Chunks are claimed in order through a counter the two processes share: the helper reads the file itself,
    through the same chunking, claims the next chunk nobody has and sends its result down a pipe; this process
    reads the lines each chunk selects, in order, and works out a chunk itself when the helper has not claimed it,
    or claims one ahead instead of waiting (it holds at most AHEAD chunks read ahead). Which process scans a chunk
    changes no finding (every path gives the same findings). A result is checked against this process's own chunk
    (length and last bytes); a mismatch, an error or the helper's end leaves the rest to this process."""

    AHEAD = 4

    def __init__(self, pid: int, fd: int, claimed: Any, lock: Any) -> None:
        self.pid, self.fd, self.claimed, self.lock = pid, fd, claimed, lock
        self.buffer = bytearray()
        self.results: dict[int, Any] = {}
        self.alive = True
        self.used = 0  # chunks whose scan came from the helper

    @classmethod
    def start(cls, source: TextSource, prefilter: Any) -> _ScanHelper | None:
        raw = getattr(source.stream, "raw", None)
        if not isinstance(raw, LazyFile) or (source.size or 0) < PARALLEL_MIN or not hasattr(os, "fork") \
                or os.environ.get("DIAGNOSE_ONE_CORE") or _cores() < 2:
            return None
        import threading

        if threading.active_count() > 1:  # a service's or a progress thread: forking would copy their locks' state
            return None
        try:
            import mmap
            import multiprocessing

            lock = multiprocessing.get_context("fork").Lock()
            claimed = mmap.mmap(-1, 8)  # shared with the helper: the index of the next chunk nobody has claimed
            read, write = os.pipe()
        except (OSError, ImportError, ValueError):
            return None
        try:
            import fcntl

            fcntl.fcntl(write, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)  # a few chunks' results ahead
        except (OSError, ImportError):
            pass
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return None
        if pid == 0:  # the helper: never returns, never runs the parent's exit handlers or flushes its buffers
            code = 0
            try:
                os.close(read)
                import signal

                signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it ends this one
                _helper_main(source, raw.path, prefilter, write, claimed, lock)
            except BaseException:  # noqa: BLE001 - the parent sees the pipe end and does the work itself
                code = 1
            os._exit(code)
        os.close(write)
        return cls(pid, read, claimed, lock)

    def _claim(self, index: int, ahead: int) -> int | None:
        """Claims `index` when nobody has, else the next unclaimed chunk up to `ahead` (this process's to scan), or
        None when the helper has claimed everything up to there."""
        if not self.lock.acquire(timeout=LOCK_WAIT):  # the helper died holding it (killed mid-claim): go on alone
            self.alive = False
            return index
        try:
            at = _COUNTER.unpack_from(self.claimed)[0]
            if at <= index:
                _COUNTER.pack_into(self.claimed, 0, index + 1)
                return index
            if at <= ahead:
                _COUNTER.pack_into(self.claimed, 0, at + 1)
                return at
        finally:
            self.lock.release()
        return None

    def _pump(self, wait: bool) -> None:
        """Reads what the helper has sent (waiting for some when `wait`), keeping every whole result."""
        if not self.alive:
            return
        if not wait:
            import select

            if not select.select([self.fd], [], [], 0)[0]:
                return
        try:
            data = os.read(self.fd, 1 << 20)
        except OSError:
            data = b""
        if not data:
            self.alive = False
            return
        self.buffer += data
        while len(self.buffer) >= _FRAME.size:
            index, size = _FRAME.unpack_from(self.buffer)
            if len(self.buffer) < _FRAME.size + size:
                break
            try:
                self.results[index] = pickle.loads(self.buffer[_FRAME.size:_FRAME.size + size])
            except Exception:  # noqa: BLE001 - a helper that sends garbage is not listened to again
                self.alive = False
                return
            del self.buffer[:_FRAME.size + size]

    def staged(self, chunks: Iterator[bytes], stage: _Stage) -> Iterator[tuple[bytes, Any]]:
        """Each chunk of `chunks` with its stage result, in order, scanned by whichever process claimed it."""
        ahead: list[bytes] = []  # chunks read past the one handed out last
        mine: dict[int, Any] = {}  # results of chunks this process claimed ahead
        index = -1
        source = iter(chunks)
        while True:
            if ahead:
                chunk = ahead.pop(0)
            else:
                following = next(source, None)
                if following is None:
                    return
                chunk = following
            index += 1
            result = mine.pop(index, None)
            while result is None:
                got = self.results.pop(index, None)
                if got is not None:
                    size, tail, staged = got
                    if size == len(chunk) and tail == chunk[-16:]:
                        result = staged
                        self.used += 1
                        break
                    self.alive = False  # the file changed under the helper: this process goes on alone
                if not self.alive:
                    result = stage(chunk)
                    break
                self._pump(wait=False)
                if index in self.results:
                    continue
                claim = self._claim(index, index + self.AHEAD)
                if claim == index:
                    result = stage(chunk)
                elif claim is not None:  # the helper has this one: scan one ahead rather than wait
                    while len(ahead) < claim - index:
                        more = next(source, None)
                        if more is None:
                            break
                        ahead.append(more)
                    if len(ahead) >= claim - index:
                        mine[claim] = stage(ahead[claim - index - 1])
                else:
                    self._pump(wait=True)
            yield chunk, result

    def close(self) -> None:
        if self.fd < 0:
            return
        os.close(self.fd)
        self.fd, self.alive = -1, False
        import signal
        from contextlib import suppress

        with suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with suppress(OSError):
            os.waitpid(self.pid, 0)


_FRAME = struct.Struct("<qq")  # chunk index, pickled size
LOCK_WAIT = 5.0  # seconds: the claim lock is held for microseconds; a longer wait means its holder died
_COUNTER = struct.Struct("<q")


def _helper_main(source: TextSource, path: Path, prefilter: Any, fd: int, claimed: Any, lock: Any) -> None:
    stage = _Stage(prefilter)
    parent = os.getppid()
    with open(path, "rb") as stream:
        head = stream.read(SMALL_INPUT)
        more = stream.read(1) if len(head) == SMALL_INPUT else b""
        index = -1
        for chunk in source._split(_blocks(head + more, stream)):
            index += 1
            while not lock.acquire(timeout=LOCK_WAIT):
                if os.getppid() != parent:
                    return  # the reader was killed (holding the lock): nobody will read what this sends
            try:
                at = _COUNTER.unpack_from(claimed)[0]
                if at <= index:
                    _COUNTER.pack_into(claimed, 0, index + 1)
            finally:
                lock.release()
            if at > index:
                continue  # the parent has this one
            data = pickle.dumps((len(chunk), chunk[-16:], stage(chunk)), protocol=pickle.HIGHEST_PROTOCOL)
            try:
                os.write(fd, _FRAME.pack(index, len(data)))
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            except BrokenPipeError:
                return  # the parent is done with this input


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _Walked:
    """The rule of a range that runs past its chunk, already read over the chunk's lines (by `_resolve`): it ends
    none of them again, and goes on reading the next chunk's lines in the state those left it in."""

    __slots__ = ("rule",)

    def __init__(self, rule: Any) -> None:
        self.rule = rule

    @staticmethod
    def ends(raw: bytes) -> bool:
        return False


def _resolve(chunk: bytes, ranges: list[tuple[int, int, int, Any]], n_lines: int, also: list[tuple[int, int, int, Any]]
             ) -> list[tuple[int, int, int, Any]]:
    """Each range's last line, its structure's rule read line by line (where a traceback or a table ends), worked out
    with the rest of the chunk's prefilter work (by the helper process, for the chunks it scans) rather than as the
    lines are handed out: a range comes back with no rule, or, when it runs past the chunk, with its rule `_Walked`.
    As the reader hands lines out, a range that starts among lines already handed out (by `ranges` or the runs'
    ranges `also`, which the reader adds) reads on from the first line after them, so each line is read once."""
    out: list[tuple[int, int, int, Any]] = []
    covered, next_offset = -1, 0  # the last line handed out so far, and where the next starts (-1: not known here)
    marked = [(r, True) for r in ranges] + [(r, False) for r in also] if also else [(r, True) for r in ranges]
    for (start, first, last, rule), own in sorted(marked, key=lambda m: m[0][1]):
        if rule is None:
            if last > covered:
                covered, next_offset = min(last, n_lines - 1), -1
        elif last > covered:
            if first > covered:
                offset, index = start, first
            else:  # it starts among lines handed out already: it reads on from the first after them
                offset, index = next_offset, covered + 1
                if offset < 0:
                    offset = start
                    for _ in range(covered + 1 - first):
                        offset = chunk.find(b"\n", offset) + 1
            while index <= last and index < n_lines:
                nl = chunk.find(b"\n", offset)
                if index > first and _ends(rule, chunk[offset:] if nl < 0 else chunk[offset:nl]):
                    last = index - 1  # the structure ended here, as its parser will see
                    break
                offset, index = nl + 1, index + 1
            covered, next_offset = index - 1, offset
        if own:
            out.append((start, first, last, _Walked(rule) if rule is not None and last >= n_lines else None))
    return out


MAX_OWED = 4  # ranges with a rule carried into the next chunk (a crafted input opens a traceback on every line)


def _owed(owed: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """The context owed to the next chunk, one range per structure still open (its rule goes on reading) and one for
    the plain contexts (the longest): folding them into one, as before, let a plain context's rule-less count carry a
    traceback's 2000 lines whole into the next chunk."""
    plain = max((n for n, rule in owed if rule is None), default=0)
    ruled = [(n, rule) for n, rule in owed if rule is not None][-MAX_OWED:]
    return ruled + [(plain, None)] if plain else ruled


def _ends(rule: Any, raw: bytes) -> bool:
    """Does the line `raw` end a structure's context? `rule`: the prefixes its lines start with
    (after their indent), or an object that follows the structure line by line."""
    if isinstance(rule, tuple):
        return bool(raw.strip()) and not raw.lstrip().startswith(rule)
    return bool(rule.ends(raw))


def _blocks(first: bytes, stream: BinaryIO) -> Iterator[bytes]:
    if first:
        yield first
    while True:
        block = stream.read(BLOCK)
        if not block:
            return
        yield block


@record(eq=False)
class ReadResult:
    """What reading the inputs gave: the text sources, what was skipped and why, and the inflate budget spent."""

    sources: list[TextSource] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    budget: InflateBudget = field(default_factory=InflateBudget)  # inflated bytes, per input and in all


def open_inputs(paths: list[str], stdin: BinaryIO | None = None, budget: InflateBudget | None = None) -> ReadResult:
    """Every readable text among `paths` ('-' is stdin); what cannot be read goes to skipped, with
    what it is and why (a FIFO, a symlink not followed, an unreadable file ...)."""
    result = ReadResult(budget=budget or InflateBudget())
    for raw in paths:
        if raw == "-":
            stream = stdin if stdin is not None else sys.stdin.buffer
            add_stream(result, "<stdin>", stream)
            continue
        path = Path(raw)
        if path.is_dir():
            _add_directory(result, path)
        elif path.exists():
            _add_file(result, path)
        elif path.is_symlink():
            result.skipped.append(Skipped(raw, f"dangling symlink to {os.readlink(path)}"))
        else:
            result.skipped.append(Skipped(raw, "no such file or directory"))
    return result


def _add_directory(result: ReadResult, top: Path) -> None:
    """Every file under `top` (symlinks to files included), in path order; every other entry is a
    skipped one with what it is. Symlinked directories are not followed (they can loop)."""
    found: list[tuple[str, Path, str | None]] = []  # (sort key, path, why it is not read)
    pending = [top]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            found.append((str(folder), folder, f"cannot list this directory: {exc.strerror or exc}"))
            continue
        for entry in entries:
            path = Path(entry.path)
            why = None
            try:
                if entry.is_symlink():
                    target = os.readlink(entry.path)
                    if not path.exists():
                        why = f"dangling symlink to {target}"
                    elif path.is_dir():
                        why = f"symlink to a directory ({target}), not followed"
                elif entry.is_dir(follow_symlinks=False):
                    pending.append(path)
                    continue
            except OSError as exc:
                why = f"cannot read: {exc.strerror or exc}"
            found.append((entry.path, path, why))
    if not found:
        result.skipped.append(Skipped(str(top), "empty directory"))
    for _, path, why in sorted(found, key=lambda f: f[0]):
        if why:
            result.skipped.append(Skipped(str(path), why))
        else:
            _add_file(result, path, inside_directory=True)


def _special(path: Path) -> str | None:
    """What a path that is not a regular file is, in words."""
    import stat

    mode = path.stat().st_mode
    for test, what in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def _add_file(result: ReadResult, path: Path, inside_directory: bool = False) -> None:
    name = str(path)
    try:
        special = _special(path)
    except OSError as exc:
        result.skipped.append(Skipped(name, f"cannot read: {exc.strerror or exc}"))
        return
    if special and inside_directory:  # only what the user named is read from a pipe or a device
        result.skipped.append(Skipped(name, f"{special} inside a directory: not read (reading it could block)"))
        return
    if special in ("a FIFO", "a character device"):
        try:  # O_NONBLOCK: a FIFO nobody writes to is empty at once instead of blocking on open
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
        except OSError as exc:
            result.skipped.append(Skipped(name, f"cannot read {special}: {exc.strerror or exc}"))
            return
        add_stream(result, name, open(fd, "rb", buffering=0), empty=f"empty ({special} with nothing written to it)")
        return
    if special:
        result.skipped.append(Skipped(name, f"{special}: not read"))
        return
    if not os.access(path, os.R_OK):
        result.skipped.append(Skipped(name, "permission denied"))
        return
    stream = LazyFile(path)
    try:
        size = stream.open_now()
    except OSError as exc:
        result.skipped.append(Skipped(name, exc.strerror or str(exc)))
        return
    add_stream(result, name, stream)
    stream.park()  # a thousand files in a folder must not hold a thousand descriptors
    if result.sources and result.sources[-1].name == name:
        result.sources[-1].size = size


class LazyFile(io.RawIOBase):
    """A regular file opened only while it is read: `park()` closes it and remembers where it was,
    the next read opens it again there; the end of the file closes it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh: io.FileIO | None = None
        self.offset = 0
        self.ended = False

    def readable(self) -> bool:
        return True

    def open_now(self) -> int:
        self.fh = open(self.path, "rb", buffering=0)  # noqa: SIM115 - closed by park() or at the end
        self.fh.seek(self.offset)
        return os.fstat(self.fh.fileno()).st_size

    def park(self) -> None:
        if self.fh is not None:
            self.offset = self.fh.tell()
            self.fh.close()
            self.fh = None

    def readinto(self, buffer: Any) -> int:
        if self.ended:
            return 0
        if self.fh is None:
            self.open_now()
        assert self.fh is not None
        n = self.fh.readinto(buffer) or 0
        if n == 0:
            self.ended = True
            self.park()
        return n

    def close(self) -> None:
        self.park()
        super().close()


def add_stream(result: ReadResult, name: str, stream: Any, depth: int = 0, empty: str = "empty") -> None:
    """`stream`: any readable binary file object (a file, stdin, BytesIO, a decompressor)."""
    buffered = stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream)
    try:
        head = buffered.peek(SNIFF)[:SNIFF]
    except (OSError, EOFError, ValueError) as exc:
        result.skipped.append(Skipped(name, f"cannot read: {exc}"))
        return
    if not head:
        damage = getattr(stream, "error", None)  # a compressed stream corrupt from its first block
        result.skipped.append(Skipped(name, damage or empty))
        return
    kind = next((k for magic, k in MAGIC.items() if head.startswith(magic)), None)
    if kind in ("gzip", "bzip2", "xz"):
        if depth > 2:
            result.skipped.append(Skipped(name, f"{kind} nested too deep"))
            return
        add_stream(result, name, Decompressing(buffered, kind, name, result.budget), depth + 1)
        return
    if kind in ("zip", "zstd"):  # .zip and .zst (.tar.zst) bundles: diagnose/artifacts/archives.py
        from diagnose.artifacts.archives import add_archive

        add_archive(result, name, buffered, kind, depth)
        return
    if kind is not None:
        result.skipped.append(
            Skipped(name, f"{kind}-compressed data: unpack it first (gzip, bzip2, xz, zstd, zip and tar are read)")
        )
        return
    if _is_tar(head):
        _add_tar(result, name, buffered, depth)
        return
    encoding = _bom_encoding(head)
    notes = []
    if encoding == "utf-16":
        if _looks_binary_utf16(head):
            result.skipped.append(Skipped(name, "binary data, not text (it starts like UTF-16 but does not read as it)"))
            return
        notes.append(f"read as UTF-16 (it starts with the byte-order mark {head[:2].hex(' ').upper()})")
    elif _looks_binary(head):
        result.skipped.append(Skipped(name, "binary data, not text"))
        return
    if encoding and encoding != "utf-8":
        buffered = Recoded(buffered, encoding, BLOCK)  # type: ignore[assignment]
    result.sources.append(TextSource(name, buffered, notes=notes))


def _is_tar(head: bytes) -> bool:
    return len(head) > 262 and head[257:262] == b"ustar"


MEMBER_IN_MEMORY = 8 << 20  # a tar member up to this size is held in memory; a larger one in a temporary file
TAR_KINDS = {"SYMTYPE": "a symlink", "LNKTYPE": "a hard link", "FIFOTYPE": "a FIFO", "CHRTYPE": "a character device",
             "BLKTYPE": "a block device"}


def _tar_member_kind(member: Any) -> str:
    import tarfile

    for attr, what in TAR_KINDS.items():
        if member.type == getattr(tarfile, attr):
            target = f" to {member.linkname}" if member.issym() or member.islnk() else ""
            return what + target
    return f"a member of type {member.type!r}"


def _add_tar(result: ReadResult, name: str, stream: BinaryIO, depth: int = 0) -> None:
    import tarfile  # imported here: most runs read no bundle
    import tempfile

    ended = False
    counted = _Counted(stream)
    try:
        archive = tarfile.open(fileobj=counted, mode="r|")
        for member in archive:
            member_name = f"{name}:{member.name}"
            if member.isdir():
                continue  # its files are members of their own
            if not member.isfile():
                result.skipped.append(Skipped(member_name, f"{_tar_member_kind(member)} in the bundle: not read"))
                continue
            data = archive.extractfile(member)
            if data is None:
                continue
            # stream mode: a member must be consumed before the next: held in memory up to
            # MEMBER_IN_MEMORY, spilled to a temporary file past it, never past the inflate limit
            if member.size > result.budget.per_input:
                result.skipped.append(Skipped(member_name, f"bundle member of {member.size} bytes, over the limit of "
                                                           f"{result.budget.per_input}: not read"))
                continue
            if member.size <= MEMBER_IN_MEMORY:
                held: Any = io.BytesIO(data.read())
            else:
                held = tempfile.TemporaryFile()  # noqa: SIM115 - read later, closed with the process
                while chunk := data.read(BLOCK):
                    held.write(chunk)
                held.seek(0)
            add_stream(result, member_name, held, depth=max(depth, 1))
        ended = True
        counted.read(1 << 20)  # the end-of-archive blocks and padding
        if counted.count - archive.offset < tarfile.BLOCKSIZE:  # tarfile ends quietly where the data does
            result.skipped.append(Skipped(name, "truncated tar archive (no end-of-archive marker); the members "
                                                "before the cut were read"))
    except (tarfile.TarError, OSError, EOFError) as exc:
        result.skipped.append(Skipped(name, f"truncated or corrupt tar archive ({exc}); members before it were read"))
    damage = getattr(getattr(stream, "raw", None), "error", None)
    if ended and damage:
        result.skipped.append(Skipped(name, f"{damage}: the bundle's members before it were read"))


class _Counted(io.RawIOBase):
    """Counts the bytes read through it (where a tar archive's data ends)."""

    def __init__(self, inner: BinaryIO) -> None:
        self.inner, self.count = inner, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.inner.read(len(buffer))
        buffer[: len(data)] = data
        self.count += len(data)
        return len(data)


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


def _looks_binary_utf16(head: bytes) -> bool:
    """Bytes after a UTF-16 byte-order mark that are no text: NULs and control characters once
    decoded, or mostly not ASCII (random bytes read as UTF-16 are CJK and private-use characters)."""
    text = head[2:].decode("utf-16-le" if head[:1] == b"\xff" else "utf-16-be", "replace")
    if not text:
        return False
    control = sum(1 for c in text if c < "\t" or "\r" < c < " " and c != "\x1b" or c == "\ufffd")
    ascii_share = sum(1 for c in text if c.isascii()) / len(text)
    return control > len(text) * 0.1 or ascii_share < 0.3
