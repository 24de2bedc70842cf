"""`diagnose preflight`: each seed failure is predicted from its environment before launch, and real
healthy hosts are clean.

The environments are written here as test data, from the versions the seeds state (shared/seeds/):
torch 2.9.1+cu128 with torchvision 0.25.0 (002), sgl-kernel 0.3.21 beside torch 2.10.0 (002),
transformers 4.57.1 with GLM-5's model_type glm_moe_dsa (003), SGLang 0.5.8.post1 on RTX PRO 6000
Blackwell (004), the seed's own launch command with FlashInfer backends and no ninja (003).
Host data is real: nvidia-smi outputs and collect bundles under fixtures/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import FIXTURES, ROOT, run_cli

from diagnose.preflight.core import preflight

SCHEMA = json.loads((ROOT / "docs" / "diagnosis.schema.json").read_text())
H200X2 = FIXTURES / "healthy" / "host-h200x2-snapshot"
RTX_PRO_6000 = FIXTURES / "sm120-shared-memory-nan--magik6k-kimi-k2-rtx6000bw" / "nvidia-smi-full.txt"
RTX_4070_DRIVER_550 = FIXTURES / "healthy" / "host-rtx4070-nvidia-smi-550" / "nvidia-smi.txt"
# the seed deployment's launch (seed 003, msg 583), as typed
SEED_LAUNCH = ("NCCL_IB_DISABLE=1 NCCL_P2P_LEVEL=5 CUDA_HOME=/usr/local/cuda-12.8 nohup /root/ml-env/bin/python3 "
               "-m sglang.launch_server --model lukealonso/GLM-5-NVFP4 --served-model-name glm-5 --trust-remote-code "
               "--tp 8 --mem-fraction-static 0.92 --quantization modelopt_fp4 --attention-backend flashinfer "
               "--fp8-gemm-backend cutlass --moe-runner-backend flashinfer_cutlass "
               "--enable-flashinfer-allreduce-fusion --host 0.0.0.0 --port 8000 > /root/sglang-server.log 2>&1 &")


def freeze(tmp_path: Path, *lines: str, name: str = "pip-freeze.txt") -> str:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def ids(diagnosis) -> list[str]:  # type: ignore[no-untyped-def]
    out = []
    for f in diagnosis.findings:
        out.append(f.rule_id)
        out.extend(s.rule_id for s in f.symptoms)
    return out


def finding(diagnosis, rule_id: str):  # type: ignore[no-untyped-def]
    return next(f for f in diagnosis.findings if f.rule_id == rule_id)


# --- the seed failures, each predicted ---------------------------------------------------------------

def test_torchvision_built_for_another_torch(tmp_path, kb):
    env = freeze(tmp_path, "sglang==0.5.8.post1", "torch==2.9.1+cu128", "torchvision==0.25.0")
    d = preflight([env], kb=kb)
    assert d.findings[0].rule_id == "torchvision-torch-mismatch"
    evidence = d.findings[0].evidence[0]
    assert (evidence.source, evidence.line) == (env, 3)  # the torchvision line of the freeze
    assert "pairs with torchvision 0.24" in evidence.text
    assert "0.24" in json.dumps(d.findings[0].fix)  # the fix names the matching torchvision


def test_extension_built_for_another_torch(tmp_path, kb):
    env = freeze(tmp_path, "sgl-kernel==0.3.21", "torch==2.10.0+cu128", "torchvision==0.25.0")
    d = preflight([env], kb=kb)
    assert ids(d) == ["torch-extension-abi-mismatch"]
    text = d.findings[0].evidence[0].text
    assert "sgl-kernel 0.3.21 was built for torch 2.9.1" in text and "2.10.0" in text


def test_model_type_newer_than_transformers(tmp_path, kb):
    env = freeze(tmp_path, "torch==2.9.1+cu128", "transformers==4.57.1")
    model = tmp_path / "GLM-5-NVFP4"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa",
        "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}}))
    d = preflight([env], kb=kb, model=str(model))
    f = finding(d, "transformers-unknown-model-type")
    assert "glm_moe_dsa needs transformers >= 5.2.0; 4.57.1 is installed" in f.evidence[0].text
    assert f.evidence[0].source.endswith("config.json")
    upgraded = freeze(tmp_path, "torch==2.9.1+cu128", "transformers==5.2.0", name="after-fix.txt")
    assert "transformers-unknown-model-type" not in ids(preflight([upgraded], kb=kb, model=str(model)))


def test_sm120_with_sglang_before_the_fix(tmp_path, kb):
    env = freeze(tmp_path, "sglang==0.5.8.post1", "sgl-kernel==0.3.21", "torch==2.9.1+cu128")
    d = preflight([env, str(RTX_PRO_6000)], kb=kb)
    f = finding(d, "sm120-shared-memory-nan")
    assert "0.5.8.post1" in f.evidence[0].text and "RTX PRO 6000 Blackwell" in f.evidence[0].text
    fixed = freeze(tmp_path, "sglang==0.5.9", "sgl-kernel==0.3.21", "torch==2.9.1+cu128", name="fixed.txt")
    assert "sm120-shared-memory-nan" not in ids(preflight([fixed, str(RTX_PRO_6000)], kb=kb))


def test_flashinfer_backend_without_ninja(tmp_path, kb):
    env = freeze(tmp_path, "flashinfer-python==0.6.3", "sglang==0.5.8.post1", "torch==2.9.1+cu128")
    d = preflight([env], kb=kb, launch=SEED_LAUNCH)
    f = finding(d, "ninja-missing-jit")
    assert "--attention-backend flashinfer" in f.evidence[0].text and f.evidence[0].source == "launch command"
    with_ninja = freeze(tmp_path, "flashinfer-python==0.6.3", "ninja==1.13.0", "torch==2.9.1+cu128", name="n.txt")
    d = preflight([with_ninja], kb=kb, launch=SEED_LAUNCH)
    assert "ninja-missing-jit" not in ids(d)
    assert any("ninja" in s.reason and "--python" in s.reason for s in d.skipped)  # says what it could not tell


def test_ninja_in_the_venv_but_not_on_path(tmp_path, kb, monkeypatch):
    """The seed: the venv's python started without activating the venv, so its bin/ (with ninja) is off PATH."""
    venv_bin = tmp_path / "ml-env" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python3").symlink_to(sys.executable)
    (venv_bin / "ninja").write_text("#!/bin/sh\necho 1.13.0\n")
    (venv_bin / "ninja").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    d = preflight([str(H200X2 / "nvidia-smi.txt")], kb=kb, python=str(venv_bin / "python3"),
                  launch=["python3", "-m", "sglang.launch_server", "--attention-backend", "flashinfer"])
    text = finding(d, "ninja-missing-jit").evidence[0].text
    assert f"ninja is installed at {venv_bin / 'ninja'}" in text and "is not on PATH" in text


