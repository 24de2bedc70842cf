"""Compatibility tables (rules/compat/*.yaml) asked about the Facts.

Each answer is (state, detail): state True for "mismatched", False for "matched", None when
the facts or the table cannot tell; detail says what was compared, for the finding's reasons.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import regex

from diagnose import lazy_re
from diagnose.model import Facts

Answer = tuple[bool | None, str, dict[str, str]]
SEPARATOR = lazy_re.compile(r"[.+]", module=regex)
PART = lazy_re.compile(r"\d{1,18}", module=regex)  # a longer run is no version part (and int() refuses 4,300 digits)
MAX_PARTS = 32  # past this a "version" is no release anyone made; the rest is not read


@lru_cache(maxsize=1024)
def release(version: str) -> tuple[int, ...]:
    """`2.9.1+cu128` -> (2, 9, 1); `0.5.8.post1` -> (0, 5, 8); unparsable parts stop it."""
    parts = []
    for piece in SEPARATOR.split(version.split("+", 1)[0], maxsplit=MAX_PARTS):
        m = PART.match(piece)
        if not m:
            break
        parts.append(int(m[0]))
        if m.end() != len(piece):
            break
    return tuple(parts)


def same_version(a: str, b: str) -> bool:
    """Equal as PEP 440 versions, local parts (`+cu128`) ignored: `0.0.28.post2` != `0.0.28`."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a.split("+")[0]) == Version(b.split("+")[0])
    except (InvalidVersion, ValueError):  # ValueError: a number of over 4,300 digits
        return release(a) == release(b)


def minor(version: str) -> tuple[int, ...]:
    return release(version)[:2]


def _rows(table: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [r for r in (table or {}).get("rows", []) if isinstance(r, dict)]


def torch_torchvision(table: dict[str, Any] | None, facts: Facts) -> Answer:
    torch, vision = facts.packages.get("torch"), facts.packages.get("torchvision")
    if not torch or not vision:
        return None, "torch or torchvision version unknown", {}
    for row in _rows(table):
        if minor(str(row.get("torch", ""))) == minor(torch):
            expected = str(row.get("torchvision", ""))
            state = minor(expected) != minor(vision)
            detail = (
                f"torch {torch} pairs with torchvision {expected}.x; torchvision {vision} is installed"
            )
            return state, detail, {"expected": expected}
    return None, f"no torchvision is known for torch {torch}", {}


def extension_torch(table: dict[str, Any] | None, facts: Facts) -> Answer:
    torch = facts.packages.get("torch")
    if not torch:
        return None, "torch version unknown", {}
    known = False
    for row in _rows(table):
        name, version = str(row.get("package", "")), str(row.get("version", ""))
        installed = facts.packages.get(name)
        if not installed or not same_version(installed, version):
            continue
        known = True
        built_for = str(row.get("torch", ""))
        if release(built_for) != release(torch):
            detail = f"{name} {installed} was built for torch {built_for}; torch {torch} is installed"
            return True, detail, {"expected": built_for, "package": name}
    if known:
        return False, f"the installed extensions were built for torch {torch}", {}
    return None, "no installed extension is in the table", {}


def model_type_transformers(
    table: dict[str, Any] | None, facts: Facts, groups: dict[str, str]
) -> Answer:
    installed = facts.packages.get("transformers")
    types = list(facts.model_types)
    if groups.get("model_type"):
        types.insert(0, groups["model_type"])
    named = model_type_of(table, facts.model_path)
    if named and named not in types:
        types.append(named)
    for model_type in types:
        for row in _rows(table):
            known = str(row.get("model_type"))  # the table's spelling of a class name's prefix (qwen2_vl for Qwen2VL)
            if squash(known) != squash(model_type):
                continue
            needed = str(row.get("transformers", ""))
            if not installed:
                return None, f"{known} needs transformers >= {needed}", {"expected": needed}
            state = release(installed) < release(needed)
            detail = f"{known} needs transformers >= {needed}; {installed} is installed"
            return state, detail, {"expected": needed}
    return None, "model type not in the table", {}


def model_type_of(table: dict[str, Any] | None, model_path: str | None) -> str | None:
    r"""The model_type of a well-known checkpoint from its name (the table's `model_names`), or None.

    >>> model_type_of({"model_names": [{"match": "qwen2\\.5-vl", "model_type": "qwen2_5_vl"}]},
    ...               "/models/Qwen/Qwen2.5-VL-72B-Instruct-AWQ")
    'qwen2_5_vl'
    """
    if not table or not model_path:
        return None
    name = model_path.rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]
    for row in table.get("model_names") or []:
        try:
            if regex.search(str(row.get("match", "")), name, regex.IGNORECASE, timeout=0.1):
                return str(row.get("model_type")) or None
        except (regex.error, TimeoutError):
            return None
    return None


