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

from diagnose import lazy_re
from diagnose.kb import compat
from diagnose.model import Evidence, Facts

TORCH_INDEX = "https://download.pytorch.org/whl/"
# a rule's literal blank: <package>, <model dir>, /path/to/venv
ANGLE = lazy_re.compile(r"(?<![<\w])<[A-Za-z][\w .+-]{0,40}>|/path/to/[\w./-]*")
# import name as it appears in a failing line -> (distribution, import name)
EXTENSIONS = [
    (re.compile(r"\bsgl_kernel\b|sgl-kernel"), "sgl-kernel", "sgl_kernel"),
    (re.compile(r"\bflash_attn(?:_2_cuda|_cuda)?\b|flash-attn"), "flash-attn", "flash_attn"),
    (re.compile(r"\bxformers\b|xFormers"), "xformers", "xformers"),  # its import only warns: see _has_cpp_library
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
    "facts.old_torch_index_url": "the index of the torch that was replaced (its +cu / +cpu suffix; none: PyPI)",
    "facts.torch_release": "the installed torch without its +cu / +cpu suffix: `pip show torch | grep ^Version`",
    "facts.torch_of_torchvision": "the torch the installed torchvision was built for: "
                                  "https://github.com/pytorch/vision#installation",
    "facts.torchvision_of_old_torch": "the torchvision paired with that torch: https://github.com/pytorch/vision#installation",
    "facts.python": "the serving environment's interpreter: `python -c \"import sys; print(sys.executable)\"` there",
    "facts.python_bin": "the serving environment's bin folder: `python -c \"import sys, os; "
                        "print(os.path.dirname(sys.executable))\"` there",
    "facts.build_package": "the package whose build failed (pip's `Collecting ...` line above the error)",
    "facts.build_module": "the import name of the package whose build failed",
    "facts.gpu_count": "the GPUs this host shows: `nvidia-smi -L | wc -l` (with CUDA_VISIBLE_DEVICES as the server has it)",
    "facts.port": "the port in the bind error (`ss -ltnp` lists who holds which)",
    "facts.driver_version": "the installed driver: `nvidia-smi --query-gpu=driver_version --format=csv,noheader`",
    "facts.driver_branch": "the installed driver's branch (its first number): `nvidia-smi --query-gpu=driver_version "
                           "--format=csv,noheader`",
    "facts.model": "the model path or hub id the server was started with (its --model / --model-path)",
    "facts.script": "the script that failed (the traceback's first `File \"...\", in <module>` line)",
}
PYPI = "https://pypi.org/simple"
WORD = lazy_re.compile(r"[\w./:+=@~,-]+")  # a value that cannot change what the shell runs
# the sdist whose build failed, as a failing line names it: pip's pip-install-*/<name>_<hash>/setup.py
BUILT_PACKAGE = lazy_re.compile(r"pip-install-\w+[/\\](?P<p>[A-Za-z0-9][\w.-]{0,80}?)_[0-9a-f]{16,}[/\\]")
# the port a bind error names: ('127.0.0.1', 8000), 0.0.0.0:8000, [::]:8000, "port 8000"
PORT_IN_LINE = lazy_re.compile(r"\(\s*'[^']*',\s*(\d{2,5})\)|(?:\d{1,3}(?:\.\d{1,3}){3}|localhost|\]|\*):(\d{2,5})\b"
                          r"|\bport[ =:]+(\d{2,5})\b", re.I)
SITE = lazy_re.compile(r'File "(?P<prefix>/[\w./~+-]+?)/lib/python3\.\d+/site-packages/')


# a value from the inputs that cannot make the shell run anything else (a glob star at most): what may go
# into a command a person pastes (engine/rank.py) or verify runs (preflight/verify.py)
SHELL_WORD = lazy_re.compile(r"[\w./:+=@~,%*-]*")

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


def _only_gpu(facts: Facts) -> str | None:
    """The one GPU an nvidia-smi output lists is the one an error on this host is about."""
    indexes = {g.index for g in facts.gpus if g.index is not None}
    return str(indexes.pop()) if len(indexes) == 1 and len(facts.gpus) == 1 else None


