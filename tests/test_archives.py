"""`.zip`, `.zst` and `.tar.zst` bundles of real fixtures read like the folder itself (and like a
`.tar.gz`): the same findings, evidence named `bundle.zip:member`; a bomb is one line, exit 2."""

from __future__ import annotations

import io
import stat
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest
import zstandard
from conftest import FIXTURES, run_cli

from diagnose import api
from diagnose.artifacts import archives, reader
from diagnose.artifacts.streams import TooMuchInflated

CASE = FIXTURES / "sm120-shared-memory-nan--magik6k-kimi-k2-rtx6000bw"  # a log, nvidia-smi -q, package list
LOG = FIXTURES / "torch-extension-abi-mismatch--seed-002" / "verify.log"
BIG = FIXTURES / "cuda-illegal-memory-access--repro-h200-compute-sanitizer" / "run.log"  # 200 KB: two zstd blocks


@pytest.fixture(scope="module")
def kb():  # type: ignore[no-untyped-def]
    return api.load_kb()


def _hooked() -> bool:
    probe = reader.ReadResult()
    reader.add_stream(probe, "probe.zst", io.BytesIO(zstandard.ZstdCompressor().compress(b"probe\n")))
    return not probe.skipped


HOOKED = _hooked()
needs_hook = pytest.mark.skipif(not HOOKED, reason="reader.add_stream does not yet hand zip / zstd data to "
                                "artifacts/archives.add_archive (the lead's hook in reader.py)")


def read_archive(path: Path, kb):  # type: ignore[no-untyped-def]
    """Diagnose `path` through archives.add_archive, as reader.add_stream does once it routes there."""
    opened = reader.ReadResult()
    kind = "zip" if path.suffix == ".zip" else "zstd"
    archives.add_archive(opened, str(path), io.BufferedReader(io.BytesIO(path.read_bytes())), kind)
    return api._run(opened, kb)


def found(diagnosis, prefix: str) -> list[tuple[str, str, int, str]]:  # type: ignore[no-untyped-def]
    """(rule, evidence source without `prefix`, line, text) of every finding's evidence."""
    return [(f.rule_id, e.source.removeprefix(prefix), e.line, e.text) for f in diagnosis.findings for e in f.evidence]


def zip_case(tmp_path: Path) -> Path:
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(CASE.iterdir()):
            if f.name != "expected.yaml":
                z.write(f, f"{CASE.name}/{f.name}")
    return path


def test_a_zip_of_a_fixture_reads_like_its_folder(tmp_path: Path, kb):
    from_folder = api.diagnose([str(CASE)], kb=kb)
    from_zip = read_archive(zip_case(tmp_path), kb)
    assert from_zip.findings[0].rule_id == "sm120-shared-memory-nan"
    assert found(from_zip, f"{tmp_path}/bundle.zip:") == found(from_folder, str(FIXTURES) + "/")
    assert {i.kind for i in from_zip.inputs} == {i.kind for i in from_folder.inputs}


def test_a_tar_zst_reads_like_the_tar_gz(tmp_path: Path, kb):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        tar.add(CASE, arcname=CASE.name)
    (tmp_path / "b.tar.gz").write_bytes(__import__("gzip").compress(raw.getvalue()))
    (tmp_path / "b.tar.zst").write_bytes(zstandard.ZstdCompressor().compress(raw.getvalue()))
    from_gz = api.diagnose([str(tmp_path / "b.tar.gz")], kb=kb)
    from_zst = read_archive(tmp_path / "b.tar.zst", kb)
    assert from_zst.findings and found(from_zst, f"{tmp_path}/b.tar.zst:") == found(from_gz, f"{tmp_path}/b.tar.gz:")


