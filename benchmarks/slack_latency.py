"""Latency from an @diagnose mention to its answer in the thread, on the fixtures' real logs.

    .venv/bin/python benchmarks/slack_latency.py [--limit N] [--gzip]

Runs the real Bolt app over Socket Mode against the tests' stand-in for Slack (tests/slack_standin.py,
127.0.0.1 only). For each fixture folder with an expected first cause, its files are shared in a new
thread (one channel per fixture, so no answer is a repeat) and the app is mentioned; the clock runs
from the mention's envelope to the acknowledging reaction, to the chat.postMessage in the thread, and
to the post-mortem's upload. One mention at a time. Prints percentiles and the slowest fixtures, and
how many answers named the fixture's expected cause. The stand-in answers at once: Slack's own
round trips (tens of ms each, four to six of them) come on top.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from slack_standin import APP_TOKEN, BOT_TOKEN, SlackStandIn  # noqa: E402


def cases(limit: int | None) -> list[tuple[str, list[Path], str]]:
    out = []
    for folder in sorted((ROOT / "fixtures").iterdir()):
        expected = folder / "expected.yaml"
        if not expected.is_file():
            continue
        first = (yaml.safe_load(expected.read_text()) or {}).get("first")
        files = [p for p in sorted(folder.iterdir()) if p.is_file() and p.name != "expected.yaml"]
        if first and files:
            out.append((folder.name, files, first))
    return out[:limit] if limit else out


def pad(data: bytes, mib: float) -> bytes:
    """`data` with healthy lines before it, `mib` MiB in all (a long run that failed at its end)."""
    need = int(mib * 2**20) - len(data)
    if need <= 0:
        return data
    line = b"[train] step 1200/50000 loss 1.8342 lr 2.0e-04 grad_norm 0.91 tokens/s 51234 mem 61.2GiB\n"
    return line * (need // len(line) + 1) + data


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, help="At most N fixtures.")
    ap.add_argument("--gzip", action="store_true", help="Share every file gzipped (.gz), as a team often does.")
    ap.add_argument("--pad-mib", type=float, default=0.0,
                    help="Grow each file to this size with healthy training-log lines before its failure.")
    args = ap.parse_args()

    from slack_bolt.adapter.socket_mode import SocketModeHandler

    from diagnose import api
    from diagnose.slack import run
    from diagnose.slack.settings import SlackSettings

    standin = SlackStandIn()
    store = Path(tempfile.mkdtemp()) / "answers.sqlite3"
    settings = SlackSettings(bot_token=BOT_TOKEN, app_token=APP_TOKEN, api_url=standin.api_url, store=store)
    kb = api.load_kb()
    handler = SocketModeHandler(run.build(settings, kb), APP_TOKEN)
    handler.connect()
    rows = []
    try:
        for n, (name, files, first) in enumerate(cases(args.limit)):
            channel = f"C{n:06d}"
            datas = [pad(p.read_bytes(), args.pad_mib) for p in files]
            shared = [standin.add_file(p.name + (".gz" if args.gzip else ""), gzip.compress(d) if args.gzip else d)
                      for p, d in zip(files, datas)]
            thread = standin.thread(channel, [{"text": "it failed, logs attached", "files": shared}])
            start = time.monotonic()
            asked = standin.mention(channel, thread)
            ack = standin.wait("api", "reactions.add", channel=channel, timestamp=asked).at - start
            answer = standin.wait("api", "chat.postMessage", channel=channel, thread_ts=thread)
            upload = standin.wait("api", "files.completeUploadExternal", channel_id=channel).at - start
            blocks = answer.params.get("blocks") or []
            top = next((b["text"]["text"] for b in blocks if " · severity " in b.get("text", {}).get("text", "")), "")
            rows.append((name, ack, answer.at - start, upload, f"*{first}*" in top, sum(len(d) for d in datas)))
    finally:
        handler.close()
        standin.close()

    def line(label: str, values: list[float]) -> str:
        return (f"{label:<22} p50 {1000 * statistics.median(values):7.1f} ms   p90 {1000 * pct(values, .9):7.1f} ms   "
                f"p99 {1000 * pct(values, .99):7.1f} ms   max {1000 * max(values):7.1f} ms")

    size = sum(r[5] for r in rows)
    print(f"{len(rows)} fixtures, {size / 2**20:.1f} MiB of logs{' (shared gzipped)' if args.gzip else ''}"
          f"{f', each file padded to {args.pad_mib} MiB' if args.pad_mib else ''}, one at a time")
    print(line("mention -> reaction", [r[1] for r in rows]))
    print(line("mention -> answer", [r[2] for r in rows]))
    print(line("mention -> post-mortem", [r[3] for r in rows]))
    print(f"expected cause named first: {sum(r[4] for r in rows)}/{len(rows)}", [r[0] for r in rows if not r[4]])
    print("slowest:", json.dumps([(r[0], round(1000 * r[2]), r[5]) for r in sorted(rows, key=lambda r: -r[2])[:5]]))


if __name__ == "__main__":
    main()
