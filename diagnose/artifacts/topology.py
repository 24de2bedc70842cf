"""`nvidia-smi topo -m`, `nvidia-smi topo -p2p r|w|n`, `nvidia-smi nvlink -s` and `nvidia-smi -L`.

>>> f = parse_matrix(["\\tGPU0\\tGPU1\\tCPU Affinity\\tNUMA Affinity\\tGPU NUMA ID",
...                   "GPU0\\t X \\tPHB\\t0-15\\t0\\t\\tN/A",
...                   "GPU1\\tPHB\\t X \\t0-15\\t0\\t\\tN/A"])
>>> f.topology
{'GPU0': {'GPU1': 'PHB'}, 'GPU1': {'GPU0': 'PHB'}}
>>> parse_matrix([" \\tGPU0\\tGPU1\\t", " GPU0\\tX\\tCNS\\t", " GPU1\\tCNS\\tX\\t"]).p2p
{'GPU0': {'GPU1': 'CNS'}, 'GPU1': {'GPU0': 'CNS'}}
"""

from __future__ import annotations

import re as regex  # stdlib re: faster to compile at import; these are our own patterns

from diagnose import lazy_re
from diagnose.artifacts.numbers import to_int
from diagnose.model import GPU, Facts

HEADER = lazy_re.compile(r"^\s*GPU0(?:\s+(?:GPU|NIC|mlx|CPU|NUMA)\S*)*", module=regex)
ROW = lazy_re.compile(r"^\s*(GPU\d+|NIC\d+|mlx\S+)\s+(.*)$", module=regex)
LINK = lazy_re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|OK|CNS|GNS|TNS|NS|U|CNS\*)$", module=regex)
P2P_STATES = {"OK", "CNS", "GNS", "TNS", "NS", "U"}
# the UUID as printed, or as people mask it before pasting (`GPU-xxx`, `GPU-<uuid>`)
LIST_GPU = lazy_re.compile(r"^GPU (\d+): (.+?) \(UUID: (GPU-[^)\s]{1,64})\)", module=regex)
NVLINK = lazy_re.compile(r"^\s+Link (\d+): (.+)$", module=regex)


def is_matrix_header(line: str) -> bool:
    return bool(HEADER.match(line)) and ("GPU1" in line or "Affinity" in line)


def is_matrix_line(line: str) -> bool:
    s = line.strip()
    return not s or bool(ROW.match(line)) or s.startswith(("Legend", "X ", "X=", "SYS", "NODE", "PHB", "PXB", "PIX", "NV#",
                                                          "OK", "CNS", "GNS", "TNS", "NS", "U ", "NIC Legend", "NIC", "SOC"))


def parse_matrix(lines: list[str]) -> Facts:
    """topo -m (links) or topo -p2p (P2P states), told apart by the cell values."""
    facts = Facts()
    columns: list[str] = []
    for line in lines:
        if is_matrix_header(line):
            columns = [c for c in regex.split(r"\t+|\s{2,}", line.strip()) if c.startswith(("GPU", "NIC", "mlx"))]
            continue
        m = ROW.match(line)
        if not m or not columns or not m[1].startswith("GPU"):
            continue
        cells = [c.strip() for c in regex.split(r"\t", m[2])] if "\t" in m[2] else m[2].split()
        cells = [c for c in cells if c != ""] if "\t" not in m[2] else cells
        for col, cell in zip(columns, cells):
            if col == m[1] or not col.startswith("GPU") or not LINK.match(cell):
                continue
            target = facts.p2p if cell.rstrip("*") in P2P_STATES else facts.topology
            target.setdefault(m[1], {})[col] = cell
    return facts


def is_list_line(line: str) -> bool:
    return bool(LIST_GPU.match(line))


def parse_list(lines: list[str]) -> Facts:
    """`nvidia-smi -L` and the GPU lines of `nvidia-smi nvlink -s`; active NVLink counts."""
    facts = Facts()
    current: str | None = None
    for line in lines:
        if m := LIST_GPU.match(line):
            facts.gpus.append(GPU(index=to_int(m[1]), name=m[2], uuid=m[3]))
            current = f"GPU{m[1]}"
        elif current and (m := NVLINK.match(line)):
            state = "inactive" if "inactive" in m[2] else m[2].strip()
            facts.nvlink.setdefault(current, {})[f"link{m[1]}"] = state
    return facts