def test_install_plan_that_replaces_torch_names_the_extensions_it_breaks(tmp_path, kb):
    env = freeze(tmp_path, "flashinfer-python==0.6.3", "sgl-kernel==0.3.21", "sglang==0.5.8.post1",
                 "torch==2.9.1+cu128", "torchvision==0.21.0")
    d = preflight([env], kb=kb, plan="uv pip install 'torchvision>=0.22' --index-url https://download.pytorch.org/whl/cu128")
    f = finding(d, "pip-resolver-replaced-torch")
    texts = [e.text for e in f.evidence]
    assert "would most likely replace torch 2.9.1+cu128" in texts[0] and "estimated" in texts[0]
    assert any("sgl-kernel 0.3.21 (built for torch 2.9.1)" in t for t in texts)
    assert "torch==2.9.1+cu128" in json.dumps(f.fix)  # the fix puts the old torch back
    pinned = preflight([env], kb=kb, plan="pip install 'torchvision==0.24.1' 'torch==2.9.1+cu128'")
    assert "pip-resolver-replaced-torch" not in ids(pinned)


def test_install_report_that_replaces_torch(tmp_path, kb):
    """A `pip install --dry-run --report` of the seed's install: torchvision 0.25.0 pulling torch 2.10.0."""
    env = freeze(tmp_path, "sgl-kernel==0.3.21", "torch==2.9.1+cu128", "torchvision==0.24.1+cu128", "triton==3.5.1")

    def item(name: str, version: str, requires: list[str], requested: bool = False) -> dict:
        wheel = f"{name}-{version.replace('+', '%2B')}-cp312-cp312-manylinux_2_28_x86_64.whl"
        return {"download_info": {"url": f"https://download.pytorch.org/whl/cu128/{wheel}", "archive_info": {}},
                "is_direct": False, "is_yanked": False, "requested": requested,
                "metadata": {"metadata_version": "2.1", "name": name, "version": version, "requires_dist": requires}}

    report = {"version": "1", "pip_version": "25.1.1", "install": [
        item("torchvision", "0.25.0+cu128", ["numpy", "torch==2.10.0", "pillow!=8.3.*,>=5.3.0"], requested=True),
        item("torch", "2.10.0+cu128", ["filelock", "triton==3.6.0; platform_system == \"Linux\""]),
        item("triton", "3.6.0", [])], "environment": {"python_version": "3.12"}}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    d = preflight([env], kb=kb, plan_report=str(path))
    f = finding(d, "pip-resolver-replaced-torch")
    assert f.confidence >= 0.85
    assert "replace torch 2.9.1+cu128 with 2.10.0+cu128" in f.evidence[0].text
    assert any("sgl-kernel 0.3.21 (built for torch 2.9.1)" in e.text for e in f.evidence)


