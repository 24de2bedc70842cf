"""The command line as a user meets it: exit codes, formats, colour, and bad input."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import jsonschema
import pytest
from conftest import FIXTURES, ROOT, run_cli

from diagnose import api
from diagnose.kb.selftest import find_cases

NMS = b'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nRuntimeError: operator torchvision::nms does not exist\n'
SCHEMA = json.loads((ROOT / "docs" / "diagnosis.schema.json").read_text())


def _no_traceback(proc) -> None:
    assert b"Traceback (most recent call last)" not in proc.stderr, proc.stderr.decode()


def test_pipe_names_the_cause_with_evidence_fix_and_verify():
    proc = run_cli(input=NMS)
    out = proc.stdout.decode()
    assert proc.returncode == 1
    assert "torchvision-torch-mismatch" in out
    assert "<stdin>:3" in out and "operator torchvision::nms does not exist" in out
    assert "fix:" in out and "verify:" in out and "$ " in out
    assert "\x1b[" not in out  # not a TTY: no colour


def test_exit_zero_and_clean_exit():
    assert run_cli("--exit-zero", input=NMS).returncode == 0
    clean = run_cli(input=b"INFO server started\nINFO all good\n")
    assert clean.returncode == 0
    assert "no known failure" in clean.stdout.decode()


def test_colour_forced_and_no_color():
    assert b"\x1b[" in run_cli("--color", "always", input=NMS).stdout
    assert b"\x1b[" not in run_cli(input=NMS, env={"NO_COLOR": "1"}).stdout


def test_json_output_validates_against_the_schema():
    proc = run_cli("--format", "json", input=NMS)
    data = json.loads(proc.stdout)
    jsonschema.validate(data, SCHEMA)
    finding = data["findings"][0]
    assert finding["rule_id"] == "torchvision-torch-mismatch" and finding["rank"] == 1
    assert finding["evidence"][0]["line"] == 3 and finding["evidence"][0]["source"] == "<stdin>"


@pytest.mark.parametrize("case", find_cases(FIXTURES)[::3], ids=lambda c: c.name)
def test_json_of_real_fixtures_validates(case, kb):
    from diagnose.render.json_out import render

    diagnosis = api.diagnose(case.artifacts(), kb=kb)
    jsonschema.validate(json.loads(render(diagnosis)), SCHEMA)


def test_output_file(tmp_path: Path):
    target = tmp_path / "out.json"
    proc = run_cli("--format", "json", "-o", str(target), input=NMS)
    assert proc.returncode == 1 and proc.stdout == b""
    assert json.loads(target.read_text())["findings"]


# --- bad input ------------------------------------------------------------------------------

def test_binary_input_is_one_line_and_exit_2():
    proc = run_cli(input=b"\x00\xff\xfe garbage\x00\x01\x02")
    assert proc.returncode == 2
    _no_traceback(proc)
    assert proc.stderr.decode().count("\n") == 1 and "binary" in proc.stderr.decode()


def test_empty_input():
    proc = run_cli(input=b"")
    assert proc.returncode == 2 and b"empty" in proc.stderr
    _no_traceback(proc)


def test_missing_file():
    proc = run_cli("/nonexistent/crash.log")
    assert proc.returncode == 2 and b"no such file" in proc.stderr
    _no_traceback(proc)


def test_invalid_utf8_is_diagnosed_anyway_and_noted():
    proc = run_cli("--format", "json", input=b"caf\xe9 \xff\n" + NMS)
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["findings"][0]["rule_id"] == "torchvision-torch-mismatch"
    assert any("invalid utf-8" in n.lower() for i in data["inputs"] for n in i["notes"])


def test_huge_single_line_is_cut_not_hung(tmp_path: Path):
    big = tmp_path / "big.log"
    with open(big, "wb") as fh:
        fh.write(b"A" * (50 * 1024 * 1024))
        fh.write(b"\n" + NMS)
    proc = run_cli("--format", "json", str(big), timeout=120)
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["findings"][0]["evidence"][0]["line"] == 4
    assert any("cut" in n for i in data["inputs"] for n in i["notes"])


def test_gzip_and_truncated_gzip(tmp_path: Path):
    gz = tmp_path / "crash.log.gz"
    gz.write_bytes(gzip.compress(NMS))
    assert run_cli(str(gz)).returncode == 1
    truncated = tmp_path / "cut.gz"
    truncated.write_bytes(gzip.compress(NMS * 50)[:-30])
    proc = run_cli("--format", "json", str(truncated))
    _no_traceback(proc)
    assert proc.returncode == 1
    notes = [n for i in json.loads(proc.stdout)["inputs"] for n in i["notes"]]
    assert any("truncated" in n for n in notes)


def test_tar_bundle_members_are_named(tmp_path: Path):
    bundle = tmp_path / "bundle.tar.gz"
    with tarfile.open(bundle, "w:gz") as tar:
        info = tarfile.TarInfo("logs/server.log")
        info.size = len(NMS)
        tar.addfile(info, io.BytesIO(NMS))
    data = json.loads(run_cli("--format", "json", str(bundle)).stdout)
    assert data["findings"][0]["evidence"][0]["source"] == f"{bundle}:logs/server.log"


def test_directory_of_mixed_files_reports_what_was_skipped(tmp_path: Path):
    (tmp_path / "server.log").write_bytes(NMS)
    (tmp_path / "core.bin").write_bytes(b"\x7fELF\x00\x00\x01" * 100)
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "trace.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    proc = run_cli("--format", "json", str(tmp_path))
    assert proc.returncode == 1
    skipped = {Path(s["source"]).name: s["reason"] for s in json.loads(proc.stdout)["skipped"]}
    assert "binary" in skipped["core.bin"]
    assert skipped["empty.txt"] == "empty"
    assert "zstd" in skipped["trace.zst"]


def test_only_unreadable_inputs_exit_2(tmp_path: Path):
    (tmp_path / "core.bin").write_bytes(b"\x00\x01\x02" * 100)
    proc = run_cli(str(tmp_path / "core.bin"), "/nonexistent")
    assert proc.returncode == 2
    assert proc.stderr.decode().count("\n") == 1
    _no_traceback(proc)


def test_utf16_powershell_redirect(tmp_path: Path):
    f = tmp_path / "ps.log"
    f.write_bytes(NMS.decode().encode("utf-16"))
    assert run_cli(str(f)).returncode == 1


def test_unknown_option_is_one_line():
    proc = run_cli("--frobnicate")
    assert proc.returncode == 2
    _no_traceback(proc)
    assert proc.stderr.decode().count("\n") == 1


def test_python_dash_m_and_version():
    assert run_cli("--version").stdout.decode().startswith("diagnose 0.")  # the rest: test_cli_conventions.py


def test_bzip2_and_xz_are_read_as_streams(tmp_path: Path):
    import bz2
    import lzma

    for name, data in (("crash.log.bz2", bz2.compress(NMS)), ("crash.log.xz", lzma.compress(NMS))):
        f = tmp_path / name
        f.write_bytes(data)
        proc = run_cli("--format", "json", str(f))
        assert proc.returncode == 1, name
        assert json.loads(proc.stdout)["findings"][0]["rule_id"] == "torchvision-torch-mismatch"
    cut = tmp_path / "cut.xz"
    cut.write_bytes(lzma.compress(NMS * 200)[:-40])
    proc = run_cli("--format", "json", "--exit-zero", str(cut))
    _no_traceback(proc)
    assert any("truncated" in n or "corrupt" in n for i in json.loads(proc.stdout)["inputs"] for n in i["notes"])
