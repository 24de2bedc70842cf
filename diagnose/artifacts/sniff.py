"""Tell the artifacts apart inside one input and parse each as it streams past.

A paste often holds several artifacts: a traceback, then an `nvidia-smi` table, then a
`pip freeze`. `scan` reads the lines once, assigns each line a kind, parses the structured
blocks into Facts, and hands every line to the caller (the matcher) with its kind and number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from diagnose.artifacts import host, nvidia_smi, pip, pylog
from diagnose.artifacts.reader import TextSource
from diagnose.model import Facts, InputSummary

OnLine = Callable[[int, str, str], None]
SEGMENT_KIND = {"traceback": "server-log"}  # tracebacks are reported as part of their log
MAX_BLOCK = 4000  # lines of one structured block kept for its parser


@dataclass
class ScanResult:
    facts: Facts = field(default_factory=Facts)
    segments: list[InputSummary] = field(default_factory=list)
    tracebacks: list[pylog.Traceback] = field(default_factory=list)
    lines: int = 0


class _Scanner:
    def __init__(self, source: TextSource, on_line: OnLine) -> None:
        self.source = source
        self.on_line = on_line
        self.result = ScanResult()
        self.tracker = pylog.TracebackTracker()
        self.block: str | None = None
        self.block_lines: list[str] = []
        self.csv_header = False

    # --- segments -------------------------------------------------------------------
    def _count(self, lineno: int, kind: str, blank: bool) -> None:
        kind = SEGMENT_KIND.get(kind, kind)
        segments = self.result.segments
        if segments and (blank or segments[-1].kind == kind):
            segments[-1].lines += 1
            return
        segments.append(InputSummary(self.source.name, kind, 1, first_line=lineno))

    # --- structured blocks ----------------------------------------------------------
    def _close_block(self) -> None:
        if self.block == "nvidia-smi":
            self.result.facts.merge(nvidia_smi.parse_table(self.block_lines))
        elif self.block == "nvidia-smi-csv":
            self.result.facts.merge(nvidia_smi.parse_csv(self.block_lines))
        elif self.block == "pip-list-json":
            packages = pip.parse_list_json("\n".join(self.block_lines))
            if packages:
                self.result.facts.merge(Facts(packages=packages))
        self.block, self.block_lines, self.csv_header = None, [], False

    def _continue_block(self, text: str) -> bool:
        block = self.block
        if block == "nvidia-smi":
            keep = nvidia_smi.is_table_line(text) and bool(text.strip() or self.block_lines[-1].strip())
        elif block == "nvidia-smi-csv":
            keep = "," in text and (self.csv_header or nvidia_smi.is_headerless_csv_row(text))
        elif block == "pip-list":
            if (m := pip.LIST_ROW.match(text.strip())) or text.startswith("---"):
                if m:
                    self.result.facts.merge(Facts(packages={pip.canonical(m[1]): m[2]}))
                return True
            keep = False
        elif block == "pip-list-json":
            keep = True
        else:
            keep = False
        if keep and len(self.block_lines) < MAX_BLOCK:
            self.block_lines.append(text)
            if block == "pip-list-json" and text.rstrip().endswith("]"):
                self._close_block()
        if not keep:
            self._close_block()
        return keep

    def _start_block(self, text: str) -> str | None:
        if nvidia_smi.is_table_start(text):
            self.block = "nvidia-smi"
        elif "," in text and nvidia_smi.is_csv_header(text):
            self.block, self.csv_header = "nvidia-smi-csv", True
        elif "," in text and nvidia_smi.is_headerless_csv_row(text):
            self.block = "nvidia-smi-csv"
        elif pip.LIST_HEADER.match(text):
            self.block = "pip-list"
        elif text.lstrip().startswith('[{"name"'):
            self.block = "pip-list-json"
        else:
            return None
        self.block_lines = [text]
        if self.block == "pip-list-json" and text.rstrip().endswith("]"):
            self._close_block()
            return "pip-list-json"
        return self.block

    # --- one line -------------------------------------------------------------------
    def _kind(self, lineno: int, text: str) -> str:
        if self.block and self._continue_block(text):
            return "pip-freeze" if self.block == "pip-list" else self.block or "pip-list-json"
        if started := self._start_block(text):
            return "pip-freeze" if started == "pip-list" else started
        facts = self.result.facts
        if pip.is_freeze_line(text):
            name_version = pip.parse_freeze_line(text)
            if name_version and name_version[1]:
                facts.merge(Facts(packages={name_version[0]: name_version[1]}))
            return "pip-freeze"
        if text.startswith("[") and (m := pip.COLLECT_ENV.match(text)):
            facts.merge(Facts(packages={pip.canonical(m[1]): m[2]}))
            return "collect-env"
        if host.KERNEL_PREFIX.match(text):
            return "dmesg"
        if installed := pip.parse_install_line(text):
            facts.merge(Facts(packages=installed))
            return "install-log"
        return self.tracker.feed(lineno, text)

    def feed(self, lineno: int, raw: str) -> None:
        text = pylog.strip_ansi(raw)
        kind = self._kind(lineno, text)
        if kind not in ("pip-freeze", "nvidia-smi", "nvidia-smi-csv", "pip-list-json"):
            if found := host.line_facts(text):
                for xid in found.xids:
                    xid.source, xid.line = self.source.name, lineno
                self.result.facts.merge(found)
        self._count(lineno, kind, not text.strip())
        self.result.lines = lineno
        self.on_line(lineno, kind, text)

    def finish(self) -> ScanResult:
        self._close_block()
        self.result.tracebacks = self.tracker.tracebacks
        facts = self.result.facts
        torch = facts.packages.get("torch")
        if torch and facts.torch_cuda is None:
            facts.torch_cuda = pip.torch_cuda_tag(torch)
        for segment in self.result.segments:
            segment.notes = self.source.notes
        return self.result


def scan(source: TextSource, on_line: OnLine) -> ScanResult:
    """Read `source` once: every line goes to `on_line(lineno, kind, text)`; facts come back."""
    scanner = _Scanner(source, on_line)
    for lineno, raw in source.lines():
        scanner.feed(lineno, raw)
    return scanner.finish()
