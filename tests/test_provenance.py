"""Facts have provenance: direct evidence in a log beats a package list from another environment."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from conftest import FIXTURES

from diagnose import api

BUNDLE = FIXTURES / "healthy" / "collect-bundle-h200x1" / "bundle.tar.gz"
TRACEBACK = FIXTURES / "torchvision-torch-mismatch--repro-torch2141-tv0280" / "traceback.log"


def _bundle_without(tmp_path: Path, package: str, python_source: str | None) -> Path:
    """The real H200 collect bundle, its pip list and collect_env without `package`, its manifest saying whose
    interpreter was listed (as `diagnose collect` writes it now)."""
    out = tmp_path / "bundle.tar.gz"
    with tarfile.open(BUNDLE) as src, tarfile.open(out, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read()  # type: ignore[union-attr]
            if member.name.endswith("pip-list.json"):
                data = json.dumps([p for p in json.loads(data) if p["name"].lower() != package], indent=2).encode()
            if member.name.endswith("collect-env.txt"):
                data = b"\n".join(x for x in data.splitlines() if package.encode() not in x.lower())
            if member.name.endswith("manifest.json") and python_source:
                manifest = json.loads(data)
                manifest["python_source"] = python_source
                data = json.dumps(manifest, indent=2).encode()
            member.size = len(data)
            dst.addfile(member, io.BytesIO(data))
    return out


def test_a_frame_in_site_packages_is_direct_evidence_that_the_package_is_installed(kb, tmp_path):
    bundle = _bundle_without(tmp_path, "torchvision", python_source=None)
    diagnosis = api.diagnose([str(TRACEBACK), str(bundle)], kb=kb)
    assert "torchvision" not in diagnosis.facts.packages
    assert "torchvision" in diagnosis.facts.seen_packages
    assert diagnosis.findings[0].rule_id == "torchvision-torch-mismatch"
    assert diagnosis.findings[0].confidence >= 0.85


def test_a_contradiction_from_another_environment_lowers_instead_of_vetoing(kb, tmp_path):
    bundle = _bundle_without(tmp_path, "torchvision", python_source="collector")
    # only the exception line: no frame shows where torchvision ran
    line = "RuntimeError: operator torchvision::nms does not exist\n"
    log = tmp_path / "crash.log"
    log.write_text(line)
    diagnosis = api.diagnose([str(log), str(bundle)], kb=kb)
    first = diagnosis.findings[0]
    assert first.rule_id == "torchvision-torch-mismatch"
    assert 0.3 <= first.confidence < 0.9
    assert any("another environment" in r for r in first.reasons)
    assert any("collector's own interpreter" in n for i in diagnosis.inputs for n in i.notes)


def test_a_contradiction_from_the_servers_own_package_list_still_vetoes_and_is_shown(kb, tmp_path):
    bundle = _bundle_without(tmp_path, "torchvision", python_source="--python")
    log = tmp_path / "crash.log"
    log.write_text("RuntimeError: operator torchvision::nms does not exist\n")
    diagnosis = api.diagnose([str(log), str(bundle)], kb=kb)
    assert all(f.rule_id != "torchvision-torch-mismatch" for f in diagnosis.findings)
    aside = [v for v in diagnosis.set_aside if v.rule_id == "torchvision-torch-mismatch"]
    assert aside and "torchvision is not installed" in aside[0].reason
    from diagnose.render import text

    assert "Set aside" in text.render(diagnosis)


def test_collect_finds_the_serving_interpreter_of_a_running_server(tmp_path):
    from diagnose.collect import interpreter

    python = tmp_path / "srv" / "bin" / "python3.12"
    python.parent.mkdir(parents=True)
    python.write_text("")
    pid = tmp_path / "proc" / "4242"
    pid.mkdir(parents=True)
    (pid / "cmdline").write_bytes(b"/srv/bin/python3.12\0-m\0vllm.entrypoints.openai.api_server\0--model\0x\0")
    (pid / "exe").symlink_to(python)
    found, how = interpreter.find(proc=tmp_path / "proc", path=str(tmp_path / "empty"))
    assert found == str(python) and how.startswith("running-server (pid 4242")


def test_collect_falls_back_to_an_entry_point_on_path_then_to_itself(tmp_path):
    import sys

    from diagnose.collect import interpreter

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    vllm = bin_dir / "vllm"
    vllm.write_text(f"#!{sys.executable}\nimport sys\n")
    vllm.chmod(0o755)
    assert interpreter.find(proc=tmp_path / "noproc", path=str(bin_dir)) == (sys.executable, "path:vllm")
    vllm.unlink()
    assert interpreter.find(proc=tmp_path / "noproc", path=str(bin_dir)) == (sys.executable, "collector")


def test_an_install_of_a_server_is_not_a_running_server(tmp_path):
    from diagnose.collect import interpreter

    python = tmp_path / "python3"
    python.write_text("")
    pid = tmp_path / "proc" / "77"
    pid.mkdir(parents=True)
    (pid / "cmdline").write_bytes(b"/tmp/v/bin/python\0/tmp/v/bin/pip\0install\0vllm==0.6.3\0")
    (pid / "exe").symlink_to(python)
    assert interpreter._running_server(tmp_path / "proc") is None


# A Jupyter / IPython traceback as people paste it (https://github.com/angelolab/Nimbus-Inference/issues/12):
# Windows paths in IPython 8's `File ~\...:293, in f()` frames, the source lines around each frame, and a
# session_info package list that does not name torch.
NOTEBOOK = r'''File ~\AppData\Local\miniconda3\envs\Nimbus\lib\site-packages\torch\nn\modules\module.py:1150, in Module.to.<locals>.convert(t)
   1147 if convert_to_format is not None and t.dim() in (4, 5):
   1148     return t.to(device, dtype if t.is_floating_point() or t.is_complex() else None,
   1149                 non_blocking, memory_format=convert_to_format)
-> 1150 return t.to(device, dtype if t.is_floating_point() or t.is_complex() else None, non_blocking)

File ~\AppData\Local\miniconda3\envs\Nimbus\lib\site-packages\torch\cuda\__init__.py:293, in _lazy_init()
    288     raise RuntimeError(
    289         "Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
    290         "multiprocessing, you must use the 'spawn' start method"
    291     )
    292 if not hasattr(torch._C, "_cuda_getDeviceCount"):
--> 293     raise AssertionError("Torch not compiled with CUDA enabled")
    294 if _cudart is None:
    295     raise AssertionError(
    296         "libcudart functions unavailable. It looks like you have a broken build?"
    297     )

AssertionError: Torch not compiled with CUDA enabled
'''
SESSION_INFO = """### Version information
-----
alpineer            NA
ark                 NA
nimbus_inference    0.0.1
numpy               1.23.5
session_info        1.0.0
tifffile            2024.5.22
-----
"""


def test_a_notebooks_source_lines_are_code_not_messages_and_its_frames_show_torch(kb, tmp_path):
    (tmp_path / "traceback.log").write_text(NOTEBOOK)
    (tmp_path / "session_info.txt").write_text(SESSION_INFO)
    diagnosis = api.diagnose([str(tmp_path / "traceback.log"), str(tmp_path / "session_info.txt")], kb=kb)
    assert [f.rule_id for f in diagnosis.findings][:1] == ["torch-cpu-build"]
    # the "Cannot re-initialize CUDA in forked subprocess" string is torch's source, shown around the frame
    assert "cuda-fork-reinit" not in [f.rule_id for f in diagnosis.findings]
    cited = [e.line for f in diagnosis.findings for e in f.evidence]
    assert cited and all(n == NOTEBOOK.splitlines().index("AssertionError: Torch not compiled with CUDA enabled") + 1
                         for n in cited)


def test_a_frame_in_pips_isolated_build_env_is_not_the_environment(kb, tmp_path):
    """torch imported from /tmp/pip-build-env-*/overlay is the build's, not evidence torch is installed."""
    log = FIXTURES / "cuda-toolkit-mismatch--vllm-602" / "install.log"
    diagnosis = api.diagnose([str(log)], kb=kb)
    assert [f.rule_id for f in diagnosis.findings] == ["cuda-toolkit-mismatch"]


