"""Load on `diagnose serve`: many concurrent requests with the real fixture logs, on loopback only.

    .venv/bin/python benchmarks/load_server.py --requests 2000 --concurrency 32

Starts the server on 127.0.0.1 (a free port, a random token), warms it up, then sends `--requests`
POST /v1/diagnose requests, `--concurrency` at a time, each body one real artifact from fixtures/
(round robin). Prints requests per second, latency percentiles, the answers' status codes and the
server's peak RSS (VmHWM). Bounded: it stops after `--requests` or `--max-seconds`, whichever is first.
The client runs on the same machine and takes CPU from the server: the numbers are a floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
MAX_PAYLOAD = 256 * 1024


def payloads() -> list[tuple[str, bytes]]:
    """Every plain-text artifact of the fixtures (no bundles, no expected.yaml), smallest first."""
    found = []
    for path in sorted(ROOT.glob("fixtures/**/*")):
        if not path.is_file() or path.name == "expected.yaml" or path.suffix in (".gz", ".tar", ".xz", ".bz2"):
            continue
        data = path.read_bytes()
        if 0 < len(data) <= MAX_PAYLOAD and b"\x00" not in data[:4096]:
            found.append((path.name, data))
    return found


def start(token: str, args: argparse.Namespace, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "DIAGNOSE_API_TOKEN": token}
    cmd = [sys.executable, "-m", "diagnose", "serve", "--host", "127.0.0.1", "--port", "0",
           "--max-inflight", str(args.concurrency * 2), *(["--workers", str(args.workers)] if args.workers else [])]
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = re.search(r"listening on (http://\S+) ", log.read_text())
        if m:
            return proc, m[1]
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"the server did not start:\n{log.read_text()}")


def peak_rss_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    m = re.search(r"VmHWM:\s+(\d+) kB", status)
    return round(int(m[1]) / 1024, 1) if m else None


async def load(url: str, token: str, bodies: list[tuple[str, bytes]], args: argparse.Namespace) -> dict[str, object]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "text/plain"}
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    sizes: list[int] = []
    next_index = 0
    stop_at = time.perf_counter() + args.max_seconds

    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        for name, body in bodies[:20]:  # warm-up: KB cache, first compiles
            await client.post("/v1/diagnose", params={"name": name}, content=body, headers=headers)

        async def worker() -> None:
            nonlocal next_index
            while next_index < args.requests and time.perf_counter() < stop_at:
                name, body = bodies[next_index % len(bodies)]
                next_index += 1
                start = time.perf_counter()
                try:
                    r = await client.post("/v1/diagnose", params={"name": name, "format": args.format},
                                          content=body, headers=headers)
                    statuses[str(r.status_code)] += 1
                except httpx.HTTPError as exc:
                    statuses[type(exc).__name__] += 1
                    continue
                latencies.append(time.perf_counter() - start)
                sizes.append(len(body))

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        wall = time.perf_counter() - began

    latencies.sort()

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))] * 1000, 1)

    return {
        "requests": sum(statuses.values()), "concurrency": args.concurrency, "format": args.format,
        "distinct_bodies": len(bodies), "median_body_kb": round(statistics.median(sizes) / 1024, 1) if sizes else 0,
        "seconds": round(wall, 2), "requests_per_s": round(len(latencies) / wall, 1),
        "latency_ms": {"p50": pct(50), "p95": pct(95), "p99": pct(99), "max": round(latencies[-1] * 1000, 1)},
        "statuses": dict(statuses),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--workers", type=int, help="the server's diagnosis threads (default: the server's)")
    ap.add_argument("--format", default="json", choices=["json", "markdown", "slack"])
    ap.add_argument("--max-seconds", type=float, default=300)
    args = ap.parse_args()
    bodies = payloads()
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start(token, args, Path(tmp) / "server.log")
        try:
            idle_rss = peak_rss_mb(proc.pid)
            report = asyncio.run(load(url, token, bodies, args))
            report["server_rss_mb"] = {"after_start": idle_rss, "peak": peak_rss_mb(proc.pid)}
            report["cpus"] = os.cpu_count()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