# --- host and launch ---------------------------------------------------------------------------------

def test_tp_larger_than_the_gpus(kb):
    smi = str(H200X2 / "nvidia-smi.txt")
    d = preflight([smi], kb=kb, launch=SEED_LAUNCH)
    f = finding(d, "tp-exceeds-gpu-count")
    assert "needs 8 GPUs (--tp 8); 2 GPU(s)" in f.evidence[0].text
    assert preflight([smi], kb=kb, launch="vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2").findings == []
    narrowed = preflight([smi], kb=kb, launch="CUDA_VISIBLE_DEVICES=1 vllm serve Qwen/Qwen3-8B -tp 2")
    assert "CUDA_VISIBLE_DEVICES=1" in finding(narrowed, "tp-exceeds-gpu-count").evidence[0].text
    multi_node = preflight([smi], kb=kb, launch="python -m sglang.launch_server --tp 16 --nnodes 2 --node-rank 0")
    assert multi_node.findings == [] and any("spans nodes" in s.reason for s in multi_node.skipped)


def test_multi_gpu_launch_without_p2p(tmp_path, kb):
    # `nvidia-smi topo -m` and `topo -p2p rw` as posted in https://github.com/noonghunna/club-3090/issues/1229
    topo = tmp_path / "topo-m.txt"
    topo.write_text("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tPHB\t0-63\t0\t\tN/A\n"
                    "GPU1\tPHB\t X \t0-63\t0\t\tN/A\n\nLegend:\n\n  X    = Self\n")
    p2p = tmp_path / "topo-p2p.txt"
    p2p.write_text(" \tGPU0\tGPU1\t\n GPU0\tX\tGNS\t\n GPU1\tGNS\tX\t\n\nLegend:\n\n  X    = Self\n  OK   = Status Ok\n")
    d = preflight([str(topo), str(p2p)], kb=kb, launch="vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2")
    assert "P2P is not available between 1 GPU pair(s) (GPU0-GPU1: GNS)" in finding(d, "vfio-p2p-disabled").evidence[0].text
    # a PHB link with P2P OK on every pair (a bare-metal host) predicts nothing
    near_miss = FIXTURES / "near-miss--vfio-p2p-disabled--aikitoria-13" / "topo.txt"
    assert "vfio-p2p-disabled" not in ids(preflight([str(near_miss)], kb=kb, launch="vllm serve m -tp 4"))


def test_cuda_runtime_newer_than_the_driver(tmp_path, kb):
    env = freeze(tmp_path, "torch==2.11.0+cu130")
    d = preflight([env, str(RTX_4070_DRIVER_550)], kb=kb)
    assert "needs driver >= 580 for CUDA 13.x; driver 550.40.07" in finding(d, "driver-too-old").evidence[0].text
    within_family = freeze(tmp_path, "torch==2.6.0+cu124", name="cu124.txt")
    assert "driver-too-old" not in ids(preflight([within_family, str(RTX_4070_DRIVER_550)], kb=kb))


