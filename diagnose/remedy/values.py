"""Values a fix or verify command is rendered with, from the facts and the evidence.

A rule writes `pip install "torch=={packages.torch}" --index-url {facts.torch_index_url}`; this
module says what each such name is for this diagnosis: the CUDA variant's index of the installed
torch, the GPU index behind an Xid's PCI address (from the nvidia-smi the user gave), the compiled
extension the failing line names. A name whose value the inputs do not give stays `<name>`, and the
step says what to look up instead (LOOK_UP), so nobody pastes a placeholder.
"""

from __future__ import annotations

import re
from typing import Any

from diagnose.model import Evidence, Facts

TORCH_INDEX = "https://download.pytorch.org/whl/"
# a rule's literal blank: <package>, <model dir>, /path/to/venv
ANGLE = re.compile(r"(?<![<\w])<[A-Za-z][\w .+-]{0,40}>|/path/to/[\w./-]*")
# import name as it appears in a failing line -> (distribution, import name)
EXTENSIONS = [
    (re.compile(r"\bsgl_kernel\b|sgl-kernel"), "sgl-kernel", "sgl_kernel"),
    (re.compile(r"\bflash_attn(?:_2_cuda|_cuda)?\b|flash-attn"), "flash-attn", "flash_attn"),
    (re.compile(r"\bxformers\b|xFormers"), "xformers", "xformers"),
    (re.compile(r"\bvllm[./]_C\b|\bvllm\._custom_ops\b|\bvllm_flash_attn\b"), "vllm", "vllm._C"),
    (re.compile(r"\bflashinfer\b"), "flashinfer-python", "flashinfer"),
    (re.compile(r"\bdeepspeed\b"), "deepspeed", "deepspeed"),
    (re.compile(r"\bdeep_gemm\b"), "deep-gemm", "deep_gemm"),
    (re.compile(r"\btorchaudio\b"), "torchaudio", "torchaudio"),
]
MODULE_OF = {dist: module for _, dist, module in EXTENSIONS} | {"sglang-kernel": "sgl_kernel"}
LOOK_UP = {
    "packages.torch": "the installed torch: `pip show torch | grep ^Version`",
    "facts.torch_index_url": "torch's CUDA build: `python -c \"import torch; print(torch.version.cuda)\"` "
                             "(12.8 -> https://download.pytorch.org/whl/cu128; CPU -> .../whl/cpu)",
    "facts.gpu_index": "the GPU behind the PCI address: `nvidia-smi --query-gpu=index,pci.bus_id --format=csv`",
    "facts.extension": "the compiled extension the error names (sgl-kernel, flash-attn, xformers, vllm, ...)",
    "facts.extension_module": "the import name of that extension (sgl_kernel, flash_attn, xformers, vllm._C, ...)",
    "compat.extension-torch.expected": "the torch release the extension was built for: its release notes, or the "
                                       "torch pin of the sglang / vllm release that ships it (`pip show sglang vllm`)",
    "compat.torch-torchvision.expected": "the torchvision paired with the installed torch: "
                                         "https://github.com/pytorch/vision#installation",
}


def torch_index_url(torch: str | None) -> str | None:
    """`2.9.1+cu128` -> the cu128 index; `+cpu` -> the cpu index; no local tag -> None (PyPI's default)."""
    if not torch or "+" not in torch:
        return None
    tag = torch.split("+", 1)[1]
    return TORCH_INDEX + tag if re.fullmatch(r"cu\d{3}|cpu|rocm\d+(?:\.\d+)*|xpu", tag) else None


def gpu_index(facts: Facts, pci: str | None) -> str | None:
    """The index of the GPU at an Xid's PCI address (`0000:dc:00`), when an nvidia-smi output gave both."""
    if not pci:
        return None
    want = _bus(pci)
    for gpu in facts.gpus:
        if gpu.bus_id and gpu.index is not None and _bus(gpu.bus_id) == want:
            return str(gpu.index)
    return None


def _bus(bus_id: str) -> str:
    parts = bus_id.lower().split(":")
    if len(parts) >= 3:  # domain:bus:device[.fn] -> bus:device, the domain's width differs
        return f"{int(parts[-2], 16):02x}:{parts[-1].split('.')[0]}" if _hex(parts[-2]) else bus_id.lower()
    return bus_id.lower()


def _hex(text: str) -> bool:
    return bool(re.fullmatch(r"[0-9a-f]+", text))


def extension(evidence: list[Evidence]) -> tuple[str, str] | None:
    """The compiled extension a failing line names: (distribution, import name)."""
    for e in evidence:
        for pattern, dist, module in EXTENSIONS:
            if pattern.search(e.text):
                return dist, module
    return None


def from_facts(facts: Facts, evidence: list[Evidence], groups: dict[str, str]) -> dict[str, str]:
    values: dict[str, str] = {}
    if url := torch_index_url(facts.packages.get("torch")):
        values["facts.torch_index_url"] = url
    elif facts.torch_cuda:
        values["facts.torch_index_url"] = TORCH_INDEX + "cu" + facts.torch_cuda.replace(".", "")
    if index := gpu_index(facts, groups.get("groups.pci")):
        values["facts.gpu_index"] = index
    ext = extension(evidence)
    if ext is None and (known := groups.get("compat.extension-torch.package")):
        # the line does not name it (xFormers' "PyTorch X with CUDA Y (you have Z)"): the installed
        # extension the compat table says was built for another torch
        ext = known, MODULE_OF.get(known, known.replace("-", "_"))
    if ext:
        values["facts.extension"], values["facts.extension_module"] = ext
    return values


def unresolved(template: str, rendered: str, pattern: Any) -> list[str]:
    """The placeholder names of `template` that stayed unfilled in `rendered`."""
    return [name for name in pattern.findall(template) if f"<{name.rsplit('.', 1)[-1]}>" in rendered]
