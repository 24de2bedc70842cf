"""Installed packages from `pip freeze`, `pip list` (table or JSON), `uv pip list` and install logs.

>>> parse_freeze_line("torch==2.9.1+cu128")
('torch', '2.9.1+cu128')
>>> parse_freeze_line("sgl-kernel @ file:///wheels/sgl_kernel-0.3.21-cp39-abi3-linux_x86_64.whl")
('sgl-kernel', '0.3.21')
>>> parse_freeze_line("torch @ https://download.pytorch.org/whl/cu130/torch-2.11.0%2Bcu130-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=ab")
('torch', '2.11.0+cu130')
>>> parse_freeze_line("-e git+https://github.com/sgl-project/sglang.git@4f2c3a1#egg=sglang&subdirectory=python")
('sglang', None)
"""

from __future__ import annotations

import json
import re as regex  # stdlib re: faster to compile at import; these are our own patterns

from diagnose import lazy_re

NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
FREEZE = lazy_re.compile(rf"^({NAME})(?:\[[^\]]*\])?\s*===?\s*([^\s;#]+)", module=regex)
DIRECT = lazy_re.compile(rf"^({NAME})(?:\[[^\]]*\])?\s+@\s+(\S+)", module=regex)
EDITABLE = lazy_re.compile(r"^-e\s+(\S+)", module=regex)
EGG = lazy_re.compile(r"[#&]egg=([A-Za-z0-9._-]+)", module=regex)
WHEEL_VERSION = lazy_re.compile(r"/([A-Za-z0-9_.]+)-(\d[^-/]*?)(?:-[^/]*)?\.(?:whl|tar\.gz|zip)$", module=regex)
LIST_ROW = lazy_re.compile(rf"^({NAME})\s+(\d[\w.+!-]*)(?:\s+\S.*)?$", module=regex)
LIST_HEADER = lazy_re.compile(r"^Package\s+Version\b", module=regex)
# a `pip list` row without its header (`pip list | grep torch`): name, two or more spaces, a dotted
# version, nothing else but an editable project's location
_ROW = rf"^({NAME}) {{%d,}}(\d++\.\d[\w.+!-]*+)(?: {{2,}}/\S*)?\s*$"  # possessive: linear
HEADERLESS_ROW = lazy_re.compile(_ROW % 2, module=regex)
# ... the row of the longest name in an aligned list, one space before its version: read only right after a row
NEXT_ROW = lazy_re.compile(_ROW % 1, module=regex)
# `[pip3] torch==2.9.1` in collect_env; `[conda] torch 2.9.1 pypi_0 pypi`
COLLECT_ENV = lazy_re.compile(rf"^\[(?:pip3?|conda)\]\s+({NAME})(?:==|\s+)(\d[\w.+!-]*)", module=regex)
# install logs: pip's `Successfully installed a-1.0 b-2.0`, uv's ` + torch==2.10.0`
PIP_INSTALLED = lazy_re.compile(r"^Successfully installed (.+)$", module=regex)
UV_CHANGE = lazy_re.compile(rf"^\s*([+-])\s+({NAME})==(\S+)", module=regex)


def canonical(name: str) -> str:
    """PEP 503 normalised name: `Sgl_Kernel` -> `sgl-kernel`."""
    return regex.sub(r"[-_.]+", "-", name).lower()


def parse_freeze_line(line: str) -> tuple[str, str | None] | None:
    """(name, version) of one `pip freeze` line; version None when it is not pinned."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    if m := FREEZE.match(line):
        return canonical(m[1]), m[2]
    if m := DIRECT.match(line):
        from urllib.parse import unquote

        wheel = WHEEL_VERSION.search(unquote(m[2].split("#", 1)[0]))  # `%2Bcu130` is `+cu130`
        return canonical(m[1]), wheel[2] if wheel else None
    if m := EDITABLE.match(line):
        egg = EGG.search(m[1])
        return (canonical(egg[1]), None) if egg else None
    return None


def parse_headerless_row(line: str, after_row: bool = False) -> tuple[str, str] | None:
    """One row of `pip list` output whose header was cut off (`pip list | grep torch`). Right after such a row
    (`after_row`), one space is enough: the longest name of an aligned list has no more before its version.

    >>> parse_headerless_row("torchvision              0.25.0+cu130")
    ('torchvision', '0.25.0+cu130')
    >>> parse_headerless_row("Epoch 1  0.5") is None
    True
    >>> parse_headerless_row("torchvision 0.28.0+cu129") is None
    True
    >>> parse_headerless_row("torchvision 0.28.0+cu129", after_row=True)
    ('torchvision', '0.28.0+cu129')
    """
    m = (NEXT_ROW if after_row else HEADERLESS_ROW).match(line.rstrip())
    if not m or not regex.search(r"[A-Za-z]", m[1]):
        return None
    return canonical(m[1]), m[2]


def is_freeze_line(line: str) -> bool:
    stripped = line.strip()
    if not stripped or " " in stripped and " @ " not in stripped and not stripped.startswith("-e "):
        return False
    return parse_freeze_line(stripped) is not None


def parse_list_json(text: str) -> dict[str, str] | None:
    """`pip list --format=json` ([{"name": .., "version": ..}]), or None when it is not that."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, list) or not all(isinstance(d, dict) and "name" in d for d in data):
        return None
    return {canonical(d["name"]): d["version"] for d in data
            if isinstance(d["name"], str) and d["name"] and isinstance(d.get("version"), str)}


def parse_install_line(line: str) -> dict[str, str]:
    """Packages an install log says are now installed (pip or uv)."""
    if m := PIP_INSTALLED.match(line.strip()):
        found = {}
        for item in m[1].split():
            name, _, version = item.rpartition("-")
            if name and version[:1].isdigit():
                found[canonical(name)] = version
        return found
    if (m := UV_CHANGE.match(line)) and m[1] == "+":
        return {canonical(m[2]): m[3]}
    return {}


def torch_cuda_tag(version: str) -> str | None:
    """`2.9.1+cu128` -> `12.8`; `+cu121` -> `12.1`; None for cpu/rocm/no tag."""
    m = regex.search(r"\+cu(\d+)(\d)$", version)
    return f"{m[1]}.{m[2]}" if m else None