def test_gpu_arch_newer_than_torch_cuda(tmp_path, kb):
    env = freeze(tmp_path, "torch==2.6.0+cu124")
    d = preflight([env, str(RTX_PRO_6000)], kb=kb)
    if "no-kernel-image" in kb.rules:
        assert "needs a torch built with CUDA >= 12.8" in finding(d, "no-kernel-image").evidence[0].text
    else:  # the rule is not in this KB yet: the prediction is reported as not made, never silently lost
        assert any("no-kernel-image" in s.reason and "CUDA >= 12.8" in s.reason for s in d.skipped)


def test_remote_code_without_trust_remote_code(tmp_path, kb):
    env = freeze(tmp_path, "torch==2.9.1+cu128", "transformers==4.57.1")
    model = tmp_path / "config.json"
    model.write_text(json.dumps({"model_type": "glm_moe_dsa", "auto_map": {
        "AutoConfig": "configuration_glm.GlmMoeDsaConfig", "AutoModelForCausalLM": "modeling_glm.GlmMoeDsaForCausalLM"}}))
    d = preflight([env], kb=kb, model=str(model), launch="python -m sglang.launch_server --model-path x --tp 1")
    assert "trust-remote-code" in ids(d)
    trusting = preflight([env], kb=kb, model=str(model), launch="python -m sglang.launch_server --trust-remote-code")
    assert "trust-remote-code" not in ids(trusting)
    # with remote code trusted, transformers' own table no longer decides: demoted below reporting
    assert "transformers-unknown-model-type" not in ids(trusting)


def test_flash_attention_requested_but_not_installed(tmp_path, kb):
    env = freeze(tmp_path, "torch==2.9.1+cu128", "transformers==4.57.1")
    model = tmp_path / "config.json"
    model.write_text(json.dumps({"model_type": "llama", "attn_implementation": "flash_attention_2"}))
    d = preflight([env], kb=kb, model=str(model))
    if "flash-attn-missing" in kb.rules:
        assert "flash-attn is not installed" in finding(d, "flash-attn-missing").evidence[0].text
    else:
        assert any("flash-attn-missing" in s.reason for s in d.skipped)


# --- healthy, live, contract ----------------------------------------------------------------------

@pytest.mark.parametrize("inputs", [
    [H200X2 / "pip-freeze.txt", H200X2 / "nvidia-smi.txt"],
    [H200X2],
    [FIXTURES / "healthy" / "collect-bundle-h200x1" / "bundle.tar.gz"],
    [FIXTURES / "healthy" / "collect-bundle-h200x2" / "bundle.tar.gz"],
], ids=["snapshot-freeze-smi", "snapshot-dir", "bundle-h200x1", "bundle-h200x2"])
def test_healthy_hosts_are_clean(inputs, kb):
    d = preflight([str(p) for p in inputs], kb=kb, launch="vllm serve Qwen/Qwen3-8B --tensor-parallel-size 1")
    assert d.findings == [], [(f.rule_id, f.evidence[0].text) for f in d.findings]
    assert d.facts.packages.get("torch") and d.facts.gpus


def test_live_python_environment(kb):
    """--python with this checkout's own venv: its distributions come from importlib.metadata, none imported."""
    d = preflight([str(H200X2 / "nvidia-smi.txt")], kb=kb, python=sys.executable)
    assert d.findings == []
    assert d.inputs[0].kind == "python-env" and d.inputs[0].lines > 10
    assert d.facts.packages["click"] and d.facts.packages["pydantic"]


