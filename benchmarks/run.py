"""Throughput, peak memory and small-log latency of `diagnose`, against ripgrep on the same patterns.

    python benchmarks/run.py --size-mb 100 --runs 3

Reports the median of the runs: MB/s and peak RSS of `diagnose --format json` and of `rg -n -f`
with the KB's regexes exported (when ripgrep is installed), and a small crash log end to end
against `python -c pass`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def timed(argv: list[str], timeout: float | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS in KB of one run (GNU time when present, else wall only);
    a run past `timeout` counts as taking `timeout` (the report says so)."""
    gnu_time = shutil.which("time") or "/usr/bin/time"
    prefix = [gnu_time, "-f", "%M", "-o"] if Path(gnu_time).exists() else None
    with tempfile.NamedTemporaryFile("r") as out:
        start = time.perf_counter()
        try:
            subprocess.run([*prefix, out.name, *argv] if prefix else argv, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            return float(timeout or 0), 0
        wall = time.perf_counter() - start
        text = out.read().strip().splitlines() if prefix else []
        return wall, int(text[-1]) if text and text[-1].isdigit() else 0


def median_of(argv: list[str], runs: int, timeout: float | None = None) -> tuple[float, int]:
    results = [timed(argv, timeout) for _ in range(runs)]
    return statistics.median(r[0] for r in results), max(r[1] for r in results)


def _drop_lookarounds(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i) and (i == 0 or pattern[i - 1] != "\\"):
            depth, j = 0, i
            while j < len(pattern):
                if pattern[j] == "\\":
                    j += 2
                    continue
                depth += pattern[j] == "("
                depth -= pattern[j] == ")"
                j += 1
                if depth == 0:
                    break
            i = j
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def ripgrep_form(pattern: str) -> str:
    """The KB regex in the syntax of ripgrep's default engine: flags scoped, named groups plain,
    lookarounds and backreferences dropped (a superset), possessive quantifiers made greedy."""
    import re

    from diagnose.artifacts.prefilter import _scoped

    pattern = re.sub(r"\(\?P<\w+>", "(?:", pattern)
    pattern = re.sub(r"\(\?P=\w+\)", "", pattern)
    pattern = _drop_lookarounds(pattern).replace("++", "+").replace("*+", "*")
    return _scoped(pattern)


def export_patterns(path: Path, rg: str) -> int:
    """Every signal regex of the KB, in ripgrep's syntax; those it still refuses are left out."""
    from diagnose import api

    kb = api.load_kb()
    kept = []
    for regex in sorted({s.regex for r in kb.rules.values() for s in r.signals if s.regex}):
        form = ripgrep_form(regex)
        probe = subprocess.run([rg, "-q", "-e", form, "--", "/dev/null"], capture_output=True)
        if probe.returncode in (0, 1):
            kept.append(form)
    path.write_text("\n".join(kept) + "\n")
    return len(kept)


def main() -> None:
    from gen_log import generate

    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rg-timeout", type=float, default=900, help="Give up on one ripgrep run after this many seconds.")
    args = ap.parse_args()
    data = ROOT / "benchmarks" / "data"
    log = data / f"server-{args.size_mb}mb.log"
    if not log.exists():
        generate(args.size_mb, 7, log)
    size_mb = log.stat().st_size / 1e6
    diagnose = [sys.executable, "-m", "diagnose", "--format", "json", "--exit-zero", str(log)]
    subprocess.run(diagnose, stdout=subprocess.DEVNULL)  # warm the KB cache
    wall, rss = median_of(diagnose, args.runs)
    report = {"input_mb": round(size_mb, 1), "diagnose": {"seconds": round(wall, 2), "mb_per_s": round(size_mb / wall, 1), "peak_rss_mb": round(rss / 1024, 1)}}
    rg = shutil.which("rg")
    if rg:
        patterns = data / "patterns.txt"
        report["patterns"] = export_patterns(patterns, rg)
        rg_wall, rg_rss = median_of([rg, "-n", "-f", str(patterns), str(log)], args.runs, args.rg_timeout)
        if rg_wall >= args.rg_timeout:
            report["ripgrep_note"] = f"a run exceeded {args.rg_timeout:.0f}s and was stopped; its time is that limit"
        report["ripgrep"] = {"seconds": round(rg_wall, 2), "mb_per_s": round(size_mb / rg_wall, 1), "peak_rss_mb": round(rg_rss / 1024, 1)}
        report["diagnose_vs_ripgrep"] = round(rg_wall / wall, 2)
    else:
        report["ripgrep"] = "not installed (apt-get install ripgrep)"
    small = next(iter(sorted(ROOT.glob("fixtures/cuda-oom--*/*.log"))))
    small_wall, _ = median_of([sys.executable, "-m", "diagnose", "--exit-zero", str(small)], max(args.runs, 5))
    pass_wall, _ = median_of([sys.executable, "-c", "pass"], max(args.runs, 5))
    report["small_log"] = {"file": str(small.relative_to(ROOT)), "seconds": round(small_wall, 3),
                           "python_pass_seconds": round(pass_wall, 3), "above_python_start": round(small_wall - pass_wall, 3)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
