"""Fact conditions: each rule question about the Facts answers True, False or None (unknown).

The vocabulary is closed and documented in docs/writing-rules.md; a condition holds a subject
key (package, compat, compute_capability, ...) and an effect.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import regex

from diagnose import lazy_re
from diagnose.artifacts import pip
from diagnose.kb import compat
from diagnose.model import Facts


@lru_cache(maxsize=512)
def _spec(spec: str) -> Any:
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(spec, prereleases=True)


def satisfies(version: str | None, spec: str) -> bool | None:
    """Does `version` satisfy the PEP 440 `spec`? Local parts (`+cu128`) are ignored."""
    if not version:
        return None
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version.split("+")[0])
    except (InvalidVersion, ValueError):  # ValueError: a number of over 4,300 digits
        numbers = compat.release(version)
        if not numbers:
            return None
        parsed = Version(".".join(str(n) for n in numbers))
    return parsed in _spec(spec)


OS_NAMES = {"windows": "Windows", "macos": "macOS"}


def _listing_stops_before(facts: Facts, name: str) -> str | None:
    """The first or last name of an alphabetical package listing that `name` would lie outside of, when the
    listing reads as a cut excerpt of `pip freeze` / `pip list` (sorted, and `name` sorts past its end or before its
    start): absence from a list that stops at `hf-xet` says nothing about torch."""
    listed = [n for n in facts.packages if n not in facts.stated_only]
    if len(listed) < 5:
        return None
    keys = [pip.canonical(n) for n in listed]
    descents = sum(1 for a, b in zip(keys, keys[1:]) if b < a)
    if descents > max(1, len(keys) // 20):
        return None  # not one sorted listing: several artifacts, or a listing in another order
    key = pip.canonical(name)
    if key > keys[-1]:
        return listed[-1]
    if key < keys[0]:
        return listed[0]
    return None


def evaluate(
    cond: dict[str, Any], facts: Facts, tables: dict[str, Any], groups: dict[str, str]
) -> tuple[bool | None, str, dict[str, str]]:
    """(holds, what was compared, values for fix placeholders)."""
    subject = next(k for k in cond if k not in ("effect", "weight", "note", "installed", "version", "state"))
    value = cond[subject]
    if subject == "package":
        installed = facts.packages.get(value)
        if "installed" in cond:
            ran_from = facts.seen_packages.get(value)
            if installed is None and ran_from:
                return cond["installed"], f"{value} runs from site-packages in the log ({ran_from})", {}
            if not facts.packages or (installed is None and not set(facts.packages) - facts.stated_only):
                return None, f"installed packages unknown ({value})", {}
            if installed is None and (edge := _listing_stops_before(facts, value)):
                return None, f"{value} is not in the package list, but the list stops at {edge}: it may be cut", {}
            holds = (installed is not None) == cond["installed"]
            return holds, f"{value} {'is installed' if installed else 'is not installed'}", {}
        holds = satisfies(installed, cond["version"])
        return holds, f"{value} {installed or '(version unknown)'} vs {cond['version']}", {}
    if subject == "compat":
        state, detail, values = compat.ask(value, tables, facts, groups)
        if state is None:
            return None, detail, values
        return state == (cond["state"] == "mismatched"), detail, values
    if subject == "compute_capability":
        ccs = facts.compute_capabilities()
        if not ccs:
            return None, "GPU compute capability unknown", {}
        holds = any(satisfies(cc, value) for cc in ccs)
        return holds, f"GPU compute capability {', '.join(sorted(set(ccs)))} vs {value}{_stated(facts)}", {}
    if subject == "gpu_name":
        names = facts.gpu_names()
        if not names:
            return None, "GPU model unknown", {}
        return any(regex.search(value, n) for n in names), f"GPU {names[0]}{_stated(facts)}", {}
    if subject in ("driver_version", "cuda_driver_version", "torch_cuda"):
        known = getattr(facts, subject)
        label = subject.replace("_", " ")
        return satisfies(known, value), f"{label} {known or 'unknown'} vs {value}", {}
    if subject == "toolkit_release":
        return satisfies(facts.toolkit_cuda, value), f"CUDA toolkit (nvcc) {facts.toolkit_cuda or 'unknown'} vs {value}", {}
    if subject == "toolkit_cuda":
        toolkit, built = facts.toolkit_cuda, facts.torch_cuda
        if not toolkit or not built:
            return None, f"CUDA toolkit {toolkit or 'unknown'} vs torch built with CUDA {built or 'unknown'}", {}
        differs = toolkit.split(".")[0] != built.split(".")[0]
        return differs == (value == "mismatched"), f"CUDA toolkit (nvcc) {toolkit} vs torch built with CUDA {built}", {}
    if subject == "os":
        if not facts.os:
            return None, "operating system unknown", {}
        return facts.os == value, f"the logs are from {OS_NAMES.get(facts.os, facts.os)}", {}
    if subject == "kernel_release":
        release = facts.kernel_release
        if not release:
            return None, "kernel release unknown", {}
        return bool(regex.search(value, release)), f"kernel {release}", {}
    if subject == "kernel_module":
        flavour = facts.kernel_module
        if not flavour:
            return None, "NVIDIA kernel module flavour unknown", {}
        return flavour == value, f"NVIDIA {flavour} kernel module", {}
    if subject == "module_param":
        param = facts.module_params.get(value["module"], {}).get(value["name"])
        if param is None:
            return None, f"{value['module']}.{value['name']} unknown", {}
        holds = bool(regex.fullmatch(value["value"], param))
        return holds, f"{value['module']}.{value['name']}={param}", {}
    if subject == "xid":
        if not facts.xids:
            return None, "no kernel log with Xids", {}
        seen = sorted({x.xid for x in facts.xids})
        return any(x in value for x in seen), f"Xid {', '.join(map(str, seen))} in the kernel log", {}
    if subject == "gpu_link":
        links = [link for row in facts.topology.values() for link in row.values()]
        if not links:
            return None, "GPU topology unknown", {}
        hits = sorted({link for link in links if regex.search(value, link)})
        return bool(hits), f"GPU links {', '.join(hits or sorted(set(links)))}", {}
    if subject == "p2p":
        states = [s for row in facts.p2p.values() for s in row.values() if s != "X"]
        if not states:
            return None, "P2P status unknown", {}
        not_ok = [s for s in states if s != "OK"]
        holds = bool(not_ok) if value == "not-ok" else not not_ok
        return holds, f"P2P {'not OK for some pairs' if not_ok else 'OK for all pairs'}", {}
    if subject == "pcie_link":
        return _pcie_link(value, facts)
    if subject == "compare":
        return _compare(value, facts, groups)
    if subject == "memory_elsewhere":
        return _memory_elsewhere(value, groups)
    if subject == "gpu_count":
        if not facts.gpus:
            return None, "GPU count unknown", {}
        return satisfies(str(len(facts.gpus)), value), f"{len(facts.gpus)} GPU(s)", {}
    return None, f"unknown subject {subject}", {}


def _stated(facts: Facts) -> str:
    """Where the GPU came from when no artifact lists one: the report's own words."""
    if not facts.gpus_only_stated():
        return ""
    name, stated = next(iter(facts.stated_gpus.items()))
    return f" (the GPU the report names: {name}, {stated.get('where', 'in the inputs')})"


