#!/usr/bin/env python3
"""Refit rules/compat/confidence-calibration.yaml from the holdouts' first measurements.

A confidence is worth what it predicts on logs the KB was not tuned on. Each holdout set (holdoutN-a..d) was
measured once, at the commit that added it, before any rule was tuned on it; this script checks each of those
commits out into a temporary worktree, runs that commit's engine on that set, and keeps every top-level finding
as a (confidence, right) pair: right when the finding is the case's true cause. The pairs of the first-ranked
findings are fitted with isotonic regression (pool adjacent violators), each block's share right shrunk toward
the block's own confidence by SHRINK pseudo-findings, and written as the table's knots.

    python scripts/fit_calibration.py              # all sets in FIRST_MEASURED; writes the table
    python scripts/fit_calibration.py --dry-run    # print the fit, the reliability before/after, write nothing

Later findings' confidence is capped by the engine, not fitted (see diagnose/engine/calibrate.py): a second
finding beside a first one at 0.95 is not also 0.9 likely to be the cause.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "rules" / "compat" / "confidence-calibration.yaml"
SHRINK = 2.0

# holdout set -> the commit that added it with its first measurement (the code that measured it, untuned on it)
FIRST_MEASURED = {
    "holdout10": "5fc741b", "holdout11": "e69dbf1", "holdout12": "a647d1b", "holdout13": "5e90d98",
    "holdout14": "1d30761", "holdout15": "f5c24a7", "holdout16": "b995ec9", "holdout17": "15697bb",
    "holdout18": "ac907c2", "holdout19": "b6d9f89", "holdout20": "f4a387e", "holdout21": "bd6c062",
    "holdout22": "56ba77a", "holdout23": "f81467e", "holdout24": "9a7e96f", "holdout25": "e4f7584",
    "holdout26": "0d431bd", "holdout27": "174daa2", "holdout28": "9aa23be", "holdout29": "d66a69c",
    "holdout30": "f7c1766", "holdout31": "c600590", "holdout32": "d7920dd", "holdout33": "8854f30",
    "holdout34": "7ba9b07", "holdout35": "fd96a4e", "holdout36": "7c9c10f", "holdout37": "09fe005",
    "holdout38": "7940642", "holdout39": "ff931e9", "holdout40": "2a896e1", "holdout41": "62d5242",
    "holdout42": "fc7a4c1", "holdout43": "e234eda", "holdout44": "bb4cebe",
    "holdout45": "a8289ee", "holdout46": "eddff59", "holdout47": "a28fd7d", "holdout48": "00fda09", "holdout49": "1faf530", "holdout50": "9495efd",
    "holdout51": "ce215bd", "holdout52": "71358f7", "holdout53": "771da7f", "holdout54": "0256d25",
    "holdout55": "d2a5044", "holdout56": "2b6d981", "holdout57": "077a964", "holdout58": "d28f9f4",
}

DUMP = r"""
import json, sys
from pathlib import Path
from diagnose import api
from diagnose.kb.selftest import find_cases
try:  # a commit that calibrates: the fit is of raw scores, so its calibration is switched off
    import diagnose.engine.calibrate as calibrate
    calibrate.calibrate = lambda findings, compat: None
except ImportError:
    pass
import diagnose.api as _api
if hasattr(_api, "_withhold_unreliable"):  # nor is a finding the table rates low withheld: every raw score is fitted
    _api._withhold_unreliable = lambda diagnosis, kb: None
out = []
for folder in sys.argv[1:]:
    for case in find_cases(Path(folder)):
        d = api.diagnose(case.artifacts())
        truth = case.expected.get("first")
        for i, f in enumerate(d.findings):
            out.append({"case": case.path.name, "rank": i, "confidence": f.confidence,
                        "right": int(f.rule_id == truth), "reasons": f.reasons})