def cuda_driver(table: dict[str, Any] | None, facts: Facts) -> Answer:
    cuda, driver = facts.torch_cuda, facts.driver_version
    if not cuda or not driver:
        return None, "torch's CUDA runtime or the driver version unknown", {}
    for row in _rows(table):
        if minor(str(row.get("cuda", ""))) == minor(cuda):
            needed = str(row.get("min_driver_linux", ""))
            state = release(driver) < release(needed)
            detail = f"CUDA {cuda} needs driver >= {needed}; driver {driver} is installed"
            return state, detail, {"expected": needed}
    return None, f"CUDA {cuda} not in the table", {}


def compute_capability(table: dict[str, Any] | None, name: str) -> str | None:
    """The compute capability of a GPU by the name nvidia-smi prints (truncated names too)."""
    stem = name[:-3].rstrip() if name.endswith("...") else None
    for row in _rows(table):
        pattern = row.get("pattern")
        if pattern and regex.search(pattern, name):
            return str(row.get("compute_capability"))
    if stem:
        for row in _rows(table):
            full = str(row.get("name", ""))
            if full and (full.startswith(stem) or f"NVIDIA {full}".startswith(stem)):
                return str(row.get("compute_capability"))
    return None


# a consumer card as people write it: "2080Ti", "rtx 4090", "RTX 4060 Laptop", "4*4090", "GTX1080"
CONSUMER_CARD = lazy_re.compile(r"(?i)(?<![\w.])(?:geforce\s*)?(?:(rtx|gtx)\s*)?((?:[2-5]0[5-9]0)|(?:1[0-6][5-8]0)|(?:[6-9][5-8]0))\s*(ti|super)?(?![\w.])")
COUNT = lazy_re.compile(r"^\s*\d+\s*[x×*]\s*|(?:\s+[x×]|\s*\*)\s*\d+\s*$")


def stated_compute_capability(table: dict[str, Any] | None, text: str) -> str | None:
    """The compute capability of a GPU as a report names it (no "NVIDIA", a count, a consumer card's bare
    number), or None when the table does not know it."""
    name = COUNT.sub("", text).strip(" *`")
    for candidate in (name, f"NVIDIA {name}"):
        if cc := compute_capability(table, candidate):
            return cc
    m = CONSUMER_CARD.search(name)
    if m:
        number = int(m[2])
        family = (m[1] or ("RTX" if number >= 2000 else "GTX")).upper()
        suffix = f" {m[3].capitalize() if m[3].lower() == 'ti' else 'SUPER'}" if m[3] else ""
        return compute_capability(table, f"GeForce {family} {number}{suffix}")
    return None


def ask(name: str, tables: dict[str, dict[str, Any]], facts: Facts, groups: dict[str, str]) -> Answer:
    table = tables.get(name)
    if name == "torch-torchvision":
        return torch_torchvision(table, facts)
    if name == "extension-torch":
        return extension_torch(table, facts)
    if name == "model-type-transformers":
        return model_type_transformers(table, facts, groups)
    if name == "cuda-driver":
        return cuda_driver(table, facts)
    return None, f"unknown compat table {name}", {}


def table_keys(data: dict[str, Any], column: str) -> set[str]:
    """The keys a compat table knows: its rows' `column`, and for model types the ones already in the
    table's floor release (`floor_model_types`)."""
    rows = data.get("rows", []) if isinstance(data, dict) else []
    keys = {str(r.get(column)) for r in rows if isinstance(r, dict) and r.get(column)}
    if column == "model_type":
        keys.update(str(k) for k in data.get("floor_model_types") or [])
        keys.update([squash(k) for k in keys])  # a class name's prefix: Qwen2VL... is qwen2_vl
    return keys


def squash(model_type: str) -> str:
    """A model type as a class name spells it: lower case, no underscores (Qwen2VLConfig -> qwen2vl = qwen2_vl)."""
    return model_type.lower().replace("_", "")
