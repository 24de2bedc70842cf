"""The CLI on the bad files of issue #16, as a careless user or an attacker gives them: one line and
exit 2, or a diagnosis that lists every input; never a traceback, never a hang (each run is a
subprocess with a generous timeout: it must finish, not be fast)."""

from __future__ import annotations

import bz2
import json
import os

from conftest import run_cli, tar_with_link

NMS = b"RuntimeError: operator torchvision::nms does not exist\n"


def _json(proc):
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()
    return json.loads(proc.stdout)


def test_a_bzip2_bomb_is_one_line_and_exit_2(tmp_path):
    compressor = bz2.BZ2Compressor(9)
    bomb = b"".join(compressor.compress(b"A" * (1 << 24)) for _ in range(8)) + compressor.flush()  # 128 MiB of text
    assert len(bomb) < 4096
    (tmp_path / "crash.log.bz2").write_bytes(bomb)
    proc = run_cli(str(tmp_path / "crash.log.bz2"), timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.decode().count("\n") == 1 and "decompression bomb" in proc.stderr.decode()


def test_a_fifo_argument_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    proc = run_cli(str(tmp_path / "pipe"), timeout=60)
    assert proc.returncode == 2 and "FIFO" in proc.stderr.decode()


def test_every_directory_entry_is_accounted_for(tmp_path):
    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    (logs / "sub" / "server.log").write_bytes(NMS)
    (logs / "linked.log").symlink_to(logs / "sub" / "server.log")
    (logs / "dangling").symlink_to(tmp_path / "nowhere")
    (logs / "subdir-link").symlink_to(logs / "sub")
    os.mkfifo(logs / "fifo")
    for i in range(1100):  # more files than a small descriptor limit
        (logs / "sub" / f"info-{i:04d}.log").write_text(f"INFO step {i}\n")
    data = _json(run_cli("--format", "json", str(logs), timeout=120))
    inputs = {i["source"] for i in data["inputs"]}
    skipped = {s["source"]: s["reason"] for s in data["skipped"]}
    assert str(logs / "linked.log") in inputs and len(inputs) == 1102
    assert "dangling symlink" in skipped[str(logs / "dangling")]
    assert "not followed" in skipped[str(logs / "subdir-link")]
    assert "FIFO" in skipped[str(logs / "fifo")]


def test_tar_links_and_a_truncated_tar_are_said(tmp_path):
    bundle = tar_with_link("server.log", NMS, "latest.log")
    (tmp_path / "bundle.tar").write_bytes(bundle)
    (tmp_path / "cut.tar").write_bytes(bundle[:1024])  # a header and the first member, no end
    data = _json(run_cli("--format", "json", str(tmp_path / "bundle.tar"), str(tmp_path / "cut.tar")))
    reasons = {s["source"]: s["reason"] for s in data["skipped"]}
    assert "symlink to server.log" in reasons[f"{tmp_path / 'bundle.tar'}:latest.log"]
    assert "truncated tar" in reasons[str(tmp_path / "cut.tar")]


def test_a_large_log_without_errors_is_still_an_input(tmp_path):
    (tmp_path / "big.log").write_bytes(b"INFO all fine here\n" * 300_000)  # over 4 MiB: the prefilter path
    data = _json(run_cli("--format", "json", str(tmp_path / "big.log")))
    assert [(i["source"], i["lines"]) for i in data["inputs"]] == [(str(tmp_path / "big.log"), 300_000)]


def test_utf16_is_read_and_said(tmp_path):
    (tmp_path / "ps.log").write_bytes(b"\xff\xfe" + NMS.decode().encode("utf-16-le"))
    data = _json(run_cli("--format", "json", str(tmp_path / "ps.log")))
    assert data["findings"][0]["rule_id"] == "torchvision-torch-mismatch"
    assert any("UTF-16" in n for n in data["inputs"][0]["notes"])


def test_unicode_digits_and_bad_bus_ids_are_no_traceback(tmp_path):
    (tmp_path / "smi.csv").write_text("index, name, pci.bus_id, memory.total [MiB]\n²,NVIDIA H200,GG:18:00.0,① MiB\n")
    (tmp_path / "pip.json").write_text('[{"name": null}]\n')
    (tmp_path / "nvml.json").write_text('{\n"diagnose_collect": "nvml",\n"gpus": [{"index": "x", "remapped_rows": 5}],\n'
                                        '"pairs": [{"a": null}]\n}\n')
    proc = run_cli("--format", "json", str(tmp_path / "smi.csv"), str(tmp_path / "pip.json"), str(tmp_path / "nvml.json"))
    assert proc.returncode == 0, proc.stderr.decode()
    data = _json(proc)
    assert len(data["inputs"]) >= 3 and not data["skipped"]


def test_one_mb_of_unterminated_ansi_finishes(tmp_path):
    (tmp_path / "tty.log").write_bytes(b"\x1b]0;" * 250_000 + b"\n" + NMS)
    proc = run_cli("--format", "json", str(tmp_path / "tty.log"), timeout=60)
    assert _json(proc)["findings"][0]["rule_id"] == "torchvision-torch-mismatch"
