"""A simulated log lake made from the real fixtures, for the fleet tests and benchmarks.

LAKE/<node>/<source>.log[.gz]: every node has the healthy runs (a vLLM server log, a kernel log,
nvidia-smi), their timestamps shifted per node; the chosen nodes also get a real failure from
fixtures/<case>/ appended after the healthy lines of the same source (a failure ends its log).
`python -m diagnose.fleet.simlake LAKE --nodes 200 --mb-per-node 10` builds one; `build()` returns
{node: injected rule id} so that a test knows what to expect."""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import re
from pathlib import Path

import yaml

from diagnose import lazy_re

HEALTHY = {  # node source -> the healthy fixture files it is made of
    "server.log": ["healthy/server-vllm-v1-pr29335/server.log", "healthy/server-vllm-0.10.2-v1-jetson-thor/server.log",
                   "healthy/server-vllm-v0-tp4-pr6234/server.log"],
    "dmesg.log": ["healthy/host-h200x2-dmesg-580-open/dmesg.log"],
    "nvidia-smi.txt": ["healthy/host-h200x2-nvidia-smi-580/nvidia-smi.txt"],
}
# failures that read the same on a node as alone (checked by tests/test_fleet.py through the engine)
FAILURES = ["cuda-fork-reinit--vllm-12189", "xid-fallen-off-bus--nvsentinel-155", "nccl-timeout--vllm-6042",
            "distributed-rendezvous-failed--repro-init-process-group-closed-port",
            "xid-ecc-uncorrectable--gpu-operator-1146", "cuda-oom--vllm-12529"]
VLLM_TIME = lazy_re.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")
KERNEL_TIME = lazy_re.compile(r"\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]")
YEAR = 2026


def shift(text: str, by: dt.timedelta) -> str:
    """The vLLM (MM-DD HH:MM:SS) and kernel ([ctime]) timestamps of `text`, moved by `by`."""

    def vllm(m: re.Match[str]) -> str:
        mo, d, h, mi, s = map(int, m.groups())
        t = dt.datetime(YEAR, mo, d, h, mi, s) + by
        return t.strftime("%m-%d %H:%M:%S")

    def kernel(m: re.Match[str]) -> str:
        t = dt.datetime.strptime(m.group(1).replace("  ", " "), "%a %b %d %H:%M:%S %Y") + by
        return "[" + t.strftime("%a %b %d %H:%M:%S %Y") + "]"

    return KERNEL_TIME.sub(kernel, VLLM_TIME.sub(vllm, text))


def _read(fixtures: Path, rel: str) -> str:
    return (fixtures / rel).read_text(encoding="utf-8", errors="replace")


def _failure_files(fixtures: Path, case: str) -> tuple[str, dict[str, str]]:
    folder = fixtures / case
    expected = yaml.safe_load((folder / "expected.yaml").read_text())
    files = {p.name: p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.iterdir())
             if p.is_file() and p.name != "expected.yaml"}
    return expected["first"], files


def build(lake: Path, fixtures: Path, nodes: int = 12, failing: dict[int, str] | None = None,
          bytes_per_node: int = 0, gzip_every: int = 0) -> dict[str, str]:
    """Write the lake; `failing` maps a node number to a fixture case (default: FAILURES on nodes 1, 4, 7...).
    Returns {node name: rule id injected there}."""
    if failing is None:
        failing = {1 + 3 * i: FAILURES[i % len(FAILURES)] for i in range(min(len(FAILURES) * 2, nodes // 3))}
    healthy = {name: "".join(_read(fixtures, rel) for rel in rels) for name, rels in HEALTHY.items()}
    injected: dict[str, str] = {}
    for n in range(nodes):
        node = f"node-{n:04d}"
        folder = lake / node
        folder.mkdir(parents=True, exist_ok=True)
        start = dt.timedelta(minutes=7 * n)  # each node's clock: its own start
        parts = {name: [shift(text, start)] for name, text in healthy.items()}
        reps = max(1, bytes_per_node // max(1, len(healthy["server.log"])))
        parts["server.log"] = [shift(healthy["server.log"], start + dt.timedelta(hours=i)) for i in range(reps)]
        if n in failing:
            rule, files = _failure_files(fixtures, failing[n])
            injected[node] = rule
            for name, text in files.items():
                target = "dmesg.log" if "dmesg" in name or "kern" in name else name
                target = "server.log" if target.endswith(".log") and target != "dmesg.log" else target
                parts.setdefault(target, []).append(text)
        for name, chunks in parts.items():
            data = "".join(c if c.endswith("\n") else c + "\n" for c in chunks).encode()
            if gzip_every and n % gzip_every == 0 and name.endswith(".log"):
                (folder / (name + ".gz")).write_bytes(gzip.compress(data, compresslevel=1))
            else:
                (folder / name).write_bytes(data)
    return injected


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lake", type=Path)
    ap.add_argument("--fixtures", type=Path, default=Path(__file__).resolve().parents[2] / "fixtures")
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--mb-per-node", type=float, default=10.0)
    ap.add_argument("--gzip-every", type=int, default=0, help="gzip the logs of every Nth node")
    args = ap.parse_args()
    injected = build(args.lake, args.fixtures, args.nodes, bytes_per_node=int(args.mb_per_node * 2**20),
                     gzip_every=args.gzip_every)
    (args.lake / "injected.yaml").write_text(yaml.safe_dump(injected))
    print(f"{args.nodes} nodes, {len(injected)} failing, in {args.lake}")


if __name__ == "__main__":
    main()
