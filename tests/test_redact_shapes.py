"""Redaction of the shapes a new user met unmasked: addresses beside NCCL / driver / version words, user
names outside home paths, and a team's own domains and patterns (DIAGNOSE_REDACT_*)."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, run_cli

from diagnose.redact import Redactor
from diagnose.redact_team import from_env, team_patterns


@pytest.mark.parametrize("line, address", [
    ("NCCL WARN NET/Socket : peer 10.20.30.41<53312>", "10.20.30.41"),
    ("ncclSocketInit: Using eth0:10.1.2.3<0>", "10.1.2.3"),
    ("NCCL INFO NET/IB : Using [RO]; OOB ib0:172.16.4.9<0>", "172.16.4.9"),
    ("NCCL INFO Bootstrap : Using eth0:192.0.2.2<0>", "192.0.2.2"),
    ("driver loaded; connecting to 10.0.3.7:29500 (cuda 12.4)", "10.0.3.7"),
    ("nvidia driver version 550 on node with ip 10.8.0.12", "10.8.0.12"),
])
def test_an_address_beside_a_version_word_is_masked(line, address):
    masked = Redactor().redact(line)
    assert address not in masked and "<ip-1>" in masked


@pytest.mark.parametrize("line", [
    "cuDNN version: 9.1.0.70", "NCCL version 2.18.1.1", "nvidia-cudnn-cu12 9.1.0.70", "cudnn 8.9.2.26",
    "Driver Version: 570.86.15",
])
def test_a_four_part_version_stays(line):
    assert Redactor().redact(line) == line


@pytest.mark.parametrize("line, user", [
    ("USER=alice python serve.py", "alice"),
    ("uid=1001(bobby) gid=1001(bobby) groups=1001(bobby)", "bobby"),
    ("sudo -u carol python -m vllm.entrypoints.openai.api_server", "carol"),
    ("saving to /scratch/dmitri/ckpt/model.pt", "dmitri"),
    ("Owner: erin", "erin"),
])
def test_user_names_outside_home_paths_are_masked(line, user):
    assert user not in Redactor().redact(line)


def test_generic_account_names_stay():
    assert Redactor().redact("USER=root uid=0(root) Owner: nobody") == "USER=root uid=0(root) Owner: nobody"


def test_a_teams_domains_and_patterns(tmp_path, monkeypatch):
    patterns = tmp_path / "patterns.txt"
    patterns.write_text("# our ticket ids\nINC-\\d{4,}\ncluster-(?P<cluster>[a-z]+\\d+)\n")
    extra = from_env({"DIAGNOSE_REDACT_DOMAINS": "acme.dev, corp", "DIAGNOSE_REDACT_PATTERNS": str(patterns)})
    masked = Redactor(extra=extra).redact("pulling registry.acme.dev/vllm for INC-20931 on cluster-west2 at db.corp")
    assert masked == "pulling <host-1>/vllm for <team-1> on cluster-<cluster-1> at <host-2>"
    assert team_patterns([], []) == []


def test_the_cli_applies_the_teams_patterns_too(tmp_path):
    log = tmp_path / "crash.log"
    text = (FIXTURES / "accelerate-missing--comfyui-6685" / "traceback.log").read_text()
    log.write_text(text.replace("requires Accelerate", "requires Accelerate (TICKET-7788, build.acme.dev)"))
    patterns = tmp_path / "p.txt"
    patterns.write_text("TICKET-\\d+\n")
    done = run_cli("--redact", "--format", "markdown", str(log),
                   env={"DIAGNOSE_REDACT_DOMAINS": "acme.dev", "DIAGNOSE_REDACT_PATTERNS": str(patterns)})
    assert b"(<team-1>, <host-1>)" in done.stdout and b"TICKET-7788" not in done.stdout
    plain = run_cli("--format", "markdown", str(log))
    assert b"TICKET-7788, build.acme.dev" in plain.stdout  # the evidence quotes that line


def test_a_bad_team_pattern_is_one_line(tmp_path):
    patterns = tmp_path / "p.txt"
    patterns.write_text("([unclosed\n")
    done = run_cli("--redact", str(FIXTURES / "accelerate-missing--comfyui-6685" / "traceback.log"),
                   env={"DIAGNOSE_REDACT_PATTERNS": str(patterns)})
    assert done.returncode == 2
    assert done.stderr.decode().count("\n") == 1 and "DIAGNOSE_REDACT_PATTERNS: bad pattern" in done.stderr.decode()


@pytest.mark.parametrize("line, identity", [
    ("  MIG 3g.71gb     Device  0: (UUID: MIG-1b2c3d4e-5f60-5a7b-8c9d-0e1f2a3b4c5d)", "1b2c3d4e-5f60"),
    ("CUDA_VISIBLE_DEVICES=MIG-GPU-d83d6fe6-bf95-a1de-c632-5b6111f69b21/1/0", "d83d6fe6-bf95"),  # before driver 470
    ("CUDA_VISIBLE_DEVICES=GPU-d83d6fe6,GPU-5f2b1c3a", "d83d6fe6"),  # the prefixes CUDA accepts
    ("\t\t<serial>1653824017066</serial>", "1653824017066"),  # nvidia-smi -q -x
    ("\t\t\t<chassis_serial_number>1654922001234</chassis_serial_number>", "1654922001234"),
])
def test_mig_uuids_uuid_prefixes_and_xml_serials_are_masked(line, identity):
    masked = Redactor().redact(line)
    assert identity not in masked and ("<gpu-1>" in masked or "<serial-1>" in masked)


def test_a_collect_bundles_gpu_uuids_and_serials_never_leave_the_host():
    """The real H200 collect bundle (nvml.json, nvidia-smi -q / -q -x / query CSV) beside a real Xid 119
    dmesg: with redaction on, no UUID or board serial number the inputs hold is in any answer format."""
    import re
    import tarfile

    bundle = FIXTURES / "healthy" / "collect-bundle-h200x1" / "bundle.tar.gz"
    dmesg = FIXTURES / "xid-other--gpud-dmesg-xid-119" / "dmesg.log"
    with tarfile.open(bundle) as tar:
        held = dmesg.read_text() + "".join(
            tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile())  # type: ignore[union-attr]
    identities = set(re.findall(r"(?:GPU|MIG)-[0-9a-f]{8}-[0-9a-f-]{27}", held))
    serials = set(re.findall(r"Serial Number\s+: (\d{6,})", held)) | set(re.findall(r"<serial>(\d{6,})<", held))
    assert len(identities) >= 2 and serials  # the bundle's GPU, the dmesg's GPU, the board's serial number
    identities |= serials
    plain = run_cli("--format", "json", "--no-redact", str(bundle), str(dmesg)).stdout.decode()
    assert any(i in plain for i in identities)  # unmasked, the answer would carry one
    for fmt in ("json", "markdown", "slack"):
        done = run_cli("--format", fmt, "--redact", "--explain", str(bundle), str(dmesg))
        out = done.stdout.decode()
        assert done.returncode == 1 and "gsp" in out.lower(), fmt  # the diagnosis is still there
        assert not [i for i in identities if i in out], fmt
