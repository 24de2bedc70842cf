"""Lines taken from the real fixtures, and their variation into the distinct lines of a real log.

A pool is a set of fixture files cut into runs of consecutive lines; the noise pools drop every line
that one of the KB's signal regexes matches, so the only finding a mix can have is the failure put
into it. `Varier` keeps each copied line's text and shape and moves its clock, its ids and its
addresses on, the way a longer log of the same software reads:

    >>> v = Varier(seed=1, min_digits=4)
    >>> v.line("INFO:     Started server process [177326]") != "INFO:     Started server process [177326]"
    True
    >>> v.line("NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus.")[-33:]
    ': 79, GPU has fallen off the bus.'
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from functools import cache, lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"

# Files that hold facts (tables, package lists), not log lines: kept out of the noise, so a mix
# stays one kind of log and its facts are those of its failure.
NOT_A_LOG = re.compile(r"nvidia-smi|pip|collect|check_env|topo|nvlink|uname|proc-driver|expected\.yaml|"
                       r"\.(?:xml|json|gz|yaml|py|sh|md)$")

_MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
_VARY = re.compile(
    r"(?P<keep>(?i:version)\s*[:=]?\s*\d+|HTTP/\d\.\d\" \d{3}|\b[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?\b)"
    r"|(?P<src>\.(?:py|cpp|cu|cuh|cc|c|h|hpp|go|rs):\d+)"
    r"|(?P<frac>(?<=\d\d:\d\d:\d\d)[.,]\d{3,9})"
    r"|(?P<iso>\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})"
    rf"|(?P<ctime>\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:{_MONTHS}) [ \d]\d \d{{2}}:\d{{2}}:\d{{2}} \d{{4}})"
    r"|(?P<mono>\[\s*\d+\.\d{6}\])"
    r"|(?P<md>\b\d{2}-\d{2} \d{2}:\d{2}:\d{2})"
    r"|(?P<glog>\b[IWEF]\d{3,4} \d{2}:\d{2}:\d{2})"
    r"|(?P<hms>\b\d{2}:\d{2}:\d{2}\b)"
    r"|(?P<hex>\b0x[0-9a-fA-F]{4,}\b)"
    r"|(?P<id>\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{12,}\b)"
    r"|(?P<num>(?<![\w.\-])\d+(?![\w.]))"
)


class Varier:
    """Moves a log's clock forward line by line and draws new ids, pids, ports and addresses.

    Numbers shorter than `min_digits` are kept (an Xid, a CUDA error code, a rank), so a failure's
    lines keep their meaning; longer ones get other digits of the same length."""

    def __init__(self, seed: int, min_digits: int = 4, start: datetime = datetime(2026, 11, 29, 19, 41, 37)):
        self.rng = random.Random(seed)
        self.min_digits = min_digits
        self.clock = start
        self.uptime = 0.0

    def line(self, text: str) -> str:
        step = self.rng.expovariate(1 / 0.004)
        self.clock += timedelta(seconds=step)
        self.uptime += step
        slots, tail = template(text)
        return "".join(literal + self._swap(kind, old) for literal, kind, old in slots) + tail

    def _swap(self, kind: str, text: str) -> str:
        rng, clock = self.rng, self.clock
        if kind == "frac":
            return text[0] + f"{clock.microsecond:06d}{rng.randrange(1000):03d}"[: len(text) - 1]
        if kind == "iso":
            return clock.strftime(f"%Y-%m-%d{text[10]}%H:%M:%S")
        if kind == "ctime":
            return clock.strftime("%a %b ") + f"{clock.day:2d}" + clock.strftime(" %H:%M:%S %Y")
        if kind == "mono":
            return f"[{self.uptime:12.6f}]"
        if kind == "md":
            return clock.strftime("%m-%d %H:%M:%S")
        if kind == "glog":
            return text[0] + clock.strftime("%m%d %H:%M:%S")
        if kind == "hms":
            return clock.strftime("%H:%M:%S")
        if kind in ("hex", "id"):
            digits = len(text) - 2 if kind == "hex" else len(text)
            return ("0x" if kind == "hex" else "") + f"{rng.getrandbits(4 * digits):0{digits}x}"
        if len(text) < self.min_digits:
            return text
        return str(rng.randrange(10 ** (len(text) - 1), 10 ** len(text)))


@lru_cache(maxsize=65536)
def template(text: str) -> tuple[tuple[tuple[str, str, str], ...], str]:
    """A line cut into (literal before, kind, old text) slots and the literal tail: the regex runs
    once per distinct fixture line, not once per line written."""
    slots, pos = [], 0
    for m in _VARY.finditer(text):
        if m.lastgroup not in ("keep", "src"):
            slots.append((text[pos:m.start()], str(m.lastgroup), m.group()))
            pos = m.end()
    return tuple(slots), text[pos:]


def fixture_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def log_files(pattern: str) -> list[Path]:
    """The fixture files under `fixtures/` matching a glob that hold log lines."""
    return [p for p in sorted(FIXTURES.glob(pattern)) if p.is_file() and not NOT_A_LOG.search(p.name)]


@lru_cache(maxsize=1)
def kb_signals() -> tuple[object, ...]:
    """The KB's signal regexes, compiled as the engine compiles them: with the `regex` module (the stdlib's `re`
    refuses some of them, \\p{...} classes and the like, and a line those match would have stayed in the noise)."""
    import regex as regex_module

    from diagnose import api

    kb = api.load_kb()
    return tuple(regex_module.compile(text) for text in sorted({s.regex for r in kb.rules.values() for s in r.signals
                                                                if s.regex}))


@cache
def is_evidence(line: str) -> bool:
    return any(p.search(line) for p in kb_signals())  # type: ignore[attr-defined]


def runs(paths: list[Path], keep: re.Pattern[str] | None = None, seen: set[str] | None = None) -> list[list[str]]:
    """Each file's lines that `keep` matches (all when None) and no signal matches, cut where a
    dropped line was: runs of consecutive real lines, as they were printed. The fixtures that gave
    a line are added to `seen`."""
    out: list[list[str]] = []
    for path in paths:
        run: list[str] = []
        for line in [*fixture_lines(path), ""]:
            if line.strip() and (keep is None or keep.search(line)) and not is_evidence(line):
                run.append(line)
            elif run:
                out.append(run)
                run = []
                if seen is not None:
                    seen.add(str(path.parent.relative_to(FIXTURES)))
    return out