def test_two_zst_frames_the_second_cut_are_read_up_to_the_cut_and_say_so(tmp_path: Path, kb):
    """`zstd -c verify.log > x.zst; zstd -c run.log >> x.zst`, the copy cut off in the second frame."""
    first = zstandard.ZstdCompressor().compress(LOG.read_bytes())
    second = zstandard.ZstdCompressor().compress(BIG.read_bytes())
    (tmp_path / "x.zst").write_bytes(first + second[: len(second) * 3 // 4])
    diagnosis = read_archive(tmp_path / "x.zst", kb)
    assert "torch-extension-abi-mismatch" in [f.rule_id for f in diagnosis.findings]  # the first frame, whole
    lines = max(i.first_line + i.lines - 1 for i in diagnosis.inputs)
    assert LOG.read_bytes().count(b"\n") < lines < LOG.read_bytes().count(b"\n") + BIG.read_bytes().count(b"\n")
    assert "zstd stream is truncated; read up to the cut" in diagnosis.inputs[-1].notes


def test_links_and_damage_inside_a_zip_are_named(tmp_path: Path, kb):
    path = tmp_path / "b.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.write(LOG, "logs/verify.log")
        link = zipfile.ZipInfo("logs/latest.log")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        link.create_system = 3  # Unix: its mode is in external_attr
        z.writestr(link, "verify.log")
        z.writestr("host/nvidia-smi.txt", (CASE / "nvidia-smi-full.txt").read_bytes())  # no file type in its mode
    diagnosis = read_archive(path, kb)
    assert diagnosis.findings[0].evidence[0].source == f"{path}:logs/verify.log"
    assert f"{path}:host/nvidia-smi.txt" in {i.source for i in diagnosis.inputs}
    assert [(s.source, s.reason) for s in diagnosis.skipped] == [(f"{path}:logs/latest.log",
                                                                 "a symlink in the bundle: not read")]
    (tmp_path / "cut.zip").write_bytes(path.read_bytes()[:-30])
    with pytest.raises(Exception, match="nothing to diagnose: .*cut.zip: truncated or corrupt zip archive"):
        read_archive(tmp_path / "cut.zip", kb)


def deflate_bomb(path: Path, mib: int) -> Path:
    """A one-member zip of `mib` MiB of zeros at deflate's best ratio (~1030:1), sizes declared honestly."""
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = bytes(1 << 20)
    chunk = co.compress(block) + co.flush(zlib.Z_FULL_FLUSH)  # the same bytes for every MiB
    data = chunk * mib + b"\x03\x00"  # and an empty final block
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(block, crc)
    name, size = b"zeros.log", mib << 20
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0x21, crc, len(data), size, len(name), 0)
    central = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 8, 0, 0x21, crc, len(data), size, len(name),
                          0, 0, 0, 0, 0o100644 << 16, 0)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(central) + len(name), len(local) + len(name) + len(data), 0)
    path.write_bytes(local + name + data + central + name + end)
    return path


def zst_bomb(path: Path) -> Path:
    """256 MiB of text (not skipped as binary: it must be inflated to be found out), in 8 KiB."""
    c = zstandard.ZstdCompressor().compressobj()
    path.write_bytes(b"".join(c.compress(b"A" * (1 << 20)) for _ in range(256)) + c.flush())
    assert path.stat().st_size < 16 << 10
    return path


def test_a_zip_bomb_and_a_zst_bomb_are_refused(tmp_path: Path, kb):
    zip_bomb = deflate_bomb(tmp_path / "bomb.zip", 256)
    assert zipfile.ZipFile(zip_bomb).open("zeros.log").read(1 << 20) == bytes(1 << 20)  # unzip would inflate it
    with pytest.raises(TooMuchInflated, match=r"bomb.zip: zip data inflates more than 1000 times \(\d+ bytes to over "
                                              r"256 MiB\): a decompression bomb, or unpack it first"):
        read_archive(zip_bomb, kb)
    with pytest.raises(TooMuchInflated, match=r"bomb.zst: zstd data inflates more than 1000 times"):
        read_archive(zst_bomb(tmp_path / "bomb.zst"), kb)


@needs_hook
def test_the_command_line_reads_zip_and_zst_bundles(tmp_path: Path):
    done = run_cli(str(zip_case(tmp_path)), "--format", "json")
    assert done.returncode == 1 and f'"source": "{tmp_path}/bundle.zip:{CASE.name}/' in done.stdout.decode()
    (tmp_path / "verify.log.zst").write_bytes(zstandard.ZstdCompressor().compress(LOG.read_bytes()))
    done = run_cli(input=(tmp_path / "verify.log.zst").read_bytes())
    assert done.returncode == 1 and "torch-extension-abi-mismatch" in done.stdout.decode()


@needs_hook
def test_the_command_line_refuses_bombs_in_one_line(tmp_path: Path):
    for bomb in (deflate_bomb(tmp_path / "bomb.zip", 256), zst_bomb(tmp_path / "bomb.zst")):
        done = run_cli(str(bomb))
        assert done.returncode == 2 and done.stdout == b""
        assert done.stderr.decode().count("\n") == 1 and "a decompression bomb, or unpack it first" in done.stderr.decode()
