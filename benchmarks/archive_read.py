"""Reading a log through each compressed form: inflated MB/s of the stream alone (gzip, zstd) and of a
bundle member (tar.gz, tar.zst, zip), on the seeded realistic log of gen_log.py.

    python benchmarks/archive_read.py --size-mb 200 --runs 3

It measures the readers only (artifacts/streams.py, artifacts/archives.py), not the engine after them.
"""

from __future__ import annotations

import argparse
import gzip
import io
import statistics
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import zstandard  # noqa: E402
from gen_log import generate  # noqa: E402

from diagnose.artifacts import archives, reader  # noqa: E402
from diagnose.artifacts.streams import Decompressing, InflateBudget  # noqa: E402


def drain(stream: io.BufferedReader) -> int:
    n = 0
    while chunk := stream.read(reader.BLOCK):
        n += len(chunk)
    return n


def forms(log: bytes) -> dict[str, tuple[bytes, object]]:
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as t:
        info = tarfile.TarInfo("server.log")
        info.size = len(log)
        t.addfile(info, io.BytesIO(log))
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("server.log", log)
    zst = zstandard.ZstdCompressor(level=3)
    return {
        "gzip stream": (gzip.compress(log, 6), lambda d: drain(io.BufferedReader(
            Decompressing(io.BytesIO(d), "gzip", "x", InflateBudget())))),
        "zstd stream": (zst.compress(log), lambda d: drain(io.BufferedReader(
            archives.ZstdDecompressing(io.BytesIO(d), "x", InflateBudget())))),
        "tar.gz member": (gzip.compress(tar.getvalue(), 6), bundle),
        "tar.zst member": (zst.compress(tar.getvalue()), bundle),
        "zip member": (zipped.getvalue(), bundle),
    }


def bundle(data: bytes) -> int:
    """The bundle's members read as reader.add_stream reads them (zip / zstd: archives.add_archive, as its hook)."""
    result = reader.ReadResult()
    kind = {b"PK\x03\x04": "zip", b"\x28\xb5\x2f\xfd": "zstd"}.get(data[:4])
    if kind:
        archives.add_archive(result, "bundle", io.BufferedReader(io.BytesIO(data)), kind)  # type: ignore[arg-type]
    else:
        reader.add_stream(result, "bundle", io.BytesIO(data))
    assert not result.skipped, result.skipped
    return sum(drain(s.stream) for s in result.sources)  # type: ignore[arg-type]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "server.log"
        generate(args.size_mb, 7, path)
        log = path.read_bytes()
    print(f"log: {len(log) / 1e6:.0f} MB, best of {args.runs}")
    for name, (data, read) in forms(log).items():
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            n = read(data)  # type: ignore[operator]
            times.append(time.perf_counter() - start)
            assert n == len(log), (name, n)
        best = min(times)
        print(f"{name:15} {len(data) / 1e6:7.1f} MB compressed  {len(log) / 1e6 / best:7.0f} MB/s inflated "
              f"(median {statistics.median(times):.2f} s)")


if __name__ == "__main__":
    main()
