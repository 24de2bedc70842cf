"""`nvidia-smi -q` (indented text) and `nvidia-smi -q -x` (XML): GPUs, driver, CUDA, ECC, remapping.

The text form is read into a tree by indentation, so sections that differ between driver
releases are found by their names, not their positions:

>>> facts = parse_query('''==============NVSMI LOG==============
... Driver Version                            : 580.159.04
... CUDA Version                              : 13.0
... Attached GPUs                             : 1
... GPU 00000000:18:00.0
...     Product Name                          : NVIDIA H200
...     FB Memory Usage
...         Total                             : 143771 MiB
...     Remapped Rows
...         Pending                           : No'''.splitlines())
>>> g = facts.gpus[0]; (facts.driver_version, facts.cuda_driver_version, g.name, g.bus_id, g.memory_total_mib, g.remapped_rows_pending)
('580.159.04', '13.0', 'NVIDIA H200', '0000:18:00.0', 143771, False)
"""

from __future__ import annotations

import re as regex  # stdlib re: faster to compile at import; these are our own patterns
from typing import TYPE_CHECKING, Any

from diagnose import lazy_re
from diagnose.artifacts.numbers import to_int
from diagnose.artifacts.nvidia_smi import _bus
from diagnose.model import GPU, Facts

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

# `[^:]+:`, not `[^:]+?\s*:`: linear; the caller strips the key, and tests for ':' before matching
KEY_VALUE = lazy_re.compile(r"^(\s*)([^:]+):\s*(.*)$", module=regex)
MAX_DEPTH = 32  # sections nested deeper than any driver prints are read as flat lines
GPU_HEADER = lazy_re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$", module=regex)


def is_query_start(line: str) -> bool:
    return "NVSMI LOG" in line


def is_query_line(line: str) -> bool:
    return not line.strip() or line.startswith((" ", "\t")) or bool(GPU_HEADER.match(line)) or (
        ":" in line and bool(KEY_VALUE.match(line))
    )


