"""Fix steps that work when pasted: filled from the facts, one plan across findings, nothing left open silently."""

from __future__ import annotations

import json
import re
import sys
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
    # no nvidia-smi to map it: `nvidia-smi -i` takes the PCI bus id itself
    alone = api.diagnose_texts([("dmesg.txt", xid)], kb=kb).findings[0]
    assert "nvidia-smi -i 0000:00:07.0 " in _runs(alone)
    assert "<gpu_index>" not in _runs(alone)


def test_a_gpu_the_inputs_do_not_place_is_a_value_to_look_up(kb):
    # the GSP timeout names the driver's own "GPU6", neither an nvidia-smi index nor a PCI address
    case = FIXTURES / "gsp-firmware-error--open-gpu-kernel-modules-1230"
    first = api.diagnose([str(case)], kb=kb).findings[0]
    assert first.rule_id == "gsp-firmware-error"
    step = next(s for s in first.fix if "nvidia-smi -r -i" in s.get("run", ""))
    assert step["unresolved"] == ["facts.gpu_index"] and "-i <gpu_index>" in step["run"]
    assert "nvidia-smi --query-gpu=index,pci.bus_id" in step["look_up"]


def test_no_command_of_a_multi_artifact_fixture_holds_a_blank_whose_value_the_inputs_give(kb):
    audit = _open_placeholders()
    folders = audit.multi_artifact_fixtures(FIXTURES)
    assert len(folders) >= 30
    given = [line for folder in folders for line in audit.audit(folder, kb)[0]]
    assert given == []


def test_the_blank_audit_flags_a_value_left_open(kb, monkeypatch):
    # the same fixtures with the resolvers switched off: the script, the model and the venv each come back
    from diagnose.remedy import values

    monkeypatch.setattr(values, "from_facts", lambda facts, evidence, groups: {})
    audit = _open_placeholders()
    given = audit.audit(FIXTURES / "quantization-unsupported--repro-vllm-0.33", kb)[0]
    assert any("vllm serve <model> --quantization" in line for line in given), given
    given = audit.audit(FIXTURES / "ninja-missing-jit--reproduction-deepspeed-cpu-adam", kb)[0]
    assert any(": facts.python: " in line for line in given), given


def _open_placeholders():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location("open_placeholders", ROOT / "scripts" / "open_placeholders.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def test_the_failing_lines_name_the_script_the_model_and_the_environment_the_fix_runs_in(kb):
    quant = api.diagnose([str(FIXTURES / "quantization-unsupported--repro-vllm-0.33")], kb=kb).findings[0]
    assert "vllm serve ./tiny-llama-q --quantization" in _runs(quant)
    ima = api.diagnose([str(FIXTURES / "cuda-illegal-memory-access--repro-h200-misaligned")], kb=kb).findings[0]
    assert "python /work/main/.device/kern/misaligned.py" in _runs(ima)
    ninja = api.diagnose([str(FIXTURES / "ninja-missing-jit--reproduction-deepspeed-cpu-adam")], kb=kb).findings[0]
    assert "export PATH=/tmp/venv_ninja/bin:$PATH" in _runs(ninja)
    cpu = api.diagnose([str(FIXTURES / "torch-cpu-build--reproduction-tensor-cuda")], kb=kb).findings[0]
    release = cpu.evidence and next(s["run"] for s in cpu.fix if "--force-reinstall" in s.get("run", ""))
    assert '"torch==2.' in release and "+cpu" not in release.split("--index-url")[0]


def test_an_extension_failure_names_that_extension_in_its_fix_and_verify(kb):
    case = FIXTURES / "torch-extension-abi-mismatch--repro-xformers-0033-torch2141"
    d = api.diagnose([str(p) for p in sorted(case.iterdir()) if p.name != "expected.yaml"], kb=kb)
    first = d.findings[0]
    assert first.rule_id == "torch-extension-abi-mismatch"
    runs = _runs(first)
    assert "import_module('xformers')" in runs and "_has_cpp_library" in runs  # import xformers only warns
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


def test_a_build_without_torch_reinstalls_the_package_that_failed_and_verifies_that_one(kb):
    for case in ("build-isolation-missing-torch--repro-pip-25.1.1", "build-isolation-missing-torch--repro-uv-0.13.9"):
        first = api.diagnose([str(FIXTURES / case)], kb=kb).findings[0]
        assert first.rule_id == "build-isolation-missing-torch"
        runs = _runs(first)
        assert re.search(r"pip install flash[-_]attn --no-build-isolation", runs), runs
        assert "import torch, flash_attn;" in runs and "<build_package>" not in runs


def test_the_torch_the_resolver_replaced_is_put_back_from_its_own_index_with_its_torchvision(kb):
    case = FIXTURES / "pip-resolver-replaced-torch--combined-uv-install-then-sgl-kernel"
    first = api.diagnose([str(case)], kb=kb).findings[0]
    assert first.rule_id == "pip-resolver-replaced-torch"
    step = next(s["run"] for s in first.fix if "torch==2.13.0+cpu" in s.get("run", ""))
    # uv replaced torch 2.13.0+cpu: back from the CPU index, with the torchvision of torch 2.13 (0.28)
    assert step.count("--index-url https://download.pytorch.org/whl/cpu") == 2 and "cu128" not in step
    assert '"torchvision==0.28.*"' in step


def test_the_launch_that_asks_for_more_ranks_than_gpus_is_given_the_gpu_count(kb):
    smi = FIXTURES / "healthy" / "host-h200x2-nvidia-smi-580"
    first = api.diagnose([str(smi), str(FIXTURES / "tp-exceeds-gpu-count--repro-h200-set-device")], kb=kb).findings[0]
    assert first.rule_id == "tp-exceeds-gpu-count"
    assert "vllm serve x --tensor-parallel-size 2" in _runs(first)  # x: the --model-path of the launch
