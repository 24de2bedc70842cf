"""Fix steps that work when pasted: filled from the facts, one plan across findings, nothing left open silently."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from conftest import FIXTURES, ROOT

from diagnose import api
from diagnose.model import walk
from diagnose.preflight.core import preflight

SCHEMA = json.loads((ROOT / "docs" / "diagnosis.schema.json").read_text())
H200_SMI = FIXTURES / "healthy" / "host-h200x2-nvidia-smi-580"


def _runs(finding) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(s.get("run", "") for s in finding.fix + finding.verify)


def test_the_seed_environment_gets_one_plan_that_keeps_sgl_kernel_and_torchvision(kb, tmp_path: Path):
    # the seed (shared/seeds/ 002): sgl-kernel 0.3.21 (built for torch 2.9.1), torch moved to 2.10.0+cu128,
    # torchvision 0.24.1 still of torch 2.9
    env = tmp_path / "pip-freeze.txt"
    env.write_text("sgl-kernel==0.3.21\ntorch==2.10.0+cu128\ntorchvision==0.24.1+cu128\nsglang==0.5.8.post1\n")
    d = preflight([str(env)], kb=kb)
    assert {"torch-extension-abi-mismatch", "torchvision-torch-mismatch"} <= {f.rule_id for f in walk(d.findings)}
    plan = d.plan
    assert plan is not None
    assert plan.pins == {"torch": "2.9.1+cu128"}, plan.pins
    assert any("torchvision 0.24.1+cu128 already pairs with torch 2.9.1" in n for n in plan.notes)
    assert plan.steps[0]["run"] == 'pip install "torch==2.9.1+cu128" --index-url https://download.pytorch.org/whl/cu128'
    assert not plan.conflicts
    assert set(plan.serves["torch"]) == {"torch-extension-abi-mismatch", "torchvision-torch-mismatch"}
    jsonschema.validate(json.loads(__import__("diagnose.render.json_out", fromlist=["render"]).render(d)), SCHEMA)


def test_torchvision_is_installed_from_the_index_of_torchs_own_cuda_build(kb):
    paste = ("RuntimeError: operator torchvision::nms does not exist\n"
             "torch                    2.11.0+cu130\ntorchvision              0.25.0+cu130\n")
    first = api.diagnose_texts([("paste", paste)], kb=kb).findings[0]
    assert first.rule_id == "torchvision-torch-mismatch"
    assert "https://download.pytorch.org/whl/cu130" in _runs(first)
    assert "whl/cu128" not in _runs(first)


def test_an_xid_names_the_gpu_index_behind_its_pci_address(kb):
    xid = "[Tue Apr 29 19:24:11 2025] NVRM: Xid (PCI:0000:00:07): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"
    smi = (H200_SMI / "nvidia-smi.txt").read_text()  # the real table: GPU 1 is 00000000:00:07.0
    with_table = api.diagnose_texts([("dmesg.txt", xid), ("nvidia-smi.txt", smi)], kb=kb).findings[0]
    assert with_table.rule_id == "xid-fallen-off-bus"
    assert "nvidia-smi -i 1 " in _runs(with_table)
    alone = api.diagnose_texts([("dmesg.txt", xid)], kb=kb).findings[0]
    step = next(s for s in alone.fix if "<gpu_index>" in s.get("run", ""))
    assert step["unresolved"] == ["facts.gpu_index"]
    assert "nvidia-smi --query-gpu=index,pci.bus_id" in step["look_up"]


def test_an_extension_failure_names_that_extension_in_its_fix_and_verify(kb):
    case = FIXTURES / "torch-extension-abi-mismatch--repro-xformers-0033-torch2141"
    d = api.diagnose([str(p) for p in sorted(case.iterdir()) if p.name != "expected.yaml"], kb=kb)
    first = d.findings[0]
    assert first.rule_id == "torch-extension-abi-mismatch"
    runs = _runs(first)
    assert "import torch, xformers" in runs
    assert "sgl_kernel" not in runs and "force-reinstall flash-attn" not in runs


def test_an_error_no_rule_explains_is_not_nothing_found():
    from conftest import run_cli

    unknown = run_cli("-", input=b"RuntimeError: the frobnicator failed to start\n")
    assert unknown.returncode == 3, unknown.stdout
    assert b"errors no rule explains" in unknown.stdout
    assert run_cli("-", input=b"INFO all good\n").returncode == 0


def test_a_preflight_that_could_not_run_what_it_was_asked_does_not_exit_clean(tmp_path: Path):
    from conftest import run_cli

    env = tmp_path / "pip-freeze.txt"
    env.write_text("torch==2.9.1+cu128\n")
    proc = run_cli("preflight", str(env), "--", "vllm", "serve", "Qwen/Qwen3-8B", "-tp", "2")
    assert proc.returncode == 3
    out = proc.stdout.decode()
    assert "the launch runs vllm, which the environment checked does not have" in out
    assert "no GPU facts" in out