def test_strong_lines_a_fact_took_below_the_line_are_shown_as_set_aside(kb, tmp_path):
    # nvidia-installer's own failure (gpu-operator#206 wording), with an nvidia-smi that lists a GPU (taken after
    # the fix, as such reports often are): the fact may be right, but the user must see what it ruled out
    log = tmp_path / "driver-container.log"
    log.write_text("ERROR: Unable to load the kernel module 'nvidia.ko'.  This happens most frequently when this kernel "
                   "module was built against the wrong or improperly configured kernel sources\n")
    smi = str(FIXTURES / "healthy" / "host-rtx4090d-nvidia-smi-550" / "nvidia-smi.txt")
    alone = api.diagnose([str(log)], kb=kb)
    assert alone.findings and alone.findings[0].rule_id == "nvidia-driver-not-loaded"
    diagnosis = api.diagnose([str(log), smi], kb=kb)
    assert all(f.rule_id != "nvidia-driver-not-loaded" for f in diagnosis.findings)
    aside = [v for v in diagnosis.set_aside if v.rule_id == "nvidia-driver-not-loaded"]
    assert aside, diagnosis.set_aside
    assert "nvidia-smi lists GPUs" in aside[0].reason and aside[0].confidence >= 0.6
    from diagnose.render import text

    assert "Set aside" in text.render(diagnosis)


def test_a_weak_line_a_fact_contradicts_is_not_set_aside(kb, tmp_path):
    log = tmp_path / "smi.log"
    log.write_text("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                   "Make sure that the latest NVIDIA driver is installed and running.\n")
    smi = str(FIXTURES / "healthy" / "host-rtx4090d-nvidia-smi-550" / "nvidia-smi.txt")
    diagnosis = api.diagnose([str(log), smi], kb=kb)
    assert not [v for v in diagnosis.set_aside if v.rule_id == "nvidia-driver-not-loaded"]