def test_live_host_through_nvml(kb, monkeypatch):
    """NVML's snapshot (here the one `diagnose collect` took on a real 2x H200 host) gives the host facts."""
    import tarfile

    from diagnose.collect import nvml

    with tarfile.open(FIXTURES / "healthy" / "collect-bundle-h200x2" / "bundle.tar.gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/nvml.json"))
        snapshot = json.load(tar.extractfile(member))  # type: ignore[arg-type]
    monkeypatch.setattr(nvml, "snapshot", lambda: snapshot)
    d = preflight([], kb=kb, python=sys.executable, launch="vllm serve Qwen/Qwen3-8B -tp 4")
    assert [g.name for g in d.facts.gpus] == ["NVIDIA H200", "NVIDIA H200"] and d.facts.driver_version
    assert "needs 4 GPUs (--tp 4); 2 GPU(s) on NVML (this host)" in finding(d, "tp-exceeds-gpu-count").evidence[0].text
    assert d.unmatched_errors == []
    monkeypatch.setattr(nvml, "snapshot", lambda: {"diagnose_collect": "nvml", "gpus": [], "pairs": [],
                                                   "errors": ["nvmlInit: Driver Not Loaded"]})
    d = preflight([], kb=kb, python=sys.executable, launch="vllm serve Qwen/Qwen3-8B -tp 4")
    assert d.findings == [] and any("Driver Not Loaded" in s.reason for s in d.skipped)


