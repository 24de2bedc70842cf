"""The KB-size sweep (the rules copied to 4x and 10x under other ids), the input-size sweep (the first 1 to 32 MiB
of a mix) and the small-log start-up."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from realistic_lines import FIXTURES, ROOT
from realistic_measure import Diagnose, best_of, first_cause, run_once
from realistic_mixes import VENV_BIN

SMALL_CRASH = FIXTURES / "device-side-assert--repro-h200-embedding" / "fail-device-assert.log"
COPY_SUFFIX = re.compile(r"-x\d+$")


def multiplied_kb(rules: Path, factor: int, dest: Path) -> tuple[Path, int]:
    """rules/ copied to `dest` with each rule file `factor` times: the copies' file stem and `id`
    are `<id>-x<n>`, everything else (signals, conditions, explains) the original's."""
    shutil.copytree(rules, dest)
    count = 0
    for path in sorted(dest.rglob("*.yaml")):
        if {"compat", "catalog"} & set(path.relative_to(dest).parts):
            continue
        text, stem = path.read_text(), path.stem
        count += 1
        for n in range(1, factor):
            copy = re.sub(rf"^id:\s*['\"]?{re.escape(stem)}['\"]?\s*$", f"id: {stem}-x{n}", text, count=1, flags=re.M)
            (path.parent / f"{stem}-x{n}.yaml").write_text(copy)
            count += 1
    return dest, count


def kb_sweep(cmd: Diagnose, log: Path, expected: str | None, runs: int,
             factors: tuple[int, ...] = (1, 4, 10)) -> list[dict]:
    """`diagnose` on one mix with each KB (DIAGNOSE_RULES_DIR), each with a cache of its own: the
    first run compiles the KB (its time is given), then the best of `runs`."""
    rows = []
    size_mb = log.stat().st_size / 1e6
    with tempfile.TemporaryDirectory(prefix="diagnose-kb-sweep-") as tmp:
        for factor in factors:
            rules, count = multiplied_kb(cmd.rules, factor, Path(tmp) / f"rules-{factor}x")
            env = cmd.with_env(DIAGNOSE_RULES_DIR=str(rules), DIAGNOSE_CACHE_DIR=f"{tmp}/cache-{factor}x")
            argv = cmd("--format", "json", "--exit-zero", str(log))
            out = Path(tmp) / "out.json"
            first, *_ = run_once(argv, out, env)
            run_once(argv, out, env)  # a large log's prefilter database is compiled and cached on the first
            cause = first_cause(out)
            t = best_of(argv, runs, out, env)
            rows.append({"kb": f"{factor}x", "rules": count, "first_run_s": round(first, 2), "seconds": t.seconds,
                         "mb_per_s": round(size_mb / t.seconds, 1), "peak_rss_mb": t.peak_rss_mb,
                         "first_cause": cause, "right": COPY_SUFFIX.sub("", cause or "") == (expected or "")})
    return rows


def startup(cmd: Diagnose, runs: int = 10) -> dict:
    """A real small crash log end to end (warm KB cache) against the same interpreter doing nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        argv = cmd("--format", "json", "--exit-zero", str(SMALL_CRASH))
        # the bytecode an installed wheel has (pip compiles it on install): with PYTHONDONTWRITEBYTECODE set, as on
        # the project's machines, an editable install would otherwise compile every module from source on each run
        subprocess.run([str(VENV_BIN / "python"), "-c", "import compileall, os, diagnose; "
                        "compileall.compile_dir(os.path.dirname(diagnose.__file__), quiet=1)"],
                       env=cmd.env, check=False, capture_output=True)
        run_once(argv, out, cmd.env)
        small = best_of(argv, runs, out, cmd.env)
        cause = first_cause(out)
        bare = best_of([str(VENV_BIN / "python"), "-c", "pass"], runs, out)
    return {"file": str(SMALL_CRASH.relative_to(ROOT)), "lines": len(SMALL_CRASH.read_text().splitlines()),
            "diagnose_s": small.seconds, "python_pass_s": bare.seconds,
            "above_python_s": round(small.seconds - bare.seconds, 3), "diagnose_peak_rss_mb": small.peak_rss_mb,
            "diagnose_cpu_s": small.cpu_s, "python_pass_cpu_s": bare.cpu_s,
            "above_python_cpu_s": round(small.cpu_s - bare.cpu_s, 3),
            "first_cause": cause, "runs": runs}


SWEEP_SIZES = (1 << 20, 3 << 20, 8 << 20, 32 << 20)


def size_sweep(cmd: Diagnose, log: Path, runs: int, startup_s: float,
               sizes: tuple[int, ...] = SWEEP_SIZES) -> list[dict]:
    """`diagnose` on the first 1, 3, 8 and 32 MiB of one mix (cut at a line end): seconds, MB/s, and MB/s of the
    time above the small-log run (`startup_s`), which is what one path for every size should keep level."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="diagnose-size-sweep-") as tmp, log.open("rb") as src:
        for size in sizes:
            src.seek(0)
            head = src.read(size)
            head = head[: head.rfind(b"\n") + 1]
            if len(head) < size // 2:
                continue  # the mix is smaller than this
            part = Path(tmp) / f"head-{size >> 20}MiB.log"
            part.write_bytes(head)
            argv = cmd("--format", "json", "--exit-zero", str(part))
            out = Path(tmp) / "out.json"
            run_once(argv, out, cmd.env)
            t = best_of(argv, runs, out, cmd.env)
            mb = len(head) / 1e6
            rows.append({"mib": size >> 20, "bytes": len(head), "seconds": t.seconds,
                         "mb_per_s": round(mb / t.seconds, 1),
                         "above_startup_mb_per_s": round(mb / max(t.seconds - startup_s, 1e-3), 1),
                         "peak_rss_mb": t.peak_rss_mb, "first_cause": first_cause(out)})
    return rows


def size_sweep_table(rows: list[dict]) -> str:
    lines = ["| first MiB of the mix | seconds | MB/s | MB/s above the small-log run | peak RSS MB | first cause |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['mib']} | {r['seconds']:.2f} | {r['mb_per_s']} | {r['above_startup_mb_per_s']} | "
                     f"{r['peak_rss_mb']} | {r['first_cause'] or '-'} |")
    return "\n".join(lines) + "\n"
