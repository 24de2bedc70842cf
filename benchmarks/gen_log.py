"""A seeded, realistic inference-server log for benchmarks: INFO lines, request logs, NCCL INFO,
and real failure lines (taken from the KB's fixtures) at random places.

    python benchmarks/gen_log.py --size-mb 100 --seed 7 -o benchmarks/data/server-100mb.log
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = [
    "INFO {d} {t} [engine.py:{n}] Avg prompt throughput: {f} tokens/s, Avg generation throughput: {f} tokens/s, Running: {k} reqs, Swapped: 0 reqs, Pending: {k} reqs, GPU KV cache usage: {p}%, CPU KV cache usage: 0.0%.",
    'INFO:     10.0.{k}.{k}:{n} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "[{d} {t} TP{k}] Decode batch. #running-req: {k}, #token: {n}, token usage: 0.{k}, gen throughput (token/s): {f}, #queue-req: 0",
    "[{d} {t} TP{k}] Prefill batch. #new-seq: 1, #new-token: {n}, #cached-token: {n}, cache hit rate: {p}%, #running-req: {k}, #queue-req: 0",
    "node-{k}:{n}:{n} [{k}] NCCL INFO Channel {k:02d}/0{k} : {k}[{k}] -> {k}[{k}] via P2P/CUMEM",
    "node-{k}:{n}:{n} [{k}] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    "DEBUG {d} {t} [scheduler.py:{n}] scheduled {k} sequences, {n} tokens, free blocks {n}",
    "WARNING {d} {t} [tokenizer.py:{n}] Token indices sequence length is longer than the specified maximum sequence length for this model ({n} > {n}).",
]


def failure_lines() -> list[str]:
    """Lines copied from the real fixtures: the needles the benchmark must find."""
    lines: list[str] = []
    for path in sorted(ROOT.glob("fixtures/*/*.log"))[:60]:
        for line in path.read_text(errors="replace").splitlines():
            if any(w in line for w in ("Error", "error:", "NCCL WARN", "Xid", "CUDA")) and len(line) < 400:
                lines.append(line)
                break
    return lines or ["RuntimeError: operator torchvision::nms does not exist"]


def generate(size_mb: int, seed: int, out: Path) -> int:
    rng = random.Random(seed)
    needles = failure_lines()
    target = size_mb * 1024 * 1024
    written = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(out.suffix + ".partial")  # renamed when complete: a killed run leaves no short log
    with open(partial, "w", encoding="utf-8") as fh:
        while written < target:
            if rng.random() < 0.0005:
                line = rng.choice(needles)
            else:
                line = rng.choice(TEMPLATES).format(
                    d=f"11-{rng.randint(1, 28):02d}", t=f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
                    n=rng.randint(1, 99999), k=rng.randint(0, 7), f=round(rng.uniform(1, 5000), 1), p=round(rng.uniform(0, 99), 1))
            fh.write(line + "\n")
            written += len(line) + 1
    partial.replace(out)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("-o", "--output", type=Path, default=ROOT / "benchmarks" / "data" / "server.log")
    args = ap.parse_args()
    n = generate(args.size_mb, args.seed, args.output)
    print(f"wrote {args.output} ({n / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