def _tree(lines: list[str]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for line in lines:
        if not line.strip() or "NVSMI LOG" in line:
            continue
        indent = len(line) - len(line.lstrip())
        while stack and indent <= stack[-1][0]:
            stack.pop()
        parent = stack[-1][1] if stack else root
        if m := GPU_HEADER.match(line):
            node: dict[str, Any] = {"_bus": m[1]}
            parent.setdefault("_gpus", []).append(node)
            stack.append((indent, node))
            continue
        m = KEY_VALUE.match(line) if ":" in line else None
        if m and m[3]:
            parent.setdefault(m[2].strip(), m[3].strip())
        elif len(stack) <= MAX_DEPTH:
            section: dict[str, Any] = {}
            parent[line.strip().rstrip(":")] = section
            stack.append((indent, section))
    return root


def _mib(value: str | None) -> int | None:
    m = regex.match(r"(\d+)\s*MiB", value or "")
    return to_int(m[1]) if m else None


def _uncorrectable(ecc: dict[str, Any]) -> int | None:
    volatile = ecc.get("Volatile") if isinstance(ecc, dict) else None
    if not isinstance(volatile, dict):
        return None
    total, seen = 0, False
    for key, value in volatile.items():
        if "ncorrectable" in key and isinstance(value, str) and (n := to_int(value)) is not None:
            total += n
            seen = True
    return total if seen else None


def _find(node: dict[str, Any], key: str) -> Any:
    """The first value named `key` in a GPU's section, however deep the driver release nests it."""
    if key in node:
        return node[key]
    for value in node.values():
        if isinstance(value, dict) and (found := _find(value, key)) is not None:
            return found
    return None


def _number(value: Any) -> int | None:
    m = regex.match(r"\s*(\d+)", value) if isinstance(value, str) else None
    return to_int(m[1]) if m else None


def _pcie(node: dict[str, Any]) -> dict[str, Any]:
    """PCIe link of one GPU section: `PCIe Generation` and `Link Width` (Max / Current, "16x"), and
    whether the GPU was busy (Utilization > 0 %): idle GPUs lower both, which is not a fault."""
    gen, width, util = _find(node, "PCIe Generation"), _find(node, "Link Width"), node.get("Utilization")
    gpu_util = _number(util.get("GPU", util.get("Gpu"))) if isinstance(util, dict) else None
    return {
        "pcie_gen_max": _number(gen.get("Max")) if isinstance(gen, dict) else None,
        "pcie_gen_current": _number(gen.get("Current")) if isinstance(gen, dict) else None,
        "pcie_width_max": _number(width.get("Max")) if isinstance(width, dict) else None,
        "pcie_width_current": _number(width.get("Current")) if isinstance(width, dict) else None,
        "busy": gpu_util > 0 if gpu_util is not None else None,
    }


def parse_query(lines: list[str]) -> Facts:
    tree = _tree(lines)
    facts = Facts(driver_version=tree.get("Driver Version"))
    cuda = tree.get("CUDA Version")
    facts.cuda_driver_version = cuda if cuda and cuda != "N/A" else None
    for i, node in enumerate(tree.get("_gpus", [])):
        remapped = node.get("Remapped Rows")
        pending = remapped.get("Pending") if isinstance(remapped, dict) else None
        fb = node.get("FB Memory Usage")
        gpu = GPU(
            index=n if isinstance(minor := node.get("Minor Number"), str) and (n := to_int(minor)) is not None else i,
            name=node.get("Product Name"),
            bus_id=_bus(node["_bus"]),
            uuid=node.get("GPU UUID"),
            memory_total_mib=_mib(fb.get("Total")) if isinstance(fb, dict) else None,
            ecc_uncorrected=_uncorrectable(node.get("ECC Errors", {})),
            remapped_rows_pending=(pending == "Yes") if pending in ("Yes", "No") else None,
            **_pcie(node),
        )
        facts.gpus.append(gpu)
    return facts


def is_xml_start(line: str) -> bool:
    return "<nvidia_smi_log" in line or "nvsmi_device" in line and "DOCTYPE" in line


def is_xml_end(line: str) -> bool:
    return "</nvidia_smi_log>" in line


def parse_xml(text: str) -> Facts | None:
    start = text.find("<nvidia_smi_log")
    if start < 0:
        return None
    import xml.etree.ElementTree as ET  # here, not at import: only `nvidia-smi -q -x` needs it

    try:
        root = ET.fromstring(text[start:])
    except ET.ParseError:
        return None
    facts = Facts(driver_version=_text(root, "driver_version"))
    cuda = _text(root, "cuda_version")
    facts.cuda_driver_version = cuda if cuda and cuda != "N/A" else None
    for i, node in enumerate(root.findall("gpu")):
        pending = _text(node, "remapped_rows/remapped_row_pending")
        uncorrectable = [
            n for e in node.iterfind("ecc_errors/volatile/*")
            if "uncorrectable" in e.tag and (n := to_int(e.text)) is not None
        ]
        facts.gpus.append(
            GPU(
                index=n if (n := to_int(_text(node, "minor_number"))) is not None else i,
                name=_text(node, "product_name"),
                bus_id=_bus(node.get("id", "")) if node.get("id") else None,
                uuid=_text(node, "uuid"),
                compute_capability=_text(node, "compute_cap"),
                memory_total_mib=_mib(_text(node, "fb_memory_usage/total")),
                ecc_uncorrected=sum(uncorrectable) if uncorrectable else None,
                remapped_rows_pending=(pending == "Yes") if pending in ("Yes", "No") else None,
                pcie_gen_max=_number(_text(node, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
                pcie_gen_current=_number(_text(node, "pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
                pcie_width_max=_number(_text(node, "pci/pci_gpu_link_info/link_widths/max_link_width")),
                pcie_width_current=_number(_text(node, "pci/pci_gpu_link_info/link_widths/current_link_width")),
                busy=(u > 0) if (u := _number(_text(node, "utilization/gpu_util"))) is not None else None,
            )
        )
    return facts


def _text(node: ET.Element, path: str) -> str | None:
    found = node.find(path)
    return found.text.strip() if found is not None and found.text and found.text.strip() else None
