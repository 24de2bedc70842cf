"""Tell the artifacts apart inside one input and parse each as it streams past.

A paste often holds several artifacts: a traceback, then an `nvidia-smi` table, then a
`pip freeze`. `scan` reads the lines once, assigns each line a kind, parses the structured
blocks into Facts, and hands every line to the caller (the matcher) with its kind and number.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from diagnose import lazy_re
from diagnose.artifacts import host, nvidia_smi, nvsmi_query, pip, pylog, topology
from diagnose.artifacts.reader import TextSource
from diagnose.model import Facts, InputSummary
from diagnose.record import field, record

# (line number, kind, text, block-mode hints or None); True back: it recorded nothing for that line, and would
# record nothing for another of its shape (digits aside, same patterns hit), so the reader may skip repeats
OnLine = Callable[[int, str, str, Any], "bool | None"]
LINE_FACT_KINDS = {"server-log", "traceback", "dmesg", "install-log", "collect-env"}


@record
class Block:
    """A structured artifact that spans lines: how it starts, goes on, ends, and is parsed."""

    kind: str
    first: Callable[[str], bool]
    more: Callable[[str, list[str]], bool]
    parse: Callable[[list[str]], Facts | None]
    last: Callable[[str], bool] | None = None
    hint: tuple[str, ...] = ()  # a first line holds one of these: a cheap test before `first`


def _csv_more(text: str, lines: list[str]) -> bool:
    if "," not in text:
        return False
    return nvidia_smi.is_csv_header(lines[0]) or nvidia_smi.is_headerless_csv_row(text)


def _pip_list_more(text: str, lines: list[str]) -> bool:
    return bool(pip.LIST_ROW.match(text.strip())) or text.startswith("---")


def _pip_list_parse(lines: list[str]) -> Facts:
    rows = (pip.LIST_ROW.match(t.strip()) for t in lines)
    return Facts(packages={pip.canonical(m[1]): m[2] for m in rows if m and m[1] != "Package"})


def _env_report_more(text: str, lines: list[str]) -> bool:
    # vLLM's collect_env (0.10+) frames its sections with ===== lines and indented titles
    return not text.strip() or ":" in text or text.startswith(("[pip", "[conda", "GPU ", " ", "\t", "/", "="))


BLOCKS: dict[str, Block] = {
    "nvidia-smi": Block(
        "nvidia-smi", nvidia_smi.is_table_start,
        lambda t, lines: nvidia_smi.is_table_line(t) and bool(t.strip() or lines[-1].strip()),
        nvidia_smi.parse_table, hint=("NVIDIA-SMI",)),
    "nvidia-smi-q": Block(
        "nvidia-smi-q", nvsmi_query.is_query_start, lambda t, _: nvsmi_query.is_query_line(t), nvsmi_query.parse_query,
        hint=("NVSMI LOG",)),
    "nvidia-smi-xml": Block(
        "nvidia-smi-q", nvsmi_query.is_xml_start, lambda t, _: True,
        lambda lines: nvsmi_query.parse_xml("\n".join(lines)), last=nvsmi_query.is_xml_end,
        hint=("nvidia_smi_log", "nvsmi_device")),
    "nvidia-smi-topo": Block(
        "nvidia-smi-topo", topology.is_matrix_header, lambda t, _: topology.is_matrix_line(t), topology.parse_matrix,
        hint=("GPU0",)),
    "nvidia-smi-list": Block(
        "nvidia-smi", topology.is_list_line,
        lambda t, _: topology.is_list_line(t) or bool(topology.NVLINK.match(t)), topology.parse_list,
        hint=("UUID: GPU-",)),
    "nvidia-smi-csv": Block(
        "nvidia-smi-csv", lambda t: "," in t and (nvidia_smi.is_csv_header(t) or nvidia_smi.is_headerless_csv_row(t)),
        _csv_more, nvidia_smi.parse_csv,
        hint=(*nvidia_smi.GPU_WORDS, "driver_version", "compute_cap", "memory.total", "pci.bus_id", "gpu_name", "index")),
    "pip-list": Block("pip-freeze", lambda t: bool(pip.LIST_HEADER.match(t)), _pip_list_more, _pip_list_parse,
                      hint=("Package",)),
    "pip-list-json": Block(
        "pip-list-json", lambda t: t.lstrip().startswith('[{"name"'), lambda t, _: True,
        lambda lines: Facts(packages=pip.parse_list_json("\n".join(lines)) or {}), last=lambda t: t.rstrip().endswith("]"),
        hint=('[{"name"',)),
    "json-doc": Block(
        "bundle-manifest", lambda t: t.rstrip() == "{", lambda t, _: True, lambda lines: None,
        last=lambda t: t.rstrip() == "}", hint=("{",)),
    "env-report": Block(
        "collect-env", host.is_env_report_start, _env_report_more, host.parse_env_report,
        hint=("Collecting environment", "PyTorch version", "Python")),
}
SEGMENT_KIND = {"traceback": "server-log"}  # tracebacks are reported as part of their log
MAX_SEGMENTS = 64  # parts of one input reported by kind; the rest of the input is one "mixed" part
MIXED = "mixed"
MAX_BLOCK = 4000  # lines of one structured block kept for its parser
MAX_FAILURE_NOTES = 5
MAX_NOTES = 12  # notes about one input (the rest counted), on each of its segments up to MAX_NOTED_SEGMENTS,
MAX_NOTED_SEGMENTS = 20  # else on its first: the output stays linear in the input
TIME_BUDGET_S = 20.0  # seconds one input may take to read, plus TIME_PER_MB_S per MiB of its lines
TIME_PER_MB_S = 1.0

FILLER_START = (b" ", b"\t", b"^", b"~")  # how a traceback's code and marker lines start under its prefix
PLAIN_TEMPLATES = 4096  # templates remembered per input (the set starts over past it)
HINTS = lazy_re.compile("|".join(re.escape(h) for spec in BLOCKS.values() for h in spec.hint))
# each block's hints as one search, so that a line with a common hint word ("index", "GPU") costs one C-level
# search per block instead of a Python loop over every hint
BLOCK_HINTS = {name: lazy_re.compile("|".join(re.escape(h) for h in spec.hint)) for name, spec in BLOCKS.items() if spec.hint}


@record(eq=False)
class ScanResult:
    """One scan's results: the facts, the segments by kind, the tracebacks and the cut-line bookkeeping."""

    facts: Facts = field(default_factory=Facts)
    segments: list[InputSummary] = field(default_factory=list)
    tracebacks: list[pylog.Traceback] = field(default_factory=list)
    cut_at: int | None = None  # the input ends inside a traceback's frames, from this line (pylog)
    last_frame: int | None = None  # ... and the line of its last frame
    lines: int = 0


