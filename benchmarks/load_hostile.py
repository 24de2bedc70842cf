"""The service under normal and hostile clients at once (issue #16), on the loopback interface.

    python benchmarks/load_hostile.py --normal 500 --hostile 100

Starts `diagnose serve` on 127.0.0.1, then at the same moment: `--normal` concurrent requests
with real fixture logs (each must be answered 200), and `--hostile` connections split among
slow bodies without a token (a byte a second), slow bodies with the token, decompression
bombs, crafted bodies (long-indented `nvidia-smi -q`, unterminated ANSI, JSON nested
100,000 deep, 5,000-digit JSON numbers), and forged Slack commands (a stale timestamp announcing
100 MB, or a fresh one with a wrong signature over 1 MiB). Prints what every normal request got, latency
percentiles, what each hostile kind got, and the peak RSS of the server and its workers.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "load-token-0123456789"
SLACK_SECRET = "load-slack-signing-secret-0123"


def start(args: argparse.Namespace) -> tuple[subprocess.Popen[bytes], str]:
    """The server, its log in a file: a pipe nobody reads fills at 64 KiB (about 600 request lines) and
    then the server's logging blocks its event loop."""
    env = {**os.environ, "DIAGNOSE_API_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SLACK_SECRET}
    cmd = [sys.executable, "-m", "diagnose", "serve", "--port", "0", "--max-inflight", str(args.normal * 2),
           "--timeout", str(args.timeout), *(["--workers", str(args.workers)] if args.workers else [])]
    log = tempfile.NamedTemporaryFile(prefix="load-hostile-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen(cmd, stderr=log, stdout=subprocess.DEVNULL, env=env, cwd=ROOT)
    print(f"server log: {log.name}", file=sys.stderr)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if m := re.search(r"listening on (http://\S+) ", Path(log.name).read_text(errors="replace")):
            return proc, m[1]
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise SystemExit(f"the server did not start: {Path(log.name).read_text(errors='replace')[-2000:]}")


def fixture_logs(n: int) -> list[bytes]:
    logs = [p.read_bytes() for p in sorted((ROOT / "fixtures").rglob("*.log")) if 200 < p.stat().st_size < 200_000]
    return [logs[i % len(logs)] for i in range(n)]


def hostile_bodies() -> dict[str, tuple[bytes, str]]:
    smi_q = "==============NVSMI LOG==============\nGPU 00000000:18:00.0\n" + (" " * 3000 + "x" * 3000 + "\n") * 6
    return {
        "bomb": (gzip.compress(b"A" * (200 << 20), 9), "text/plain"),
        "nvidia-smi-q": (smi_q.encode() * 6, "text/plain"),
        "ansi": (b"\x1b]0;" * 250_000, "text/plain"),
        "deep-json": (b'{"artifacts": ' + b"[" * 100_000, "application/json"),
        "big-number": (b'{"artifacts": [{"name": "a", "text": "x"}], "n": ' + b"9" * 5000 + b"}", "application/json"),
    }


async def slow_body(host: str, port: int, with_token: bool, seconds: int) -> str:
    reader, writer = await asyncio.open_connection(host, port)
    auth = f"Authorization: Bearer {TOKEN}\r\n" if with_token else ""
    writer.write(f"POST /v1/diagnose HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 100000\r\n\r\n".encode())
    answer = asyncio.create_task(reader.read(100))
    try:
        for _ in range(seconds):
            if answer.done():
                break
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(1)
        await asyncio.wait_for(asyncio.shield(answer), 15)
    except (ConnectionError, asyncio.TimeoutError):
        pass
    writer.close()
    if answer.done() and not answer.exception() and len(parts := answer.result().split(b" ")) > 1:
        return parts[1].decode()
    answer.cancel()
    return "closed"


async def forged_slack(host: str, port: int, stale: bool) -> str:
    """/slack/commands unsigned: refused from the headers (stale) or when the body ends (bad signature)."""
    reader, writer = await asyncio.open_connection(host, port)
    ts = int(time.time()) - (3600 if stale else 0)
    size = 100_000_000 if stale else 1 << 20
    writer.write(f"POST /slack/commands HTTP/1.1\r\nHost: x\r\nX-Slack-Request-Timestamp: {ts}\r\n"
                 f"X-Slack-Signature: v0={'0' * 64}\r\nContent-Length: {size}\r\n\r\n".encode())
    try:
        if not stale:
            writer.write(b"text=" + b"x" * (size - 5))
            await writer.drain()
        answer = await asyncio.wait_for(reader.read(100), 30)
    except (ConnectionError, asyncio.TimeoutError):
        answer = b""
    writer.close()
    return parts[1].decode() if len(parts := answer.split(b" ")) > 1 else "closed"


async def run(args: argparse.Namespace, url: str) -> dict[str, object]:
    import httpx

    host, port = url.removeprefix("http://").rsplit(":", 1)
    logs = fixture_logs(args.normal)
    bodies = hostile_bodies()
    kinds = ["slow-anonymous", "slow-with-token", "bomb", "crafted", "slack-forged"]
    limits = httpx.Limits(max_connections=args.normal + args.hostile, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def normal(body: bytes) -> tuple[int | str, float]:
            started = time.perf_counter()
            try:
                r = await client.post("/v1/diagnose", content=body, headers={"Authorization": f"Bearer {TOKEN}"})
                status: int | str = r.status_code
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            return status, time.perf_counter() - started

        async def hostile(i: int) -> tuple[str, str]:
            kind = kinds[i % len(kinds)]
            if kind.startswith("slow"):
                return kind, await slow_body(host, int(port), kind == "slow-with-token", args.slow_seconds)
            if kind == "slack-forged":
                stale = i // len(kinds) % 2 == 0
                return f"{kind}:{'stale' if stale else 'bad-signature'}", await forged_slack(host, int(port), stale)
            name = "bomb" if kind == "bomb" else ["nvidia-smi-q", "ansi", "deep-json", "big-number"][i // len(kinds) % 4]
            body, media = bodies[name]
            try:
                r = await client.post("/v1/diagnose", content=body,
                                      headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": media})
                return f"{kind}:{name}", str(r.status_code)
            except httpx.HTTPError as exc:
                return f"{kind}:{name}", type(exc).__name__

        started = time.perf_counter()
        hostile_tasks = [asyncio.create_task(hostile(i)) for i in range(args.hostile)]
        await asyncio.sleep(0.5)  # the hostile connections are in place first
        results = await asyncio.gather(*(normal(b) for b in logs))
        wall = time.perf_counter() - started
        hostile_results = await asyncio.gather(*hostile_tasks)
    latencies = sorted(t for _, t in results)
    statuses: dict[str, int] = {}
    for status, _ in results:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    outcome: dict[str, dict[str, int]] = {}
    for kind, status in hostile_results:
        outcome.setdefault(kind, {})[status] = outcome.setdefault(kind, {}).get(status, 0) + 1

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 3)

    return {"normal": len(results), "normal_statuses": statuses, "normal_errors": len(results) - statuses.get("200", 0),
            "latency_s": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": round(latencies[-1], 3),
                          "mean": round(statistics.mean(latencies), 3)},
            "normal_wall_s": round(wall, 1), "hostile": len(hostile_results), "hostile_outcomes": outcome}


def warm(url: str) -> None:
    import httpx

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            r = httpx.post(url + "/v1/diagnose", content=fixture_logs(1)[0], timeout=60,
                           headers={"Authorization": f"Bearer {TOKEN}"})
            if r.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise SystemExit("the server did not answer within 180 s")


def peak_rss_mb(pid: int) -> float:
    """The peak RSS of the server and of each of its worker processes (VmHWM), the largest."""
    peaks = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        ppid = re.search(r"PPid:\s+(\d+)", text)
        if status.parent.name == str(pid) or (ppid and ppid[1] == str(pid)):
            if m := re.search(r"VmHWM:\s+(\d+) kB", text):
                peaks.append(int(m[1]) / 1024)
    return round(max(peaks, default=0.0), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--normal", type=int, default=500)
    ap.add_argument("--hostile", type=int, default=100)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--slow-seconds", type=int, default=30)
    args = ap.parse_args()
    proc, url = start(args)
    try:
        warm(url)  # the workers have started and answered once: start-up is not what is measured
        report = asyncio.run(run(args, url))
        report["peak_rss_mb"] = peak_rss_mb(proc.pid)
        print(json.dumps(report, indent=1))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