def test_live_python_requirement_conflicts(tmp_path, kb):
    """pip check from metadata: sglang 0.5.9 pins torch==2.9.1 (as its wheel declares) beside torch 2.10.0."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    for name, version, requires in [("sglang", "0.5.9", ["torch==2.9.1", "pytest; extra == 'test'"]),
                                    ("torch", "2.10.0+cu128", []), ("requests", "2.32.3", ["urllib3<3,>=1.21.1"])]:
        info = site / f"{name}-{version}.dist-info"
        info.mkdir()
        meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
        (info / "METADATA").write_text(meta)
    d = preflight([str(H200X2 / "nvidia-smi.txt")], kb=kb, python=str(venv / "bin" / "python"))
    abi = finding(d, "torch-extension-abi-mismatch")
    assert "sglang 0.5.9 requires torch==2.9.1, but torch 2.10.0+cu128 is installed" in abi.evidence[0].text
    assert "requests 2.32.3 requires urllib3<3,>=1.21.1, which is not installed" in finding(
        d, "pip-dependency-conflict").evidence[0].text


def test_json_follows_the_diagnosis_contract_and_every_renderer_renders_it(tmp_path, kb):
    from diagnose.render import RENDERERS

    env = freeze(tmp_path, "sgl-kernel==0.3.21", "torch==2.10.0+cu128", "torchvision==0.24.1")
    d = preflight([env, str(H200X2 / "nvidia-smi.txt")], kb=kb, launch=SEED_LAUNCH)
    jsonschema.validate(json.loads(RENDERERS["json"](d)), SCHEMA)
    for name, render in RENDERERS.items():
        assert "torch-extension-abi-mismatch" in render(d), name


def test_cli_exit_codes_and_launch_after_dashes(tmp_path):
    env = freeze(tmp_path, "torch==2.9.1+cu128", "torchvision==0.25.0")
    found = run_cli("preflight", env, "--format", "json", "--", "python", "-m", "sglang.launch_server", "--tp", "1")
    assert found.returncode == 1
    data = json.loads(found.stdout)
    assert data["findings"][0]["rule_id"] == "torchvision-torch-mismatch"
    assert any(i["kind"] == "launch-command" for i in data["inputs"])
    clean = run_cli("preflight", str(H200X2 / "pip-freeze.txt"), str(H200X2 / "nvidia-smi.txt"))
    assert clean.returncode == 0 and b"no known failure" in clean.stdout
    assert run_cli("preflight", env, "--exit-zero").returncode == 0
    for bad in (["preflight"], ["preflight", env, "--model", str(tmp_path / "nowhere")],
                ["preflight", "--python", str(tmp_path / "no-python")], ["preflight", env, "--plan", "pip list"]):
        proc = run_cli(*bad, env={"NO_COLOR": "1"})
        assert proc.returncode == 2, bad
        assert proc.stderr.decode().startswith("diagnose: error: ") and b"Traceback" not in proc.stderr


def test_preflight_imports_nothing_heavy():
    code = ("import sys, diagnose.cli, diagnose.preflight.core; "
            "print(sorted(m for m in ('pynvml', 'yaml', 'pydantic', 'rapidfuzz') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ}, check=True)
    assert out.stdout.strip() == "[]"


# --- odd version numbers: a note each, never a traceback (issue #16) -----------------------------------

HUGE = "9" * 5000  # int() refuses over 4,300 digits; packaging reads a specifier's version only when it compares
ODD = [("torch==9999999999999999999999", False), (f"torchvision>=0.{HUGE}", True), ("torch>=1" + ".0" * 3000, False),
       ("torchvision===0.25.0", False), (f"torch==2.9.1.{HUGE}", True), ("torchvision~=1", True),
       (f"torch==2.*{HUGE}", True)]  # (requirement, not one packaging can compare)


@pytest.mark.parametrize(("requirement", "noted"), ODD, ids=range(len(ODD)))
def test_odd_versions_in_an_install_plan_are_a_note(tmp_path, kb, requirement, noted):
    env = freeze(tmp_path, "torch==2.9.1+cu128", "torchvision==0.25.0", "sgl-kernel==0.3.21")
    d = preflight([env], kb=kb, plan=f"pip install -U '{requirement}' torchvision")
    assert "torchvision-torch-mismatch" in ids(d)  # the environment is still judged
    notes = [s.reason for s in d.skipped if s.source == "preflight:plan"]
    assert len(notes) == noted and all("not a requirement the tables can judge" in n and len(n) < 400 for n in notes)


def test_a_5000_digit_version_on_the_command_line_is_no_traceback(tmp_path):
    env = freeze(tmp_path, "torch==2.9.1+cu128", "torchvision==0.25.0")
    proc = run_cli("preflight", env, "--format", "json", "--plan", f"pip install 'torchvision>=0.{HUGE}'",
                   env={"NO_COLOR": "1"})
    assert proc.returncode == 1 and not proc.stderr, proc.stderr.decode()
    assert "cannot be compared" in json.dumps(json.loads(proc.stdout)["skipped"])


def test_odd_versions_in_a_report_and_in_declared_requirements_are_notes(tmp_path, kb):
    env = freeze(tmp_path, "torch==2.9.1+cu128", f"sgl-kernel==0.3.{HUGE}")
    report = {"install": [{"metadata": {"name": "torchvision", "version": f"0.{HUGE}",
                                        "requires_dist": [f"torch=={HUGE}", "numpy"]}},
                          {"metadata": {"name": "torch", "version": f"2.{HUGE}"}}, ["not", "an", "item"]]}
    (tmp_path / "report.json").write_text(json.dumps(report))
    d = preflight([env], kb=kb, plan_report=str(tmp_path / "report.json"))
    notes = [s.reason for s in d.skipped if s.source == "preflight:plan"]
    assert len(notes) == 1 and "declares 'torch==999" in notes[0] and "cannot be compared" in notes[0]
    assert all(len(s.reason) < 400 for s in d.skipped)

    from diagnose.preflight.probe import Distribution
    from diagnose.preflight.requirements import conflicts

    dists = {"sglang": Distribution("sglang", "0.5.9", [f"torch>={HUGE}", "transformers==4.57.1"]),
             "torch": Distribution("torch", "2.9.1"), "transformers": Distribution("transformers", f"4.{HUGE}")}
    said: list[str] = []
    assert conflicts(dists, {"python_version": "3.12"}, said) == []
    assert len(said) == 2 and "not judged" in said[0] and "not a version it can be compared with" in said[1]


def test_a_5000_digit_gpu_count_in_nvidia_smi_q_is_no_traceback(tmp_path, kb):
    real = (H200X2 / "nvidia-smi-q.txt").read_text()
    stated = next(line for line in real.splitlines() if line.startswith("Attached GPUs"))
    smi = tmp_path / "nvidia-smi-q.txt"
    smi.write_text(real.replace(stated, f"Attached GPUs : {HUGE}"))
    d = preflight([str(smi)], kb=kb, launch="vllm serve Qwen/Qwen3-8B --tensor-parallel-size 4")
    assert "tp-exceeds-gpu-count" in ids(d)  # the GPUs the file lists still count: 2, not 9...9
