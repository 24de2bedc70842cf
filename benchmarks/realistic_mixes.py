"""The five realistic mixes of issue 14, each written to a target size from the real fixtures' lines.

Every line of a mix is a fixture's line (varied by `Varier`: clock, ids, addresses); one failing
fixture is put in near the end (in every cycle for `crash-loop`); the mix's metadata names the
fixtures it used. The benchmark checks that the mix's first cause is the one `diagnose` gives on
that failing file alone.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from http import HTTPStatus
from pathlib import Path

from realistic_lines import FIXTURES, ROOT, Varier, fixture_lines, log_files, runs

BUILDER = 2  # a mix's recipe version: cached logs written by another are rebuilt (2: noise filtered with `regex`)
VENV_BIN = ROOT / ".venv" / "bin"
SERVER_INFO = re.compile(r"^(?!.*(?i:error|fail|exception|traceback|warn|abort|kill|assert|unable|cannot|invalid))"
                         r"(?:.*\bINFO\b|\[\d{4}-\d{2}-\d{2} [\d:]+)")
REQUEST = re.compile(r'"(?:GET|POST) /[^"]*" \d{3}|Prefill batch\.|Decode batch\.')
ACCESS_STATUS = re.compile(r'(" )\d{3} [A-Z][A-Za-z ]*$')
ERROR_CODES = [400, 401, 403, 404, 408, 413, 422, 429, 500, 502, 503, 504]
KERNEL_FILES = re.compile(r"dmesg|kern|syslog|journal")
# a kernel line's own prefix, in the forms the fixtures print it: journal / syslog (`... kernel:`),
# `dmesg -T` (`[Sun Nov 29 19:41:37 2026]`), `dmesg` (`[    0.4995]`); a user-space journal line
# (`host unit[pid]:` not `kernel:`) is not a kernel line
KERNEL_PREFIX = re.compile(r"^(?:(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ )?kernel: |\s+(?=NVRM:))?"
                           r"(?:\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d [\d:]{8} \d{4}\] |\[\s*\d+\.\d+\] )?")
USER_JOURNAL = re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ (?!kernel:)[\w.@-]+(?:\[\d+\])?: ")


def as_dmesg(lines: list[str]) -> list[str]:
    """Kernel lines in one host's `dmesg` form (`[    0.000000] message`; Varier moves the clock
    on): the fixtures' kernel logs come in four prefixes, and one host's kern.log has one."""
    return ["[    0.000000] " + KERNEL_PREFIX.sub("", line, count=1) for line in lines if not USER_JOURNAL.match(line)]


class Sources:
    """The line pools, read from fixtures/ once; `seen[pool]` names the fixtures that gave its lines."""

    def __init__(self) -> None:
        self.seen: dict[str, set[str]] = {}

    def _runs(self, pool: str, paths: list[Path], keep: re.Pattern[str] | None = None) -> list[list[str]]:
        return runs(paths, keep, self.seen.setdefault(pool, set()))

    @cached_property
    def startups(self) -> list[list[str]]:
        paths = log_files("healthy/server-vllm*/*") + log_files("healthy/server-sglang-startup*/*") \
            + log_files("healthy/nccl-init-complete-vllm-*/*")
        return [sum(self._runs("startups", [p]), []) for p in paths]

    @cached_property
    def server_info(self) -> list[list[str]]:
        paths = [p for p in log_files("*/*") if re.search(r"(?i)vllm|sglang", p.read_text(errors="replace"))]
        return self._runs("server_info", paths, SERVER_INFO)

    @cached_property
    def requests(self) -> list[str]:
        return sum(self._runs("requests", log_files("*/*") + log_files("healthy/*/*"), REQUEST), [])

    @cached_property
    def access(self) -> list[str]:
        return [line for line in self.requests if ACCESS_STATUS.search(line)]

    @cached_property
    def nccl(self) -> list[list[str]]:
        return self._runs("nccl", log_files("healthy/*/*"), re.compile(r"NCCL INFO"))

    @cached_property
    def kernel(self) -> list[list[str]]:
        paths = [p for p in log_files("*/*") + log_files("healthy/*/*") if KERNEL_FILES.search(p.name)]
        return [run for run in map(as_dmesg, self._runs("kernel", paths)) if run]

    @cached_property
    def uvicorn(self) -> list[str]:
        self.seen["uvicorn"] = {"near-miss--port-in-use--repro-uvicorn-ok"}
        return fixture_lines(FIXTURES / "near-miss--port-in-use--repro-uvicorn-ok" / "server.log")

    def interleaved(self, failure: str) -> list[list[str]]:
        paths = [p for p in log_files("*/*") + log_files("healthy/*/*") if not str(p).endswith(failure)]
        return [r for r in self._runs("interleaved", paths) if len(r) >= 3]


class Writer:
    def __init__(self, path: Path, target: int, seed: int):
        self.fh, self.target, self.bytes, self.lines = path.open("wb"), target, 0, 0
        self.rng = random.Random(seed)
        self.noise, self.exact = Varier(seed, min_digits=3), Varier(seed + 1, min_digits=4)

    def put(self, lines: list[str], varier: Varier | None = None) -> None:
        varier = varier or self.noise
        self.put_raw([varier.line(line) for line in lines])

    def put_raw(self, lines: list[str]) -> None:
        data = ("\n".join(lines) + "\n").encode()
        self.fh.write(data)
        self.bytes += len(data)
        self.lines += len(lines)

    def chunk(self, pool: list[list[str]], most: int = 60) -> None:
        run = self.rng.choice(pool)
        start = self.rng.randrange(max(1, len(run) - most + 1))
        self.put(run[start:start + self.rng.randint(min(5, len(run)), most)])

    @property
    def near_end(self) -> bool:
        return self.bytes >= self.target * 0.98

    @property
    def full(self) -> bool:
        return self.bytes >= self.target


@dataclass
class Mix:
    name: str
    what: str
    failure: str  # fixtures/<case>/<file>: the one known failure put in
    body: Callable[[Writer, Sources, Mix], None]  # writes the whole log, failure included
    gaps: str = ""
    recipe: int = 1  # this mix's own recipe version: a changed one rebuilds only this mix

    def failure_lines(self) -> list[str]:
        return fixture_lines(FIXTURES / self.failure)


def build(mix: Mix, target: int, cache: Path, seed: int = 14) -> tuple[Path, dict]:
    """The mix's log and metadata in `cache`, written when absent or of another recipe."""
    cache.mkdir(parents=True, exist_ok=True)
    log, meta_path = cache / f"{mix.name}-{target}.log", cache / f"{mix.name}-{target}.json"
    if meta_path.exists() and log.exists():
        meta = json.loads(meta_path.read_text())
        if (meta.get("builder"), meta.get("recipe", 1)) == (BUILDER, mix.recipe) and meta.get("bytes") == log.stat().st_size:
            return log, meta
    src, w = Sources(), Writer(log, target, seed)
    src.seen["failure"] = {mix.failure.split("/")[0]}
    mix.body(w, src, mix)
    w.fh.close()
    meta = {"mix": mix.name, "what": mix.what, "builder": BUILDER, "recipe": mix.recipe, "seed": seed, "bytes": log.stat().st_size,
            "lines": w.lines, "failure": mix.failure,
            "fixtures": {pool: sorted(cases) for pool, cases in src.seen.items()}, "gaps": mix.gaps}
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return log, meta


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]?)B?", text.strip().upper())
    if not m:
        raise ValueError(f"not a size: {text!r} (say 20M, 200M or 1G)")
    return int(float(m.group(1)) * {"": 1, "K": 10**3, "M": 10**6, "G": 10**9}[m.group(2)])


def error_access(w: Writer, src: Sources) -> str:
    code = w.rng.choice(ERROR_CODES)
    return ACCESS_STATUS.sub(lambda m: f"{m.group(1)}{code} {HTTPStatus(code).phrase}", w.rng.choice(src.access))