class _Scanner:
    def __init__(self, source: TextSource, on_line: OnLine, frame_known: Callable[[str], bool] | None = None) -> None:
        self.source = source
        self.on_line = on_line
        self.result = ScanResult()
        self.tracker = pylog.TracebackTracker()
        self.heading: str | None = None  # the last `### Heading` of an issue form, until its value
        self.block: str | None = None
        self.block_lines: list[str] = []
        self.failures = 0  # lines or blocks a parser could not read (each a note, up to MAX_FAILURE_NOTES)
        self.plain: set[bytes] = set()  # templates of lines that started nothing and stated no fact
        self.plain_kernel: set[bytes] = set()  # the same for kernel (dmesg) lines, which the traceback tracker skips
        self._kernel_line = False
        self._fell_through = False  # the last line's kind came from the traceback tracker alone
        self._plain = False  # the last line was of a known plain template (see _parse)
        self._inert = False  # ... and nothing downstream recorded anything for it (see unchanged)
        self.frame_known = frame_known  # would the matcher record nothing for this frame line? (see scan)
        self._row_at = -2  # the line of the last headerless `pip list` row (see pip.parse_headerless_row)
        self._prefix_bytes: dict[str, bytes] = {}  # traceback prefixes as bytes (see filler)
        self._filler_keys: dict[bytes, bytes] = {}  # a line's masked bytes -> its template, or b"" for an exception line

    # --- segments -------------------------------------------------------------------
    def _count(self, lineno: int, kind: str, blank: bool) -> None:
        kind = SEGMENT_KIND.get(kind, kind)
        segments = self.result.segments
        if segments and (blank or segments[-1].kind == kind):
            segments[-1].lines += 1
            return
        if len(segments) >= MAX_SEGMENTS:  # kinds interleaved line by line (a busy kernel log, a crafted input)
            last = segments[-1]
            if last.kind != MIXED:
                segments.append(InputSummary(self.source.name, MIXED, 1, first_line=lineno))
            else:
                last.lines += 1
            return
        segments.append(InputSummary(self.source.name, kind, 1, first_line=lineno))

    # --- structured blocks ----------------------------------------------------------
    def _close_block(self) -> None:
        spec = BLOCKS.get(self.block or "")
        if self.block == "json-doc":
            parsed_doc = host.parse_json_doc("\n".join(self.block_lines))
            if parsed_doc is not None:
                self.result.facts.merge(parsed_doc[0])
                self.source.notes.extend(parsed_doc[1])
        elif spec is not None and self.block_lines:
            parsed = spec.parse(self.block_lines)
            if parsed is not None:
                self.result.facts.merge(parsed)
        self.block, self.block_lines = None, []

    def _continue_block(self, text: str) -> bool:
        spec = BLOCKS[self.block or ""]
        keep = spec.more(text, self.block_lines)
        if keep and len(self.block_lines) < MAX_BLOCK:
            self.block_lines.append(text)
        if not keep or (spec.last is not None and spec.last(text)):
            if keep:
                self._close_block()
                self.block = None
                return True
            self._close_block()
        return keep

    def _start_block(self, text: str) -> str | None:
        if not HINTS.search(text):  # most lines start no block: one C-level search says so
            return None
        for name, spec in BLOCKS.items():
            hint = BLOCK_HINTS.get(name)
            if hint is not None and not hint.search(text):
                continue
            if spec.first(text):
                self.block, self.block_lines = name, [text]
                if spec.last is not None and spec.last(text):
                    self._close_block()
                return name
        return None

    # --- one line -------------------------------------------------------------------
    def _kind(self, lineno: int, text: str) -> str:
        if self.block:
            block = self.block
            if self._continue_block(text):
                return BLOCKS[block].kind
        if started := self._start_block(text):
            return BLOCKS[started].kind
        facts = self.result.facts
        if pip.is_freeze_line(text):
            name_version = pip.parse_freeze_line(text)
            if name_version and name_version[1]:
                facts.packages.setdefault(name_version[0], name_version[1])  # as merge() would, without a Facts a line
            return "pip-freeze"
        if text.startswith("[") and (m := pip.COLLECT_ENV.match(text)):
            facts.packages.setdefault(pip.canonical(m[1]), m[2])
            return "collect-env"
        if ("  " in text or self._row_at == lineno - 1) and (
                row := pip.parse_headerless_row(text, after_row=self._row_at == lineno - 1)):
            facts.packages.setdefault(row[0], row[1])
            self._row_at = lineno
            return "pip-freeze"
        if host.KERNEL_PREFIX.match(text):
            self._kernel_line = True  # a kernel line that started no block: as plain as a fall-through (see _parse)
            return "dmesg"
        if installed := pip.parse_install_line(text):
            # what an install changed, not the environment: a package it does not name may be there all the same
            facts.merge(Facts(packages=installed, stated_only=set(installed)))
            return "install-log"
        self._fell_through = True
        return self.tracker.feed(lineno, text)

    def _where_stated(self, found: Facts, lineno: int) -> None:
        for stated in found.stated_gpus.values():
            stated.setdefault("where", f"line {lineno} of {self.source.name}")

    def _issue_form(self, lineno: int, text: str) -> None:
        """GitHub issue forms: `### Kernel Release` then the value on the next nonblank line."""
        if text.startswith("### "):
            self.heading = text[4:].strip()
        elif self.heading and text.strip():
            if found := host.issue_form_fact(self.heading, text.strip()):
                self._where_stated(found, lineno)
                self.result.facts.merge(found)
            self.heading = None

    def feed(self, lineno: int, raw: str) -> None:
        if self.source.folded:
            self._count_folded()
        text = pylog.strip_ansi(raw)
        self._plain = False
        try:
            kind = self._parse(lineno, text)
        except Exception as exc:  # a parser's bug on odd input is a note, never the end of the run
            self._failed(f"line {lineno}", exc)
            kind, self.block, self.block_lines = "server-log", None, []
        segments = self.result.segments
        if segments and segments[-1].kind == SEGMENT_KIND.get(kind, kind):  # _count's first case, without the call
            segments[-1].lines += 1
        else:
            self._count(lineno, kind, not text.strip())
        self.result.lines = lineno
        self._inert = self.on_line(lineno, kind, text, self.source.line_hints) is True and self._plain

    def filler(self, lineno: int, raw: bytes, template: bytes) -> bool:
        """A context line the block prefilter hit nothing on (`raw`, ASCII, and its bytes with digits masked): when it
        is a line inside a traceback before its exception line that only the tracker needs (indented or a ^~~ marker
        under the traceback's prefix, of a known plain template, no frame, exception, package path or `Traceback`),
        it is counted here exactly as `feed` would count it, and True says the reader need not hand it out. Most lines
        of a traceback are such code and marker lines, and handing each out cost more than the rest of the line's work."""
        tb = self.tracker.current
        if tb is None or tb.exception_line is not None or self.block is not None or self.heading is not None:
            return False
        frame = b'File "' in raw
        if frame and self.frame_known is None or not frame and b"-packages" in raw or b"Traceback" in raw \
                or b"No module named" in raw or b"\x1b" in raw or raw.startswith(b"### "):
            return False  # a frame nobody can vouch for, a package path, a new traceback, an issue form's heading
        prefix = self._prefix_bytes.get(tb.prefix)
        if prefix is None:
            prefix = self._prefix_bytes[tb.prefix] = tb.prefix.encode("utf-8", "surrogatepass")
        if prefix:
            if not raw.startswith(prefix):
                return False  # the tracker may still read it as prefixed (its digits aside): feed decides
            first = raw[len(prefix):len(prefix) + 1]
        else:
            first = raw[:1]
        if first not in FILLER_START:
            return False  # the exception line, or a line the tracker reads as one
        key = self._filler_keys.get(template)
        text = None
        if key is None:
            text = raw.decode("ascii").rstrip("\r")
            # an exception-like line (`ValueError: ...` indented in a chained message) breaks the run of frames and is
            # an error line for the matcher: never a filler
            exception = pylog.is_exception_line(text) or pylog.is_exception_line(text.split("] ", 1)[-1])
            if len(self._filler_keys) >= PLAIN_TEMPLATES:
                self._filler_keys.clear()
            key = self._filler_keys[template] = b"" if exception else pylog.mask_hex(template)  # as _parse keys it
        if not key or key not in self.plain:
            return False
        if frame:  # a frame of a known template: counted here when the matcher already has its package
            if text is None:
                text = raw.decode("ascii").rstrip("\r")
            known = self.frame_known
            if known is None or self.tracker.shape(key, text) != pylog.FRAME_LINE or not known(text):
                return False
        if self.source.folded:
            self._count_folded()
        nonblank = bool(raw.strip())
        if frame:
            self.tracker.frame_line(lineno, raw)
        elif nonblank:
            self.tracker.body_line()
        self._count(lineno, "traceback", not nonblank)
        self.result.lines = lineno
        self._plain = self._inert = True  # a plain template, and the matcher records nothing for a line without hits
        return True

    def unchanged(self) -> bool:
        """Would the line just fed, given again (its digits aside), change nothing? It went to the traceback
        tracker alone (a known plain template, no block or issue form open), outside any traceback or run of
        frames, and `on_line` said it recorded nothing (see Matcher.feed)."""
        return self._inert and self._idle()

    def _idle(self) -> bool:
        """Nothing is open that a plain line could change: no block, issue form, traceback or run of frames."""
        return self.heading is None and self.block is None and self.tracker.idle()

    def quiet(self) -> str | None:
        """The kind of the segment a line would now be counted in, when nothing is open that a plain line could
        change (no block, issue form, traceback or run of frames); None otherwise. The reader skips a line of a
        template `unchanged` said yes to earlier, elsewhere in the input, only while this is that line's kind."""
        segments = self.result.segments
        if segments and self._idle():
            return segments[-1].kind
        return None

    def _count_folded(self) -> None:
        """Lines the reader skipped as repeats of the last one: as many more lines of its segment."""
        self.result.segments[-1].lines += self.source.folded
        self.source.folded = 0

    def _parse(self, lineno: int, text: str) -> str:
        if text.startswith("### ") or self.heading:
            self._issue_form(lineno, text)
        template = None
        if self.block is None:
            # a line of the same template (numbers masked) as one that started no block and stated no fact
            # does neither: only the traceback tracker needs to see it (an assert burst, a request loop)
            # the block reader's bytes of the line with digits masked, where it has them: only 0x numbers are left
            template = self.source.template
            template = pylog.template_bytes(text) if template is None else pylog.mask_hex(template)
            if template in self.plain:
                self._plain = True
                return self.tracker.feed(lineno, text, template)
            if template in self.plain_kernel:  # a kernel line of a known template (the tracker never sees those)
                self._plain = True
                return "dmesg"
        self._fell_through = self._kernel_line = False
        kind = self._kind(lineno, text)
        found = None
        if kind in LINE_FACT_KINDS:
            if found := host.line_facts(text):
                for xid in found.xids:
                    xid.source, xid.line = self.source.name, lineno
                self._where_stated(found, lineno)
                self.result.facts.merge(found)
        if template is not None and found is None and self.block is None:
            known = self.plain if self._fell_through else self.plain_kernel if self._kernel_line else None
            if known is not None:
                if len(known) >= PLAIN_TEMPLATES:
                    known.clear()
                known.add(template)
        return kind

    def _failed(self, where: str, exc: Exception) -> None:
        self.failures += 1
        if self.failures <= MAX_FAILURE_NOTES:
            self.source.notes.append(f"{where} could not be parsed ({type(exc).__name__}: {str(exc)[:200]}); "
                                     "its facts were left out, its text was still matched")

    def finish(self) -> ScanResult:
        if self.source.folded:
            self._count_folded()
        try:
            self._close_block()
        except Exception as exc:  # as in feed: a note
            self._failed(f"the {self.block} block at the end", exc)
        if self.failures > MAX_FAILURE_NOTES:
            self.source.notes.append(f"{self.failures - MAX_FAILURE_NOTES} more line(s) could not be parsed")
        self.result.tracebacks = self.tracker.tracebacks
        self.result.cut_at = self.tracker.cut_at
        self.result.last_frame = self.tracker.last_frame if self.result.cut_at is not None else None
        facts = self.result.facts
        torch = facts.packages.get("torch")
        if torch and facts.torch_cuda is None:
            facts.torch_cuda = pip.torch_cuda_tag(torch)
        notes = list(dict.fromkeys(self.source.notes))  # each note once, at most MAX_NOTES of them
        if len(notes) > MAX_NOTES:
            notes = [*notes[:MAX_NOTES], f"and {len(notes) - MAX_NOTES} more note(s) about this input"]
        self.source.notes[:] = notes
        many = len(self.result.segments) > MAX_NOTED_SEGMENTS  # a crafted input alternates kinds line by line
        for i, segment in enumerate(self.result.segments):
            segment.notes = self.source.notes if i == 0 or not many else []
        return self.result