print(json.dumps(out))
"""


def pairs_at(name: str, rev: str, python: str) -> list[dict]:
    halves = sorted(str(p) for p in ROOT.glob(f"{name}-?") if p.is_dir())
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-f", "--detach", str(tree), rev],
                       check=True, capture_output=True)
        try:
            env = {**os.environ, "PYTHONPATH": str(tree), "DIAGNOSE_RULES_DIR": str(tree / "rules"),
                   "DIAGNOSE_CACHE_DIR": str(Path(tmp) / "cache")}
            done = subprocess.run([python, "-c", DUMP, *halves], cwd=tree, env=env, check=True,
                                  capture_output=True, text=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)
    return json.loads(done.stdout)


def isotonic(points: list[tuple[float, int]]) -> list[list[float]]:
    """Blocks [low, high, right, n] over points sorted by confidence, each block's share right not below the last."""
    blocks: list[list[float]] = []
    for conf, right in sorted(points):
        blocks.append([conf, conf, right, 1])
        while len(blocks) > 1 and blocks[-2][2] / blocks[-2][3] >= blocks[-1][2] / blocks[-1][3]:
            last = blocks.pop()
            blocks[-1][1], blocks[-1][2], blocks[-1][3] = last[1], blocks[-1][2] + last[2], blocks[-1][3] + last[3]
    return blocks


def knots(points: list[tuple[float, int]]) -> list[dict]:
    rows: list[dict] = []
    for low, high, right, n in isotonic(points):
        mid = (low + high) / 2
        value = round((right + SHRINK * mid) / (n + SHRINK), 3)
        # each block is shrunk toward its own raw score, which can pull a small block just below the block before
        # it (0.861 after 0.866): the table stays monotone, a higher raw score never reads as less sure
        value = max(value, rows[-1]["calibrated"]) if rows else value
        rows.append({"raw": round(mid, 3), "calibrated": value,
                     "findings": int(n), "right": int(right), "raw_range": f"{low:.2f}-{high:.2f}"})
    return rows


def brier(points: list[tuple[float, int]], table: list[dict] | None) -> float:
    sys.path.insert(0, str(ROOT))
    from diagnose.engine.calibrate import interpolate

    def value(c: float) -> float:
        return interpolate(table, c) if table else c
    return sum((value(c) - o) ** 2 for c, o in points) / len(points)


def write(rows: list[dict], per_set: dict[str, int]) -> None:
    import yaml

    sets = ", ".join(f"{k} at {FIRST_MEASURED[k]} ({n} findings)" for k, n in per_set.items())
    import textwrap

    notes = (
        "Written by scripts/fit_calibration.py; do not edit by hand. Each holdout set was run once with the code "
        "of the commit that added it, before any rule was tuned on it: " + sets + ". The first-ranked findings' "
        f"(raw confidence, right) pairs are fitted by isotonic regression, each block shrunk toward its own raw "
        f"confidence by {SHRINK:g} findings and never below the block before it. diagnose/engine/calibrate.py "
        "interpolates between the rows, keeps a cause named only from a cut traceback at or below its raw value "
        "(too few such cases to fit), and caps a later finding by what the first leaves."
    )
    head = {"id": "confidence-calibration",
            "title": "what a first finding's raw confidence has meant on logs the KB was not tuned on",
            "sources": [f"{k}-a..d (first measurement at {v})" for k, v in FIRST_MEASURED.items()]}
    text = yaml.safe_dump(head, sort_keys=False, width=120)
    text += "notes: |\n" + "".join(f"  {line}\n" for line in textwrap.wrap(notes, 110))
    text += yaml.safe_dump({"rows": rows}, sort_keys=False, width=120)
    TABLE.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    args = parser.parse_args()
    points: list[tuple[float, int]] = []
    per_set = {}
    for name, rev in FIRST_MEASURED.items():
        found = [p for p in pairs_at(name, rev, args.python) if p["rank"] == 0]
        per_set[name] = len(found)
        points += [(p["confidence"], p["right"]) for p in found]
        print(f"{name} at {rev}: {len(found)} first findings, {sum(p['right'] for p in found)} right", file=sys.stderr)
    rows = knots(points)
    for row in rows:
        print(row)
    print(f"Brier of the first findings: raw {brier(points, None):.3f}, calibrated {brier(points, rows):.3f} "
          f"(in-sample)")
    if not args.dry_run:
        write(rows, per_set)
        print(f"wrote {TABLE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
