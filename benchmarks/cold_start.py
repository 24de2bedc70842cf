#!/usr/bin/env python3
"""A first run's wait: `diagnose` on a one-line log with an empty cache (the KB compiled from its YAML, the
Hyperscan databases built), the current tree against a baseline commit, alternating, in one run.

    python benchmarks/cold_start.py --baseline 7c9c10f [--runs 3]

The baseline's `diagnose/` and `rules/` are checked out into a temporary worktree and run with this repository's
`.venv` (so both sides use the same Python and packages). Prints each run and the median of each side.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"
LOG = "RuntimeError: CUDA error: out of memory\n"


def one_run(tree: Path, log: Path) -> float:
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        subprocess.run([str(PYTHON), "-m", "diagnose", str(log)], cwd=tree, check=False, capture_output=True,
                       env={"PYTHONPATH": str(tree), "DIAGNOSE_CACHE_DIR": cache, "PATH": "/usr/bin:/bin"})
        return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="a commit to compare with")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.baseline], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            log = Path(tmp) / "one-line.log"
            log.write_text(LOG)
            times: dict[str, list[float]] = {"baseline": [], "current": []}
            for i in range(args.runs):
                for side, tree in (("baseline", base), ("current", ROOT)):
                    t = one_run(tree, log)
                    times[side].append(t)
                    print(f"run {i + 1} {side:8s} {t:6.1f} s", flush=True)
            for side, ts in times.items():
                print(f"{side:8s} median {statistics.median(ts):6.1f} s over {len(ts)} cold runs")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