def _pci_bus_id(pci: str | None) -> str | None:
    """No nvidia-smi to map it: `nvidia-smi -i` takes the PCI bus id itself (`0000:dc:00` -> `0000:dc:00.0`)."""
    if not pci or not re.fullmatch(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?", pci):
        return None
    return pci.lower() if "." in pci else pci.lower() + ".0"


def _env_prefix(facts: Facts) -> str | None:
    """The environment the failing process ran in, from a traceback frame in its site-packages."""
    for where in facts.seen_packages.values():
        if m := SITE.search(where):
            return m["prefix"]
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
    torch = facts.packages.get("torch")
    # the torch a step reinstalls is the installed one, or the one the failing line names (the torch
    # the resolver replaced, the torch an extension was built for): its +cu / +cpu tag names the index
    named = [torch, groups.get("groups.old_torch"), groups.get("groups.built_torch")]
    if url := next((u for t in named if (u := torch_index_url(t))), None):
        values["facts.torch_index_url"] = url
    elif facts.torch_cuda:
        values["facts.torch_index_url"] = TORCH_INDEX + "cu" + facts.torch_cuda.replace(".", "")
    elif torch:  # no local tag and no CUDA runtime read: a wheel from PyPI, whose default build it is
        values["facts.torch_index_url"] = PYPI
    if old := groups.get("groups.old_torch"):  # the torch the resolver replaced, put back from its own index
        values["facts.old_torch_index_url"] = torch_index_url(old) or PYPI
    if torch:
        values["facts.torch_release"] = torch.split("+", 1)[0]
    if facts.driver_version:
        values["facts.driver_branch"] = facts.driver_version.split(".", 1)[0]
    pci = groups.get("groups.pci") or next((x.pci for x in facts.xids if x.pci), None)
    if index := (gpu_index(facts, pci) or _pci_bus_id(pci)) if pci else _only_gpu(facts):
        values["facts.gpu_index"] = index
    if facts.gpus:
        values["facts.gpu_count"] = str(len(facts.gpus))
    if prefix := _env_prefix(facts):
        values["facts.python_bin"], values["facts.python"] = f"{prefix}/bin", f"{prefix}/bin/python"
    model = groups.get("groups.model") or groups.get("groups.model_path") or facts.model_path
    if model and WORD.fullmatch(model):  # a value from a log goes into a command a person pastes
        values["facts.model"] = model
    if facts.script:
        values["facts.script"] = facts.script
    if package := next((m["p"] for e in evidence if (m := BUILT_PACKAGE.search(e.text))), facts.sdist):
        values["facts.build_package"] = package
        values["facts.build_module"] = re.sub(r"[-.]", "_", package.lower())
    if port := next((m[1] or m[2] or m[3] for e in evidence if (m := PORT_IN_LINE.search(e.text))), None):
        values["facts.port"] = port
    ext = extension(evidence)
    if ext is None and (known := groups.get("compat.extension-torch.package")):
        # the line does not name it (xFormers' "PyTorch X with CUDA Y (you have Z)"): the installed
        # extension the compat table says was built for another torch
        ext = known, MODULE_OF.get(known, known.replace("-", "_"))
    if ext:
        values["facts.extension"], values["facts.extension_module"] = ext
    return values


def from_tables(facts: Facts, groups: dict[str, str], tables: dict[str, Any]) -> dict[str, str]:
    """Values read from the compat tables: the torch the installed torchvision was built for, and the
    torchvision of the torch the resolver replaced (a step that puts that torch back installs it too)."""
    values: dict[str, str] = {}
    rows = [r for r in (tables.get("torch-torchvision") or {}).get("rows", []) if isinstance(r, dict)]
    vision, old = facts.packages.get("torchvision"), groups.get("groups.old_torch")
    for row in rows:
        torch, paired = str(row.get("torch", "")), str(row.get("torchvision", ""))
        if vision and paired and compat.minor(paired) == compat.minor(vision):
            values["facts.torch_of_torchvision"] = f"{torch}.*"
        if old and paired and compat.minor(torch) == compat.minor(old):
            values["facts.torchvision_of_old_torch"] = f"{paired}.*"
    return values


def unresolved(template: str, rendered: str, pattern: Any) -> list[str]:
    """The placeholder names of `template` that stayed unfilled in `rendered`."""
    return [name for name in pattern.findall(template) if f"<{name.rsplit('.', 1)[-1]}>" in rendered]
