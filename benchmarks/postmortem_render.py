"""What the post-mortem formats cost on top of the diagnosis, on real fixtures.

    .venv/bin/python benchmarks/postmortem_render.py [--repeat N]

Two diagnoses: the four-artifact incident of tests/test_postmortem.py (real fixture files: an Xid 79
journal, an NCCL watchdog timeout, an H200 host's nvidia-smi and collect_env), and every fixture with
an expected cause at once (a diagnosis with hundreds of findings and a full timeline). For each, the
median time of each renderer (markdown, svg, html, the sample --template), and the whole command
`python -m diagnose --format html` on the incident (start-up, KB from the cache, diagnosis, page).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_postmortem import PARTS  # noqa: E402

from diagnose import api  # noqa: E402
from diagnose.render import RENDERERS, template  # noqa: E402

SAMPLE = ROOT / "docs" / "postmortem-template.md.j2"


def median_ms(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    kb = api.load_kb()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "incident"
        folder.mkdir()
        for name, src in PARTS.items():
            shutil.copyfile(src, folder / name)
        every = sorted({p.parent for p in (ROOT / "fixtures").glob("*/expected.yaml")})
        cases = {"xid79-nccl incident": [str(folder)], f"all {len(every)} fixture folders": [str(p) for p in every]}
        for label, paths in cases.items():
            d = api.diagnose(paths, kb=kb)
            print(f"{label}: {len(d.inputs)} artifacts, {len(d.findings)} findings")
            for fmt in ("markdown", "svg", "html"):
                ms = median_ms(lambda fmt=fmt, d=d: RENDERERS[fmt](d), args.repeat)  # type: ignore[misc]
                print(f"  {fmt:9s} {ms:8.1f} ms  ({len(RENDERERS[fmt](d)) / 1024:.0f} KiB)")
            ms = median_ms(lambda d=d: template.render(d, str(SAMPLE)), args.repeat)  # type: ignore[misc]
            print(f"  template  {ms:8.1f} ms")
        cmd = [sys.executable, "-m", "diagnose", "--format", "html", "-o", str(Path(tmp) / "p.html"), str(folder)]
        subprocess.run(cmd, capture_output=True, check=False)  # the KB cache warm
        wall = median_ms(lambda: subprocess.run(cmd, capture_output=True, check=False), max(3, args.repeat // 4))
        print(f"python -m diagnose --format html (incident): {wall:.0f} ms wall")


if __name__ == "__main__":
    main()
