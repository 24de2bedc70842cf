"""One command timed as a whole process: wall seconds, and its peak RSS as GNU time reports it.

The RSS comes from `/usr/bin/time -f %M` and not from this process's own `wait4`: a child forked
from a large Python starts with the parent's resident pages counted in its high-water mark, which
`exec` keeps, so `wait4` here would report at least this benchmark's own size."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Timing:
    seconds: float  # best of the runs
    peak_rss_mb: float  # largest of the runs
    runs: list[float]
    timed_out: bool = False
    cpu_s: float = 0.0  # best user + system CPU seconds of the runs (GNU time's %U + %S)


def run_once(argv: list[str], out: Path, env: dict[str, str] | None = None,
             timeout: float | None = None) -> tuple[float, float, bool, float]:
    """Wall seconds, peak RSS in MB, whether it was stopped at `timeout` and CPU seconds (user + system);
    stdout goes to `out`
    (both tools write their whole answer, as a user's redirect would). A tool that fails (exit 2
    or more: rg refusing a pattern, diagnose's usage error) stops the benchmark: its time would lie."""
    stopped = threading.Event()
    with out.open("wb") as fh, tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        start = time.perf_counter()
        proc = subprocess.Popen([gnu_time(), "-f", "%M %U %S", "-o", rss.name, *argv], stdout=fh,
                                stderr=subprocess.DEVNULL, env=env, start_new_session=True)
        killer = threading.Timer(timeout, lambda: (stopped.set(), os.killpg(proc.pid, 9))) if timeout else None
        if killer:
            killer.start()
        code = proc.wait()
        wall = time.perf_counter() - start
        if killer:
            killer.cancel()
        last, *cpu = ((rss.read().strip().splitlines() or ["0"])[-1].split() or ["0"])
    if code >= 2 and not stopped.is_set():
        err = subprocess.run(argv, capture_output=True, text=True, env=env).stderr.strip().splitlines()
        sys.exit(f"realistic: {Path(argv[0]).name} exited {code}: {err[-1][:300] if err else ''}")
    used = sum(float(c) for c in cpu if c.replace(".", "", 1).isdigit())
    return wall, int(last) / 1024 if last.isdigit() else 0.0, stopped.is_set(), used


def best_of(argv: list[str], runs: int, out: Path, env: dict[str, str] | None = None,
            timeout: float | None = None) -> Timing:
    walls, rss, stopped, cpus = [], 0.0, False, []
    for _ in range(runs):
        wall, peak, killed, cpu = run_once(argv, out, env, timeout)
        walls.append(round(wall, 3))
        cpus.append(cpu)
        rss, stopped = max(rss, peak), stopped or killed
    return Timing(min(walls), round(rss, 1), walls, stopped, round(min(cpus), 3))


def first_cause(json_out: Path) -> str | None:
    return answer(json_out)[0]


def answer(json_out: Path) -> tuple[str | None, int]:
    """The first cause of a `--format json` answer and how many inputs it read the log as."""
    try:
        data = json.loads(json_out.read_text())
    except ValueError:
        return None, 0
    findings = data.get("findings") or []
    return (findings[0]["rule_id"] if findings else None), len(data.get("inputs") or [])


def export_for_rg(path: Path, rg: str) -> dict[str, int]:
    """The KB's signal regexes in ripgrep's syntax (benchmarks/run.py's `ripgrep_form`), each probed
    with `--no-unicode`: one that mode refuses (a case-insensitive non-ASCII literal) runs in
    `(?u:...)`, as narrow as rg allows; one rg refuses either way is left out, and counted."""
    from run import ripgrep_form

    from diagnose import api

    def takes(form: str) -> bool:
        probe = [rg, "--no-unicode", "-q", "-e", form, "--", "/dev/null"]
        return subprocess.run(probe, capture_output=True).returncode in (0, 1)

    kept, counts = [], {"patterns": 0, "unicode_scoped": 0, "left_out": 0}
    kb = api.load_kb()
    for regex in sorted({s.regex for r in kb.rules.values() for s in r.signals if s.regex}):
        form = ripgrep_form(regex)
        if not takes(form):
            form = f"(?u:{form})"
            counts["unicode_scoped"] += 1
        if takes(form):
            kept.append(form)
        else:
            counts["left_out"] += 1
    path.write_text("\n".join(kept) + "\n")
    counts["patterns"] = len(kept)
    return counts


def tool(command: str, package: str) -> str:
    """`command` on PATH; installed with apt-get when missing and run as root, else a clear exit."""
    found = shutil.which(command)
    if found:
        return found
    if os.geteuid() != 0:
        sys.exit(f"realistic: {command} is not installed; install the package {package} "
                 f"(apt-get install {package}) and run again")
    print(f"realistic: installing {package} (apt-get install -y {package})", file=sys.stderr)
    for step in (["apt-get", "install", "-y", "-q", package], ["apt-get", "update", "-q"],
                 ["apt-get", "install", "-y", "-q", package]):
        subprocess.run(step, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if shutil.which(command):
            return str(shutil.which(command))
    sys.exit(f"realistic: apt-get could not install {package}; install it by hand and run again")


def ripgrep() -> str:
    return tool("rg", "ripgrep")


def gnu_time() -> str:
    return "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else tool("time", "time")


@dataclass
class Diagnose:
    """How `diagnose` is run: the venv's installed command (the checkout as it is), or the venv's
    Python on a snapshot of one commit's diagnose/ and rules/ (`--at REV`), which others' commits
    and edits in the checkout cannot change mid-run."""

    argv: list[str]
    env: dict[str, str] | None
    label: str  # the commit measured, "+ uncommitted diagnose/ edits" when the checkout has them
    rules: Path

    def __call__(self, *args: str) -> list[str]:
        return [*self.argv, *args]

    def with_env(self, **extra: str) -> dict[str, str]:
        return {**(self.env or os.environ), **extra}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


def own_cache(cache: Path) -> dict[str, str]:
    """The compiled KB and prefilter databases in a cache of the benchmark's own: the shared one
    keeps the newest few KBs, so anyone's runs of other code in between would evict the warm one
    and a timed run would compile it again."""
    return {**os.environ, "DIAGNOSE_CACHE_DIR": str(cache / "diagnose-cache")}


def installed(root: Path, venv_bin: Path, cache: Path) -> Diagnose:
    dirty = git(root, "status", "--porcelain", "--untracked-files=no", "--", "diagnose", "rules")
    label = git(root, "rev-parse", "--short", "HEAD") + (" + uncommitted diagnose/ edits" if dirty else "")
    return Diagnose([str(venv_bin / "diagnose")], own_cache(cache), label, root / "rules")


def at_commit(root: Path, venv_bin: Path, rev: str, cache: Path) -> Diagnose:
    sha = git(root, "rev-parse", "--short", rev)
    tree = cache / f"tree-{sha}"
    if not (tree / "diagnose").is_dir():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(["git", "-C", str(root), "archive", sha, "diagnose", "rules"], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(tree)], stdin=archive.stdout, check=True)
        archive.wait()
    # PYTHONSAFEPATH: `python -m` would put the working directory (the checkout, with its own
    # diagnose/) ahead of PYTHONPATH and run that instead of the snapshot
    env = {**own_cache(cache), "PYTHONPATH": str(tree), "PYTHONSAFEPATH": "1"}
    return Diagnose([str(venv_bin / "python"), "-m", "diagnose"], env, sha, tree / "rules")
