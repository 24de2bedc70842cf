"""The environment a diagnosis saw, as (label, value) rows for the Markdown table and Slack's context.

>>> from diagnose.model import GPU, Facts
>>> facts = Facts(packages={"torch": "2.9.1+cu128", "nvidia-nccl-cu12": "2.27.3"}, driver_version="580.65.06",
...               gpus=[GPU(0, "NVIDIA H200", compute_capability="9.0"), GPU(1, "NVIDIA H200", compute_capability="9.0")])
>>> rows(facts)
[('GPUs', '2 × NVIDIA H200 (compute capability 9.0)'), ('NVIDIA driver', '580.65.06'), ('torch', '2.9.1+cu128'), ('nccl', '2.27.3 (nvidia-nccl-cu12)')]
"""

from __future__ import annotations

from collections import Counter

from diagnose.model import Facts

# the packages a GPU / LLM-inference failure most often turns on, with the names they are installed under
KEY_PACKAGES: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "torchvision": ("torchvision",),
    "transformers": ("transformers",),
    "sglang": ("sglang",),
    "sgl-kernel": ("sgl-kernel", "sglang-kernel"),
    "vllm": ("vllm",),
    "flashinfer-python": ("flashinfer-python", "flashinfer"),
    "flash-attn": ("flash-attn",),
    "xformers": ("xformers",),
    "triton": ("triton", "pytorch-triton"),
    "nccl": ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11", "nccl"),
}


def rows(facts: Facts) -> list[tuple[str, str]]:
    """GPUs, driver, CUDA, kernel and the key packages that the inputs state; nothing guessed."""
    out: list[tuple[str, str]] = []
    if facts.gpus:
        out.append(("GPUs", gpu_summary(facts)))
    if facts.driver_version:
        module = f" ({facts.kernel_module} kernel module)" if facts.kernel_module else ""
        out.append(("NVIDIA driver", facts.driver_version + module))
    if facts.cuda_driver_version:
        out.append(("CUDA (driver supports)", facts.cuda_driver_version))
    if facts.torch_cuda:
        out.append(("CUDA (torch built for)", facts.torch_cuda))
    if facts.kernel_release:
        out.append(("Linux kernel", facts.kernel_release))
    if facts.xids:
        counts = Counter(x.xid for x in facts.xids)
        out.append(("Xid events", ", ".join(f"Xid {x}" + (f" ×{n}" if n > 1 else "") for x, n in sorted(counts.items()))))
    for label, names in KEY_PACKAGES.items():
        name = next((n for n in names if n in facts.packages), None)
        if name:
            version = facts.packages[name]
            out.append((label, version if name == label else f"{version} ({name})"))
    return out


def gpu_summary(facts: Facts, details: bool = True) -> str:
    groups = Counter(
        (g.name or "unknown GPU", g.compute_capability, g.memory_total_mib) for g in facts.gpus
    )
    parts = []
    for (name, cc, mem), n in groups.items():
        said = [f"compute capability {cc}"] if cc and details else []
        if mem and details:
            said.append(f"{mem} MiB")
        parts.append(f"{n} × {name}" + (f" ({', '.join(said)})" if said else ""))
    return "; ".join(parts)


def one_line(facts: Facts) -> str:
    """`2 × NVIDIA H200 · driver 580.65.06 · CUDA 13.0 · torch 2.9.1` for a chat message's context."""
    parts = []
    if facts.gpus:
        parts.append(gpu_summary(facts, details=False))
    if facts.driver_version:
        parts.append(f"driver {facts.driver_version}")
    if facts.cuda_driver_version:
        parts.append(f"CUDA {facts.cuda_driver_version}")
    if "torch" in facts.packages:
        parts.append(f"torch {facts.packages['torch']}")
    return " · ".join(parts)
