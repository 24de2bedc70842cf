"""The strict models of the catalogues (rules/catalog/*.yaml), their loader and their lint.

A typo in a catalogue is an error at load with its file and line, like a rule's. Every row says
where its facts come from (`source`), and every rule id a row names must be a rule of the KB or
be listed in the file's `pending_rules` (a taxonomy id whose rule is still being written: lint
accepts it until the rule exists, then asks for it to leave the list).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from diagnose.errors import RuleError
from diagnose.kb import loader
from diagnose.kb.catalog import Catalog

RULE_ID = r"^[a-z0-9]+(-[a-z0-9]+)*$"
URL = r"^https?://"
Cause = Literal["hw", "driver", "user-app", "system-memory-corruption", "bus", "thermal", "fb-corruption"]
FILES = {"xid": "xid.yaml", "cuda-errors": "cuda-errors.yaml"}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class XidRow(Strict):
    xid: int = Field(ge=1)
    mnemonic: str = Field(min_length=3)
    name: str = Field(min_length=3, description="NVIDIA's short description of the Xid")
    meaning: str = Field(min_length=20, description="what it means, in this KB's words")
    older_name: str | None = Field(default=None, description="the name in NVIDIA's older Xid table, where it differs")
    used: bool = Field(description="false where the catalogue lists the Xid as unused")
    causes: list[Cause] = Field(default_factory=list, description="the older table's possible causes")
    immediate: str | None = Field(description="NVIDIA's resolution bucket, immediate action")
    investigatory: str | None = Field(description="NVIDIA's resolution bucket, investigatory action")
    reset: bool = Field(description="the GPU needs a reset (or more) before it is used again")
    drain: bool = Field(description="take the node (or its NVLink domain) out of service first")
    rules: list[str] = Field(min_length=1)
    source: str = Field(pattern=URL)
    causes_source: str | None = Field(default=None, pattern=URL)


class CudaErrorRow(Strict):
    code: int = Field(ge=0, le=9999)
    runtime: str | None = Field(pattern=r"^cuda(?:Success|Error[A-Za-z0-9]+)$")
    driver: str | None = Field(pattern=r"^CUDA_(?:SUCCESS|ERROR_[A-Z0-9_]+)$")
    message: str = Field(min_length=2, description="what cudaGetErrorString (or cuGetErrorString) prints")
    driver_message: str | None = None
    meaning: str = Field(min_length=10)
    causes: str | None = Field(default=None, description="the usual causes in a deployment")
    rules: list[str] = Field(default_factory=list)
    source: str = Field(pattern=URL)

    @model_validator(mode="after")
    def _named(self) -> CudaErrorRow:
        if self.runtime is None and self.driver is None:
            raise ValueError("a CUDA error row names its runtime or driver enumerator (or both)")
        return self


class Table(Strict):
    title: str = Field(min_length=8)
    sources: list[str] = Field(min_length=1)
    notes: str = Field(min_length=20)
    pending_rules: list[str] = Field(default_factory=list)


class XidCatalog(Table):
    id: Literal["xid"]
    actions: dict[str, str]
    rows: list[XidRow] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> XidCatalog:
        numbers = [r.xid for r in self.rows]
        if len(numbers) != len(set(numbers)):
            raise ValueError("an Xid has two rows")
        for r in self.rows:
            for code in (r.immediate, r.investigatory):
                if code is not None and code not in self.actions:
                    raise ValueError(f"Xid {r.xid}: action {code!r} is not in `actions`")
        return self


class CudaCatalog(Table):
    id: Literal["cuda-errors"]
    rows: list[CudaErrorRow] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> CudaCatalog:
        codes = [r.code for r in self.rows]
        names = [n for r in self.rows for n in (r.runtime, r.driver) if n]
        if len(codes) != len(set(codes)) or len(names) != len(set(names)):
            raise ValueError("a CUDA error number or enum name has two rows")
        return self


AnyCatalog = XidCatalog | CudaCatalog


def catalog_paths(dirs: list[Path]) -> list[Path]:
    return [root / "catalog" / name for root in dirs for name in FILES.values() if (root / "catalog" / name).is_file()]


def validate(path: Path) -> tuple[AnyCatalog, loader.RuleFile]:
    rule_file = loader.read_yaml(path)
    model: Any = XidCatalog if path.name == FILES["xid"] else CudaCatalog
    try:
        return model.model_validate(rule_file.data), rule_file
    except ValidationError as exc:
        err = exc.errors()[0]
        line = loader.line_of(rule_file.root, [p for p in err["loc"] if not (isinstance(p, str) and "[" in p)])
        where = ".".join(str(p) for p in err["loc"]) or "(top)"
        raise RuleError(f"{path}:{line}: {where}: {err['msg']}") from None


def load(dirs: list[Path]) -> Catalog:
    """The catalogues of every KB dir (a later dir's row replaces an earlier one's), as plain data."""
    catalog = Catalog()
    for path in catalog_paths(dirs):
        table, _ = validate(path)
        catalog.paths[table.id] = str(path)
        catalog.pending_rules.update(table.pending_rules)
        if isinstance(table, XidCatalog):
            catalog.actions.update(table.actions)
            catalog.xids.update({r.xid: r.model_dump() for r in table.rows})
        else:
            catalog.cuda.update({r.code: r.model_dump() for r in table.rows})
    return catalog


def lint(dirs: list[Path], rule_ids: set[str]) -> list[Any]:
    """Schema, sources, and the rule ids the rows name (see the module docstring)."""
    from diagnose.kb.lint import Issue

    issues: list[Any] = []
    for path in catalog_paths(dirs):
        try:
            table, rule_file = validate(path)
        except RuleError as exc:
            where, _, message = str(exc).partition(": ")
            issues.append(Issue(where, message))
            continue
        pending = set(table.pending_rules)
        rows: list[Any] = list(table.rows)
        for i, row in enumerate(rows):
            for j, rid in enumerate(row.rules):
                if rid not in rule_ids and rid not in pending:
                    at = f"{path}:{loader.line_of(rule_file.root, ['rows', i, 'rules', j])}"
                    issues.append(Issue(at, f"names rule {rid!r}, which is not a rule (nor in pending_rules)"))
        for rid in sorted(pending & rule_ids):
            at = f"{path}:{loader.line_of(rule_file.root, ['pending_rules'])}"
            issues.append(Issue(at, f"{rid!r} is a rule now: drop it from pending_rules", "warning"))
    return issues


_SHIPPED: list[Catalog] = []


def shipped_signal_regex(names: list[str]) -> str:
    """The regex a `cuda_error` signal compiles to against the shipped catalogue (for lint's examples)."""
    from diagnose.kb.catalog import compile_signal

    if not _SHIPPED:
        _SHIPPED.append(load([loader.default_rules_dir()]))
    return compile_signal(_SHIPPED[0], names, "cuda_error")