def foreign_source(cond: dict[str, Any], facts: Facts) -> str | None:
    """The artifact a package fact came from, when it lists another environment than the server's."""
    if "package" not in cond:
        return None
    source = facts.package_sources.get(cond["package"])
    if source is None and facts.package_sources:  # "not installed": every package list that was read
        sources = set(facts.package_sources.values())
        return next(iter(sorted(sources))) if all(facts.is_foreign(s) for s in sources) else None
    return source if facts.is_foreign(source) else None


def _compare(spec: dict[str, str], facts: Facts, groups: dict[str, str]) -> tuple[bool | None, str, dict[str, str]]:
    """A version from a matched line against a fact (see kb/schema.py Compare)."""
    named, known = groups.get(spec["group"]), getattr(facts, spec["fact"], None)
    label = spec["fact"].replace("_", " ")
    if not named or not known:
        return None, f"{spec['group']} {named or 'not in the line'} vs {label} {known or 'unknown'}", {}
    if spec["relation"] == "at-least":
        if not (named.isdigit() and str(known).isdigit()):
            return None, f"{named} vs {label} {known}: not numbers", {}
        return int(named) >= int(known), f"the line names {spec['group'].replace('_', ' ')} {named}; {label} is {known}", {}
    a, b = compat.release(named), compat.release(known)
    if not a or not b:
        return None, f"{named} vs {label} {known}: not versions", {}
    if spec["relation"] == "newer":
        return a > b, f"the line needs {named}; {label} is {known}", {}
    return a[0] != b[0], f"the line loads major {a[0]}; {label} is {known}", {}


