"""Throughput of `diagnose fleet` on the simulated lake: GB/min with 1 and 2 Ray worker processes, and how
it scales with the number of nodes. Each measurement is a fresh embedded Ray cluster in its own process
(start-up included in `wall`, reported apart as `startup`).

    python benchmarks/fleet_throughput.py --lake /tmp/fleet-lake --nodes 200 --mb-per-node 10
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ONE_RUN = """
import json, sys, time
t0 = time.monotonic()
from diagnose.fleet import runner
runner.start(workers=int(sys.argv[2]))
t1 = time.monotonic()
report, _ = runner.run(sys.argv[1], split_bytes=int(sys.argv[3]))
t2 = time.monotonic()
print(json.dumps({"startup": t1 - t0, "run": t2 - t1, "bytes": report["bytes"], "nodes": report["nodes"],
                  "causes": {c["rule_id"]: len(c["nodes"]) for c in report["causes"]}}))
"""


def measure(lake: Path, workers: int, split: int) -> dict:  # type: ignore[type-arg]
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", ONE_RUN, str(lake), str(workers), str(split)],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall"] = time.monotonic() - start
    result["gb_per_min"] = result["bytes"] / 1e9 / (result["run"] / 60)
    return result


def subset(lake: Path, nodes: int) -> Path:
    """A lake of the first `nodes` nodes (symlinks to the full lake's folders)."""
    part = lake.with_name(f"{lake.name}-{nodes}")
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir()
    for node in sorted(p for p in lake.iterdir() if p.is_dir())[:nodes]:
        (part / node.name).symlink_to(node)
    return part


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lake", type=Path, default=Path("/tmp/fleet-lake"))
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--mb-per-node", type=float, default=10.0)
    ap.add_argument("--sizes", default="25,50,100,200", help="node counts for the scaling runs (2 workers)")
    ap.add_argument("--split-mb", type=float, default=256)
    args = ap.parse_args()
    if not (args.lake / "injected.yaml").exists():
        t = time.monotonic()
        subprocess.run([sys.executable, "-m", "diagnose.fleet.simlake", str(args.lake), "--nodes", str(args.nodes),
                        "--mb-per-node", str(args.mb_per_node)], check=True, cwd=ROOT)
        print(f"built the lake in {time.monotonic() - t:.0f} s", flush=True)
    split = int(args.split_mb * 2**20)
    for workers in (1, 2):
        r = measure(args.lake, workers, split)
        print(f"workers={workers} nodes={r['nodes']} {r['bytes'] / 1e9:.2f} GB run {r['run']:.1f} s "
              f"(start-up {r['startup']:.1f} s): {r['gb_per_min']:.2f} GB/min; causes {r['causes']}", flush=True)
    for n in (int(x) for x in args.sizes.split(",")):
        r = measure(subset(args.lake, n), 2, split)
        print(f"scaling: nodes={n} {r['bytes'] / 1e9:.2f} GB run {r['run']:.1f} s: {r['gb_per_min']:.2f} GB/min, "
              f"{n / r['run']:.1f} nodes/s", flush=True)


if __name__ == "__main__":
    main()
