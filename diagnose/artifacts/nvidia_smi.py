"""`nvidia-smi` outputs: the default table and `--query-gpu ... --format=csv`.

A real table (driver 570, RTX PRO 6000 Blackwell):

>>> facts = parse_table('''
... +-----------------------------------------------------------------------------------------+
... | NVIDIA-SMI 570.86.15              Driver Version: 570.86.15      CUDA Version: 12.8     |
... |-----------------------------------------+------------------------+----------------------+
... | GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
... |=========================================+========================+======================|
... |   0  NVIDIA RTX PRO 6000 Blac...    On  |   00000000:01:00.0 Off |                  Off |
... | 30%   32C    P8             12W /  600W |       1MiB /  97887MiB |      0%      Default |
... +-----------------------------------------+------------------------+----------------------+
... '''.splitlines())
>>> facts.driver_version, facts.cuda_driver_version, facts.gpus[0].name, facts.gpus[0].memory_total_mib
('570.86.15', '12.8', 'NVIDIA RTX PRO 6000 Blac...', 97887)
"""

from __future__ import annotations

import re as regex  # stdlib re: faster to compile at import; these are our own patterns

from diagnose import lazy_re
from diagnose.artifacts.numbers import to_int
from diagnose.model import GPU, Facts

HEADER = lazy_re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s+(\S+)(?:\s+CUDA Version:\s+(\S+))?", module=regex)
GPU_ROW = lazy_re.compile(
    r"^\|\s*(\d+)\s+([^|]+?)\s+(?:On|Off)\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)"
, module=regex)
MAX_ROW = 400  # characters of a table row (nvidia-smi prints ~100): a longer line is no row, and stays cheap
MEMORY = lazy_re.compile(r"(\d+)MiB\s*/\s*(\d+)MiB", module=regex)
ECC_CELL = lazy_re.compile(r"\|\s*(\d+|N/A|Off|On)\s*\|\s*$", module=regex)


def is_table_start(line: str) -> bool:
    return "NVIDIA-SMI" in line and "Driver Version" in line


def is_table_line(line: str) -> bool:
    s = line.lstrip()
    return s.startswith(("|", "+")) or not s


def parse_table(lines: list[str]) -> Facts:
    facts = Facts()
    current: GPU | None = None
    for line in lines:
        if m := HEADER.search(line):
            facts.driver_version = m[2]
            facts.cuda_driver_version = m[3] if m[3] and m[3] != "N/A" else None
            continue
        if len(line) <= MAX_ROW and (m := GPU_ROW.match(line.strip())):
            current = GPU(index=to_int(m[1]), name=m[2].strip(), bus_id=_bus(m[3]))
            if ecc := ECC_CELL.search(line):
                current.ecc_uncorrected = to_int(ecc[1])
            facts.gpus.append(current)
            continue
        if current is not None and current.memory_total_mib is None and len(line) <= MAX_ROW and (m := MEMORY.search(line)):
            current.memory_total_mib = to_int(m[2])
    return facts


def _bus(bus_id: str) -> str:
    """Canonical PCI bus id `0000:3b:00.0` from nvidia-smi's `00000000:3B:00.0`."""
    domain, _, rest = bus_id.partition(":")
    try:
        return f"{int(domain, 16):04x}:{rest.lower()}"
    except ValueError:  # not hex (a CSV column read by the wrong header): kept as written
        return bus_id.lower()


CSV_FIELDS = {
    "index": "index",
    "name": "name",
    "gpu_name": "name",
    "driver_version": "driver",
    "compute_cap": "cc",
    "pci.bus_id": "bus",
    "gpu_bus_id": "bus",
    "memory.total": "mem",
    "uuid": "uuid",
    "gpu_uuid": "uuid",
}


def is_csv_header(line: str) -> bool:
    cols = [c.strip().split(" [")[0] for c in line.split(",")]
    return len(cols) >= 2 and sum(c in CSV_FIELDS for c in cols) >= 2


def parse_csv(lines: list[str]) -> Facts:
    """`--format=csv` with or without header and units; headerless rows are read by shape."""
    facts = Facts()
    header: list[str] | None = None
    for line in lines:
        if not line.strip():
            continue
        if is_csv_header(line):
            header = [CSV_FIELDS.get(c.strip().split(" [")[0], "") for c in line.split(",")]
            continue
        cells = [c.strip() for c in line.split(",")]
        if header and len(cells) != len(header):
            # not a row of this table: the next command's output ("2.11.0+cu130 13.0 ['sm_75', 'sm_80', 'sm_86']",
            # a torch one-liner after `nvidia-smi --query-gpu=name,compute_cap,driver_version`) read as a GPU
            # "2.11.0+cu130 13.0 ['sm_75'" with driver 'sm_86'
            continue
        row = dict(zip(header, cells)) if header else _guess_columns(cells)
        if not row.get("name") and not row.get("bus") and not row.get("driver"):
            continue
        gpu = GPU(
            index=to_int(row.get("index")),
            name=row.get("name") or None,
            bus_id=_bus(row["bus"]) if row.get("bus") else None,
            compute_capability=row.get("cc") or None,
            uuid=row.get("uuid") or None,
        )
        if mem := regex.match(r"(\d+)", row.get("mem", "")):
            gpu.memory_total_mib = to_int(mem[1])
        if row.get("driver"):
            facts.driver_version = row["driver"]
        if gpu.name or gpu.bus_id:
            facts.gpus.append(gpu)
    return facts


def _guess_columns(cells: list[str]) -> dict[str, str]:
    row: dict[str, str] = {}
    for cell in cells:
        if regex.fullmatch(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d", cell):
            row["bus"] = cell
        elif regex.search(r"(?i)nvidia|tesla|quadro|geforce|rtx|titan", cell):
            row["name"] = cell
        elif regex.fullmatch(r"\d{3}\.\d{2,3}(?:\.\d{2})?", cell):
            row["driver"] = cell
        elif regex.fullmatch(r"\d{1,2}\.\d", cell):
            row["cc"] = cell
        elif regex.fullmatch(r"\d+ ?MiB", cell):
            row["mem"] = cell
        elif cell.startswith("GPU-"):
            row["uuid"] = cell
        elif to_int(cell) is not None and "index" not in row and len(row) == 0:
            row["index"] = cell
    return row


GPU_WORDS = ("NVIDIA", "Tesla", "Quadro", "GeForce", "RTX", "TITAN", "nvidia")


def is_headerless_csv_row(line: str) -> bool:
    if not any(w in line for w in GPU_WORDS):
        return False
    cells = [c.strip() for c in line.split(",")]
    if len(cells) < 2:
        return False
    guessed = _guess_columns(cells)
    return "name" in guessed and ("driver" in guessed or "bus" in guessed or "cc" in guessed)