def scan(source: TextSource, on_line: OnLine, prefilter: Callable[[], Any] | None = None,
         frame_known: Callable[[str], bool] | None = None) -> ScanResult:
    """Read `source` once: every line goes to `on_line(lineno, kind, text)`; facts come back.

    With a prefilter factory, a large input gives only the lines the prefilter selects. `frame_known`: says, of a
    traceback's frame line that no signal hit, that `on_line` would record nothing for it (its package is known), so
    that the block reader need not hand it out (see _Scanner.filler)."""
    scanner = _Scanner(source, on_line, frame_known)
    source.fold, source.quiet, source.filler, source.folded = scanner.unchanged, scanner.quiet, scanner.filler, 0
    start, seen, lineno = time.perf_counter(), 0, 0
    lines = source.lines(prefilter)
    for lineno, raw in lines:
        scanner.feed(lineno, raw)
        seen += len(raw) + 1
        # the budget grows with the input read, not only with the lines the block prefilter handed out: a 1 GB log
        # whose lines it mostly skips (or that is read from a cold disk) was cut at a minute with its failure unread
        if lineno % 256 == 0 and time.perf_counter() - start > TIME_BUDGET_S + TIME_PER_MB_S * max(
                seen, source.consumed) / (1 << 20):
            lines.close()
            source.notes.append(f"the time budget for one input ran out at line {lineno} "
                                f"({time.perf_counter() - start:.1f} s): the rest of it was not read")
            source.total_lines = max(source.total_lines, lineno)
            break
    result = scanner.finish()
    if source.selected_lines is not None:
        unseen = source.total_lines - source.selected_lines
        logs = [s for s in result.segments if s.kind == "server-log"]
        if logs:
            logs[0].lines += unseen
        elif unseen:  # nothing the prefilter selected is a log line: the log is still an input read
            result.segments.append(InputSummary(source.name, "server-log", unseen, notes=source.notes))
    result.lines = source.total_lines
    return result
