"""One remediation plan for a diagnosis: versions that satisfy every finding at once.

Two findings can each be right and their fixes still fight: torchvision built for another torch
says "install the torchvision of the installed torch 2.10", while sgl_kernel built for torch 2.9.1
says "put torch back to 2.9.1". Following the first leaves sgl_kernel broken. The plan asks the
compat tables once for all of them: the torch every installed compiled extension was built for
(rules/compat/extension-torch.yaml) wins, and torchvision / torchaudio follow that torch
(rules/compat/torch-torchvision.yaml), from the index of torch's CUDA build. Each pin says which
finding it serves; extensions that disagree on torch are reported as a conflict, not hidden.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from diagnose.kb import compat
from diagnose.model import Facts, Finding, Plan, walk
from diagnose.remedy.values import torch_index_url

TORCH_STACK = {"torchvision-torch-mismatch", "torch-extension-abi-mismatch", "pip-resolver-replaced-torch",
               "pip-dependency-conflict"}
IMPORT_OF = {"sgl-kernel": "sgl_kernel", "sglang-kernel": "sgl_kernel", "vllm": "vllm._C", "xformers": "xformers",
             "flash-attn": "flash_attn", "torchvision": "torchvision", "torchaudio": "torchaudio"}


def make_plan(findings: list[Finding], facts: Facts, tables: dict[str, Any]) -> Plan | None:
    ids = {f.rule_id for f in walk(findings)}
    involved = sorted(ids & TORCH_STACK)
    torch = facts.packages.get("torch")
    if not involved or not torch:
        return None
    plan = Plan()
    built_for = _extension_pins(facts, tables.get("extension-torch"))
    target = torch
    if built_for:
        votes = Counter(compat.release(t) for t, _ in built_for.values())
        (best, _), *rest = votes.most_common()
        target = next(t for t, _ in built_for.values() if compat.release(t) == best)
        for name, (wants, why) in sorted(built_for.items()):
            if compat.release(wants) != best:
                plan.conflicts.append(f"{why}, but the other extensions need torch {target}: reinstall {name} for "
                                      f"torch {target} (or rebuild it) after this plan")
        if rest:
            plan.notes.append("the installed extensions disagree on torch; the plan keeps the torch most of them need")
    local = torch.split("+", 1)[1] if "+" in torch else None
    pin_torch = target if "+" in target or not local else f"{target}+{local}"
    if compat.release(target) != compat.release(torch):
        plan.pins["torch"] = pin_torch
        plan.why["torch"] = "; ".join(why for _, why in built_for.values() if compat.release(_) == compat.release(target))
        plan.serves["torch"] = involved  # one torch for all of them: each finding's fix agrees on it
    for name in ("torchvision", "torchaudio"):
        _pair(plan, name, facts, tables.get("torch-torchvision"), target, ids)
    if not plan.pins:
        return None
    url = torch_index_url(torch) or (f"https://download.pytorch.org/whl/cu{facts.torch_cuda.replace('.', '')}"
                                     if facts.torch_cuda else None)
    args = " ".join(f'"{name}=={version}"' for name, version in plan.pins.items())
    plan.steps.append({
        "run": f"pip install {args}" + (f" --index-url {url}" if url else ""),
        "why": "one install of every pin, so that the resolver cannot move torch between them",
    })
    imports = ["torch", *sorted({IMPORT_OF[n] for n in [*plan.pins, *built_for] if n in IMPORT_OF})]
    plan.steps.append({"run": "pip check", "why": "no installed distribution's declared requirement is broken"})
    # `import xformers` only warns when its C++ library did not load: ask it
    loaded = "; assert xformers._has_cpp_library, 'xFormers C++ library not loaded'" if "xformers" in imports else ""
    plan.steps.append({
        "run": f'python -c "import {", ".join(imports)}{loaded}; print(torch.__version__)"',
        "why": "torch and every compiled extension in the plan import together",
    })
    return plan


def _extension_pins(facts: Facts, table: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    """Installed extensions the table knows, with the torch each was built for (and the sentence why)."""
    out: dict[str, tuple[str, str]] = {}
    for row in (table or {}).get("rows", []):
        if not isinstance(row, dict):
            continue
        name, version, built = str(row.get("package", "")), str(row.get("version", "")), str(row.get("torch", ""))
        installed = facts.packages.get(name)
        if installed and built and compat.same_version(installed, version):
            out[name] = (built, f"{name} {installed} was built for torch {built}")
    return out


def _pair(plan: Plan, name: str, facts: Facts, table: dict[str, Any] | None, torch: str, ids: set[str]) -> None:
    """torchvision / torchaudio for the plan's torch: kept when the installed one already pairs."""
    installed = facts.packages.get(name)
    if not installed:
        return
    for row in (table or {}).get("rows", []):
        if isinstance(row, dict) and compat.minor(str(row.get("torch", ""))) == compat.minor(torch) and row.get(name):
            wants = str(row[name])
            if compat.minor(wants) == compat.minor(installed):
                plan.notes.append(f"{name} {installed} already pairs with torch {torch}: keep it")
                return
            plan.pins[name] = f"{wants}.*"
            major, minor = compat.minor(torch)[:2]
            plan.why[name] = f"torch {major}.{minor} pairs with {name} {wants}; {installed} is installed"
            own = sorted(ids & {"torchvision-torch-mismatch", "pip-resolver-replaced-torch"})
            plan.serves[name] = own or plan.serves.get("torch", [])  # else: it follows the torch pin
            return
