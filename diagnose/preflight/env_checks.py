"""Predictions from the Python environment: companions and extensions built for another torch,
declared requirements the installed distributions break, and a JIT build with no ninja to run.
"""

from __future__ import annotations

from typing import Any

from diagnose.kb import compat
from diagnose.preflight.environment import Environment
from diagnose.preflight.predict import Predictions

# distributions whose binaries link against torch's C++ libraries (so they only load into the torch
# they were built for); the extension-torch table and exact `torch==` pins in metadata add to these
TORCH_EXTENSIONS = (
    "torchvision", "torchaudio", "sgl-kernel", "sglang-kernel", "vllm", "xformers", "flash-attn",
    "deepspeed", "apex", "torch-scatter", "torch-sparse", "torch-cluster", "torch-spline-conv", "causal-conv1d",
    "mamba-ssm", "transformer-engine", "auto-gptq", "fbgemm-gpu", "torchao", "detectron2", "mmcv",
)


def check(env: Environment, kb: Any, out: Predictions) -> None:
    torchvision_pair(env, kb, out)
    extension_pins(env, kb, out)
    declared_requirements(env, out)
    ninja_for_jit(env, out)


def torchvision_pair(env: Environment, kb: Any, out: Predictions) -> None:
    state, detail, values = compat.torch_torchvision(kb.compat.get("torch-torchvision"), env.facts)
    if state:
        source, line = env.package_source("torchvision")
        out.add("torchvision-torch-mismatch", 0.85, detail, source, "compat:torch-torchvision", line,
                values={f"compat.torch-torchvision.{k}": v for k, v in values.items()})


def extension_pins(env: Environment, kb: Any, out: Predictions) -> None:
    """Every installed extension the extension-torch table says was built for another torch."""
    torch = env.facts.packages.get("torch")
    if not torch:
        return
    for row in (kb.compat.get("extension-torch") or {}).get("rows", []):
        name, version, built_for = str(row.get("package")), str(row.get("version")), str(row.get("torch"))
        installed = env.facts.packages.get(name)
        if not installed or not compat.same_version(installed, version):
            continue
        if compat.release(built_for) != compat.release(torch):
            source, line = env.package_source(name)
            text = f"{name} {installed} was built for torch {built_for}; torch {torch} is installed"
            out.add("torch-extension-abi-mismatch", 0.9, text, source, "compat:extension-torch", line,
                    values={"compat.extension-torch.expected": built_for, "compat.extension-torch.package": name})


def declared_requirements(env: Environment, out: Predictions) -> None:
    """pip check, from the Requires-Dist of every distribution of the --python environment."""
    if env.probe is None:
        return
    from diagnose.preflight.requirements import conflicts

    source = f"--python {env.probe.python}"
    notes: list[str] = []
    for conflict in conflicts(env.probe.distributions, env.probe.markers, notes):
        text = f"{conflict} (declared requirement, Requires-Dist)"
        if conflict.name == "torch" and conflict.installed and conflict.requirer == "torchvision":
            out.add("torchvision-torch-mismatch", 0.85, text, source, "requires-dist")
        elif conflict.name == "torch" and conflict.installed and (
                conflict.exact or conflict.requirer in TORCH_EXTENSIONS):
            out.add("torch-extension-abi-mismatch", 0.8, text, source, "requires-dist",
                    values={"compat.extension-torch.package": conflict.requirer})
        else:
            out.add("pip-dependency-conflict", 0.5, text, source, "requires-dist",
                    groups={"package": conflict.requirer, "requirement": conflict.requirement})
    for note in notes:
        out.skip("requires-dist", note)


def ninja_for_jit(env: Environment, out: Predictions) -> None:
    """FlashInfer (and torch cpp_extension) JIT builds run `ninja` from PATH."""
    packages = env.facts.packages
    jit = env.launch.jit_backends() if env.launch is not None else []
    flashinfer = next((p for p in ("flashinfer-python", "flashinfer") if p in packages), "")
    if not jit and not (flashinfer and env.probe is not None):
        return
    why = (f"the launch selects FlashInfer ({', '.join(jit)}), which JIT-compiles kernels it has no prebuilt "
           "copy of with ninja" if jit else f"{flashinfer} {packages[flashinfer]} is installed and JIT-compiles "
           "kernels with ninja when the server first needs them")
    weight = 0.85 if jit else 0.45
    source = "launch command" if jit else f"--python {env.probe.python}"  # type: ignore[union-attr]
    if env.probe is not None:
        if env.probe.ninja_on_path:
            return
        if env.probe.ninja_in_env:
            where = (f"ninja is installed at {env.probe.ninja_in_env}, but {env.probe.bin_dir} is not on PATH "
                     f"(this shell's PATH): a server started as {env.probe.python} without activating the venv "
                     "cannot run it")
        else:
            where = f"no ninja on PATH (this shell's PATH) nor in {env.probe.bin_dir}"
        out.add("ninja-missing-jit", weight, f"{why}; {where}", source, "ninja-on-path")
    elif packages and "ninja" not in packages and jit:
        out.add("ninja-missing-jit", 0.6, f"{why}; the ninja package is not installed in the environment "
                "(a system ninja-build on PATH would also do: not known from a package list)",
                source, "ninja-installed")
    elif jit:
        out.skip("ninja-missing-jit", "whether ninja is on the server's PATH is not known from a package list: "
                 "give --python to check the live environment")
