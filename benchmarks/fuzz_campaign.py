"""The long fuzz campaign (issue #16): many generated inputs through every parser and the whole
pipeline, counting exceptions, the worst seconds per MB and the worst RSS.

    python benchmarks/fuzz_campaign.py --inputs 1000000 --procs 2

Inputs are the real lines of the fixtures and of every artifact kind, mutated with the pieces that
broke the parsers (Unicode digits, non-hex bus ids, 5,000-digit numbers, unterminated ANSI, long
indentation, wrong JSON types, deep nesting), repeated into large inputs now and then, and wrapped
in gzip / bzip2 / xz / tar / UTF-16 / truncation. Most go through the parsers alone (sniff's
scanner with the parsers' own exceptions visible); every tenth batch goes through
api.diagnose_texts, checked for accounting (every input listed) and against the JSON schema, and
every fifth of those is also redacted and rendered in every format (text, Markdown with its
timeline, Slack, HTML, SVG).
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import io
import json
import lzma
import multiprocessing
import os
import pickle
import random
import resource
import sys
import tarfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
SMALL = 256 * 1024  # seconds per MB is measured on inputs at least this big (smaller: the absolute time)

HOSTILE = ["²", "①", "٣", "GG", "9" * 5000, "\x1b]", "\x1b]0;", "\x00", " " * 3000, ":", "[", "{", '"', "\t",
           "N/A", "-1", "null", "\ufffd", "é", "\x1b[", "," * 50, "[" * 200, "a" * 300 + "!", "1.2" + "a" * 40 + "!"]
JSON_VALUES = [None, 5, "x", [], {}, True, 1.5, "GG:18:00.0", "²", "9" * 30, [[[[[]]]]]]


def _fixture_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted((ROOT / "fixtures").rglob("*")):
        if path.is_file() and path.suffix not in (".gz", ".tar", ".yaml", ".bz2", ".xz") and path.stat().st_size < 400_000:
            try:
                lines += path.read_text(encoding="utf-8").splitlines()[:400]
            except (UnicodeDecodeError, OSError):
                continue
    return lines


def _json_doc(rnd: random.Random) -> str:
    docs = [
        {"diagnose_collect": "nvml", "driver_version": "580.1", "errors": ["x"],
         "gpus": [{"index": 0, "name": "H200", "bus_id": "00000000:18:00.0", "remapped_rows": {"pending": False},
                   "memory_total_mib": 1, "uuid": "GPU-1"}], "pairs": [{"a": 0, "b": 1, "p2p_read": "OK"}]},
        {"diagnose_collect": "manifest", "python_source": "collector", "python": "/usr/bin/python3",
         "items": [{"name": "a", "source": "b", "status": "fail", "reason": "r"}], "platform": "glibc2.35"},
        [{"name": "torch", "version": "2.1"}], {"model_type": "llama"},
    ]
    doc = json.loads(json.dumps(rnd.choice(docs)))

    def walk(value: object) -> None:
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value)) if isinstance(value, list) else []
        for key, child in items:
            r = rnd.random()
            if r < 0.15:
                value[key] = rnd.choice(JSON_VALUES)  # type: ignore[index]
            elif r < 0.22 and isinstance(value, dict):
                del value[key]
            else:
                walk(child)

    walk(doc)
    return json.dumps(doc, indent=rnd.choice([None, 1]))


def _mutate(line: str, rnd: random.Random) -> str:
    for _ in range(rnd.randint(0, 3)):
        at = rnd.randint(0, len(line))
        line = line[:at] + rnd.choice(HOSTILE) + line[at + rnd.randint(0, 3):]
    if rnd.random() < 0.1:
        line = "".join(rnd.choice("²①٣9") if c.isdigit() else c for c in line)
    return line


def make_text(rnd: random.Random, corpus: list[str]) -> str:
    if rnd.random() < 0.1:
        return _json_doc(rnd)
    start = rnd.randrange(len(corpus))
    lines = [(_mutate(line, rnd) if rnd.random() < 0.3 else line) for line in corpus[start:start + rnd.randint(1, 80)]]
    if rnd.random() < 0.2:
        lines.insert(rnd.randint(0, len(lines)), _json_doc(rnd))
    if rnd.random() < 0.002:  # a large input: hostile lines repeated to 0.25-2 MB
        unit = "\n".join(lines) + "\n"
        lines = [unit * max(1, rnd.randint(256_000, 2_000_000) // max(len(unit), 1))]
    return "\n".join(lines)


def wrap(data: bytes, rnd: random.Random) -> bytes:
    how = rnd.choices(["plain", "gzip", "bzip2", "xz", "truncated", "tar", "utf-16", "binary"],
                      [70, 8, 4, 3, 4, 5, 3, 3])[0]
    if how == "gzip":
        return gzip.compress(data, 1)
    if how == "bzip2":
        return bz2.compress(data, 1)
    if how == "xz":
        return lzma.compress(data, preset=0)
    if how == "truncated":
        return gzip.compress(data, 1)[: rnd.randint(10, max(11, len(data) // 2))]
    if how == "tar":
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w") as tar:
            member = tarfile.TarInfo("logs/server.log")
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
            link = tarfile.TarInfo("logs/link")
            link.type, link.linkname = rnd.choice([tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE]), "server.log"
            tar.addfile(link)
        raw = out.getvalue()
        return raw if rnd.random() < 0.8 else raw[: rnd.randint(512, len(raw))]
    if how == "utf-16":
        return b"\xff\xfe" + data.decode("utf-8", "replace").encode("utf-16-le")
    if how == "binary":
        return bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 3000)))
    return data


def worker(args: tuple[int, int, int]) -> dict[str, object]:
    index, count, batch = args
    from diagnose import api
    from diagnose.artifacts import sniff
    from diagnose.artifacts.reader import ReadResult, add_stream
    from diagnose.errors import InputError
    from diagnose.redact import redact_diagnosis
    from diagnose.render import RENDERERS

    try:
        import jsonschema

        schema = json.loads((ROOT / "docs" / "diagnosis.schema.json").read_text())
    except ImportError:
        jsonschema = None  # type: ignore[assignment]
    kb = api.load_kb()
    corpus = _fixture_lines()
    from test_fuzz import FRAGMENTS

    corpus += FRAGMENTS * 20
    rnd = random.Random(index)
    stats: dict[str, object] = {"inputs": 0, "bytes": 0, "exceptions": 0, "parse_notes": 0, "unaccounted": 0,
                                "schema_errors": 0, "worst_s_per_mb": 0.0, "worst_small_s": 0.0, "signatures": {},
                                "pipeline_inputs": 0}
    signatures: dict[str, int] = stats["signatures"]  # type: ignore[assignment]
    slow: list[tuple[float, int]] = []
    stats["slow"] = slow  # (CPU seconds, bytes) of the inputs over 1 s

    if os.environ.get("FUZZ_RLIMIT_MB"):  # a run past this much memory fails where it allocates, and says where
        limit = int(os.environ["FUZZ_RLIMIT_MB"]) << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def failed(exc: BaseException) -> None:
        stats["exceptions"] = int(stats["exceptions"]) + 1  # type: ignore[call-overload]
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        sig = f"{type(exc).__name__} {Path(frame.filename).name}:{frame.lineno}"
        signatures[sig] = signatures.get(sig, 0) + 1
        if save is not None:
            (save / f"exc-{index}-{len(signatures)}.txt").write_text("".join(traceback.format_exception(exc))[-6000:])

    save = Path(os.environ["FUZZ_SAVE"]) if os.environ.get("FUZZ_SAVE") else None
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)

    def timed(size: int, seconds: float, what: object = None) -> None:
        if seconds > 1.0:
            slow.append((round(seconds, 2), size))
            if save is not None:
                save.mkdir(parents=True, exist_ok=True)
                (save / f"slow-{index}-{len(slow)}.pickle").write_bytes(pickle.dumps(what))
        if size >= SMALL:
            stats["worst_s_per_mb"] = max(float(stats["worst_s_per_mb"]), seconds / (size / (1 << 20)))  # type: ignore[arg-type]
        else:
            stats["worst_small_s"] = max(float(stats["worst_small_s"]), seconds)  # type: ignore[arg-type]

    api.diagnose_texts([("warm-up", "\n".join(corpus[:2000]).encode())], kb=kb)  # first-call costs are not an input's
    import faulthandler

    watchdog = float(os.environ.get("FUZZ_WATCHDOG", "30"))  # an input stuck this long: its stack on stderr
    done = 0
    while done < count:
        faulthandler.dump_traceback_later(watchdog, exit=False)
        if rnd.random() < 0.1:  # the whole pipeline, a batch of artifacts at once
            named = [(f"in-{i}", wrap(make_text(rnd, corpus).encode("utf-8", "surrogatepass"), rnd)) for i in range(batch)]
            size = sum(len(d) for _, d in named)
            started = time.process_time()
            try:
                diagnosis = api.diagnose_texts(named, kb=kb)
                out = json.loads(RENDERERS["json"](diagnosis))
                seen = {i.source.split(":", 1)[0] for i in diagnosis.inputs} | {
                    s.source.split(":", 1)[0] for s in diagnosis.skipped}
                stats["unaccounted"] = int(stats["unaccounted"]) + len({n for n, _ in named} - seen)  # type: ignore[call-overload]
                notes = [n for i in diagnosis.inputs for n in i.notes if "could not be parsed" in n]
                stats["parse_notes"] = int(stats["parse_notes"]) + len(notes)  # type: ignore[call-overload]
                if jsonschema is not None and done % 50 == 0:
                    try:
                        jsonschema.validate(out, schema)
                    except jsonschema.ValidationError:
                        stats["schema_errors"] = int(stats["schema_errors"]) + 1  # type: ignore[call-overload]
                if int(stats["pipeline_inputs"]) % (5 * batch) == 0:  # type: ignore[call-overload]
                    redacted = redact_diagnosis(diagnosis)
                    for render in RENDERERS.values():
                        render(redacted)
                    stats["rendered"] = int(stats.get("rendered", 0)) + 1  # type: ignore[call-overload]
            except InputError:
                pass
            except Exception as exc:  # MemoryError included (FUZZ_RLIMIT_MB)
                failed(exc)
                if save is not None:
                    (save / f"exc-{index}-{len(signatures)}.pickle").write_bytes(pickle.dumps(named))
            timed(size, time.process_time() - started, named)
            done += batch
            stats["pipeline_inputs"] = int(stats["pipeline_inputs"]) + batch  # type: ignore[call-overload]
            stats["bytes"] = int(stats["bytes"]) + size  # type: ignore[call-overload]
            continue
        data = wrap(make_text(rnd, corpus).encode("utf-8", "surrogatepass"), rnd)
        started = time.process_time()
        try:  # the parsers alone, their exceptions visible (sniff would turn them into notes)
            opened = ReadResult()
            add_stream(opened, "in", io.BytesIO(data))
            for source in opened.sources:
                scanner = sniff._Scanner(source, lambda *a: None)
                for lineno, raw in source.lines():
                    scanner._parse(lineno, sniff.pylog.strip_ansi(raw))
                scanner._close_block()
        except InputError:
            pass
        except Exception as exc:
            failed(exc)
        timed(len(data), time.process_time() - started, data)
        done += 1
        stats["bytes"] = int(stats["bytes"]) + len(data)  # type: ignore[call-overload]
    stats["inputs"] = done
    stats["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=100_000)
    ap.add_argument("--procs", type=int, default=multiprocessing.cpu_count())
    ap.add_argument("--batch", type=int, default=10, help="artifacts per whole-pipeline call")
    ap.add_argument("--chunk", type=int, default=5000, help="inputs per task (each task a fresh seed)")
    ap.add_argument("--seed", type=int, default=0, help="a campaign of other inputs (each task's seed is offset by it)")
    args = ap.parse_args()
    tasks = [(args.seed * 1_000_000 + i, min(args.chunk, args.inputs - i * args.chunk), args.batch)
             for i in range((args.inputs + args.chunk - 1) // args.chunk)]
    started = time.perf_counter()
    totals: dict[str, object] = {"inputs": 0, "bytes": 0, "exceptions": 0, "parse_notes": 0, "unaccounted": 0,
                                 "schema_errors": 0, "pipeline_inputs": 0, "worst_s_per_mb": 0.0,
                                 "worst_small_s": 0.0, "max_rss_mb": 0.0, "signatures": {}}
    with multiprocessing.get_context("spawn").Pool(args.procs, maxtasksperchild=4) as pool:
        for stats in pool.imap_unordered(worker, tasks):
            for key in ("inputs", "bytes", "exceptions", "parse_notes", "unaccounted", "schema_errors", "pipeline_inputs",
                        "rendered"):
                totals[key] = int(totals.get(key, 0)) + int(stats.get(key, 0))  # type: ignore[call-overload]
            for key in ("worst_s_per_mb", "worst_small_s", "max_rss_mb"):
                totals[key] = max(float(totals[key]), float(stats[key]))  # type: ignore[arg-type]
            totals.setdefault("slow", []).extend(stats["slow"])  # type: ignore[attr-defined]
            for sig, n in stats["signatures"].items():  # type: ignore[attr-defined]
                totals["signatures"][sig] = totals["signatures"].get(sig, 0) + n  # type: ignore[attr-defined,index]
            print(f"  {totals['inputs']:>9} inputs  {time.perf_counter() - started:7.1f} s  "
                  f"exceptions {totals['exceptions']}", file=sys.stderr, flush=True)
    totals["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(totals, indent=1))


if __name__ == "__main__":
    main()