UNITS = {"b": 1, "bytes": 1, "kib": 1 << 10, "kb": 1 << 10, "mib": 1 << 20, "mb": 1 << 20, "gib": 1 << 30, "gb": 1 << 30,
         "tib": 1 << 40, "tb": 1 << 40}
SIZE = lazy_re.compile(r"(?i)^\s*([\d.]+)\s*([kmgt]?i?b|bytes)\s*$", module=regex)


def _bytes(text: str | None) -> float | None:
    m = SIZE.match(text or "")
    if not m or m[2].lower() not in UNITS:
        return None
    try:
        return float(m[1]) * UNITS[m[2].lower()]
    except ValueError:
        return None


def _memory_elsewhere(spec: dict[str, Any], groups: dict[str, str]) -> tuple[bool | None, str, dict[str, str]]:
    """How much of the GPU the out-of-memory line says is neither free nor the failing process's."""
    total, free, held = (_bytes(groups.get(spec[k])) for k in ("total", "free", "held"))
    if not total or free is None or held is None:
        return None, "the out-of-memory line gives no total, free and held sizes", {}
    elsewhere = max(total - free - held, 0.0)
    share = elsewhere / total
    detail = (f"of {groups[spec['total']]} on the GPU, {groups[spec['free']]} free and {groups[spec['held']]} held by "
              f"the failing process: {elsewhere / (1 << 30):.2f} GiB ({share:.0%}) held by other processes")
    return share > spec["above"], detail, {}


def _pcie_link(value: str, facts: Facts) -> tuple[bool | None, str, dict[str, str]]:
    """Does a GPU that was busy train its PCIe link below its maximum width or generation?

    Idle GPUs lower both to save power (nvidia-smi: "may be reduced when the GPU is not in use"),
    so only GPUs with utilisation above 0 % are judged; none such is unknown, not healthy."""
    judged = [g for g in facts.gpus if g.busy and g.pcie_width_max and g.pcie_width_current]
    if not judged:
        return None, "PCIe link of a busy GPU unknown (idle GPUs lower it to save power)", {}

    def low(g: Any) -> bool:
        gen_low = bool(g.pcie_gen_max and g.pcie_gen_current and g.pcie_gen_current < g.pcie_gen_max)
        return g.pcie_width_current < g.pcie_width_max or gen_low

    degraded = [g for g in judged if low(g)]
    detail = "; ".join(
        f"GPU {g.bus_id or g.index}: PCIe x{g.pcie_width_current} of x{g.pcie_width_max}"
        + (f", gen {g.pcie_gen_current} of {g.pcie_gen_max}" if g.pcie_gen_max and g.pcie_gen_current else "")
        + " while busy"
        for g in (degraded or judged)[:4]
    )
    return (bool(degraded) if value == "degraded" else not degraded), detail, {}
