"""`diagnose` against ripgrep on the realistic mixes of issue 14, built from the real fixtures.

    python benchmarks/realistic.py                      # the five mixes at 200 MB, best of 3
    python benchmarks/realistic.py --size 1G --mixes busy-server,crash-loop
    python benchmarks/realistic.py --quick              # smoke run: 20 MB, one run each

For each mix: `diagnose --format json` (the venv's installed command, warm KB cache) and
`rg --no-unicode -n -f PATTERNS` on the KB's signal regexes exported in ripgrep's syntax
(benchmarks/run.py), each writing its answer to a file, in the same run: the best wall time of N
and the peak RSS; and whether the first cause is the one `diagnose` gives on the failing fixture
alone. Then the KB-size sweep on one mix and the small-log start-up. Mixes are cached in
benchmarks/data/realistic/ (rebuilt when their recipe changes); results go there as JSON too.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from realistic_lines import FIXTURES, ROOT  # noqa: E402
from realistic_measure import (  # noqa: E402
    Diagnose,
    answer,
    at_commit,
    best_of,
    export_for_rg,
    first_cause,
    installed,
    ripgrep,
    run_once,
)
from realistic_mixes import VENV_BIN, build, parse_size  # noqa: E402
from realistic_recipes import MIXES  # noqa: E402
from realistic_sweep import kb_sweep, size_sweep, size_sweep_table, startup  # noqa: E402


def compare(cmd: Diagnose, name: str, size: int, cache: Path, rg: str, patterns: Path, runs: int,
            timeout: float) -> dict:
    log, meta = build(MIXES[name], size, cache)
    mb = log.stat().st_size / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        run_once(cmd("--format", "json", "--exit-zero", str(FIXTURES / meta["failure"])), out, cmd.env)
        expected = first_cause(out)
        argv = cmd("--format", "json", "--exit-zero", str(log))
        first, *_ = run_once(argv, out, cmd.env, timeout)  # warm: a kind's prefilter database, compiled once
        d = best_of(argv, runs, out, cmd.env, timeout)
        cause, inputs = answer(out)
        r = best_of([rg, "--no-unicode", "-n", "-f", str(patterns), str(log)], runs, out, timeout=timeout)
        rg_lines = sum(1 for _ in out.open("rb"))
    return {"mix": name, "mb": round(mb, 1), "lines": meta["lines"], "diagnose_first_run_s": round(first, 2),
            "diagnose_s": d.seconds, "diagnose_mb_s": round(mb / d.seconds, 1), "diagnose_runs": d.runs,
            "diagnose_peak_rss_mb": d.peak_rss_mb, "diagnose_timed_out": d.timed_out, "rg_s": r.seconds,
            "rg_mb_s": round(mb / r.seconds, 1), "rg_runs": r.runs, "rg_peak_rss_mb": r.peak_rss_mb,
            "rg_matched_lines": rg_lines, "ratio": round(d.seconds / r.seconds, 1), "expected_first": expected,
            "first_cause": cause, "right": cause == expected, "inputs_read": inputs, "fixtures": meta["fixtures"]}


def table(rows: list[dict]) -> str:
    head = ("| mix | size MB | diagnose s | diagnose MB/s | rg s | rg MB/s | diagnose / rg | "
            "diagnose peak RSS MB | findings right |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
    return head + "".join(
        f"| {r['mix']} | {r['mb']:.0f} | {r['diagnose_s']:.2f}{' (stopped)' if r['diagnose_timed_out'] else ''} | "
        f"{r['diagnose_mb_s']} | {r['rg_s']:.2f} | {r['rg_mb_s']} | {r['ratio']}x | {r['diagnose_peak_rss_mb']:.0f} | "
        f"{'yes' if r['right'] else 'no: ' + str(r['first_cause'])} |\n" for r in rows)


def sweep_table(rows: list[dict]) -> str:
    head = "| KB | rules | first run s (compile) | diagnose s | MB/s | peak RSS MB | findings right |\n" \
           "|---|---:|---:|---:|---:|---:|---|\n"
    return head + "".join(f"| {r['kb']} | {r['rules']} | {r['first_run_s']} | {r['seconds']:.2f} | {r['mb_per_s']} | "
                          f"{r['peak_rss_mb']:.0f} | {'yes' if r['right'] else 'no: ' + str(r['first_cause'])} |\n"
                          for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="200M", help="each mix's size: 20M, 200M, 1G (default 200M)")
    ap.add_argument("--runs", type=int, default=3, help="best of N runs of each command (default 3)")
    ap.add_argument("--mixes", default=",".join(MIXES), help=f"comma-separated, of: {', '.join(MIXES)}")
    ap.add_argument("--sweep-mix", default="busy-server", help="the mix of the KB-size sweep ('none': no sweep)")
    ap.add_argument("--size-sweep-mix", default="busy-server",
                    help="the mix whose first 1, 3, 8 and 32 MiB are timed (per-byte speed by input size; "
                    "'none': no sweep)")
    ap.add_argument("--cache", type=Path, default=ROOT / "benchmarks" / "data" / "realistic")
    ap.add_argument("--timeout", type=float, default=900, help="stop one run after this many seconds")
    ap.add_argument("--quick", action="store_true", help="a smoke run: --size 20M --runs 1")
    ap.add_argument("--at", metavar="REV", help="measure this commit's diagnose/ and rules/ (a snapshot run by "
                    "the venv's Python) instead of the installed command on the checkout as it is")
    args = ap.parse_args()
    try:
        size, runs = (parse_size("20M"), 1) if args.quick else (parse_size(args.size), args.runs)
    except ValueError as e:
        ap.error(str(e))
    names = [n.strip() for n in args.mixes.split(",") if n.strip()]
    if unknown := [n for n in names if n not in MIXES]:
        ap.error(f"no such mix: {', '.join(unknown)} (the mixes: {', '.join(MIXES)})")
    for flag, mix in (("--sweep-mix", args.sweep_mix), ("--size-sweep-mix", args.size_sweep_mix)):
        if mix != "none" and mix not in MIXES:
            ap.error(f"{flag}: no such mix: {mix} (the mixes: {', '.join(MIXES)})")
    rg = ripgrep()
    args.cache = args.cache.resolve()
    args.cache.mkdir(parents=True, exist_ok=True)
    cmd = at_commit(ROOT, VENV_BIN, args.at, args.cache) if args.at else installed(ROOT, VENV_BIN, args.cache)
    if args.at:
        sys.path.insert(0, str(cmd.rules.parent))  # the snapshot's KB is the one exported for rg
    patterns = args.cache / "patterns.txt"
    count = export_for_rg(patterns, rg)
    head = cmd.label
    print(f"diagnose at {head}; {count['patterns']} KB patterns exported for `rg --no-unicode` "
          f"({count['unicode_scoped']} in (?u:...), {count['left_out']} left out); best of {runs}\n", flush=True)
    rows = []
    for name in names:
        rows.append(compare(cmd, name, size, args.cache, rg, patterns, runs, args.timeout))
        print(f"  {name}: diagnose {rows[-1]['diagnose_s']} s, rg {rows[-1]['rg_s']} s", file=sys.stderr, flush=True)
    print(table(rows))
    report: dict = {"commit": head, "size": size, "runs": runs, "patterns": count, "mixes": rows}
    if args.sweep_mix != "none":
        log, _ = build(MIXES[args.sweep_mix], size, args.cache)
        expected = next((r["expected_first"] for r in rows if r["mix"] == args.sweep_mix), None)
        report["kb_sweep"] = {"mix": args.sweep_mix, "rows": kb_sweep(cmd, log, expected, runs)}
        print(f"KB-size sweep on {args.sweep_mix} ({log.stat().st_size / 1e6:.0f} MB):\n")
        print(sweep_table(report["kb_sweep"]["rows"]))
    report["startup"] = s = startup(cmd, 10)
    print(f"Small crash log ({s['file']}, {s['lines']} lines), best of {s['runs']}: diagnose {s['diagnose_s']:.3f} s, "
          f"python -c pass {s['python_pass_s']:.3f} s, above Python's start {s['above_python_s']:.3f} s; CPU "
          f"{s['diagnose_cpu_s']:.3f} s vs {s['python_pass_cpu_s']:.3f} s, above {s['above_python_cpu_s']:.3f} s "
          f"(first cause {s['first_cause']}).")
    if args.size_sweep_mix != "none":
        log, _ = build(MIXES[args.size_sweep_mix], size, args.cache)
        report["size_sweep"] = {"mix": args.size_sweep_mix, "rows": size_sweep(cmd, log, runs, s["diagnose_s"])}
        print(f"\nInput-size sweep on the first MiB of {args.size_sweep_mix}:\n")
        print(size_sweep_table(report["size_sweep"]["rows"]))
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = args.cache / f"results-{size}-{head.split()[0]}-{stamp}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\n(results: {out})")


if __name__ == "__main__":
    main()
